"""The bootstrap over all resamples at once, with NumPy when it is installed.

A resample of T test items is a multiset: every metric of the standard except the bias
means is a function of sums over rows, and a sum over the rows of a resample equals
``counts @ per_item_sums`` where ``counts[b, i]`` is how often resample b drew item i.
So each (sub-benchmark, dataset) gets its per-item sums once (shared by every metric
and every resample) and one matrix product per statistic gives all resamples at once.

Integer sums (correct answers, predicted labels, bin counts) are exact, so accuracy,
macro-F1 and the consistency counts are the same bits as the pure-Python path; float
sums (likelihood, confidences) are summed in another order and agree within 1e-12.
The bias means keep the standard's left-to-right order (the exact probability check
of the entropy depends on their last bit), summed over all resamples in one vector
per row position.  A metric without a vectorised form, or a resample whose numbers
fall on a special case of the standard (a zero mean, an overflow), is computed by the
pure-Python :class:`~StaICC.stats.statistic.Statistic` itself.
"""
import math
from typing import Any, Dict, List, Optional, Sequence

from .. import metrics as _metrics
from ..metrics import linear_regression
from ..metrics.bias import _kl_to_frequencies
from ..standard import ECE_BINS
from .items import Draws, is_consistency
from .statistic import entropy_on_branch

#: "auto": NumPy when installed; "python": always the per-resample path; "numpy": NumPy or ImportError
ENGINES = ("auto", "python", "numpy")
#: resamples gathered together when the bias means are summed (bounds memory: chunk x T x width floats)
_CHUNK = 256


