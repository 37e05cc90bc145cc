"""A proxy that rarely disagrees with the target: the residual's rare events, bounded by exact limits.

The power-tuned estimate of a proportion (:mod:`.lite_proxy`) is mean(y) + lambda [Z - mean(z)] on the subset, y the
target's item values (an item's share of right answers over its repeats: 0, 1/2 or 1 with two repeats), z the
proxy's, Z the proxy's mean over every item.  Its spread is the bootstrap spread of the residual y - lambda z, and
with a proxy that agrees with the target on nearly every item (a quantised copy of the target, a close member of
its family) that residual is a constant plus a handful of rare events: the items where target and proxy disagree.
A subset of 64 items holds 0-3 of them; the percentile bootstrap of a handful of events does not cover (it
resamples only what the subset holds: with none of one sign it has width zero that way, with one to three its
tail is the Poisson tail of the few seen, not the exact one of the unseen).  Measured on a proxy that is the
target's own run with log-scale noise of sigma 0.1 (item correlation of correctness 0.96): Normal's accuracy and
macro-F1 on a two-label dataset at 12.5 % held the full run's value 84 % of the time, the plain interval 93 %.
This is the paired-proportion problem with few discordant pairs (McNemar's setting), where Wald-type and
resampling intervals for a difference are known to under-cover (Newcombe, 1998; Agresti & Min, 2005), and the
rare-answer problem :mod:`.lite_unseen` solves for the plain path's unseen confusion cells.

**What is done.**  The full set's mean of y is, for any proxy values z in [0, 1] known on every item,

    mean(y) = Z + mean(d+) - mean(d-),   d+ = max(y - z, 0),  d- = max(z - y, 0),

each of d+, d- a stratified mean of values in [0, 1] that the subset estimates, each with its Korn-Graubard
interval (:func:`~.lite_exact.korn_graubard`: Clopper-Pearson with the design's effective size, so a part the
subset never saw is bounded by 1 - (alpha/2)^(1/n), and one seen once or twice by the exact Beta tail).

* **When** (:func:`few_disagreements`): where the interval valid by construction, each part at 1 - alpha/2 (four
  one-sided tails of alpha/4; where the subset holds no item of one part, that part's lower limit is 0, which
  cannot miss, and the other part's opposite limit takes that end's whole alpha/2),
  [Z + low(d+) - high(d-), Z + high(d+) - low(d-)] (:func:`difference_interval`), is narrower than the target's
  own Korn-Graubard interval at the run's level: the subset itself shows that target and proxy rarely disagree.
  A proxy whose disagreements are common cannot meet it (two parts' widths added, each at alpha/4, against one
  proportion's), so its cells are the power-tuned bootstrap's, bit for bit: on a trained family the small member
  and the lexical model never meet it, the distilled members (item correlation of correctness 0.83-0.85) on 25 and
  60 of rotten_tomatoes' 200 subsets at 12.5 %, where their intervals under-covered (94.0 and 90.5 %, now 96.0
  and 95.0 %).
* **What** (:func:`square_and_add`): the cell's interval becomes the **hull** of its bootstrap interval and
  Newcombe's square-and-add interval of Z + mean(d+) - mean(d-), each part's exact limits at the run's level,
  the ends Z + p+ - p- -/+ sqrt((p+ - l+)^2 + (u- - p-)^2), sqrt((u+ - p+)^2 + (p- - l-)^2) (Newcombe, 1998,
  method 10, with exact limits in place of Wilson's; the method of variance estimates recovery, Zou & Donner,
  2008).  The estimate stays the power-tuned one.

With several proxies z is their combination with the cell's fitted weights, sum_j lambda_j z_j / sum_j lambda_j
(any fixed combination of values in [0, 1] is one).  Macro-F1 (a function of the confusion matrix) takes the same
bound in items: the interval's reach beyond the accuracy estimate of the cell's weights, times the full run's items,
is how many items may enter (leave) the diagonal beyond what the subset shows, shared among the labels as the
stratified design shares the items, and :func:`~.lite_unseen.metric_range` computes macro-F1's range for it on the
subset's confusion matrix.  The cell's resamples are stretched to the hull, as an exact interval's are
(:mod:`.lite_averaged`), so that the averaged row averages the bound with the other datasets' spread instead of
adding it whole.

**The options weighed.**  (a) A per-label, per-sign unseen bound (:func:`~.lite_unseen.unseen_limit`) adds the
labels' limits: on two balanced labels twice the pooled bound, and it needs a second rule for 1-3 events.
(b) The paired-proportion intervals alone (Agresti-Min's 0.5 added to each cell, Newcombe's score interval) are
built for pairs drawn with replacement, and used on every subset they would trigger on ordinary proxies too: the
square-and-add interval ignores the parts' negative covariance, which is negligible for rare events and not for
common ones (the distilled members' Normal accuracy on rotten_tomatoes went 0.125 -> 0.19 wide with it).  (c) The
construction valid by construction (four alpha/4 tails) as the hull: Normal's accuracy with the sigma-0.1 proxy
covered 100 % at 0.91 of the plain width (0.27 before), the proxy's gain gone; and used always (intersected with
the plain interval at a split level), it widened ordinary proxies' averaged rows by 4-7 %.  Taken: (c) decides
*when* (it cannot trigger on a proxy whose disagreements are common), (b) with exact limits gives the bound
(100 % at 0.67 of the plain width on the same subsets).
"""
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from .lite_averaged import stretched
from .lite_exact import item_accuracy, korn_graubard, stratified_mean_and_variance
from .lite_scaled import resample_interval
from .lite_unseen import confusion, metric_range

