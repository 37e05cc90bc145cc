"""The score metrics of the standard (Normal, GLER, the sensitivity benchmarks) and their formulas.

Each metric, e.g. :func:`accuracy`, softmaxes its rows under the standard's rule, reduces
every row to a summary (predicted label, confidence, ECE bin) and calls a formula on
those summaries (:func:`accuracy_from_labels`, :func:`ece_from_confidence`, ...).  The
formulas are public because the bootstrap in :mod:`StaICC.stats` computes the summaries
once per run and calls the same formulas on every resample, so both give the same bits.

ECE puts a confidence of exactly 1.0 in no bin: a quirk of the standard that published
numbers depend on.
"""
from bisect import bisect_right
from itertools import repeat
from operator import eq, getitem, truth
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..errors import InvalidValueError, warn, warn_tampering
from ..standard import CONSISTENCY_LOOP_LENGTH, ECE_BINS, STRICT_SETTING_WARNING
from .exact_sum import own_distribution
from ..numeric import (Matrix, argmax, loaded_numpy, normalized_labels, normalized_values, reads_rows_only, row_max,
                       sequential_sum, softmax_unless_probabilities)


def _check_lengths(ground_truth: Sequence[int], prediction: Matrix) -> None:
    if len(ground_truth) != len(prediction):
        raise ValueError(f"The length of ground_truth and prediction should be the same: "
                         f"{len(ground_truth)} ground-truth labels, {len(prediction)} predictions")
    if not prediction:
        raise InvalidValueError("metrics need at least one prediction")