def numpy_module(engine: str = "auto") -> Any:
    """NumPy for ``engine`` ("auto": when installed), or None for the pure-Python path."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "python":
        return None
    try:
        import numpy
    except ImportError:
        if engine == "numpy":
            from ..extras import require
            return require("numpy", "the vectorised bootstrap")
        return None
    return numpy


def resample_values(statistic, draws: Sequence[Sequence[int]], engine: str = "auto") -> Dict[str, List[Any]]:
    """The statistic's values on every resample: metric name -> one value per resample.

    Vectorised where it can be; a metric whose vectorised value on the identity resample
    differs from the Python value (beyond 1e-12), and a resample on a special case, are
    computed by the statistic itself.
    """
    names = statistic.names()
    np = numpy_module(engine)
    if np is None or not draws:
        values = [statistic(sample) for sample in draws]
        return {n: [v[n] for v in values] for n in names}
    identity = statistic.table.identity()
    with_identity = draws.appended(identity) if isinstance(draws, Draws) else list(draws) + [identity]
    vectorised = _Vectorised(np, statistic, with_identity).values()
    point = statistic.point()
    columns: Dict[str, List[Any]] = {}
    for n in names:  # a metric whose vectorised identity resample disagrees stays in Python
        if n in vectorised and _close(vectorised[n][-1], point.get(n)):
            columns[n] = vectorised[n][:-1]
        else:
            columns[n] = [None] * len(draws)
    for b in range(len(draws)):
        missing = [n for n in names if columns[n][b] is None]
        if missing:
            full = statistic(draws[b])
            for n in missing:
                columns[n][b] = full[n]
    return columns


def weighted_values(statistic, weights: Any) -> Dict[str, List[Any]]:
    """The statistic's metrics with item weights: one row of ``weights`` (summing to the number of
    items) per evaluation; metric name -> one value per row (None where the standard takes a special
    path).  Needs NumPy.  Metrics without a vectorised form are left out."""
    np = numpy_module("numpy")
    return _Vectorised(np, statistic, weights=weights).values()


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if a is None or b is None:
        return False
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


class _Vectorised:
    """One statistic's supported metrics over all resamples: name -> list (None: compute in Python)."""

    def __init__(self, np: Any, statistic, draws: Optional[Sequence[Sequence[int]]] = None,
                 weights: Any = None) -> None:
        """``draws``: resamples of item positions; or ``weights``: one row of item weights per resample,
        each row summing to the number of items (a weighted estimate; the bias means are then
        summed by a matrix product, not left to right)."""
        self.np, self.statistic, self.table = np, statistic, statistic.table
        self.labels = np.asarray(self.table.labels, dtype=np.intp)
        if weights is not None:
            self.index = None
            self.counts = np.asarray(weights, dtype=np.float64)
            return
        matrix = getattr(draws, "matrix", None)
        self.index = matrix if matrix is not None else np.asarray(draws, dtype=np.intp)
        B, T = self.index.shape
        flat = (np.arange(B)[:, None] * T + self.index).ravel()
        self.counts = np.bincount(flat, minlength=B * T).reshape(B, T).astype(np.float64)

    def values(self) -> Dict[str, List[Any]]:
        statistic = self.statistic
        functions = statistic.functions
        table = self.table
        if is_consistency(statistic.benchmark):
            return {n: self._consistency() for n, f in functions.items() if f is _metrics.consistency}
        score = [n for n in _SCORE if n in functions and functions[n] is getattr(_metrics, n)]
        out: Dict[str, List[Any]] = {}
        if statistic.x_values is not None:
            per_pass = [self._scores(p, score) for p in range(table.passes)]
            for n in score:
                ys = self.np.stack([values[n] for values in per_pass], axis=1)
                out[n] = [linear_regression(statistic.x_values, list(y))[0] for y in ys.tolist()]
            return out
        for n, values in self._scores(0, score).items():
            out[n] = values.tolist()
        bias = {n: f for n, f in functions.items() if f in _BIAS_FUNCTIONS}
        if bias:
            out.update(self._bias(bias))
        return out

    # -- the score metrics of one pass --------------------------------------
    def _summary_arrays(self, p: int):
        cache = getattr(self.table, "_summary_arrays", None)
        if cache is None:
            cache = self.table._summary_arrays = {}
        if p not in cache:
            np = self.np
            summaries = np.array(self.table.summaries[p], dtype=np.float64)   # R x T x 4
            cache[p] = (summaries[:, :, 0].astype(np.intp), summaries[:, :, 1], summaries[:, :, 2],
                        summaries[:, :, 3].astype(np.intp))
        return cache[p]

    def _scores(self, p: int, names: Sequence[str]) -> Dict[str, Any]:
        """The score metrics of pass p: every per-item sum in one matrix, one product for all resamples."""
        np, table = self.np, self.table
        predicted, confidence, truelabel, bins = self._summary_arrays(p)
        R, T = predicted.shape
        N, W = R * T, table.width
        correct = predicted == self.labels[None, :]
        classes = np.arange(W)
        is_label = self.labels[:, None] == classes                                   # T x W
        in_bin = bins[:, :, None] == np.arange(ECE_BINS)                             # R x T x bins
        columns = [correct.sum(axis=0)[:, None], truelabel.sum(axis=0)[:, None],   # 0, 1
                   (predicted[:, :, None] == classes).sum(axis=0),                   # 2 .. 2+W
                   is_label * R, is_label * correct.sum(axis=0)[:, None],            # true count, hits
                   in_bin.sum(axis=0), (in_bin & correct[:, :, None]).sum(axis=0),   # bin counts, bin hits
                   (in_bin * confidence[:, :, None]).sum(axis=0)]                    # bin confidence sums
        features = np.concatenate([np.asarray(c, dtype=np.float64) for c in columns], axis=1)
        S = self.counts @ features
        cut = np.cumsum([0] + [c.shape[1] for c in columns])
        part = [S[:, cut[i]:cut[i + 1]] for i in range(len(columns))]
        out: Dict[str, Any] = {}
        if "accuracy" in names:
            out["accuracy"] = part[0][:, 0] / N
        if "averaged_truelabel_likelihood" in names:
            out["averaged_truelabel_likelihood"] = part[1][:, 0] / N
        if "macro_F1" in names:
            out["macro_F1"] = _macro_f1(np, part[4], part[2], part[3], W)
        if "expected_calibration_error_1" in names and N >= ECE_BINS:
            out["expected_calibration_error_1"] = _ece(np, part[5], part[6], part[7], N)
        return out

    # -- consistency over all passes -----------------------------------------
    def _consistency(self) -> List[Any]:
        np, table = self.np, self.table
        shares = []
        for i in range(len(table)):
            labels = [rep[i][0] for reps in table.summaries for rep in reps]
            shares.append(_metrics.single_consistency(labels))
        return ((self.counts @ np.asarray(shares)) / len(table)).tolist()

    # -- the bias means, left to right ----------------------------------------
    def _column_means(self) -> Any:
        """Means of the raw rows of pass 0 per resample, summed in the run's row order (B x W).

        The rows are added one position at a time, left to right, so every mean has the bits
        of the standard's sequential sum, on which the entropy's exact probability check depends.
        """
        np, table = self.np, self.table
        raw = np.asarray(table.rows[0], dtype=np.float64)          # R x T x W
        R, T = raw.shape[0], len(table)
        if self.index is None:  # weighted: one product
            return (self.counts @ raw.sum(axis=0)) / (R * T)
        B = self.index.shape[0]
        totals = np.zeros((B, table.width))
        for start in range(0, B, _CHUNK):
            index = self.index[start:start + _CHUNK].T                # T x b: row order within a repeat
            total = np.zeros((index.shape[1], table.width))
            for rep in raw:
                gathered = rep[index]                                 # T x b x W, contiguous per position
                for position in gathered:
                    np.add(total, position, out=total)
            totals[start:start + _CHUNK] = total
        return totals / (R * T)

    def _bias(self, functions: Dict[str, Any]) -> Dict[str, List[Any]]:
        np = self.np
        means = self._column_means()
        finite = np.isfinite(means).all(axis=1)
        R = len(self.table.rows[0])
        N = R * len(self.table)
        width = self.table.width
        freqs = (self.counts @ ((self.labels[:, None] == np.arange(width)) * R)) / N
        means_list, freqs_list, finite_list = means.tolist(), freqs.tolist(), finite.tolist()
        positive = (means > 0).all(axis=1).tolist()
        out: Dict[str, List[Any]] = {}
        for name, f in functions.items():
            values: List[Any] = []
            for m, q, ok, pos in zip(means_list, freqs_list, finite_list, positive):
                values.append(_bias_value(f, m, q, self.statistic.entropy_branch) if ok and (pos or f in _PRIOR)
                              else None)
            out[name] = values
        return out