#: Normal's cells whose interval the rule widens: the accuracy (a mean of item values) and macro-F1 (by items)
ACCURACY, MACRO_F1 = "accuracy", "macro_F1"
RESIDUAL_CELLS = frozenset({("Normal", ACCURACY), ("Normal", MACRO_F1)})

Found = Dict[str, Tuple[Any, Any, Any, List[Any]]]


@dataclass(frozen=True)
class SubsetItems:
    """What the rule reads of a subset: the target's and each proxy's item values y and z (a share of right answers
    over the repeats of pass 0), each proxy's mean Z over every item of the labels the subset covers, the items'
    labels and the full run's count per label, the design's weights and the target's answers (argmax, per repeat)."""

    target: List[float]
    proxies: List[List[float]]
    wholes: List[float]
    labels: List[Hashable]
    full: Dict[Hashable, int]
    weights: List[float]
    answers: List[List[int]]
    width: int


def subset_items(table: Any, proxies: Sequence[Any], positions: Sequence[int], weights: Sequence[float],
                 wholes: Sequence[Any], full: Dict[Hashable, int],
                 item_accuracy: Callable[[Any], List[float]] = item_accuracy) -> SubsetItems:
    """:class:`SubsetItems` of the items at ``positions`` of ``table`` (the target's item table) and of each proxy's
    table ``proxies`` (the same items in the same order), each proxy's Z from its full table in ``wholes``;
    ``item_accuracy``: a table's item values (:func:`~.lite_exact.item_accuracy`, or a cache of it)."""
    positions = list(positions)
    labels = [table.labels[i] for i in positions]

    def values(found: List[float]) -> List[float]:
        return [found[i] for i in positions]
    means, covered = [], set(labels)
    for whole in wholes:
        kept = [v for v, label in zip(item_accuracy(whole), whole.labels) if label in covered]
        means.append(math.fsum(kept) / len(kept))
    answers = [[rep[i][0] for rep in table.summaries[0]] for i in positions]
    return SubsetItems(values(item_accuracy(table)), [values(item_accuracy(p)) for p in proxies], means, labels,
                       dict(full), list(weights), answers, table.width)


Parts = Tuple[float, Tuple[float, float], Tuple[float, float], int]


