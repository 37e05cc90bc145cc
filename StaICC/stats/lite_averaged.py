"""The averaged row of a lite run: the mean over datasets of their estimates, with an interval for the mean.

Each dataset's estimate comes with its resamples (the t-widened deviations, re-centred on the
bias-corrected estimate: :func:`StaICC.stats.lite.finished`) and its reported interval.  The
datasets' subsets are drawn independently, so the mean's spread is the spread of the mean of
their resamples: the percentile interval of the resamples averaged over the datasets, at the
run's level.  Where a dataset's reported interval reaches beyond its resamples' percentile
interval, it does so for a reason the resamples cannot see: the exact interval of a small label
(:mod:`.lite_exact`), answers the subset has not seen (:mod:`.lite_unseen`), the other branch of
the bias entropy's exact check (:mod:`.lite_branches`), or the ECE's bins near zero
(:mod:`.lite_ece`).  Those reaches are bounds on a dataset's error that do not shrink when
datasets are averaged, so the averaged row adds their mean (the mean of the datasets' errors is
at most the mean of their bounds): each reach is propagated at its own size, not averaged away
in the resamples.  Where every dataset is whole the row is the standard's own average.

Two kinds of interval are not reaches but a better account of the same sampling error, and they
enter through the resamples instead, so that they average like the rest: the exact interval of
a small label (the resamples' deviations stretched, each side, to the exact interval's:
:func:`stretched`), and the bounds that hold resample by resample, the ECE's for its bins near zero
and the bias entropy's other branch (:class:`Resamples` carries each resample's bound, and the
averaged row takes the quantiles of the averaged bounds, not the average of their quantiles).

A metric whose every dataset takes the exact interval (a consistency: :data:`~.lite_exact.ALWAYS_EXACT`) is a
mean of bounded item values on every dataset, so its averaged row is the exact interval of the datasets' items
together (:func:`~.lite_exact.pooled_interval`; each dataset's resamples carry what it needs: :class:`Pooled`),
not a combination of resamples.  Stretched resamples were wrong there: a dataset whose subset saw no changed
answer has an estimate of 1 and an exact interval [low, 1] that lies below it; its resamples differ from the
estimate in the last bits only, and stretching those deviations to the interval (by a factor of up to 1e15)
put them below the estimate, so each such dataset moved every averaged resample down instead of widening the
row, and the row's upper end fell on its estimate.
"""
import math
from typing import Any, List, Optional, Sequence, Tuple

from .lite_bounds import cut, mean_bounds
from .lite_exact import ALWAYS_EXACT, ItemMean, item_values, pooled_interval
from .significance import percentile_interval


class Resamples(list):
    """A dataset's scaled resamples with, per resample, how far below (``down``) and above (``up``) it the
    metric may lie for a reason the resamples do not vary: the ECE's bins near zero (:mod:`.lite_ece`), the
    other branch of the bias entropy's exact check (:mod:`.lite_branches`).  The averaged row's interval is
    [q_lo(mean of v - down), q_hi(mean of v + up)], each dataset at its own bound on each resample."""

    def __init__(self, values: Sequence[float], down: Sequence[float], up: Sequence[float]) -> None:
        super().__init__(values)
        self.down: List[float] = list(down)
        self.up: List[float] = list(up)


class Pooled(list):
    """A dataset's scaled resamples whose reported interval is the exact one of a mean of bounded item values, with
    that mean (``pooled``, a :class:`~.lite_exact.ItemMean`): the averaged row pools the datasets' items."""

    def __init__(self, values: Sequence[Any], pooled: ItemMean) -> None:
        super().__init__(values)
        self.pooled: ItemMean = pooled


def followed(value: float, scaled: List[Any], bootstrap: Tuple[float, float],
             interval: Tuple[float, float]) -> List[Any]:
    """The resamples of a dataset whose interval is exact: :func:`stretched` to it, and :class:`Pooled` where the
    interval carries the items' mean the averaged row pools."""
    out = stretched(value, scaled, bootstrap, interval)
    pooled: Optional[ItemMean] = getattr(interval, "pooled", None)
    return Pooled(out, pooled) if pooled is not None else out


def census_resamples(table: Any, name: str, value: Any, resamples: int) -> List[Any]:
    """A whole dataset's resamples (its value, no spread), :class:`Pooled` with its items' mean (known, no error)
    where the averaged row pools the datasets' items."""
    if (table.benchmark, name) not in ALWAYS_EXACT:
        return [value] * resamples
    values, least = item_values(table)
    return Pooled([value] * resamples, ItemMean(math.fsum(values) / len(values), 0.0, len(values), least, whole=True))


