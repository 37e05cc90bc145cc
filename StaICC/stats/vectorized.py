"""The bootstrap over all resamples at once, with NumPy when it is installed.

A resample of T test items is a multiset: every metric of the standard except the bias
means is a function of sums over rows, and a sum over the rows of a resample equals
``counts @ per_item_sums`` where ``counts[b, i]`` is how often resample b drew item i.
So each (sub-benchmark, dataset) gets its per-item sums once (shared by every metric
and every resample) and one matrix product per statistic gives all resamples at once.

Integer sums (correct answers, predicted labels, bin counts) are exact, so accuracy,
macro-F1 and the consistency counts are the same bits as the pure-Python path; float
sums (likelihood, confidences, the bias means) are summed in another order and agree
within 1e-12.  The likelihood and ECE on the model's own distribution read per-row
summaries of its own rows (``ItemTable.own_summaries``), one set per branch of
``own_distribution``, chosen per resample.  Every metric a run reports has a form here
(:data:`VECTORISED`); the opt-in metrics of :data:`PER_RESAMPLE` say why they have none.
A resample whose numbers fall on a special case of the standard (a zero mean, an
overflow) is computed by the pure-Python :class:`~StaICC.stats.statistic.Statistic` itself.
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import metrics as _metrics
from ..metrics import linear_regression
from ..numeric import loaded_numpy, sequential_sum
from ..metrics.bias import _kl_to_frequencies
from ..standard import ECE_BINS
from ..validation import check, Options
from .items import Draws, is_consistency
from .statistic import entropy_on_branch

#: "auto": NumPy when installed; "python": always the per-resample path; "numpy": NumPy or ImportError
ENGINES = ("auto", "python", "numpy")


def numpy_module(engine: str = "auto") -> Any:
    """NumPy for ``engine`` ("auto": when installed), or None for the pure-Python path."""
    check(engine, Options(ENGINES, text=f"one of {', '.join(ENGINES)}"), "engine")
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
    counts = (draws if isinstance(draws, Draws) else Draws([list(d) for d in draws])).counts(np)
    vectorised = _Vectorised(np, statistic, counts).values()
    point = statistic.point()
    columns: Dict[str, List[Any]] = {}
    for n in names:  # a metric whose vectorised identity resample disagrees stays in Python
        if n in vectorised and _close(vectorised[n][-1], point.get(n)):
            columns[n] = vectorised[n][:-1]
        else:
            columns[n] = [None] * len(draws)
    holes = {b for n in names if None in columns[n] for b, v in enumerate(columns[n]) if v is None}
    for b in sorted(holes):  # a resample any metric of which is left to the statistic, in order
        full = statistic(draws[b])
        for n in names:
            if columns[n][b] is None:
                columns[n][b] = full[n]
    return columns


def float_values(values: Sequence[Any]) -> Any:
    """A bootstrap distribution as a float64 array, exactly its values, when NumPy is loaded and every value
    is a float (None otherwise): the loops over its resamples then run at once, with the same IEEE results."""
    np = loaded_numpy()
    if np is None or len(values) == 0 or set(map(type, values)) != {float}:
        return None
    return np.fromiter(values, np.float64, len(values))


def weighted_values(statistic, weights: Any) -> Dict[str, List[Any]]:
    """The statistic's metrics with item weights: one row of ``weights`` (summing to the number of
    items) per evaluation; metric name -> one value per row (None where the standard takes a special
    path).  Needs NumPy.  Metrics without a vectorised form are left out."""
    np = numpy_module("numpy")
    return _Vectorised(np, statistic, weights).values()


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if a is None or b is None:
        return False
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


class _Vectorised:
    """One statistic's supported metrics over all resamples: name -> list (None: compute in Python)."""

    def __init__(self, np: Any, statistic, weights: Any) -> None:
        """``weights``: one row of item weights per evaluation, each row summing to the number of items (how
        often a resample draws each item: :meth:`~StaICC.stats.items.Draws.counts`; or a weighted estimate)."""
        self.np, self.statistic, self.table = np, statistic, statistic.table
        self.labels = np.asarray(self.table.labels, dtype=np.intp)
        self.counts = np.asarray(weights, dtype=np.float64)

    def values(self) -> Dict[str, List[Any]]:
        """Every supported metric: each part adds its per-item columns, then one product gives every sum."""
        statistic, functions, table = self.statistic, self.statistic.functions, self.table
        sums = _Sums(self.np, self.counts)
        if is_consistency(statistic.benchmark):
            consistency = self._consistency(sums)
            return {n: consistency() for n, f in functions.items() if f is _metrics.consistency}
        score = [n for n in _SCORE if n in functions and functions[n] is getattr(_metrics, n)]
        if statistic.x_values is not None:
            per_pass = [self._scores(sums, p, score) for p in range(table.passes)]
            values = [finish() for finish in per_pass]
            return {n: _slopes(statistic.x_values, [v[n] for v in values]) for n in values[0]}
        scores = self._scores(sums, 0, score)
        bias = {n: f for n, f in functions.items() if f in _BIAS_FUNCTIONS}
        finish_bias = self._bias(sums, bias) if bias else dict
        out: Dict[str, List[Any]] = {n: values.tolist() for n, values in scores().items()}
        out.update(finish_bias())
        return out

    # -- the score metrics of one pass --------------------------------------
    def _arrays(self, summaries: Sequence[Sequence[Sequence[Any]]]):
        """(predicted, confidence, true-label probability, ECE bin), each R x T, of per-row summaries."""
        np = self.np
        array = np.array(summaries, dtype=np.float64)   # R x T x 4
        return array[:, :, 0].astype(np.intp), array[:, :, 1], array[:, :, 2], array[:, :, 3].astype(np.intp)

    def _summary_arrays(self, p: int):
        cache = getattr(self.table, "_summary_arrays", None)
        if cache is None:
            cache = self.table._summary_arrays = {}
        if p not in cache:
            cache[p] = self._arrays(self.table.summaries[p])
        return cache[p]

    def _scores(self, sums: "_Sums", p: int, names: Sequence[str]) -> Callable[[], Dict[str, Any]]:
        """The score metrics of pass p, the standard's and those on the model's own distribution."""
        standard = self._from_summaries(sums, self._summary_arrays(p), names, _STANDARD_KEYS)
        own = self._own(sums, p, [n for n in _OWN if n in names])
        return lambda: {**standard(), **own()}

    def _own(self, sums: "_Sums", p: int, names: Sequence[str]) -> Callable[[], Dict[str, Any]]:
        """The own-distribution metrics of pass p: per resample, the branch of ``own_distribution`` it takes
        (its rows divided by their sums when it draws no row that is not probability-like, else softmaxed)."""
        if not names:
            return dict
        np = self.np
        alone, softmaxed, unlike = self.table.own_summaries(p)
        values = self._from_summaries(sums, self._arrays(alone), names, _OWN_KEYS)
        if softmaxed is alone:
            return values
        other = self._from_summaries(sums, self._arrays(softmaxed), names, _OWN_KEYS)
        drawn = sums.add(np.asarray(unlike, dtype=np.float64)[:, None])

        def finish() -> Dict[str, Any]:
            takes_alone = sums[drawn][:, 0] == 0
            first, second = values(), other()
            return {n: np.where(takes_alone, first[n], second[n]) for n in first}
        return finish

    def _from_summaries(self, sums: "_Sums", arrays: Any, names: Sequence[str],
                        keys: Dict[str, str]) -> Callable[[], Dict[str, Any]]:
        """Score metrics from per-row summaries (R x T arrays) through their per-item sums.  ``keys``: the
        metric name under which each formula (accuracy, likelihood, macro_F1, ece) is reported."""
        np, table = self.np, self.table
        predicted, confidence, truelabel, bins = arrays
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
        keys_of = [sums.add(np.asarray(c, dtype=np.float64)) for c in columns]
        wanted = {formula: name for formula, name in keys.items() if name in names}

        def finish() -> Dict[str, Any]:
            part = [sums[k] for k in keys_of]
            out: Dict[str, Any] = {}
            if "accuracy" in wanted:
                out[wanted["accuracy"]] = part[0][:, 0] / N
            if "likelihood" in wanted:
                out[wanted["likelihood"]] = part[1][:, 0] / N
            if "macro_F1" in wanted:
                out[wanted["macro_F1"]] = _macro_f1(np, part[4], part[2], part[3], W)
            if "ece" in wanted and N >= ECE_BINS:
                out[wanted["ece"]] = _ece(np, part[5], part[6], part[7], N)
            return out
        return finish

    # -- consistency over all passes -----------------------------------------
    def _consistency(self, sums: "_Sums") -> Callable[[], List[Any]]:
        np, table = self.np, self.table
        shares = []
        for i in range(len(table)):
            labels = [rep[i][0] for reps in table.summaries for rep in reps]
            shares.append(_metrics.single_consistency(labels))
        key = sums.add(np.asarray(shares)[:, None])
        return lambda: (sums[key][:, 0] / len(table)).tolist()

    # -- the bias means -------------------------------------------------------
    def _bias(self, sums: "_Sums", functions: Dict[str, Any]) -> Callable[[], Dict[str, List[Any]]]:
        """The bias metrics from the means of the raw rows of pass 0 and the label frequencies per resample.

        The bias entropy takes the branch of the standard's exact check that the whole run took
        (``entropy_on_branch``), so no value depends on the last bit of a mean: a product over the
        items agrees with the standard's left-to-right sum within 1e-12, as every float sum here does.
        The post-bias metrics take each resample's own branch of the standard (``_post_bias_rows``):
        the raw means where every one is positive, else the means of the softmaxed rows where a drawn
        row has a negative entry (scores), else the raw means; the statistic's ``post_branch`` forces one
        branch on every evaluation (the lite hull of both, :mod:`.lite_branches`).
        """
        np, table = self.np, self.table
        raw = np.asarray(table.rows[0], dtype=np.float64)          # R x T x W
        R, N = raw.shape[0], raw.shape[0] * raw.shape[1]
        row_sums = sums.add(raw.sum(axis=0))
        label_counts = sums.add(((self.labels[:, None] == np.arange(table.width)) * R).astype(np.float64))
        post = any(f not in _PRIOR for f in functions.values())
        soft_sums = sums.add(_softmaxed_sums(np, table.rows[0])) if post else None
        negative = sums.add((raw < 0).any(axis=2).any(axis=0).astype(np.float64)[:, None]) if post else None

        def finish() -> Dict[str, List[Any]]:
            means, freqs = sums[row_sums] / N, sums[label_counts] / N
            positive = (means > 0).all(axis=1)
            post_means = means
            if post:
                scores = ~positive & (sums[negative][:, 0] > 0)
                forced = self.statistic.post_branch  # one branch on every evaluation (lite_branches)
                if forced is not None:
                    scores = np.full(scores.shape, forced == "softmax")
                raw_means = np.maximum(means, 0.0) if forced == "raw" else means
                post_means = np.where(scores[:, None], sums[soft_sums] / N, raw_means)
            branch = self.statistic.entropy_branch
            out = {}
            for name, f in functions.items():
                rows = means if f in _PRIOR else post_means
                out[name] = [_bias_value(f, m, q, branch) if ok else None
                             for m, q, ok in zip(rows.tolist(), freqs.tolist(), np.isfinite(rows).all(axis=1))]
            return out
        return finish


