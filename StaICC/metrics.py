"""Metrics of the standard (spec §6.3, §7), as plain functions over plain lists.

Every metric has the signature ``metric(ground_truth, prediction) -> value`` with
``ground_truth`` a list of label indexes and ``prediction`` a list of rows (one
probability/logit vector per query).  Sums are explicit left-to-right additions
starting at 0 (spec §0): CPython 3.12 changed ``sum()`` of floats, the standard did not.

Two quirks of the standard are reproduced on purpose because published numbers
depend on them: the probability check uses exact float equality of the row sum,
so rows that "should" be probabilities are often softmaxed a second time; and ECE
puts a confidence of exactly 1.0 in no bin.
"""
import math
from typing import Callable, Dict, List, Sequence, Tuple

from .errors import warn, warn_tampering
from .standard import CONSISTENCY_LOOP_LENGTH, ECE_BINS, STRICT_MODE, STRICT_SETTING_WARNING

Vector = Sequence[float]
Matrix = Sequence[Vector]


# ----------------------------------------------------------------------------
# elementary operations
# ----------------------------------------------------------------------------
def sequential_sum(values) -> float:
    """Σ→: left-to-right sum from the integer 0 (what CPython <= 3.11's sum() did)."""
    total = 0
    for v in values:
        total += v
    return total


def argmax(vector: Vector) -> int:
    """First index of the maximum."""
    best = 0
    for i in range(1, len(vector)):
        if vector[i] > vector[best]:
            best = i
    return best


def argmin(vector: Vector) -> int:
    """First index of the minimum."""
    best = 0
    for i in range(1, len(vector)):
        if vector[i] < vector[best]:
            best = i
    return best


def is_probability_vector(vector: Vector) -> bool:
    """All entries in [0, 1] and the sequential sum exactly 1 (the standard's exact check)."""
    return all(0 <= v <= 1 for v in vector) and sequential_sum(vector) == 1


def is_probability_matrix(matrix: Matrix) -> bool:
    return all(is_probability_vector(row) for row in matrix)


def softmax(vector: Vector) -> List[float]:
    """exp(v - max) / Σ→ exp(v - max), exponents first, then one division each."""
    top = max(vector)
    exps = [math.exp(v - top) for v in vector]
    total = sequential_sum(exps)
    return [e / total for e in exps]


class PredictionRows(list):
    """The rows a run hands its metrics: a plain list that remembers its conditional softmax.

    Every score metric applies the same rule to the same rows; computing it once per
    pass instead of once per metric is the only reason this class exists.
    """

    __slots__ = ("normalized",)

    def __init__(self, rows=()) -> None:
        super().__init__(rows)
        self.normalized = None


def softmax_unless_probabilities(matrix: Matrix) -> Matrix:
    """The standard's rule for the score metrics: softmax every row unless all rows pass the check."""
    cached = getattr(matrix, "normalized", None)
    if cached is not None:
        return cached
    result = matrix if is_probability_matrix(matrix) else [softmax(row) for row in matrix]
    if isinstance(matrix, PredictionRows):
        matrix.normalized = result
    return result


def column_means(matrix: Matrix) -> List[float]:
    """mean_c = (Σ→_i p_i[c]) / N, accumulated per column in row order."""
    count = len(matrix)
    width = len(matrix[0])
    totals = [0] * width
    for row in matrix:
        for c in range(width):
            totals[c] += row[c]
    return [t / count for t in totals]


def entropy(vector: Vector) -> float:
    """H in nats, after a softmax if the vector fails the exact probability check (spec §7.7)."""
    if not is_probability_vector(vector):
        vector = softmax(vector)
    return -sequential_sum(v * math.log(v) for v in vector if v != 0)


def _check_lengths(ground_truth: Sequence[int], prediction: Matrix) -> None:
    if len(ground_truth) != len(prediction):
        raise ValueError(f"The length of ground_truth and prediction should be the same: "
                         f"{len(ground_truth)} ground-truth labels, {len(prediction)} predictions")
    if not prediction:
        raise ValueError("metrics need at least one prediction")


# ----------------------------------------------------------------------------
# score metrics (Normal, GLER)
# ----------------------------------------------------------------------------
def accuracy(ground_truth: Sequence[int], prediction: Matrix) -> float:
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    hits = sum(1 for g, row in zip(ground_truth, rows) if argmax(row) == g)
    return hits / len(rows)


def averaged_truelabel_likelihood(ground_truth: Sequence[int], prediction: Matrix) -> float:
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    return sequential_sum(row[g] for g, row in zip(ground_truth, rows)) / len(rows)


def macro_F1(ground_truth: Sequence[int], prediction: Matrix) -> float:
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    n = len(rows[0])
    tp, fp, fn = [0] * n, [0] * n, [0] * n
    for g, row in zip(ground_truth, rows):
        a = argmax(row)
        if a == g:
            tp[g] += 1
        else:
            fp[a] += 1
            fn[g] += 1
    scores = []
    for c in range(n):
        precision = tp[c] / (tp[c] + fp[c]) if tp[c] + fp[c] else 0
        recall = tp[c] / (tp[c] + fn[c]) if tp[c] + fn[c] else 0
        scores.append(((2 * precision) * recall) / (precision + recall) if precision + recall else 0)
    return sequential_sum(scores) / n


