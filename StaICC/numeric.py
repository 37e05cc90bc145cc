"""The elementary operations every metric is built on: sums, softmax, argmax/argmin, checks, means.

These are the package's single copies of the operations the standard's numbers depend on bit for bit; the
backends, the retrievers, the metrics, the results writers and the statistics import them from here instead of
keeping their own (this module sits on the ground floor, below every package that computes with rows).

Sums are explicit left-to-right additions starting at the integer 0: CPython 3.12 changed ``sum()`` of floats
to compensated summation, and the standard's numbers were produced with the plain left-to-right sum.

The probability check uses exact float equality of the row sum, a quirk of the standard reproduced on purpose:
rows that "should" be probabilities are often softmaxed a second time, and published numbers depend on it.
Rows that declare the softmax branch (:data:`SOFTMAX`: a model's floating-point probabilities, see
:mod:`StaICC.metrics.exact_sum`) take it without the check, so that a last bit cannot choose it.

When the process has already loaded NumPy, a pass of float rows is checked and softmaxed at once
(:func:`softmax_array`), to the same bits as the per-row loop; this module never imports it.
"""
import math
import sys
import weakref
from itertools import chain
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from .errors import InvalidValueError

Vector = Sequence[float]
Matrix = Sequence[Vector]

#: the standard's exact-sum rule: the score metrics softmax every row unless every row passes the check
CHECK = "check"
#: the rule's softmax branch, always: every row softmaxed, and the bias entropy's mean too (see :mod:`StaICC.metrics.exact_sum`)
SOFTMAX = "softmax"


def sequential_sum(values) -> float:
    """Left-to-right sum starting from the integer 0.

    This is what CPython <= 3.11's ``sum()`` did and what every sum of the standard means.  ``sum()`` on CPython
    >= 3.12 compensates rounding, which changes the last bits of results and, through the exact probability
    check, which rows get softmaxed.  An empty input gives the int 0.
    """
    total = 0
    for v in values:
        total += v
    return total


def argmax(vector: Vector) -> int:
    """Index of the maximum; on ties the first such index (the standard's tie rule).

    For a non-empty list, ``max`` keeps the first element that no later one exceeds (the same ``>`` comparisons
    as the loop below) and ``list.index`` finds the first element identical or equal to it: the same index, in
    C.  Other sequences (tuples, arrays) take the loop.
    """
    if type(vector) is list and vector:
        return vector.index(max(vector))
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
        raise InvalidValueError("softmax needs at least one value, got an empty vector")
    top = max(vector)
    exps = [math.exp(v - top) for v in vector]
    total = sequential_sum(exps)
    return [e / total for e in exps]


#: below this many rows the per-row loop is as quick as NumPy's conversions
VECTOR_ROWS = 16


def row_max(np: Any, values: Any) -> Any:
    """Each row's maximum of a 2-D array (n × K) as a column (n × 1): ``values.max(axis=1, keepdims=True)``.

    A maximum is exact, so folding ``np.maximum`` over the columns left to right gives the same values
    (NumPy's reduction keeps the earlier of two equal values as ``np.maximum`` does, signed zeros and NaN
    included), a column at a time: NumPy reduces a short last axis some 50 times slower than it compares
    two columns (60–120 µs against 1 µs for 1,000 rows), and the fits compute it at every Newton step.
    """
    top = values[:, :1].copy()
    for column in range(1, values.shape[1]):
        np.maximum(top, values[:, column:column + 1], out=top)
    return top


def row_sum(values: Any) -> Any:
    """Each row's left-to-right sum of a 2-D array (n × K) as a column (n × 1), a column at a time, from 0.0:
    :func:`sequential_sum` of each row (whose integer 0 plus a float is 0.0 plus it), and, for fewer than 8
    columns, ``values.sum(axis=1, keepdims=True)`` to the bit (NumPy's pairwise summation adds fewer than 8
    values to 0.0 left to right; ``tests/metrics/test_vectorised_rows.py`` checks both)."""
    total = values[:, :1] + 0.0  # 0.0 + x is x, but 0.0 for -0.0
    for column in range(1, values.shape[1]):
        total += values[:, column:column + 1]
    return total


def softmax_array(np: Any, values: Any) -> Any:
    """:func:`softmax` of every row of a 2-D array of finite floats, to the last bit of the per-row loop.

    Subtracting the maximum, adding and dividing are single IEEE operations, the same in NumPy as in
    Python; the sums add the columns left to right as :func:`sequential_sum` does (its integer 0 plus
    the first exponential is that exponential).  Only the exponential differs: NumPy's SIMD ``exp``
    is not ``math.exp`` in the last bit for about one value in twenty, so ``math.exp`` computes each
    (one C-level ``map`` over the whole array).
    """
    with np.errstate(over="ignore"):  # past the float range: -inf, as Python gives it without a warning
        shifted = values - row_max(np, values)
    exps = np.fromiter(map(math.exp, shifted.ravel().tolist()), np.float64, shifted.size).reshape(shifted.shape)
    return exps / row_sum(exps)