def _softmaxed_sums(np: Any, rows: Sequence[Sequence[Sequence[float]]]) -> Any:
    """Per item, the sum over its repeats of its softmaxed rows (the standard's softmax, row by row): the
    post-bias means of a resample whose raw means are not all positive and that draws a score row."""
    from ..numeric import softmax
    return np.asarray([[softmax(row) for row in rep] for rep in rows], dtype=np.float64).sum(axis=0)


class _Sums:
    """Per-item columns (T x c blocks) multiplied by the resample counts (B x T) in one product.

    One wide product costs about a fifth of one product per block on a loaded machine: BLAS
    wakes its threads once per call.  Every block is added first; reading one computes them all.
    """

    def __init__(self, np: Any, counts: Any) -> None:
        self.np, self.counts, self.blocks = np, counts, []
        self.slices: Optional[List[Any]] = None

    def add(self, block: Any) -> int:
        self.blocks.append(block)
        return len(self.blocks) - 1

    def __getitem__(self, key: int) -> Any:
        if self.slices is None:
            product = self.counts @ self.np.concatenate(self.blocks, axis=1)
            cut = self.np.cumsum([0] + [b.shape[1] for b in self.blocks]).tolist()
            self.slices = [product[:, cut[i]:cut[i + 1]] for i in range(len(self.blocks))]
        return self.slices[key]


