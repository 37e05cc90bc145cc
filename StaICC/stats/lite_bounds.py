"""A lite estimate and its interval cut to the values the metric can take.

The lite estimators correct a small sample's bias (the bias entropies, Normal's ECE, Post_bias's KL divergence:
:mod:`.lite_debiased`) and widen intervals for what a subset cannot see (:mod:`.lite_unseen`), and neither
step knows the metric's range: where the full run's value sits at the edge of it, a KL divergence near 0 came out
negative, an entropy of two labels above ln 2, an averaged ECE interval from -0.17.  The full run's value lies in
the range, so cutting the interval there never leaves it out (coverage is unchanged) and only narrows; the estimate
is cut with it (the range's nearest value is nearer the full run's than one outside).  Every lite path cuts
its cells here, once, after every other rule (hulls included): :func:`~.lite.estimate_statistic`, the proxy's
:class:`~.lite_proxy.TunedEstimator`, the coverage study's :func:`~.lite_batch.subset_estimates`, and the
averaged rows (:func:`~.lite_averaged.averaged`, with the mean of their datasets' bounds).

The ranges are those of the standard's own arithmetic: accuracy, macro-F1 and the consistencies count answers;
the likelihood, the ECE and the bias entropies read rows the standard's exact-sum rule keeps only where they are
probability vectors (else softmaxes).  The bias diagnoses' label distributions are the mean rows as the model gave
them (a model of log-probabilities has them below 0), and Post_bias compares the raw mean row of *scores* wherever
every mean is positive (a model of unnormalised positive scores has a KL divergence below 0): these metrics are cut
only where every row of the subset is a probability vector up to rounding (:func:`probability_items`), as every
model backend's and most functions' are.
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: the top of a bias entropy's range: ln K for its K labels
LN_LABELS = "ln K"
#: (sub-benchmark, metric) -> (least, largest) value; a vector metric's bounds hold for every element
RANGES: Dict[Tuple[str, str], Tuple[float, Any]] = {
    ("Normal", "accuracy"): (0.0, 1.0),
    ("Normal", "averaged_truelabel_likelihood"): (0.0, 1.0),
    ("Normal", "macro_F1"): (0.0, 1.0),
    ("Normal", "expected_calibration_error_1"): (0.0, 1.0),
    ("Contextual_bias", "distribution"): (0.0, 1.0),
    ("Domain_bias", "distribution"): (0.0, 1.0),
    ("Post_bias", "distribution"): (-1.0, 1.0),  # the mean prediction less the label frequencies
    ("Contextual_bias", "entropy"): (0.0, LN_LABELS),
    ("Domain_bias", "entropy"): (0.0, LN_LABELS),
    ("Post_bias", "DL div."): (0.0, math.inf),
    ("Template_sens", "consistency"): (0.0, 1.0),
    ("Demo_sens", "consistency"): (0.0, 1.0),
}

Bounds = Tuple[float, float]


#: the metrics whose range holds only for probability rows: Post_bias's raw mean row of scores, and the bias
#: diagnoses' mean distributions, which are the raw mean rows of a model's scores (log-probabilities: below 0)
ON_PROBABILITY_ROWS = frozenset({("Post_bias", "DL div."), ("Post_bias", "distribution"),
                                 ("Contextual_bias", "distribution"), ("Domain_bias", "distribution")})
#: how far from 1 a probability row's sum may be (rounding) and still count as one
ROW_SUM_TOLERANCE = 1e-9


def probability_items(table: Any) -> List[bool]:
    """Per item of ``table``, whether each of its rows (every pass and repeat) is a probability vector up to
    rounding: entries in [0, 1] summing to 1 within :data:`ROW_SUM_TOLERANCE`."""
    return [all(_is_probability_row(rows[i]) for per_pass in table.rows for rows in per_pass)
            for i in range(len(table))]


def _is_probability_row(row: Any) -> bool:
    return isinstance(row, (list, tuple)) and bool(row) and min(row) >= 0.0 and max(row) <= 1.0 \
        and abs(math.fsum(row) - 1.0) <= ROW_SUM_TOLERANCE


def cell_bounds(benchmark: str, metric: str, cells: Dict[str, Any], probabilities: bool = True) -> Optional[Bounds]:
    """The range of ``metric`` of one dataset's ``cells`` (metric -> (estimate, ...)): ln K from its label
    distribution's K; None where the metric has no known range (GLER's slopes), K is not there, or the range
    needs probability rows and the subset's are not (``probabilities``: :func:`subset_is_probability_rows`)."""
    found = RANGES.get((benchmark, metric))
    if found is None or (not probabilities and (benchmark, metric) in ON_PROBABILITY_ROWS):
        return None
    low, high = found
    if high == LN_LABELS:
        distribution = (cells.get("distribution") or (None,))[0]
        if not isinstance(distribution, list) or not distribution:
            return None
        high = math.log(len(distribution))
    return low, high


