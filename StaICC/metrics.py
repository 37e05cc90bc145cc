"""Metrics of the standard, as plain functions over plain lists, and their registry.

Every metric has the signature ``metric(ground_truth, prediction) -> value`` with
``ground_truth`` a list of label indexes and ``prediction`` a list of rows (one
probability/logit vector per query).  :data:`METRICS` describes each of them (what it
reads, which direction is better, how to display it); :func:`get_metric` finds one by name.

Sums are explicit left-to-right additions starting at the integer 0: CPython 3.12
changed ``sum()`` of floats to compensated summation, and the standard's numbers were
produced with the plain left-to-right sum.  :func:`sequential_sum`, :func:`softmax`,
:func:`argmax` and :func:`argmin` are the package's single copies of these operations.

Two quirks of the standard are reproduced on purpose because published numbers
depend on them: the probability check uses exact float equality of the row sum,
so rows that "should" be probabilities are often softmaxed a second time; and ECE
puts a confidence of exactly 1.0 in no bin.

Finite inputs give finite results: where the standard's formula would overflow
(means of values near the float maximum, a KL divergence of such means), an
equivalent overflow-free computation is used instead.  For ordinary values the
standard formula runs unchanged, so its numbers stay bit-identical.
"""
import math
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .errors import warn, warn_tampering
from .standard import (CONSISTENCY_LOOP_LENGTH, DEMO_SENS_TEST_SIZE, ECE_BINS, STRICT_MODE, STRICT_SETTING_WARNING,
                       TEMPLATE_SENS_TEST_SIZE)

Vector = Sequence[float]
Matrix = Sequence[Vector]


# ----------------------------------------------------------------------------
# elementary operations
# ----------------------------------------------------------------------------
def sequential_sum(values) -> float:
    """Left-to-right sum starting from the integer 0.

    This is what CPython <= 3.11's ``sum()`` did and what every sum of the standard
    means.  ``sum()`` on CPython >= 3.12 compensates rounding, which changes the last
    bits of results and, through the exact probability check, which rows get softmaxed.
    An empty input gives the int 0.
    """
    total = 0
    for v in values:
        total += v
    return total


def argmax(vector: Vector) -> int:
    """Index of the maximum; on ties the first such index (the standard's tie rule)."""
    best = 0
    for i in range(1, len(vector)):
        if vector[i] > vector[best]:
            best = i
    return best


def argmin(vector: Vector) -> int:
    """Index of the minimum; on ties the first such index (the standard's tie rule)."""
    best = 0
    for i in range(1, len(vector)):
        if vector[i] < vector[best]:
            best = i
    return best


def is_probability_vector(vector: Vector) -> bool:
    """All entries in [0, 1] and the sequential sum exactly 1 (the standard's exact check).

    The exact equality is a quirk the standard's numbers depend on: many genuine
    probability rows sum to 0.9999999999999999 and are then softmaxed again.
    """
    return all(0 <= v <= 1 for v in vector) and sequential_sum(vector) == 1


def is_probability_matrix(matrix: Matrix) -> bool:
    """Every row passes :func:`is_probability_vector` (an empty matrix passes)."""
    return all(is_probability_vector(row) for row in matrix)


def softmax(vector: Vector) -> List[float]:
    """exp(v - max v) / (left-to-right sum of those exponentials), one division per entry.

    The exponentials are computed first, then summed, then each is divided by the sum:
    the order the standard's numbers were produced with.  Subtracting the maximum keeps
    every exponent <= 0, so any finite input gives a finite probability vector.
    """
    if len(vector) == 0:
        raise ValueError("softmax needs at least one value, got an empty vector")
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
    """mean_c = (left-to-right sum over the rows of p_i[c]) / N, per column.

    When a column's sum overflows although its entries are finite (values near the
    float maximum), the column is summed again with every entry scaled by a power of
    two small enough that no partial sum can overflow, and the mean scaled back.
    Scaling by a power of two is exact, so this path is only taken where the plain
    formula would have returned inf or NaN.
    """
    count = len(matrix)
    width = len(matrix[0])
    totals = [0] * width
    for row in matrix:
        for c in range(width):
            totals[c] += row[c]
    means = [t / count for t in totals]
    for c, mean in enumerate(means):
        if not math.isfinite(mean) and all(math.isfinite(row[c]) for row in matrix):
            means[c] = _scaled_column_mean(matrix, c)
    return means


def _scaled_column_mean(matrix: Matrix, column: int) -> float:
    """Mean of one column summed at scale 2**-e with 2**e >= 2N: partial sums stay below max/2."""
    count = len(matrix)
    shift = count.bit_length() + 1
    total = 0
    for row in matrix:
        total += math.ldexp(row[column], -shift)
    return math.ldexp(total / count, shift)