def parts(items: SubsetItems, weights: Sequence[float]) -> Parts:
    """(Z, the stratified mean and variance of d+ and of d-, n) with the proxies combined by ``weights``:
    z = sum_j w_j z_j / sum_j w_j on every item, d+ = max(y - z, 0), d- = max(z - y, 0) on the subset's."""
    total = math.fsum(weights)
    z = [math.fsum(w * p[i] for w, p in zip(weights, items.proxies)) / total for i in range(len(items.target))]
    whole = math.fsum(w * m for w, m in zip(weights, items.wholes)) / total
    plus = stratified_mean_and_variance([max(a - b, 0.0) for a, b in zip(items.target, z)], items.labels, items.full)
    minus = stratified_mean_and_variance([max(b - a, 0.0) for a, b in zip(items.target, z)], items.labels, items.full)
    return whole, plus, minus, len(z)


def difference_interval(found: Parts, level: float) -> Tuple[float, float]:
    """The interval of the full set's mean of y valid by construction (module docstring): [Z + low(d+) - high(d-),
    Z + high(d+) - low(d-)], each part's Korn-Graubard interval at 1 - alpha/2, clipped to [0, 1]."""
    whole, plus, minus, n = found
    low_plus, high_plus = korn_graubard(*plus, n, _level(minus[0], level))
    low_minus, high_minus = korn_graubard(*minus, n, _level(plus[0], level))
    return max(whole + low_plus - high_minus, 0.0), min(whole + high_plus - low_minus, 1.0)


def _level(other: float, level: float) -> float:
    """The two-sided level of one part's Korn-Graubard interval for an end that also takes the other part's
    opposite limit: 1 - alpha/2 (each of the two tails at alpha/4), or the run's own where the subset holds no
    item of the other part (its limit is then 0, which the full set's mean cannot fall below: no tail to pay)."""
    return level if other <= 0 else 1 - (1 - level) / 2


def square_and_add(found: Parts, level: float) -> Tuple[float, float]:
    """Newcombe's square-and-add interval of Z + mean(d+) - mean(d-) (module docstring): each part's
    Korn-Graubard limits (l, u) at the run's level, the ends Z + p+ - p- -/+ the root of the sum of the squared
    distances sqrt((p+ - l+)^2 + (u- - p-)^2) and sqrt((u+ - p+)^2 + (p- - l-)^2), clipped to [0, 1]."""
    whole, plus, minus, n = found
    (low_plus, high_plus), (low_minus, high_minus) = (korn_graubard(*part, n, level) for part in (plus, minus))
    centre = whole + plus[0] - minus[0]
    return (max(centre - math.hypot(plus[0] - low_plus, high_minus - minus[0]), 0.0),
            min(centre + math.hypot(high_plus - plus[0], minus[0] - low_minus), 1.0))


def own_width(items: SubsetItems, level: float) -> float:
    """The width of the target's own Korn-Graubard interval at ``level`` (what :func:`few_disagreements` compares)."""
    own = korn_graubard(*stratified_mean_and_variance(items.target, items.labels, items.full), len(items.target), level)
    return own[1] - own[0]


def few_disagreements(interval: Tuple[float, float], own: float) -> bool:
    """Whether the difference interval is narrower than the target's own interval, of width ``own``
    (:func:`own_width`): the subset's disagreements are few enough that the bootstrap's rare-event tail is the weak
    part."""
    return interval[1] - interval[0] < own


def _tuned_accuracy(items: SubsetItems, weights: Sequence[float]) -> float:
    """The power-tuned accuracy with ``weights``: mean(y) + sum_j lambda_j (Z_j - mean(z_j)), stratified means."""
    mean = stratified_mean_and_variance(items.target, items.labels, items.full)[0]
    return mean + math.fsum(w * (whole - stratified_mean_and_variance(z, items.labels, items.full)[0])
                            for w, whole, z in zip(weights, items.wholes, items.proxies))


