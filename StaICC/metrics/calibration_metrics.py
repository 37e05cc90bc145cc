"""Calibration metrics beyond the standard's ECE: Brier, equal-mass ECE, classwise ECE, selective accuracy, Platt.

These are the calibration numbers cited in the literature (HELM reports ECE with 1 and
10 equal-mass bins, selective accuracy, the coverage-accuracy area and ECE after Platt
scaling; lm-evaluation-harness reports the Brier score; classwise ECE is Kull et al.
2019).  None of them is a metric of the standard: no sub-benchmark reports them by
default, so the standard's numbers are untouched; they are in the registry so that they
can be computed on any result's rows, in compare and in the report.

Every metric has the registry signature ``metric(ground_truth, prediction) -> float``
and reads the rows the way the standard's score metrics do (softmaxed unless the whole
matrix passes the exact probability check).  Each row is reduced to its *confidence*
``c_i = max_j p_ij`` and its *correctness* ``y_i = [argmax_j p_ij == g_i]`` (the first
maximal column wins, as everywhere in the package).

Ties between confidences never depend on the row order: bins are defined by values,
and the selective metrics average over every order of tied confidences, so each metric
is invariant to permuting the rows and to renaming the labels.  Pure standard library.
"""
import bisect
import math
from typing import List, Sequence, Tuple

from ..numeric import Matrix, argmax, softmax_unless_probabilities
from ..validation import check, check_int, Real
from .scores import _check_lengths

#: the calibration metrics outside the standard, by registry name, in display order
CALIBRATION_METRICS: Tuple[str, ...] = ("brier_score", "ece_equal_mass_1", "ece_equal_mass_10", "classwise_ece",
                                        "selective_accuracy", "coverage_accuracy_area", "ece_platt")
#: the number of equal-mass bins of the binned metrics (HELM's 10-bin ECE)
EQUAL_MASS_BINS = 10
#: the number of equal-width bins of classwise ECE
CLASSWISE_BINS = 10
#: the share of most confident rows whose accuracy :func:`selective_accuracy` reports (HELM's acc@10%)
SELECTIVE_COVERAGE = 0.1
#: confidences are clipped to [eps, 1 - eps] before taking their log-odds for Platt scaling
PLATT_EPSILON = 1e-12


def _rows(ground_truth: Sequence[int], prediction: Matrix) -> Matrix:
    _check_lengths(ground_truth, prediction)
    return softmax_unless_probabilities(prediction)


def confidence_and_correctness(ground_truth: Sequence[int], prediction: Matrix) -> Tuple[List[float], List[int]]:
    """Each row's top probability and whether its argmax is the true label (1/0)."""
    rows = _rows(ground_truth, prediction)
    return [max(row) for row in rows], [int(argmax(row) == g) for g, row in zip(ground_truth, rows)]