def entropy(vector: Vector) -> float:
    """Entropy in nats, -(left-to-right sum of v*log v over the non-zero entries).

    A vector that fails the exact probability check is softmaxed first (the
    standard's rule for the bias entropy, applied to the mean row).
    """
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
    return accuracy_from_labels(ground_truth, [argmax(row) for row in rows])


def averaged_truelabel_likelihood(ground_truth: Sequence[int], prediction: Matrix) -> float:
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    return sequential_sum(row[g] for g, row in zip(ground_truth, rows)) / len(rows)


def macro_F1(ground_truth: Sequence[int], prediction: Matrix) -> float:
    _check_lengths(ground_truth, prediction)
    rows = softmax_unless_probabilities(prediction)
    return macro_f1_from_labels(ground_truth, [argmax(row) for row in rows], len(rows[0]))


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
    _check_bins_fit(bins, len(ground_truth))
    rows = softmax_unless_probabilities(prediction)
    confidence = [max(row) for row in rows]
    correct = [argmax(row) == g for g, row in zip(ground_truth, rows)]
    return ece_from_confidence(confidence, correct, bins)


def consistency(ground_truth: Sequence[int], prediction: Matrix,
                loop_length: int = CONSISTENCY_LOOP_LENGTH) -> float:
    """Mean, over the L items, of the majority share of their predictions (items repeat every L)."""
    if loop_length <= 0 or len(prediction) % loop_length != 0:
        raise ValueError("The length of prediction should be the multiple of loop_length: "
                         f"{len(prediction)} predictions, loop_length {loop_length}")
    return consistency_from_labels([argmax(row) for row in softmax_unless_probabilities(prediction)], loop_length)


# ----------------------------------------------------------------------------
# the score metrics' formulas on per-row summaries (predicted label, confidence)
#
# The metric functions above reduce each row to these summaries and call the
# functions below; the bootstrap in StaICC.stats computes the summaries once per run
# and calls the same functions on every resample, so both give the same bits.
# ----------------------------------------------------------------------------
def accuracy_from_labels(ground_truth: Sequence[int], predicted: Sequence[int]) -> float:
    """Share of positions where the predicted label equals the true one."""
    return sum(1 for g, a in zip(ground_truth, predicted) if a == g) / len(predicted)


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
    for j in range(len(bounds) - 1):
        if bounds[j] <= confidence < bounds[j + 1]:
            return j
    return -1


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
        bin_indexes = [_bin_among(c, bounds) for c in confidence]
    counts, hits = [0] * bins, [0] * bins
    sums: List[float] = [0] * bins
    for j, c, right in zip(bin_indexes, confidence, correct):
        if j >= 0:
            counts[j] += 1
            hits[j] += right
            sums[j] += c
    ece = 0
    for j in range(bins):
        if counts[j]:
            ece += (counts[j] / total) * abs(hits[j] / counts[j] - sums[j] / counts[j])
    return ece


def consistency_from_labels(labels: Sequence[int], loop_length: int) -> float:
    """Mean over the first ``loop_length`` positions i of the majority share of labels[i::loop_length]."""
    total = 0
    for i in range(loop_length):
        total += single_consistency(labels[i::loop_length])
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


def _kl_to_frequencies(means: Sequence[float], freqs: Sequence[float]) -> float:
    total = 0
    for m, f in zip(means, freqs):
        if m == 0:
            continue
        if f == 0:
            return math.inf
        total += m * math.log(m / f)
    return total


def post_bias_dl_div(ground_truth: Sequence[int], prediction: Matrix) -> float:
    """KL(mean prediction || label frequencies), summed left to right.

    Where the original raised (a zero mean entry, logits, a label absent from the
    ground truth), the usual KL conventions apply: 0*log(0/f) = 0, m*log(m/0) = inf.
    Rows that are not probabilities and whose raw means are so large that the KL sum
    overflows are scores, not distributions: their softmax is compared instead, which
    keeps the result finite.
    """
    rows = _post_bias_rows(prediction)
    means = column_means(rows)
    freqs = _label_frequencies(ground_truth, len(means))
    result = _kl_to_frequencies(means, freqs)
    if math.isfinite(result) or not all(math.isfinite(m) for m in means) or 0 in freqs:
        return result
    return _kl_to_frequencies(column_means([softmax(row) for row in prediction]), freqs)


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
# the original's helper functions (StaICC.util.functional), same results
# ----------------------------------------------------------------------------
def probability_vector_check(x: Vector) -> bool:
    """The original's name of :func:`is_probability_vector`."""
    return is_probability_vector(x)