def float_array(np: Any, matrix: Matrix) -> Any:
    """``matrix`` as an n × K float64 array when it is n >= 1 lists of K >= 1 finite floats (exactly those
    values); None for anything else (ints, NumPy scalars, ragged or empty rows), which keeps the loop."""
    if getattr(matrix, "floats", None) is not None:  # rows made from this very array (PredictionRows.of_array)
        return matrix.floats
    if not matrix or set(map(type, matrix)) != {list}:
        return None
    width = len(matrix[0])
    if width == 0 or set(map(len, matrix)) != {width} or not set(map(type, chain.from_iterable(matrix))) <= {float}:
        return None
    # every value a float: read in row order from one flat iterator (a third of np.array's time on nested lists)
    values = np.fromiter(chain.from_iterable(matrix), np.float64, len(matrix) * width).reshape(len(matrix), width)
    return values if np.isfinite(values).all() else None


def loaded_numpy() -> Any:
    """NumPy when this process has already imported it, else None (the vectorised paths' condition)."""
    return sys.modules.get("numpy")


#: the metrics marked by :func:`reads_rows_only`, by identity (a wrapper that copies a function's
#: attributes is not the function; a metric made per call is dropped with it)
_READ_ONLY_METRICS: "weakref.WeakSet[Callable]" = weakref.WeakSet()


def reads_rows_only(metric: Callable) -> Callable:
    """Mark a metric that never changes the rows it is given (the standard's metrics).

    A run hands rows shared between queries (one object per one-hot label) only to
    metrics that all carry this mark; any other metric gets one list per query, as
    the rows are documented to be.
    """
    _READ_ONLY_METRICS.add(metric)
    return metric


def all_read_rows_only(metrics: Iterable[Callable]) -> bool:
    """Whether every metric is marked by :func:`reads_rows_only`."""
    return all(map(_marked, metrics))


def _marked(metric: Callable) -> bool:
    try:
        return metric in _READ_ONLY_METRICS
    except TypeError:  # an unhashable callable: never marked
        return False


class PredictionRows(list):
    """The rows a run hands its metrics: a plain list that remembers its conditional softmax.

    Every score metric applies the same rule to the same rows and reads the same argmax
    labels, and the bias metrics read the same column means; computing them once per
    pass instead of once per metric is the only reason this class exists.
    ``normalized is self`` means every row passed the probability check; :meth:`passing`
    makes such rows when that is known without checking.  ``rule`` is the exact-sum rule
    the rows take (:data:`CHECK`, the standard's, unless they declare :data:`SOFTMAX`);
    ``own`` caches the model's own distribution (:func:`~StaICC.metrics.exact_sum.own_distribution`);
    ``exact`` marks one-hot rows of int answers, which no rounding can move; ``values`` holds the
    normalized rows as a float array when they were computed at once (:func:`normalized_values`); ``floats``
    the rows themselves as the read-only float array they are the ``tolist()`` of (:meth:`of_array`).
    """

    __slots__ = ("normalized", "labels", "means", "rule", "own", "exact", "values", "floats")

    def __init__(self, rows=(), rule: str = CHECK) -> None:
        super().__init__(rows)
        self.normalized = None
        self.labels = None
        self.means = None
        self.rule = rule
        self.own = None
        self.exact = False
        self.values = None
        self.floats = None

    @classmethod
    def of_array(cls, array: Any) -> "PredictionRows":
        """``array.tolist()`` (n × K float64), the array kept read-only as ``floats`` where every value is finite."""
        rows = cls(array.tolist())
        if loaded_numpy().isfinite(array).all():
            rows.floats, array.flags.writeable = array, False
        return rows

    @classmethod
    def passing(cls, rows, labels: List[int]) -> "PredictionRows":
        """Rows known to pass the probability check, ``labels`` their argmax (one-hot rows of int answers)."""
        known = cls(rows)
        known.normalized, known.labels, known.exact = known, labels, True
        return known


def rule_of(matrix: Matrix) -> str:
    """The exact-sum rule rows take: their declared one, else the standard's check (plain lists)."""
    return getattr(matrix, "rule", CHECK)


def joined_rows(first: Matrix, second: Matrix) -> PredictionRows:
    """``first + second`` as :class:`PredictionRows` that keep what is known of both parts.

    When every row of both parts passes the probability check, so does every row of the
    whole, whose labels are the parts' labels one after the other.  Otherwise the whole
    is checked (and softmaxed) when first read, as the rule is stated for the matrix.
    The whole takes ``second``'s rule: the run's rows, after rows carried from before.
    """
    joined = PredictionRows(first, rule_of(second))
    joined.extend(second)
    joined.floats = None if first else getattr(second, "floats", None)
    if joined.rule == CHECK and _all_pass(first) and _all_pass(second):
        joined.normalized = joined
        joined.labels = normalized_labels(first) + normalized_labels(second)
        joined.exact = getattr(first, "exact", not first) and getattr(second, "exact", not second)
    return joined