def expected_calibration_error_1(ground_truth: Sequence[int], prediction: Matrix, bins: int = ECE_BINS) -> float:
    """ECE over 10 equal-width confidence bins [j/10, (j+1)/10); confidence 1.0 is in no bin."""
    if bins <= 1:
        raise ValueError(f"bins should be larger than 1, got {bins}")
    if bins != ECE_BINS:
        warn_tampering(f"ECE with {bins} bins")
        if STRICT_MODE:
            warn(STRICT_SETTING_WARNING)
            bins = ECE_BINS
    _check_lengths(ground_truth, prediction)
    if bins > len(ground_truth):
        raise ValueError("bins should be less than the length of ground_truth.")
    rows = softmax_unless_probabilities(prediction)
    confidence = [max(row) for row in rows]
    correct = [argmax(row) == g for g, row in zip(ground_truth, rows)]
    bounds = [j / bins for j in range(bins + 1)]
    total = len(rows)
    ece = 0
    for j in range(bins):
        low, high = bounds[j], bounds[j + 1]
        members = [i for i in range(total) if low <= confidence[i] < high]
        if not members:
            continue
        acc = sum(1 for i in members if correct[i]) / len(members)
        conf = sequential_sum(confidence[i] for i in members) / len(members)
        ece += (len(members) / total) * abs(acc - conf)
    return ece


def consistency(ground_truth: Sequence[int], prediction: Matrix,
                loop_length: int = CONSISTENCY_LOOP_LENGTH) -> float:
    """Mean, over the L items, of the majority share of their predictions (items repeat every L)."""
    if loop_length <= 0 or len(prediction) % loop_length != 0:
        raise ValueError("The length of prediction should be the multiple of loop_length: "
                         f"{len(prediction)} predictions, loop_length {loop_length}")
    labels = [argmax(row) for row in softmax_unless_probabilities(prediction)]
    total = 0
    for i in range(loop_length):
        group = labels[i::loop_length]
        counts: Dict[int, int] = {}
        for label in group:
            counts[label] = counts.get(label, 0) + 1
        total += max(counts.values()) / len(group)
    return total / loop_length


def make_consistency(loop_length: int) -> Callable[[Sequence[int], Matrix], float]:
    """Consistency bound to a loop length, named for result dictionaries."""
    def metric(ground_truth: Sequence[int], prediction: Matrix) -> float:
        return consistency(ground_truth, prediction, loop_length)
    metric.__name__ = f"consistency_{loop_length}"
    return metric


# ----------------------------------------------------------------------------
# bias metrics (Contextual_bias, Domain_bias, Post_bias)
# ----------------------------------------------------------------------------
def bias_distribution(ground_truth: Sequence[int], prediction: Matrix) -> List[float]:
    """Mean of the raw rows (never softmaxed)."""
    return column_means(prediction)


def bias_entropy(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """Entropy of the mean raw row; the mean is softmaxed first if it fails the exact check."""
    return entropy(column_means(prediction))


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


def post_bias_distribution(ground_truth: Sequence[int], prediction: Matrix) -> List[float]:
    """Mean predicted distribution minus the ground-truth label frequencies."""
    rows = _post_bias_rows(prediction)
    means = column_means(rows)
    freqs = _label_frequencies(ground_truth, len(means))
    return [m - f for m, f in zip(means, freqs)]


def post_bias_dl_div(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """KL(mean prediction ‖ label frequencies), summed left to right.

    Where the original raised (a zero mean entry, logits, a label absent from the
    ground truth), the usual KL conventions apply: 0·log(0/f) = 0, m·log(m/0) = inf.
    """
    rows = _post_bias_rows(prediction)
    means = column_means(rows)
    freqs = _label_frequencies(ground_truth, len(means))
    total = 0
    for m, f in zip(means, freqs):
        if m == 0:
            continue
        if f == 0:
            return math.inf
        total += m * math.log(m / f)
    return total


# ----------------------------------------------------------------------------
# regression (GLER)
# ----------------------------------------------------------------------------
def linear_regression(x: Sequence[float], y: Sequence[float]) -> Tuple[float, float]:
    """Least-squares (slope, intercept) with the standard's formula and sequential sums."""
    if len(x) != len(y):
        raise ValueError(f"x and y should have the same length: {len(x)} and {len(y)}")
    n = len(x)
    sx, sy = sequential_sum(x), sequential_sum(y)
    sxx = sequential_sum(v * v for v in x)
    sxy = sequential_sum(a * b for a, b in zip(x, y))
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return slope, (sy - slope * sx) / n


# ----------------------------------------------------------------------------
# metric sets of the sub-benchmarks (fresh dicts: the original shared one mutable default)
# ----------------------------------------------------------------------------
def normal_metrics() -> Dict[str, Callable]:
    return {"accuracy": accuracy, "averaged_truelabel_likelihood": averaged_truelabel_likelihood,
            "macro_F1": macro_F1, "expected_calibration_error_1": expected_calibration_error_1}


def bias_metrics() -> Dict[str, Callable]:
    return {"entropy": bias_entropy, "distribution": bias_distribution}


def post_bias_metrics() -> Dict[str, Callable]:
    return {"DL div.": post_bias_dl_div, "distribution": post_bias_distribution}


def consistency_metrics(loop_length: int = CONSISTENCY_LOOP_LENGTH) -> Dict[str, Callable]:
    return {"consistency": make_consistency(loop_length)}