# ----------------------------------------------------------------------------
# Brier score
# ----------------------------------------------------------------------------
def brier_score(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Multiclass Brier score: mean over rows of sum_j (p_ij - [j == g_i])^2, in [0, 2]; lower is better.

    This is lm-evaluation-harness's ``brier_score`` (the squared distance of the whole
    probability vector to the one-hot truth), not the top-label variant.
    """
    rows = _rows(ground_truth, prediction)
    total = math.fsum(math.fsum((p - (1.0 if j == g else 0.0)) ** 2 for j, p in enumerate(row))
                      for g, row in zip(ground_truth, rows))
    return total / len(rows)


# ----------------------------------------------------------------------------
# ECE with equal-mass bins
# ----------------------------------------------------------------------------
def equal_mass_thresholds(confidence: Sequence[float], bins: int) -> List[float]:
    """Upper bin edges so that each bin holds about the same number of rows.

    The sorted confidences are split into ``b = min(bins, n)`` consecutive chunks, the
    first ``n mod b`` of them one row longer (NumPy's ``array_split``); the edge between
    two chunks is the midpoint of the last value of one and the first of the next, and
    the last edge is 1.0.  Duplicate edges are merged, so rows with the same confidence
    always share a bin (the row order cannot matter).  This is the binning of the
    ``calibration`` library HELM uses (``get_equal_bins``).
    """
    values = sorted(confidence)
    n = len(values)
    b = min(bins, n)
    size, extra = divmod(n, b)
    starts, at = [], 0
    for j in range(b):
        starts.append(at)
        at += size + (1 if j < extra else 0)
    edges = [(values[starts[j] - 1] + values[starts[j]]) / 2.0 for j in range(1, b)]
    return sorted(set(edges + [1.0]))


def binned_calibration_error(confidence: Sequence[float], outcome: Sequence[float], edges: Sequence[float]) -> float:
    """sum over non-empty bins B of (|B| / n) * |mean outcome in B - mean confidence in B|.

    A value v is in bin ``bisect_left(edges, v)``: bin j holds edges[j-1] < v <= edges[j]
    (values above the last edge join the last bin).
    """
    last = len(edges) - 1
    counts, outcomes, confidences = [0] * len(edges), [0.0] * len(edges), [0.0] * len(edges)
    for c, o in zip(confidence, outcome):
        j = min(bisect.bisect_left(edges, c), last)
        counts[j] += 1
        outcomes[j] += o
        confidences[j] += c
    n = len(confidence)
    return math.fsum((counts[j] / n) * abs(outcomes[j] / counts[j] - confidences[j] / counts[j])
                     for j in range(len(edges)) if counts[j])


def ece_equal_mass_from_confidence(confidence: Sequence[float], correct: Sequence[int],
                                   bins: int = EQUAL_MASS_BINS) -> float:
    """Top-label ECE over ``bins`` equal-mass bins (:func:`equal_mass_thresholds`)."""
    check_int(bins, "bins", minimum=1)
    return binned_calibration_error(confidence, correct, equal_mass_thresholds(confidence, bins))


def ece_equal_mass_10(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Top-label ECE with 10 equal-mass bins (HELM's ``ece_10_bin``); lower is better."""
    confidence, correct = confidence_and_correctness(ground_truth, prediction)
    return ece_equal_mass_from_confidence(confidence, correct, 10)


def ece_equal_mass_1(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """ECE with one bin: |accuracy - mean confidence| (HELM's ``ece_1_bin``); lower is better."""
    confidence, correct = confidence_and_correctness(ground_truth, prediction)
    return ece_equal_mass_from_confidence(confidence, correct, 1)


# ----------------------------------------------------------------------------
# classwise ECE
# ----------------------------------------------------------------------------
def classwise_ece(ground_truth: Sequence[int], prediction: Matrix, bins: int = CLASSWISE_BINS) -> float:
    """Classwise ECE (Kull et al. 2019): the mean over the K labels of each label's ECE.

    Label j's ECE bins p_ij into ``bins`` equal-width bins, bin ``min(floor(p * bins),
    bins - 1)`` (so 1.0 is in the last bin), and compares in each bin the mean of
    p_ij with the share of rows whose true label is j.  Lower is better.
    """
    check_int(bins, "bins", minimum=1)
    rows = _rows(ground_truth, prediction)
    n, width = len(rows), len(rows[0])
    per_label = []
    for j in range(width):
        counts, hits, sums = [0] * bins, [0] * bins, [0.0] * bins
        for g, row in zip(ground_truth, rows):
            b = min(int(math.floor(row[j] * bins)), bins - 1)
            counts[b] += 1
            hits[b] += g == j
            sums[b] += row[j]
        per_label.append(math.fsum((counts[b] / n) * abs(hits[b] / counts[b] - sums[b] / counts[b])
                                   for b in range(bins) if counts[b]))
    return math.fsum(per_label) / width


# ----------------------------------------------------------------------------
# selective prediction
# ----------------------------------------------------------------------------
def expected_correct_prefix(confidence: Sequence[float], correct: Sequence[int]) -> List[float]:
    """E[number correct among the m most confident rows], for m = 1..n, ties in random order.

    Rows are taken in decreasing confidence; a group of rows with equal confidence that
    is only partly taken contributes its share times its number correct, the expectation
    over every order of the tie.  So the result does not depend on the row order.
    """
    groups: dict = {}
    for c, y in zip(confidence, correct):
        size, right = groups.get(c, (0, 0))
        groups[c] = (size + 1, right + y)
    prefix: List[float] = []
    before = 0
    for c in sorted(groups, reverse=True):
        size, right = groups[c]
        for t in range(1, size + 1):
            prefix.append(before + right * t / size)
        before += right
    return prefix


def selective_accuracy(ground_truth: Sequence[int], prediction: Matrix, coverage: float = SELECTIVE_COVERAGE) -> float:
    """Accuracy on the m = max(1, floor(coverage * n)) most confident rows (HELM's acc@10%); higher is better."""
    coverage = check(coverage, Real(0, 1, closed="right"), "coverage")
    confidence, correct = confidence_and_correctness(ground_truth, prediction)
    m = max(1, int(math.floor(coverage * len(confidence))))
    return expected_correct_prefix(confidence, correct)[m - 1] / m


def coverage_accuracy_area(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Area under the coverage-accuracy curve: (1/n) sum_{m=1..n} accuracy of the m most confident rows.

    HELM's ``selective_cov_acc_area``: 1 when every wrong prediction is less confident
    than every right one, the accuracy itself when confidence says nothing.  Higher is better.
    """
    confidence, correct = confidence_and_correctness(ground_truth, prediction)
    prefix = expected_correct_prefix(confidence, correct)
    return math.fsum(right / m for m, right in enumerate(prefix, start=1)) / len(prefix)


# ----------------------------------------------------------------------------
# Platt scaling
# ----------------------------------------------------------------------------
def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _log1pexp(z: float) -> float:
    return z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))


def platt_targets(correct: Sequence[int]) -> Tuple[float, float]:
    """Platt's (1999) smoothed targets: (N+ + 1) / (N+ + 2) for right rows, 1 / (N- + 2) for wrong ones.

    With targets strictly inside (0, 1) the fit always has a finite optimum, also when
    every row is right or the right and wrong rows are separable.
    """
    positives = sum(correct)
    return (positives + 1) / (positives + 2), 1 / (len(correct) - positives + 2)


def platt_fit(confidence: Sequence[float], correct: Sequence[int]) -> Tuple[float, float]:
    """(a, b) minimising the cross-entropy of sigmoid(a * x + b) to Platt's targets, x = logit(clip(c)).

    Newton's method on the standardised log-odds, from (0, 0), halving a step until the
    loss does not increase, until the step is below 1e-13 (at most 100 steps): the same
    arithmetic on the same input always gives the same bits.  When every log-odds is the
    same the slope is not identifiable: a = 0 and b is the logit of the mean target.
    """
    x = [math.log(v / (1 - v)) for v in (min(max(c, PLATT_EPSILON), 1 - PLATT_EPSILON) for c in confidence)]
    positive, negative = platt_targets(correct)
    t = [positive if y else negative for y in correct]
    n = len(x)
    mean = math.fsum(x) / n
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / n)
    if spread == 0 or not math.isfinite(spread):
        target = math.fsum(t) / n
        return 0.0, math.log(target / (1 - target))
    u = [(v - mean) / spread for v in x]

    def loss(a: float, b: float) -> float:
        return math.fsum(_log1pexp(a * ui + b) - ti * (a * ui + b) for ui, ti in zip(u, t))

    a = b = 0.0
    current = loss(a, b)
    for _ in range(100):
        p = [_sigmoid(a * ui + b) for ui in u]
        ga = math.fsum((pi - ti) * ui for pi, ti, ui in zip(p, t, u))
        gb = math.fsum(pi - ti for pi, ti in zip(p, t))
        w = [pi * (1 - pi) for pi in p]
        haa = math.fsum(wi * ui * ui for wi, ui in zip(w, u))
        hab = math.fsum(wi * ui for wi, ui in zip(w, u))
        hbb = math.fsum(w)
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        step = 1.0
        while step > 1e-10:
            trial = loss(a - step * da, b - step * db)
            if trial <= current:
                break
            step /= 2
        else:
            break
        a, b, current = a - step * da, b - step * db, trial
        if max(abs(step * da), abs(step * db)) < 1e-13:
            break
    return a / spread, b - a * mean / spread


def platt_scaled_confidence(confidence: Sequence[float], correct: Sequence[int]) -> List[float]:
    """sigmoid(a * logit(clip(c)) + b) for each row, with (a, b) from :func:`platt_fit` on the same rows."""
    a, b = platt_fit(confidence, correct)
    x = [math.log(v / (1 - v)) for v in (min(max(c, PLATT_EPSILON), 1 - PLATT_EPSILON) for c in confidence)]
    return [_sigmoid(a * v + b) for v in x]


def ece_platt(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """ECE with 10 equal-mass bins after Platt scaling fitted on the same rows (HELM's ``platt_ece_10_bin``).

    Definition: x_i = log(c_i / (1 - c_i)) with c_i clipped to [1e-12, 1 - 1e-12];
    (a, b) minimise sum_i CE(t_i, sigmoid(a x_i + b)) with Platt's smoothed targets
    t_i (:func:`platt_targets`) instead of scikit-learn's almost unregularised 0/1
    targets, fitted in-sample by :func:`platt_fit`; the result is
    :func:`ece_equal_mass_from_confidence` of sigmoid(a x_i + b) against y_i.  It
    measures what remains miscalibrated after the best monotone rescaling of this form:
    the part of miscalibration a recalibration cannot remove.  Lower is better.
    """
    confidence, correct = confidence_and_correctness(ground_truth, prediction)
    return ece_equal_mass_from_confidence(platt_scaled_confidence(confidence, correct), correct, EQUAL_MASS_BINS)
