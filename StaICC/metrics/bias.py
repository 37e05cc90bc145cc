"""The bias metrics: the prior (Contextual_bias, Domain_bias) and the posterior (Post_bias).

They read the raw rows, never softmaxed under the score metrics' rule: the bias
metrics compare the mean prediction with uniformity (its entropy) or with the label
frequencies of the ground truth (difference, KL divergence).

Finite inputs give finite results: where the standard's formula would overflow or
raise (means near the float maximum, a zero mean, logits), an equivalent or
conventional computation is used instead; for ordinary values the standard formula
runs unchanged, so its numbers stay bit-identical.
"""
import math
from typing import List, Sequence

from ..errors import InvalidValueError
from ..numeric import SOFTMAX, Matrix, column_means, entropy, reads_rows_only, rule_of, softmax


@reads_rows_only
def bias_distribution(ground_truth: Sequence[int], prediction: Matrix) -> List[float]:  # noqa: ARG001  (every metric takes (ground_truth, prediction))
    """Mean of the raw rows (never softmaxed)."""
    _check_rows("bias_distribution", prediction)
    return column_means(prediction)


@reads_rows_only
def bias_entropy(ground_truth: Sequence[int], prediction: Matrix) -> float:  # noqa: ARG001  (every metric takes (ground_truth, prediction))
    """Entropy of the mean raw row; the mean is softmaxed first if it fails the exact check
    (always, for rows that declare the softmax branch)."""
    _check_rows("bias_entropy", prediction)
    return entropy(column_means(prediction), softmax_always=rule_of(prediction) == SOFTMAX)


def _check_rows(metric: str, prediction: Matrix) -> None:
    """A bias metric averages the rows: with none there is no mean (an error here, not an IndexError inside)."""
    if len(prediction) == 0:
        raise InvalidValueError(f"{metric} needs at least one prediction row, got none")


def _label_frequencies(ground_truth: Sequence[int], width: int) -> List[float]:
    counts = [0] * width
    for g in ground_truth:
        counts[g] += 1
    return [c / len(ground_truth) for c in counts]


def _post_bias_rows(prediction: Matrix) -> Matrix:
    """Rows the post-bias metrics compare with the label frequencies.

    Raw rows, as in the standard, whenever every column mean is positive.  When a mean
    is not positive the original raised (math domain error); then logits (any negative
    entry) are replaced by their softmax, and zero means are handled by the KL convention.
    """
    if all(m > 0 for m in column_means(prediction)):
        return prediction
    if any(v < 0 for row in prediction for v in row):
        return [softmax(row) for row in prediction]
    return prediction


@reads_rows_only
def post_bias_distribution(ground_truth: Sequence[int], prediction: Matrix) -> List[float]:
    """Mean predicted distribution minus the ground-truth label frequencies."""
    _check_rows("post_bias_distribution", prediction)
    rows = _post_bias_rows(prediction)
    means = column_means(rows)
    freqs = _label_frequencies(ground_truth, len(means))
    return [m - f for m, f in zip(means, freqs)]


def _kl_to_frequencies(means: Sequence[float], freqs: Sequence[float]) -> float:
    total = 0
    for m, f in zip(means, freqs):
        if m == 0:
            continue
        if f == 0:
            return math.inf
        total += m * math.log(m / f)
    return total


@reads_rows_only
def post_bias_dl_div(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """KL(mean prediction || label frequencies), summed left to right.

    Where the original raised (a zero mean entry, logits, a label absent from the
    ground truth), the usual KL conventions apply: 0*log(0/f) = 0, m*log(m/0) = inf.
    Rows that are not probabilities and whose raw means are so large that the KL sum
    overflows are scores, not distributions: their softmax is compared instead, which
    keeps the result finite.
    """
    _check_rows("post_bias_dl_div", prediction)
    rows = _post_bias_rows(prediction)
    means = column_means(rows)
    freqs = _label_frequencies(ground_truth, len(means))
    result = _kl_to_frequencies(means, freqs)
    if math.isfinite(result) or not all(math.isfinite(m) for m in means) or 0 in freqs:
        return result
    return _kl_to_frequencies(column_means([softmax(row) for row in prediction]), freqs)