def _all_pass(matrix: Matrix) -> bool:
    """Known without a check that every row passes (an empty matrix passes)."""
    return len(matrix) == 0 or getattr(matrix, "normalized", None) is matrix


def softmax_unless_probabilities(matrix: Matrix) -> Matrix:
    """The standard's rule for the score metrics: softmax every row unless all rows pass the check.

    Rows whose rule is :data:`SOFTMAX` are softmaxed without the check.
    """
    cached = getattr(matrix, "normalized", None)
    if cached is not None:
        return cached
    result, labels, values = _normalized(matrix)
    if isinstance(matrix, PredictionRows):
        matrix.normalized, matrix.values = result, values
        if matrix.labels is None:
            matrix.labels = labels
    return result


def normalized_values(matrix: Matrix) -> Any:
    """The rows of :func:`softmax_unless_probabilities` as an n × K float64 array where :class:`PredictionRows`
    computed them at once (NumPy loaded, float rows), else None: the same values as the rows, for the metrics
    that read a whole pass at once (ECE's bins).  Plain lists keep nothing, so they give None at once."""
    if not isinstance(matrix, PredictionRows):
        return None
    softmax_unless_probabilities(matrix)
    return matrix.values


def _normalized(matrix: Matrix) -> Tuple[Matrix, Optional[List[int]], Any]:
    """(the rows the rule gives, their argmax labels and their float array where the rows were computed at once,
    else None and None).

    Rows that :func:`float_array` takes, when NumPy is loaded, are checked and softmaxed by
    :func:`softmax_array` (the same bits as the per-row loop); the others row by row.
    """
    check = rule_of(matrix) == CHECK
    np = loaded_numpy()
    values = float_array(np, matrix) if np is not None and len(matrix) >= VECTOR_ROWS else None
    if values is None:
        return (matrix if check and is_probability_matrix(matrix) else [softmax(row) for row in matrix]), None, None
    if check and _probability_values(np, values):
        return matrix, values.argmax(axis=1).tolist(), values
    probabilities = softmax_array(np, values)
    return probabilities.tolist(), probabilities.argmax(axis=1).tolist(), probabilities


def _probability_values(np: Any, values: Any) -> bool:
    """:func:`is_probability_matrix` of a float array: entries in [0, 1], each row's left-to-right sum exactly 1."""
    with np.errstate(over="ignore"):  # past the float range: inf, as Python gives it without a warning
        total = row_sum(values)
    return bool(((values >= 0) & (values <= 1)).all() and (total == 1).all())


def normalized_labels(matrix: Matrix) -> List[int]:
    """The argmax of every row after :func:`softmax_unless_probabilities`, computed once per :class:`PredictionRows`.

    Accuracy, macro-F1, ECE and consistency all read these labels.
    """
    cached = getattr(matrix, "labels", None)
    if cached is not None:
        return cached
    rows = softmax_unless_probabilities(matrix)
    labels = getattr(matrix, "labels", None)  # found with the rows when they were computed at once
    if labels is None:
        labels = list(map(argmax, rows))
        if isinstance(matrix, PredictionRows):
            matrix.labels = labels
    return labels


def column_means(matrix: Matrix) -> List[float]:
    """mean_c = (left-to-right sum over the rows of p_i[c]) / N, per column.

    When a column's sum overflows although its entries are finite (values near the
    float maximum), the column is summed again with every entry scaled by a power of
    two small enough that no partial sum can overflow, and the mean scaled back.
    Scaling by a power of two is exact, so this path is only taken where the plain
    formula would have returned inf or NaN.  The means of :class:`PredictionRows` are
    computed once (the bias metrics all read them); every call returns a new list.
    """
    if not isinstance(matrix, PredictionRows):
        return _column_means(matrix)
    if matrix.means is None:
        matrix.means = _column_means(matrix)
    return list(matrix.means)


def _column_means(matrix: Matrix) -> List[float]:
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


def entropy(vector: Vector, softmax_always: bool = False) -> float:
    """Entropy in nats, -(left-to-right sum of v*log v over the non-zero entries).

    A vector that fails the exact probability check is softmaxed first (the
    standard's rule for the bias entropy, applied to the mean row); with
    ``softmax_always`` it is softmaxed without the check (the :data:`SOFTMAX` branch).
    """
    if softmax_always or not is_probability_vector(vector):
        vector = softmax(vector)
    return -sequential_sum(v * math.log(v) for v in vector if v != 0)


def linear_regression(x: Sequence[float], y: Sequence[float]) -> Tuple[float, float]:
    """Least-squares (slope, intercept) with the standard's formula and sequential sums."""
    if len(x) != len(y):
        raise InvalidValueError(f"x and y should have the same length: {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        raise InvalidValueError(f"linear_regression needs at least 2 points, got {n}")
    sx, sy = sequential_sum(x), sequential_sum(y)
    sxx = sequential_sum(v * v for v in x)
    sxy = sequential_sum(a * b for a, b in zip(x, y))
    if n * sxx - sx * sx == 0:
        raise InvalidValueError("linear_regression: every x is the same value, so the line has no slope")
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return slope, (sy - slope * sx) / n