def probability_matrix_check(x: Matrix) -> bool:
    """The original's name of :func:`is_probability_matrix`."""
    return is_probability_matrix(x)


def exp_to_list(values: Vector) -> List[float]:
    """[exp(v) for v in values]: no max subtraction, so exp of a value above ~709.78 overflows."""
    return [math.exp(v) for v in values]


def two_dimensional_list_mean(x: Matrix) -> List[float]:
    """Column means of a list of rows: :func:`column_means` for rectangular input.

    The width is the first row's; a shorter later row contributes 0 to the columns it
    lacks and a longer one raises IndexError, as the original did.
    """
    if all(len(row) == len(x[0]) for row in x):
        return column_means(x)
    totals = [0] * len(x[0])
    for row in x:
        for c, v in enumerate(row):
            totals[c] += v
    return [t / len(x) for t in totals]


def _check_same_length(x: Vector, y: Vector) -> None:
    if len(x) != len(y):
        raise ValueError(f"The length of x and y should be the same: {len(x)} and {len(y)}")


def L2_dist(x: Vector, y: Vector) -> float:
    """Euclidean distance, (left-to-right sum of (x_i - y_i)**2) ** 0.5."""
    _check_same_length(x, y)
    return sequential_sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5


def kl_divergence(x: Vector, y: Vector) -> float:
    """KL(x || y) = left-to-right sum of x_i * log(x_i / y_i).

    Strict, like the original: a zero ``y_i`` raises ZeroDivisionError and a zero or
    negative ratio raises ValueError (math domain error).  The post-bias metric
    :func:`post_bias_dl_div` applies the KL conventions instead.
    """
    _check_same_length(x, y)
    return sequential_sum(a * math.log(a / b) for a, b in zip(x, y))


def linspace(start: float, end: float, num: int) -> List[float]:
    """``num`` evenly spaced values from ``start`` to ``end`` inclusive: start + (end - start) * i / (num - 1)."""
    if num <= 1:
        raise ValueError(f"num should be greater than 1, got {num}")
    return [start + (end - start) * i / (num - 1) for i in range(num)]


def unique_check(values: Sequence) -> bool:
    """True when no value occurs twice (values must be hashable)."""
    return len(set(values)) == len(values)


def single_consistency(prediction: Sequence[int]) -> float:
    """Share of the most frequent label among ``prediction`` (labels, not rows)."""
    counts: Dict[int, int] = {}
    for label in prediction:
        counts[label] = counts.get(label, 0) + 1
    return max(counts.values()) / len(prediction)


def compress_logits_prediction_to_onehot(prediction: Matrix) -> List[int]:
    """The predicted label of each row: its first argmax."""
    if len(prediction) == 0:
        raise IndexError("compress_logits_prediction_to_onehot needs at least one row")
    return [argmax(row) for row in prediction]


def extend_onehot_prediction_to_logits(prediction: Sequence[int]) -> List[List[int]]:
    """One-hot rows of width max(prediction) + 1, the original's expansion of int predictions.

    The benchmark itself expands ints to the label count's width instead, because a
    narrower row crashes the metrics when some label is never predicted.
    """
    if len(prediction) == 0:
        raise IndexError("extend_onehot_prediction_to_logits needs at least one prediction")
    width = max(prediction) + 1
    return [[1 if c == p else 0 for c in range(width)] for p in prediction]


# the original's names of the bias metrics (the defaults of its bias benchmarks)
bias_mean_metric = bias_distribution
bias_mean_entropy_metric = bias_entropy
post_bias_dis_metric = post_bias_distribution
post_bias_dl_metric = post_bias_dl_div


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


# ----------------------------------------------------------------------------
# the metric registry
# ----------------------------------------------------------------------------
class MetricInfo(NamedTuple):
    """What tables, reports and statistics need to know about a metric.

    ``needs`` is ``"labels"`` when only each row's argmax matters (int predictions lose
    nothing) and ``"probabilities"`` when the values themselves are read.
    ``higher_is_better`` is None for vector-valued metrics, which have no direction.
    ``result_key`` is the key under which the sub-benchmarks report the metric.
    """

    name: str
    function: Callable
    needs: str
    higher_is_better: Optional[bool]
    display_name: str
    result_key: str
    vector_valued: bool = False
    softmaxed: bool = True
    aliases: Tuple[str, ...] = ()