def _macro_f1(np: Any, tp: Any, predicted_count: Any, true_count: Any, width: int) -> Any:
    """Macro-F1 per resample from per-class counts, with the standard's operations in its order."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted_count > 0, tp / predicted_count, 0.0)
        recall = np.where(true_count > 0, tp / true_count, 0.0)
        f1 = np.where(precision + recall > 0, ((2 * precision) * recall) / (precision + recall), 0.0)
    total = np.zeros(tp.shape[0])
    for c in range(width):  # left to right, as the standard sums the classes
        total = total + f1[:, c]
    return total / width


def _ece(np: Any, count: Any, hits: Any, sums: Any, N: int) -> Any:
    """ECE per resample from per-bin counts, hits and confidence sums (empty bins add nothing)."""
    ece = np.zeros(count.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(ECE_BINS):
            term = (count[:, j] / N) * np.abs(hits[:, j] / count[:, j] - sums[:, j] / count[:, j])
            ece = ece + np.where(count[:, j] > 0, term, 0.0)
    return ece


def _bias_value(function: Any, means: List[float], freqs: List[float], branch: Optional[bool]) -> Optional[Any]:
    """A bias metric from its means; None where the standard takes a special path (computed in Python).

    ``branch``: the exact-check branch the whole run's entropy took (see ``entropy_on_branch``).
    """
    if function is _metrics.bias_distribution:
        return means
    if function is _metrics.bias_entropy:
        return entropy_on_branch(means, bool(branch))
    if function is _metrics.post_bias_distribution:
        return [m - f for m, f in zip(means, freqs)]
    result = _kl_to_frequencies(means, freqs)  # post_bias_dl_div on positive, finite means
    return result if math.isfinite(result) or 0 in freqs else None


_SCORE = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")
_PRIOR = (_metrics.bias_distribution, _metrics.bias_entropy)
_BIAS_FUNCTIONS = _PRIOR + (_metrics.post_bias_distribution, _metrics.post_bias_dl_div)