def cut(value: Any, low: Any, high: Any, bounds: Optional[Bounds]) -> Tuple[Any, Any, Any]:
    """(estimate, low, high) each moved into ``bounds`` (element by element for a vector); as given without
    bounds or where a number is not finite (NaN stays NaN: a missing value is not made a bound)."""
    if bounds is None:
        return value, low, high
    if isinstance(value, list):
        cells = [cut(v, lo, hi, bounds) for v, lo, hi in zip(value, low, high)]
        return [c[0] for c in cells], [c[1] for c in cells], [c[2] for c in cells]
    return tuple(_into(x, bounds) for x in (value, low, high))  # type: ignore[return-value]


def _into(x: Any, bounds: Bounds) -> Any:
    if not isinstance(x, float) or math.isnan(x):
        return x
    return min(max(x, bounds[0]), bounds[1])


def within_range(benchmark: str, found: Dict[str, Tuple[Any, Any, Any, Any]],
                 probabilities: bool = True) -> Dict[str, Tuple[Any, Any, Any, Any]]:
    """``found`` (metric -> (estimate, low, high, resamples)) with every estimate and interval cut to its metric's
    range (``probabilities``: whether the subset's rows are probability vectors); the resamples stay as they are
    (the averaged rows average them, then cut with :func:`cell_bounds`)."""
    out = {}
    for metric, (value, low, high, scaled) in found.items():
        out[metric] = (*cut(value, low, high, cell_bounds(benchmark, metric, found, probabilities)), scaled)
    return out


def needs_rows(benchmark: str) -> bool:
    """Whether a metric of ``benchmark`` has its range only on probability rows (:data:`ON_PROBABILITY_ROWS`)."""
    return any(b == benchmark for b, _ in ON_PROBABILITY_ROWS)


def subset_is_probability_rows(benchmark: str, table: Any) -> bool:
    """Whether every row of a subset's table is a probability vector (:func:`probability_items`), where its
    sub-benchmark has a metric that needs it; True elsewhere, without reading the rows: :func:`subset_rows_of`
    of the table itself, for its every item."""
    return subset_rows_of(benchmark, table)(range(len(table)))


def mean_bounds(bounds: Any) -> Optional[Bounds]:
    """The averaged row's range from its datasets' ranges: the means of their ends (an average of values each in
    its own range lies in it); None where a dataset's is unknown."""
    if not bounds or any(b is None for b in bounds):
        return None
    return math.fsum(b[0] for b in bounds) / len(bounds), math.fsum(b[1] for b in bounds) / len(bounds)


def subset_rows_of(benchmark: str, table: Any) -> Callable[[Sequence[int]], bool]:
    """Positions -> whether every row of those items of ``table`` is a probability vector (:func:`probability_items`,
    each item read once, for as many subsets of one full table as the coverage study draws), where ``benchmark`` has
    a metric whose range needs it (:func:`needs_rows`); True for any positions elsewhere, without reading the rows."""
    if not needs_rows(benchmark):
        return lambda _: True
    rows = probability_items(table)
    return lambda positions: all(rows[i] for i in positions)