# ----------------------------------------------------------------------------
# score metrics (Normal, GLER)
# ----------------------------------------------------------------------------
@reads_rows_only
def accuracy(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Share of the queries whose top label is the true one (a row: the label space's probabilities or
    logits, or the predicted label's index).

        >>> from StaICC.metrics import accuracy
        >>> accuracy([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
        0.6666666666666666
    """
    _check_lengths(ground_truth, prediction)
    return accuracy_from_labels(ground_truth, normalized_labels(prediction))


@reads_rows_only
def averaged_truelabel_likelihood(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Mean probability of the true label (logits go through a softmax first).

        >>> from StaICC.metrics import averaged_truelabel_likelihood
        >>> round(averaged_truelabel_likelihood([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]), 4)
        0.7
    """
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    return sequential_sum(map(getitem, rows, ground_truth)) / len(rows)


@reads_rows_only
def macro_F1(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """F1 of each label of the label space, averaged with equal weights.

        >>> from StaICC.metrics import macro_F1
        >>> round(macro_F1([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]), 4)
        0.6667
    """
    _check_lengths(ground_truth, prediction)
    labels = normalized_labels(prediction)
    return macro_f1_from_labels(ground_truth, labels, len(prediction[0]))  # the softmax keeps a row's width


@reads_rows_only
def expected_calibration_error_1(ground_truth: Sequence[int], prediction: Matrix, bins: int = ECE_BINS) -> float:
    """ECE over 10 equal-width confidence bins [j/10, (j+1)/10); confidence 1.0 is in no bin.

    Twelve queries answered right with confidence 0.9: the model is 0.1 under-confident.

        >>> from StaICC.metrics import expected_calibration_error_1
        >>> round(expected_calibration_error_1([0] * 12, [[0.9, 0.1]] * 12), 4)
        0.1
    """
    if bins <= 1:
        raise InvalidValueError(f"bins should be larger than 1, got {bins}")
    if bins != ECE_BINS:
        warn_tampering(f"ECE with {bins} bins")
        warn(STRICT_SETTING_WARNING)  # the standard is strict: the setting returns to its default
        bins = ECE_BINS
    _check_lengths(ground_truth, prediction)
    _check_bins_fit(bins, len(ground_truth))
    values = normalized_values(prediction)
    if values is not None:  # the rows computed at once: their bins at once too
        return _ece_of_values(values, normalized_labels(prediction), ground_truth, bins)
    confidence = list(map(max, softmax_unless_probabilities(prediction)))
    correct = list(map(eq, normalized_labels(prediction), ground_truth))
    return ece_from_confidence(confidence, correct, bins)


@reads_rows_only
def consistency(ground_truth: Sequence[int], prediction: Matrix,  # noqa: ARG001  (every metric takes (ground_truth, prediction))
                loop_length: int = CONSISTENCY_LOOP_LENGTH) -> float:
    """Mean, over the L items, of the majority share of their predictions (items repeat every L).

    Two items asked twice each (item 0, item 1, item 0, item 1): item 1 changed its answer.

        >>> from StaICC.metrics import consistency
        >>> consistency([0, 0, 0, 0], [[1, 0], [1, 0], [0, 1], [1, 0]], loop_length=2)
        0.75
    """
    if loop_length <= 0 or len(prediction) % loop_length != 0:
        raise ValueError("The length of prediction should be the multiple of loop_length: "
                         f"{len(prediction)} predictions, loop_length {loop_length}")
    return consistency_from_labels(normalized_labels(prediction), loop_length)


# ----------------------------------------------------------------------------
# likelihood and ECE on the model's own distribution (outside the standard)
#
# The standard's likelihood and ECE read the rows after its exact-sum rule, which for a
# model's probabilities means softmaxed twice.  These read the model's own distribution
# (normalised or softmaxed once, :func:`~StaICC.metrics.exact_sum.own_distribution`),
# so they mean the same whatever the rows were handed over as; their names say they are
# not the standard's.
# ----------------------------------------------------------------------------
@reads_rows_only
def own_likelihood_nonstandard(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Mean true-label probability of the model's own distribution (non-standard)."""
    _check_lengths(ground_truth, prediction)
    rows = own_distribution(prediction)
    return sequential_sum(map(getitem, rows, ground_truth)) / len(rows)


@reads_rows_only
def own_ece_nonstandard(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """ECE (10 equal-width bins, as the standard's) of the model's own distribution (non-standard)."""
    _check_lengths(ground_truth, prediction)
    _check_bins_fit(ECE_BINS, len(ground_truth))
    rows = own_distribution(prediction)
    correct = list(map(eq, map(argmax, rows), ground_truth))
    return ece_from_confidence(list(map(max, rows)), correct, ECE_BINS)


# ----------------------------------------------------------------------------
# the score metrics' formulas on per-row summaries (predicted label, confidence)
#
# The metric functions above reduce each row to these summaries and call the
# functions below; the bootstrap in StaICC.stats computes the summaries once per run
# and calls the same functions on every resample, so both give the same bits.
# ----------------------------------------------------------------------------
def accuracy_from_labels(ground_truth: Sequence[int], predicted: Sequence[int]) -> float:
    """Share of positions where the predicted label equals the true one."""
    return sum(map(truth, map(eq, predicted, ground_truth))) / len(predicted)


def macro_f1_from_labels(ground_truth: Sequence[int], predicted: Sequence[int], width: int) -> float:
    """Unweighted mean over the ``width`` labels of F1 = 2PR / (P + R); an undefined P, R or F1 counts 0."""
    tp, fp, fn = [0] * width, [0] * width, [0] * width
    for g, a in zip(ground_truth, predicted):
        if a == g:
            tp[g] += 1
        else:
            fp[a] += 1
            fn[g] += 1
    scores = []
    for c in range(width):
        precision = tp[c] / (tp[c] + fp[c]) if tp[c] + fp[c] else 0
        recall = tp[c] / (tp[c] + fn[c]) if tp[c] + fn[c] else 0
        scores.append(((2 * precision) * recall) / (precision + recall) if precision + recall else 0)
    return sequential_sum(scores) / width


def _ece_bounds(bins: int) -> List[float]:
    return [j / bins for j in range(bins + 1)]


def _bin_among(confidence: float, bounds: Sequence[float]) -> int:
    """The j with bounds[j] <= confidence < bounds[j + 1], or -1 (bounds increase strictly).

    ``bisect_right`` counts the bounds that ``confidence`` is not below: j + 1 inside
    the bins, 0 below them, all of them at or above the last bound or for NaN (which
    is below nothing), so those fall in no bin.
    """
    j = bisect_right(bounds, confidence) - 1
    return j if 0 <= j < len(bounds) - 1 else -1


def ece_bin(confidence: float, bins: int = ECE_BINS) -> int:
    """The ECE bin j with j/bins <= confidence < (j+1)/bins; -1 when in no bin (1.0, NaN)."""
    return _bin_among(confidence, _ece_bounds(bins))


def _check_bins_fit(bins: int, count: int) -> None:
    if bins > count:
        raise ValueError("bins should be less than the length of ground_truth.")


def ece_from_confidence(confidence: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS,
                        bin_indexes: Optional[Sequence[int]] = None) -> float:
    """ECE = sum over non-empty bins of (n_j / N) * |accuracy_j - mean confidence_j|.

    ``confidence`` is each row's maximum, ``correct`` whether its argmax is the true
    label; ``bin_indexes`` (each row's :func:`ece_bin`) may be given when already known.
    A bin's confidences are summed left to right in row order.
    """
    total = len(confidence)
    _check_bins_fit(bins, total)
    if bin_indexes is None:
        bounds = _ece_bounds(bins)
        bin_indexes = list(map(_bin_among, confidence, repeat(bounds)))
    counts, hits = [0] * bins, [0] * bins
    sums: List[float] = [0] * bins
    for j, c, right in zip(bin_indexes, confidence, correct):
        if j >= 0:
            counts[j] += 1
            hits[j] += right
            sums[j] += c
    return _ece_of_bins(counts, hits, sums, total)


def _ece_of_bins(counts: Sequence[int], hits: Sequence[int], sums: Sequence[float], total: int) -> float:
    """Σ over the non-empty bins of (n_j / N) · |hits_j / n_j − sums_j / n_j|, bin by bin."""
    ece = 0
    for j in range(len(counts)):
        if counts[j]:
            ece += (counts[j] / total) * abs(hits[j] / counts[j] - sums[j] / counts[j])
    return ece


def _ece_of_values(values: Any, labels: Sequence[int], ground_truth: Sequence[int], bins: int) -> float:
    """:func:`ece_from_confidence` of rows held as a float array, to the bit, without a loop over the rows.

    The confidence is each row's maximum (exact in any order); ``searchsorted`` on the right finds the bin as
    ``bisect_right`` does; ``bincount`` counts each bin's rows and hits as integers and adds each bin's
    confidences one by one in row order from 0.0, as the loop's ``sums[j] += c`` does from 0 (a confidence is
    never -0.0: it is the largest of a row that is a probability vector); then :func:`_ece_of_bins`.
    """
    np = loaded_numpy()
    confidence = row_max(np, values)[:, 0]
    where = np.searchsorted(np.array(_ece_bounds(bins)), confidence, side="right") - 1
    inside = (where >= 0) & (where < bins)
    right = np.asarray(labels) == np.asarray(ground_truth)
    counts = np.bincount(where[inside], minlength=bins).tolist()
    hits = np.bincount(where[inside & right], minlength=bins).tolist()
    sums = np.bincount(where[inside], weights=confidence[inside], minlength=bins).tolist()
    return _ece_of_bins(counts, hits, sums, len(confidence))


def consistency_from_labels(labels: Sequence[int], loop_length: int) -> float:
    """Mean over the first ``loop_length`` positions i of the majority share of labels[i::loop_length]."""
    total = 0
    for i in range(loop_length):
        total += single_consistency(labels[i::loop_length])
    return total / loop_length


def make_consistency(loop_length: int) -> Callable[[Sequence[int], Matrix], float]:
    """Consistency bound to a loop length, named for result dictionaries."""
    @reads_rows_only
    def metric(ground_truth: Sequence[int], prediction: Matrix) -> float:
        return consistency(ground_truth, prediction, loop_length)
    metric.__name__ = f"consistency_{loop_length}"
    return metric


def single_consistency(prediction: Sequence[int]) -> float:
    """Share of the most frequent label among ``prediction`` (labels, not rows)."""
    counts: Dict[int, int] = {}
    for label in prediction:
        counts[label] = counts.get(label, 0) + 1
    return max(counts.values()) / len(prediction)
