"""Exact (Clopper-Pearson style) lite intervals for accuracy where a label's share of the subset is small.

The bootstrap interval of :mod:`StaICC.stats.lite` rests on the sampling distribution being
near-normal; with a handful of items of a label (``--lite-items 16`` on a six-label dataset)
it is not, and an accuracy near 0 or 1 gets an interval too narrow.  There the accuracy of
Normal gets the **Korn-Graubard interval** (Korn & Graubard, 1998): the Clopper-Pearson
interval of a stratified proportion, with the sample size replaced by the effective one,

    n_eff = p (1 - p) / v,   x = p n_eff,
    [Beta^-1(alpha/2; x, n_eff - x + 1),  Beta^-1(1 - alpha/2; x + 1, n_eff - x)],

p the weighted estimate, v its stratified finite-population variance
sum_s W_s^2 (1 - n_s/N_s) S_s^2 / n_s (an item's value: its share of correct answers over the
repeats), n_eff at most n; where p is 0 or 1 (v = 0), n_eff = n.  Which interval a cell gets
is decided by the design alone (a label with fewer than :data:`SMALL_STRATUM` items in the
subset), never by the answers, so the choice costs no coverage.

The consistency of Template_sens and Demo_sens is a mean over items of each item's majority
share c_i of its m answers, which lies in [a, 1] with a = ceil(m / W) / m (W labels).  It gets
the same interval for the item values u_i = (c_i - a) / (1 - a) in [0, 1], mapped back.  Its
small-sample failure is the one of a proportion near 1: a model that answers one label for
nearly every template changes its answer on a few of the 100 items, a subset of 13 usually
sees none of them, and the bootstrap's interval has width zero; the exact interval's does not.
Since that holds at every fraction the study runs, a consistency gets the exact interval on every
subset (:data:`ALWAYS_EXACT`), small labels or not: a choice by the metric, not by the answers.  The Beta quantiles are
computed here without SciPy: the distribution function by its continued fraction, the quantile by Halley's iteration
kept inside a bisection bracket (:func:`beta_quantile`; a lite run with a proxy that rarely disagrees asks for thousands
of them, per cell, bound and subset).

The averaged row of a consistency is the same construction on the datasets' items together
(:func:`pooled_interval`): the mean over D datasets of a_d + (1 - a_d) u_d is mean(a) + A p, with
A = mean(1 - a) and p = sum_d (1 - a_d) u_d / sum_d (1 - a_d), a stratified mean of item values in
[0, 1] over the strata (dataset, label), the datasets' subsets drawn independently; its variance is
sum_d ((1 - a_d) / sum (1 - a))^2 v_d and its items the datasets' together, so p gets the
Korn-Graubard interval as one dataset's does, mapped back.
"""
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

#: a label with fewer items than this in the subset makes the accuracy's interval the exact one
SMALL_STRATUM = 10
#: the metrics that get the exact interval: a mean over items of a bounded per-item value (a share of right
#: answers; a majority share of an item's answers)
EXACT_METRICS = frozenset({("Normal", "accuracy"), ("Template_sens", "consistency"), ("Demo_sens", "consistency")})
#: the metrics that get the exact interval on every subset, not only where a label is small: a consistency is
#: near 1 for most models and its few changed answers hide from a subset of any size the study runs (at 25 %, 25
#: of Template_sens's 100 items, the bootstrap covered the biased model's value 82 % of the time)
ALWAYS_EXACT = frozenset({("Template_sens", "consistency"), ("Demo_sens", "consistency")})


@dataclass(frozen=True)
class ItemMean:
    """What a dataset's exact interval rests on, which the averaged row pools (:func:`pooled_interval`): the
    stratified mean of the rescaled item values u in [0, 1], its finite-population variance, the items asked, and
    the least value a of the per-item term (the metric is a + (1 - a) u); ``whole``: every item asked (no error)."""

    mean: float
    variance: float
    items: int
    least: float = 0.0
    whole: bool = False


