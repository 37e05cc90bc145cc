"""Normal's ECE from a subset: a debiased estimate, and an interval that allows for the bins near zero.

The standard's ECE (``expected_calibration_error_1``, :data:`~StaICC.standard.ECE_BINS` equal-width
bins of confidence) is a sum over bins of absolute values,

    ECE = sum_b |g_b|,   g_b = (1 / (R T)) sum_{rows r of items i in bin b} (correct_ri - confidence_ri),

where each *signed bin gap* g_b is a weighted total over items: a smooth statistic, which the
rescaling bootstrap of :mod:`StaICC.stats.lite` estimates with its finite-population spread.  The
absolute value is what makes the plug-in ECE biased: a bin whose full-run gap is near zero
gets |g_b + noise| on a subset, about sigma_b sqrt(2 / pi) too large where g_b = 0, and the
bootstrap's own bias estimate sees only about 40 % of that there (it starts from the already
inflated |g_b-hat|).  So the lite run works with the signed gaps:

* **The estimate** is the plug-in corrected by the bootstrap's estimate of its bias (Efron &
  Tibshirani ch. 10): ECE-hat - (mean of the resamples' ECE - ECE-hat).  It removes all of the
  bias of a bin far from zero and part of it near zero.  The squared-gap debiasing of Sun et al.
  (2024, "debiased ECE": g_b-hat^2 - v_b is unbiased for g_b^2, so sum_b sqrt(max(g_b-hat^2 - v_b, 0)))
  was measured too and not taken: with the few items per bin of a subset (a dozen or fewer) the
  square root of a truncated unbiased square is biased downwards by more than the plug-in is upwards
  (60 stratified items of a 600-item table: mean error -0.048 against the plug-in's +0.012 and the
  bootstrap-corrected -0.004; ``tests/stats/test_lite_averaged.py``).
* **The interval** follows from the triangle inequality.  Write e_b = g_b-hat - g_b.  A bin whose
  gap is far from zero (|g_b-hat| > :data:`FAR` sigma_b, so its sign is known) moves the ECE
  linearly: |g_b| - |g_b-hat| = -s_b e_b.  A bin near zero moves it by at most |e_b| either way.
  So the full run's ECE lies in
  [ECE-hat - (Delta + A), ECE-hat - (Delta - A)] with Delta = sum_far s_b e_b, A = sum_near |e_b|,
  and the bootstrap's deviations e*_b = g*_b - g_b-hat (widened by the small-sample t factor)
  give the quantiles: low = ECE-hat - q_hi(Delta* + A*), high = ECE-hat - q_lo(Delta* - A*).
  Where every bin is far this is the ordinary interval of a smooth statistic; where a bin is
  near zero the bound holds whatever that bin's sign, at the price of width.

The resamples handed on (what the averaged row averages) are ECE-hat - Delta*, the linear part,
each with its A* (:class:`~StaICC.stats.lite_averaged.Resamples`): the averaged row takes the
quantiles of the datasets' mean of Delta* + A* and Delta* - A*, the same bound for the mean.

**With proxies** (:mod:`.lite_proxy`) the same construction runs on better gaps.  Each g_b is a mean over
items, so the difference estimator applies to it (not to the ECE, whose plug-in is biased differently for
target and proxy): with a proxy's own signed gaps p_b (its bins from its own confidences), known on every item,

    g_b-hat = t_b(subset) + lambda_b [p_b(all) - p_b(subset)],

target and proxy resampled together, lambda_b power-tuned on the resamples of bin b (the clipped ratio, or the
box weights of several proxies: :func:`~.lite_proxy.weights_of`), then the same bias correction, interval and
widening on the combined resamples (:func:`tuned_gaps`).  A proxy's bin b predicts the target's bin b where
their confidences agree; a proxy that does not gets lambda_b near 0, and 0 where the bin's weight does not pay for
its widening (:func:`~.lite_proxy_weights.paying`): the plain gaps.  The proxy's subset and
full-run gaps are both read off its full table's item gaps (:func:`proxy_gaps`), so the difference compares one
functional.  A proxy equal to the target gives lambda_b = 1 and the full run's gaps on every resample: the
interval collapses to the full run's ECE but for the widening for unseen answers.

Neither sees answers the subset has not seen (a label whose asked rows were all right, or all
wrong): :func:`ece_widened` adds the bound of :func:`~StaICC.stats.lite_unseen.ece_shift` to the
interval and to every resample's bound.
"""
from typing import Any, Callable, Optional, Sequence, Tuple

from ..standard import ECE_BINS
from .lite_averaged import Resamples
from .vectorized import numpy_module

#: the metric estimated here
METRIC = ("Normal", "expected_calibration_error_1")
#: a bin's gap this many of its standard deviations from zero has a known sign (a flip would need a
#: deviation of FAR sigma: about 1 in 80)
FAR = 2.5