METRICS: Dict[str, MetricInfo] = {info.name: info for info in (
    MetricInfo("accuracy", accuracy, "labels", True, "Accuracy", "accuracy"),
    MetricInfo("averaged_truelabel_likelihood", averaged_truelabel_likelihood, "probabilities", True,
               "True-label likelihood", "averaged_truelabel_likelihood"),
    MetricInfo("macro_F1", macro_F1, "labels", True, "Macro-F1", "macro_F1"),
    MetricInfo("expected_calibration_error_1", expected_calibration_error_1, "probabilities", False,
               "ECE (10 bins)", "expected_calibration_error_1"),
    MetricInfo("consistency", consistency, "labels", True, "Consistency", "consistency"),
    MetricInfo("bias_entropy", bias_entropy, "probabilities", True, "Prior entropy", "entropy",
               softmaxed=False, aliases=("bias_mean_entropy_metric",)),
    MetricInfo("bias_distribution", bias_distribution, "probabilities", None, "Mean prediction", "distribution",
               vector_valued=True, softmaxed=False, aliases=("bias_mean_metric",)),
    MetricInfo("post_bias_dl_div", post_bias_dl_div, "probabilities", False, "KL to label frequencies", "DL div.",
               softmaxed=False, aliases=("post_bias_dl_metric",)),
    MetricInfo("post_bias_distribution", post_bias_distribution, "probabilities", None,
               "Mean prediction - label frequencies", "distribution", vector_valued=True, softmaxed=False,
               aliases=("post_bias_dis_metric",)),
)}

#: the metrics each sub-benchmark reports by default, by registry name, in result order
BENCHMARK_METRICS: Dict[str, Tuple[str, ...]] = {
    "Normal": ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1"),
    "GLER": ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1"),
    "GLER_corrected": ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1"),
    "Contextual_bias": ("bias_entropy", "bias_distribution"),
    "Domain_bias": ("bias_entropy", "bias_distribution"),
    "Post_bias": ("post_bias_dl_div", "post_bias_distribution"),
    "Template_sens": ("consistency",),
    "Demo_sens": ("consistency",),
}


#: consistency's loop length in the sub-benchmarks that report it (the number of test items)
CONSISTENCY_LOOP_LENGTHS: Dict[str, int] = {"Template_sens": TEMPLATE_SENS_TEST_SIZE, "Demo_sens": DEMO_SENS_TEST_SIZE}


def get_metric(name: str, benchmark: Optional[str] = None) -> MetricInfo:
    """The registry entry for a metric name, an original alias, or a result key.

    Result keys are not unique ("distribution" is reported by both bias benchmarks and
    Post_bias, with different functions), so a result key is looked up among the
    metrics of ``benchmark`` when one is given.  Consistency depends on a loop length:
    ``consistency_<L>`` and consistency looked up for Template_sens or Demo_sens give an
    entry whose ``function`` is bound to that length, so ``function(truth, rows)``
    recomputes the reported value.
    """
    info = _find_metric(name, benchmark)
    if info.name == "consistency":
        suffix = name[len("consistency_"):] if name.startswith("consistency_") else ""
        length = int(suffix) if suffix.isdigit() else CONSISTENCY_LOOP_LENGTHS.get(benchmark or "")
        if length is not None:
            return info._replace(function=make_consistency(length))
    return info


def _find_metric(name: str, benchmark: Optional[str]) -> MetricInfo:
    if benchmark is not None:
        if benchmark not in BENCHMARK_METRICS:
            raise ValueError(f"unknown sub-benchmark {benchmark!r}; known: {', '.join(BENCHMARK_METRICS)}")
        candidates = [METRICS[n] for n in BENCHMARK_METRICS[benchmark]]
    else:
        candidates = list(METRICS.values())
    for info in candidates:
        if name == info.name or name in info.aliases:
            return info
    matches = [info for info in candidates if info.result_key == name]
    if len(matches) == 1:
        return matches[0]
    if name.startswith("consistency_") and name[len("consistency_"):].isdigit():
        return METRICS["consistency"]
    if len(matches) > 1:
        raise ValueError(f"the result key {name!r} is reported by several metrics "
                         f"({', '.join(m.name for m in matches)}); pass benchmark= to choose")
    known = sorted(n for info in candidates for n in (info.name, info.result_key) + info.aliases)
    where_ = f" in {benchmark}" if benchmark else ""
    raise KeyError(f"unknown metric {name!r}{where_}; known: {', '.join(sorted(set(known)))}")


def higher_is_better(name: str, benchmark: Optional[str] = None) -> Optional[bool]:
    """True/False for scalar metrics, None for vector-valued ones (see :func:`get_metric`)."""
    return get_metric(name, benchmark).higher_is_better