def f1_reach(items: SubsetItems, below: float, above: float) -> Tuple[float, float]:
    """(down, up) of macro-F1 when up to ``below`` (``above``) of the full run's items leave (enter) the diagonal
    beyond the subset's, shared among the labels by their counts, on the subset's confusion matrix
    (:func:`~.lite_unseen.metric_range`)."""
    total = sum(items.full.values())
    matrix = confusion(items.labels, items.answers, items.weights, items.width, total)
    share = [items.full.get(s, 0) / total for s in range(items.width)]
    diagonal = [[j == s for j in range(items.width)] for s in range(items.width)]
    off = [[j != s for j in range(items.width)] for s in range(items.width)]
    least, at, _ = metric_range(MACRO_F1, matrix, diagonal, [min(below * f, row[s]) for s, (f, row)
                                                             in enumerate(zip(share, matrix))])
    _, _, largest = metric_range(MACRO_F1, matrix, off, [min(above * f, sum(row) - row[s]) for s, (f, row)
                                                         in enumerate(zip(share, matrix))])
    return max(at - least, 0.0), max(largest - at, 0.0)


def residual_hulls(benchmark: str, found: Found, details: Dict[str, Dict[str, Any]],
                   items: Callable[[], SubsetItems], level: float) -> Found:
    """``found`` with Normal's accuracy and macro-F1 intervals widened to the hull of :func:`square_and_add` where
    the subset's disagreements with the proxies are few (:func:`few_disagreements`; module docstring); every other
    cell, and these where no proxy weight is fitted or the disagreements are common, as they are.  ``details``:
    the cells' fitted weights (:func:`~.lite_proxy.power_tuned`'s); ``items``: the subset's :class:`SubsetItems`,
    built only where needed."""
    weights = {name: _weights(details.get(name)) for b, name in sorted(RESIDUAL_CELLS)
               if b == benchmark and name in found}
    weights = {name: w for name, w in weights.items() if w and math.fsum(w) > 0}
    if not weights:
        return found
    subset, out = items(), dict(found)
    own = own_width(subset, level)
    for name, w in weights.items():
        found_parts = parts(subset, w)
        if not few_disagreements(difference_interval(found_parts, level), own):
            continue
        interval = square_and_add(found_parts, level)
        value, low, high, scaled = found[name]
        if name == MACRO_F1:  # the accuracy's reach in items, as macro-F1's range
            centre, total = _tuned_accuracy(subset, w), sum(subset.full.values())
            down, up = f1_reach(subset, max(centre - interval[0], 0.0) * total, max(interval[1] - centre, 0.0) * total)
            interval = (max(value - down, 0.0), min(value + up, 1.0))
        out[name] = (value, min(low, interval[0]), max(high, interval[1]), _followed(value, scaled, interval, level))
    return out


def _followed(value: float, scaled: List[Any], interval: Tuple[float, float], level: float) -> List[Any]:
    """The cell's resamples stretched (:func:`~.lite_averaged.stretched`) to the hull of their percentile interval
    and the difference interval: the bound is a better account of the same sampling error, so the averaged row
    averages it with the other datasets' resamples, as it does an exact interval's, rather than adding it as a reach
    (:func:`~.lite_averaged.reach`: a bound that does not shrink when datasets are averaged)."""
    bootstrap = resample_interval(scaled, level)
    return stretched(value, scaled, bootstrap, (min(bootstrap[0], interval[0]), max(bootstrap[1], interval[1])))


def _weights(detail: Optional[Dict[str, Any]]) -> Optional[List[float]]:
    """A cell's fitted weights as a list (one proxy's is a number), None where the cell records none."""
    weight = None if detail is None else detail.get("weight")
    if weight is None or isinstance(weight, list) and any(isinstance(w, list) for w in weight):
        return None
    return [float(w) for w in weight] if isinstance(weight, list) else [float(weight)]


def of_subset(statistic: Any, subs: Sequence[Any], wholes: Sequence[Any], plan: Any, population: Any) -> SubsetItems:
    """:func:`subset_items` of a subset's own statistic, its proxies' matched statistics ``subs`` and full ones
    ``wholes``, with its :class:`~.lite.Design` and :class:`~.lite.Population`."""
    table = statistic.table
    return subset_items(table, [s.table for s in subs], range(len(table)), plan.weights, [w.table for w in wholes],
                        dict(population.strata))