def item_gaps(table: Any) -> Any:
    """Per item of the table (pass 0), the sum over its repeats of (correct - confidence) in each ECE bin:
    a T x ECE_BINS array whose weighted column sums over R T are the signed bin gaps."""
    np = numpy_module("numpy")
    summaries = np.array(table.summaries[0], dtype=np.float64)  # R x T x (predicted, confidence, truelabel, bin)
    labels = np.asarray(table.labels, dtype=np.intp)
    correct = summaries[:, :, 0].astype(np.intp) == labels[None, :]
    signed = correct - summaries[:, :, 1]
    in_bin = summaries[:, :, 3].astype(np.intp)[:, :, None] == np.arange(ECE_BINS)
    return (in_bin * signed[:, :, None]).sum(axis=0)


def bin_gaps(items: Any, weights: Any, repeats: int) -> Any:
    """The signed bin gaps of each weight row (rows x items): rows x ECE_BINS."""
    np = numpy_module("numpy")
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    return (weights @ items) / (repeats * weights.sum(axis=1, keepdims=True))


def debiased(point: Any, resampled: Any) -> float:
    """The bootstrap bias-corrected ECE: plug-in - (mean of the resamples' ECE - plug-in)."""
    np = numpy_module("numpy")
    plug_in = float(np.abs(point).sum())
    return 2 * plug_in - float(np.abs(resampled).sum(axis=1).mean()) if len(resampled) else plug_in


def ece_interval(point: Any, resampled: Any, scale: float, level: float) -> Tuple[float, float, float, Resamples]:
    """(debiased estimate, low, high, linear resamples) of the ECE from the subset's signed bin gaps ``point``
    (ECE_BINS) and the resamples' (resamples x ECE_BINS); ``scale``: the t widening of the deviations."""
    np = numpy_module("numpy")
    plug_in = float(np.abs(point).sum())
    deviations = scale * (resampled - point[None, :])
    sigma = np.std(resampled, axis=0)
    far = np.abs(point) > FAR * sigma
    signs = np.where(far, np.sign(point), 0.0)
    linear = deviations @ signs
    near = np.abs(deviations[:, ~far]).sum(axis=1)
    tail = (1 - level) / 2
    low = plug_in - float(np.quantile(linear + near, 1 - tail))
    high = plug_in - float(np.quantile(linear - near, tail))
    estimate = debiased(point, resampled)
    low, high = max(min(low, estimate), 0.0), max(high, estimate)
    return estimate, low, high, Resamples((plug_in - linear).tolist(), near.tolist(), near.tolist())


def ece_of_rows(point_gaps: Optional[Any], resampled_gaps: Optional[Any], scale: float,
                level: float) -> Optional[Tuple[float, float, float, Resamples]]:
    """:func:`ece_interval` where the gaps are known (None elsewhere: the plain bootstrap applies)."""
    if point_gaps is None or resampled_gaps is None or not len(resampled_gaps):
        return None
    np = numpy_module("numpy")
    point, resampled = np.asarray(point_gaps, dtype=np.float64), np.asarray(resampled_gaps, dtype=np.float64)
    if not (np.isfinite(point).all() and np.isfinite(resampled).all()):
        return None
    return ece_interval(point, resampled, scale, level)


def ece_widened(found: Tuple[float, float, float, Resamples], unseen: Any) -> Tuple[float, float, float, Resamples]:
    """:func:`ece_interval`'s result widened each way by ``unseen(METRIC[1])`` (the bound for answers the subset has
    not seen, :func:`~StaICC.stats.lite_unseen.ece_shift`; none where ``unseen`` is None or gives none), in the
    interval (within [0, 1]) and in every resample's bound, so that the averaged row carries it too."""
    shift = unseen(METRIC[1]) if unseen is not None else None
    if not shift or shift == (0.0, 0.0):
        return found
    (down, up), (estimate, low, high, resampled) = shift, found
    return (estimate, max(low - down, 0.0), min(high + up, 1.0),
            Resamples(list(resampled), [d + down for d in resampled.down], [u + up for u in resampled.up]))


def row_gaps(statistic: Any, weights: Any) -> Any:
    """The signed bin gaps of Normal's table for each weight row (rows x ECE_BINS); None for another
    sub-benchmark or a table too short for the ECE (fewer rows than bins: the standard gives none)."""
    if not _has_ece(statistic):
        return None
    return bin_gaps(item_gaps(statistic.table), weights, statistic.table.repeats)


def gaps_for(statistic: Any, weights: Sequence[Sequence[float]], point_weights: Sequence[float]) -> Any:
    """(point gaps, resampled gaps) of a subset's own table (:func:`row_gaps`), or None."""
    found = row_gaps(statistic, [point_weights])
    return None if found is None else (found[0], row_gaps(statistic, weights))