def _slopes(x: Sequence[float], ys: Sequence[Any]) -> List[float]:
    """The least-squares slope of each resample's per-pass values ``ys`` (one array per pass) on ``x``:
    :func:`~StaICC.numeric.linear_regression`'s formula with its left-to-right sums, element-wise, so every
    slope has its bits."""
    linear_regression(x, [0.0] * len(ys))  # its checks: as many points as passes, a slope exists
    n, sx, sxx = len(x), sequential_sum(x), sequential_sum(v * v for v in x)
    sy, sxy = 0, 0
    for a, y in zip(x, ys):
        sy, sxy = sy + y, sxy + a * y
    return ((n * sxy - sx * sy) / (n * sxx - sx * sx)).tolist()


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


#: each score formula on per-row summaries, and the metric it gives on the standard's rows / the model's own rows
_STANDARD_KEYS = {"accuracy": "accuracy", "likelihood": "averaged_truelabel_likelihood", "macro_F1": "macro_F1",
                  "ece": "expected_calibration_error_1"}
_OWN_KEYS = {"likelihood": "own_likelihood_nonstandard", "ece": "own_ece_nonstandard"}
_OWN = tuple(_OWN_KEYS.values())
_SCORE = tuple(_STANDARD_KEYS.values()) + _OWN
#: every metric with a vectorised resampling form here, by registry name
VECTORISED = _SCORE + ("consistency", "bias_entropy", "bias_distribution", "post_bias_distribution",
                       "post_bias_dl_div")
#: the metrics recomputed in Python on every resample, and why they have no form here: each is opt-in (a flag of
#: compare and report, or a diagnosis outside the standard suite), so no default statistics step reads them
PER_RESAMPLE: Dict[str, str] = {
    **dict.fromkeys(("ece_equal_mass_1", "ece_equal_mass_10", "selective_accuracy", "coverage_accuracy_area",
                     "ece_platt", "brier_score", "classwise_ece"),
                    "calibration metric outside the standard (--calibration): sorts, ranks or fits every resample"),
    **dict.fromkeys(("accuracy_mean", "accuracy_min", "accuracy_max", "accuracy_spread", "cohen_kappa",
                     "fleiss_kappa"),
                    "agreement metric of the diagnoses outside the standard suite (Order_sens, Format_spread) and "
                    "of --agreement: per-rater tables of every item"),
}
_PRIOR = (_metrics.bias_distribution, _metrics.bias_entropy)
_BIAS_FUNCTIONS = _PRIOR + (_metrics.post_bias_distribution, _metrics.post_bias_dl_div)