def stretched(value: float, scaled: List[Any], bootstrap: Tuple[float, float],
              interval: Tuple[float, float]) -> List[Any]:
    """The resamples' deviations from ``value`` stretched, below and above separately, so that their percentile
    interval ``bootstrap`` becomes ``interval`` (unchanged on a side where the resamples have no spread)."""
    low, high = bootstrap
    if not all(isinstance(v, float) and math.isfinite(v) for v in (value, low, high, *interval)):
        return scaled
    below = (value - interval[0]) / (value - low) if value - low > 0 else 1.0
    above = (interval[1] - value) / (high - value) if high - value > 0 else 1.0
    return [v if not isinstance(v, float) or not math.isfinite(v)
            else value + (v - value) * (below if v < value else above) for v in scaled]


def reach(low: Any, high: Any, scaled: Sequence[Any], level: float) -> Tuple[float, float]:
    """How far a dataset's reported interval (low, high) reaches beyond its resamples' percentile interval,
    (down, up), each at least 0; (0, 0) for a vector, where either is not finite, or for :class:`Resamples`
    (their bound enters the averaged row resample by resample)."""
    if not isinstance(low, float) or not isinstance(high, float) or isinstance(scaled, Resamples):
        return 0.0, 0.0
    bootstrap_low, bootstrap_high = percentile_interval([v for v in scaled if v is not None], level)
    if not all(math.isfinite(v) for v in (low, high, bootstrap_low, bootstrap_high)):
        return 0.0, 0.0
    return max(bootstrap_low - low, 0.0), max(high - bootstrap_high, 0.0)


def averaged(per_dataset: List[Tuple[Any, ...]], level: float, census: bool) -> Tuple[Any, Any, Any]:
    """The averaged row's (estimate, low, high) from each dataset's (estimate, resamples[, reach[, bounds]]): the
    percentile interval of the resamples averaged over the datasets, widened by the datasets' mean reach
    (:func:`reach`), or where every dataset's resamples are :class:`Pooled`, the exact interval of their items
    together (:func:`pooled`); where every dataset is whole, the standard's own average (a left-to-right sum /
    their count) with no spread.  Where every dataset gives its metric's range (``bounds``,
    :func:`~.lite_bounds.cell_bounds`), the row is cut to the mean of those ranges."""
    found = _averaged(per_dataset, level, census)
    if census or not all(len(entry) > 3 for entry in per_dataset):
        return found
    return cut(*found, mean_bounds([entry[3] for entry in per_dataset]))


def _averaged(per_dataset: List[Tuple[Any, ...]], level: float, census: bool) -> Tuple[Any, Any, Any]:
    if census:
        value = sum((entry[0] for entry in per_dataset), 0) / len(per_dataset)
        return value, value, value
    value = math.fsum(entry[0] for entry in per_dataset) / len(per_dataset)
    if all(isinstance(entry[1], Pooled) for entry in per_dataset):
        low, high = pooled(per_dataset, level)
        return value, min(low, value), max(high, value)
    lows = [math.fsum(c) / len(c) for c in zip(*(_bounded(entry[1], -1) for entry in per_dataset))]
    highs = [math.fsum(c) / len(c) for c in zip(*(_bounded(entry[1], 1) for entry in per_dataset))]
    low, high = percentile_interval(lows, level)[0], percentile_interval(highs, level)[1]
    extras = [entry[2] for entry in per_dataset if len(entry) > 2]
    if extras:
        low -= math.fsum(d for d, _ in extras) / len(per_dataset)
        high += math.fsum(u for _, u in extras) / len(per_dataset)
    return value, min(low, value), max(high, value)


def _bounded(scaled: Sequence[Any], side: int) -> Sequence[Any]:
    """The resamples moved by their bound to ``side`` (-1: down, 1: up); plain resamples as they are."""
    if not isinstance(scaled, Resamples):
        return scaled
    return [v + side * n for v, n in zip(scaled, scaled.up if side > 0 else scaled.down)]


def pooled(per_dataset: List[Tuple[Any, ...]], level: float) -> Tuple[float, float]:
    """The averaged row's exact interval from :class:`Pooled` datasets: the whole ones' values exactly, the
    sampled ones' :func:`~.lite_exact.pooled_interval`, each counted once in the mean over all datasets."""
    known = math.fsum(entry[0] for entry in per_dataset if entry[1].pooled.whole)
    sampled = [entry[1].pooled for entry in per_dataset if not entry[1].pooled.whole]
    low, high = pooled_interval(sampled, level) if sampled else (0.0, 0.0)
    return (known + len(sampled) * low) / len(per_dataset), (known + len(sampled) * high) / len(per_dataset)