def _has_ece(statistic: Any) -> bool:
    """Whether the statistic is Normal's with the ECE and rows enough for it (the standard gives none below
    ECE_BINS rows)."""
    table = statistic.table
    return table.benchmark == METRIC[0] and METRIC[1] in statistic.names() and table.repeats * len(table) >= ECE_BINS


def full_gaps(statistic: Any) -> Optional[Tuple[Any, Any]]:
    """(item gaps, full-run signed bin gaps) of a proxy's full table, or None where it has no ECE."""
    if not _has_ece(statistic):
        return None
    np = numpy_module("numpy")
    items = item_gaps(statistic.table)
    return items, bin_gaps(items, np.ones(len(items)), statistic.table.repeats)[0]


def proxy_gaps(whole: Any, table: Any, weights: Any, point_weights: Any) -> Optional[Tuple[Any, Any, Any]]:
    """A proxy's signed bin gaps (on the subset ``table``'s items, resampled by ``weights``, and on the full run),
    all from its full table's item gaps (``whole``: its full statistic), so that the subset's and the full run's
    gaps are one functional whatever softmax decision the subset alone would take; None where it has no ECE."""
    found = full_gaps(whole)
    if found is None:
        return None
    position = {t: i for i, t in enumerate(whole.table.items)}
    items = found[0][[position[t] for t in table.items]]
    repeats = whole.table.repeats
    return bin_gaps(items, [point_weights], repeats)[0], bin_gaps(items, weights, repeats), found[1]


def bin_weights(target: Any, proxies: Sequence[Any], weigh: Callable[[Any, Sequence[Any]], Any]) -> Any:
    """The weights (proxies x ECE_BINS) of the bins' difference estimators: ``weigh`` (the power tuning,
    :func:`~.lite_proxy.weights_of`) of each bin's resampled gaps, target's on each proxy's; a bin where a proxy
    has no resampled spread (none of its subset's items fell there) has nothing to fit on, and takes that proxy's
    pooled weight, ``weigh`` of the deviations of all bins together (one slope for every bin), so that a proxy
    equal to the target has weight 1 in every bin, the empty ones too, and gives the full run's gaps."""
    np = numpy_module("numpy")
    weights = weigh(target, proxies)
    flat = [(a - a.mean(axis=0)).reshape(-1) for a in (target, *proxies)]
    pooled = weigh(flat[0], flat[1:])
    for j, p in enumerate(proxies):
        quiet = np.std(p, axis=0) <= 1e-10 * np.maximum(1.0, np.abs(p.mean(axis=0)))
        weights[j] = np.where(quiet, pooled[j], weights[j])
    return weights


def tuned_gaps(target: Tuple[Any, Any], proxies: Sequence[Tuple[Any, Any, Any]],
               weigh: Callable[[Any, Sequence[Any]], Any],
               keep: Optional[Callable[[Any, Any, Sequence[Any]], Any]] = None) -> Optional[Tuple[Any, Any, Any]]:
    """The difference estimator of each signed bin gap: (point, resamples, weights) of
    t_b + sum_j lambda_jb [p_jb(all) - p_jb(subset)] from the target's (point, resampled) gaps and each proxy's
    (point, resampled, full run), the weights of :func:`bin_weights` (proxies x ECE_BINS), then ``keep``'s of
    (weights, the target's resampled gaps, the proxies'): the bins where the weights pay for themselves
    (:func:`~.lite_proxy_weights.paying`; a bin of weight 0 is the plain gap).  A weight that moves nothing (a bin
    where the proxy's resampled gaps do not vary and its full-run gap is its subset's, as a bin no item reaches) is
    0, so that a cell no weight corrects is the plain one.  None where a value is not finite."""
    np = numpy_module("numpy")
    point, resampled = np.asarray(target[0], dtype=np.float64), np.asarray(target[1], dtype=np.float64)
    theirs = [np.asarray(p[1], dtype=np.float64) for p in proxies]
    weights = bin_weights(resampled, theirs, weigh)
    for j, (subset, _, full) in enumerate(proxies):
        idle = (np.ptp(theirs[j], axis=0) == 0) & (np.asarray(full) == np.asarray(subset))
        weights[j] = np.where(idle, 0.0, weights[j])
    weights = weights if keep is None else keep(weights, resampled, theirs)
    for weight, (subset, subsets, full) in zip(weights, proxies):
        point = point + weight * (full - subset)
        resampled = resampled + weight * (full - np.asarray(subsets))
    finite = np.isfinite(point).all() and np.isfinite(resampled).all() and len(resampled)
    return (point, resampled, weights) if finite else None