class ExactInterval(tuple):
    """An exact interval (low, high), with the :class:`ItemMean` it was computed from where the averaged row pools
    the datasets' items (``pooled``: the metrics of :data:`ALWAYS_EXACT`, whose every dataset has one), else None."""

    pooled: Optional[ItemMean]

    def __new__(cls, low: float, high: float, pooled: Optional[ItemMean] = None) -> "ExactInterval":
        found = super().__new__(cls, (low, high))
        found.pooled = pooled
        return found


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz); each step's two terms
    written out (a loop over them cost a third of the time, in the lite runs' hottest loop; the same operations)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1 + numerator * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + numerator / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1 + numerator * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + numerator / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def _front(x: float, a: float, b: float) -> float:
    """x^a (1 - x)^b / B(a, b), for 0 < x < 1: the factor the distribution function and the density share."""
    return math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the Beta(a, b) distribution function at x."""
    return _distribution_and_density(x, a, b)[0]


def _distribution_and_density(x: float, a: float, b: float) -> Tuple[float, float]:
    """(I_x(a, b), the Beta(a, b) density at x) from one front (:func:`_front`): the density is front / (x (1 - x)),
    so a Newton step on the distribution function costs no second evaluation.  Outside (0, 1) the density is taken
    as 0 (the quantile's search never steps there)."""
    if x <= 0:
        return 0.0, 0.0
    if x >= 1:
        return 1.0, 0.0
    front = _front(x, a, b)
    density = front / (x * (1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a, density
    return 1 - front * _beta_fraction(1 - x, b, a) / b, density


#: the width of the bracket a Beta quantile's search ends with (its midpoint is the answer): the bisection it
#: replaces ended at 2^-40 (9.1e-13), so the two answers are within 5.1e-13 of each other where I_x is monotone
QUANTILE_BRACKET = 1e-13
#: Halley steps before the search falls back to plain bisection (it settles in a few; the cap bounds the cost where
#: the distribution function's rounding keeps the steps from settling)
HALLEY_STEPS = 30


@lru_cache(maxsize=4096)
def beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), within QUANTILE_BRACKET / 2 of where the computed I_x(a, b) crosses q.  Above
    the median it is 1 minus Beta(b, a)'s (1 - q)-quantile (1 - q is exact for q >= 1/2): the search then compares a
    small tail, computed to its own relative precision, with a small target, never a value near 1 whose rounding
    (1e-16) the density turns into an error in x, and an upper quantile near 1 becomes one near 0, where floats are
    dense.  A lite run asks for the same few quantiles (the same effective size per cell and bound, per subset of a
    study) many times, hence the cache.  q outside (0, 1) gives the support's end."""
    if not 0 < q < 1:
        return 0.0 if q <= 0 else 1.0
    if q > 0.5:
        return 1 - _quantile_search(1 - q, b, a)
    return _quantile_search(q, a, b)


def _quantile_search(q: float, a: float, b: float) -> float:
    """Halley's iteration on I_x(a, b) - q from :func:`_quantile_guess`, safeguarded by the bisection's bracket (I_low
    < q <= I_high): a step that leaves the bracket or is not below half the step before the last bisects (Numerical
    Recipes' rtsafe), and a step below a quarter of the bracket's width goes a quarter width past the root, so the
    next evaluation closes the bracket.  4-5 evaluations of I_x for a lite run's limits (at most 20 over shapes from
    0.05 to 5,000) where the bisection took 40."""
    low, high, x, steps = 0.0, 1.0, _quantile_guess(q, a, b), (1.0, 1.0)
    for count in range(HALLEY_STEPS + 64):
        value, density = _distribution_and_density(x, a, b)
        low, high = (x, high) if value < q else (low, x)
        if high - low <= QUANTILE_BRACKET:
            break
        step = _halley_step(value - q, density, x, a, b) if count < HALLEY_STEPS else math.inf
        settled = abs(step) < QUANTILE_BRACKET / 4
        if settled:  # past the root, the way the step goes (right where I_x < q)
            step += -QUANTILE_BRACKET / 4 if step < 0 or step == 0 and value < q else QUANTILE_BRACKET / 4
        if low < x - step < high and (settled or abs(step) <= steps[0] / 2):
            x, steps = x - step, (steps[1], abs(step))
        else:
            x, steps = (low + high) / 2, (steps[1], (high - low) / 2)
    return (low + high) / 2


def _halley_step(error: float, density: float, x: float, a: float, b: float) -> float:
    """Halley's step for I_x(a, b) - q = ``error`` at x: the Newton step error / density, corrected by the density's
    log-derivative (a - 1) / x - (b - 1) / (1 - x) (the correction held to at most half, as Numerical Recipes' invbetai
    does, so a step never turns back); infinite where the Newton step leaves the unit interval, the density
    vanishing (the caller then bisects)."""
    newton = error / density if 0 < density < math.inf else math.inf
    if not abs(newton) < 1:  # beyond the unit interval (where the density underflows): bisect
        return math.inf
    return newton / (1 - 0.5 * min(1.0, newton * ((a - 1) / x - (b - 1) / (1 - x))))


def _quantile_guess(q: float, a: float, b: float) -> float:
    """A first guess at Beta(a, b)'s q-quantile (Numerical Recipes' invbetai): for a, b >= 1 the normal approximation
    of Abramowitz and Stegun 26.5.22; else the power-law tails x^a / (a B) near 0 and (1 - x)^b / (b B) near 1,
    whichever side q falls on (B dropped: the two tails' weights t, u share it)."""
    if a >= 1 and b >= 1:
        p = q if q < 0.5 else 1 - q
        t = math.sqrt(-2 * math.log(p))
        z = (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481)) - t
        z = -z if q < 0.5 else z
        al = (z * z - 3) / 6
        h = 2 / (1 / (2 * a - 1) + 1 / (2 * b - 1))
        w = z * math.sqrt(al + h) / h - (1 / (2 * b - 1) - 1 / (2 * a - 1)) * (al + 5 / 6 - 2 / (3 * h))
        return a / (a + b * math.exp(2 * w))
    t = math.exp(a * math.log(a / (a + b))) / a
    u = math.exp(b * math.log(b / (a + b))) / b
    w = t + u
    return (a * w * q) ** (1 / a) if q < t / w else 1 - (b * w * (1 - q)) ** (1 / b)


def korn_graubard(p: float, variance: float, n: int, level: float) -> Tuple[float, float]:
    """The Clopper-Pearson interval of a proportion ``p`` estimated with ``variance`` from ``n`` items."""
    alpha = 1 - level
    n_eff = n if variance <= 0 else min(n, p * (1 - p) / variance)
    x = p * n_eff
    low = 0.0 if x <= 0 else beta_quantile(alpha / 2, x, n_eff - x + 1)
    high = 1.0 if x >= n_eff else beta_quantile(1 - alpha / 2, x + 1, n_eff - x)
    return low, high


def stratified_mean_and_variance(values: List[float], labels: List[Hashable],
                                 full: Dict[Hashable, int]) -> Tuple[float, float]:
    """The stratified estimate of the full set's mean, and its finite-population variance."""
    members: Dict[Hashable, List[float]] = {}
    for value, label in zip(values, labels):
        members.setdefault(label, []).append(value)
    covered = sum(full[s] for s in members)
    mean = variance = 0.0
    for s, xs in members.items():
        weight, n_s = full[s] / covered, len(xs)
        centre = math.fsum(xs) / n_s
        mean += weight * centre
        if n_s > 1:
            spread = math.fsum((x - centre) ** 2 for x in xs) / (n_s - 1)
            variance += weight ** 2 * (1 - n_s / full[s]) * spread / n_s
    return mean, variance


def exact_interval(table, population, metric: str, level: float):
    """The exact interval of ``metric`` on a subset whose design has a small label, else None."""
    if (table.benchmark, metric) not in EXACT_METRICS:
        return None
    values, least = item_values(table)
    found = exact_of_items(values, list(table.labels), dict(population.strata), level,
                           (table.benchmark, metric) in ALWAYS_EXACT)
    return found and unscaled(found, least)


def item_values(table) -> Tuple[List[float], float]:
    """Each test item's value in [0, 1] for the exact interval, and the least value of the metric's per-item
    term it was rescaled from (the interval maps back by :func:`unscaled`): the share of right answers over the
    repeats (pass 0) for accuracy; (c - a) / (1 - a) for a consistency, c the item's majority share over every
    pass and repeat and a = ceil(m / W) / m the least one m answers over W labels can have."""
    from .items import is_consistency
    if not is_consistency(table.benchmark):
        return item_accuracy(table), 0.0
    m = table.passes * table.repeats
    least = -(-m // table.width) / m
    shares = [max(counts.values()) / m for counts in _label_counts(table)]
    return [(c - least) / (1 - least) for c in shares], least


def _label_counts(table) -> List[Dict[int, int]]:
    """Per item, how often each predicted label (argmax of the summarised rows) comes over every pass and repeat."""
    found: List[Dict[int, int]] = [{} for _ in range(len(table.items))]
    for reps in table.summaries:
        for rep in reps:
            for i, summary in enumerate(rep):
                found[i][summary[0]] = found[i].get(summary[0], 0) + 1
    return found


def unscaled(interval: Tuple[float, float], least: float) -> Tuple[float, float]:
    """An interval of the rescaled item values' mean mapped back to the metric: a + (1 - a) x (its
    :class:`ItemMean`, if any, records a)."""
    if not least:
        return interval
    pooled = getattr(interval, "pooled", None)
    return ExactInterval(least + (1 - least) * interval[0], least + (1 - least) * interval[1],
                         pooled and replace(pooled, least=least))


def pooled_interval(parts: Sequence[ItemMean], level: float) -> Tuple[float, float]:
    """The Korn-Graubard interval of the mean over datasets of a_d + (1 - a_d) u_d, from each sampled dataset's
    :class:`ItemMean` (independent subsets): the interval of the pooled stratified mean p of the rescaled item
    values, each dataset weighted by its range 1 - a_d, with the pooled variance and every dataset's items, mapped
    back to mean(a) + mean(1 - a) p (module docstring)."""
    ranges = [1 - part.least for part in parts]
    total = math.fsum(ranges)
    base = math.fsum(part.least for part in parts) / len(parts)
    if total <= 0:  # one label: every item's term is 1
        return base, base
    p = min(max(math.fsum(r * part.mean for r, part in zip(ranges, parts)) / total, 0.0), 1.0)
    variance = math.fsum((r / total) ** 2 * part.variance for r, part in zip(ranges, parts))
    low, high = korn_graubard(p, variance, sum(part.items for part in parts), level)
    return base + total / len(parts) * low, base + total / len(parts) * high


def item_accuracy(table) -> List[float]:
    """Each test item's share of right answers over its repeats (pass 0)."""
    right = table.correct(0)
    T = len(table.items)
    return [math.fsum(right[k * T + i] for k in range(table.repeats)) / table.repeats for i in range(T)]


def exact_of_items(values: List[float], labels: List[Hashable], full: Dict[Hashable, int],
                   level: float, always: bool = False) -> Optional[Tuple[float, float]]:
    """The Korn-Graubard interval of the stratified mean of the subset's item ``values`` where a label has fewer
    than :data:`SMALL_STRATUM` items in the subset (a property of the design alone), or ``always``
    (:data:`ALWAYS_EXACT`), else None; with ``always``, it carries the :class:`ItemMean` that the averaged row pools."""
    counts: Dict[Hashable, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    if not always and min(counts.values()) >= SMALL_STRATUM:
        return None
    mean, variance = stratified_mean_and_variance(values, labels, full)
    return ExactInterval(*korn_graubard(mean, variance, len(values), level),
                         ItemMean(mean, variance, len(values)) if always else None)
