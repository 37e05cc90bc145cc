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
subset), never by the answers, so the choice costs no coverage.  The Beta quantiles are
computed here (a continued fraction and bisection), without SciPy.
"""
import math
from typing import Dict, Hashable, List, Optional, Tuple

#: a label with fewer items than this in the subset makes the accuracy's interval the exact one
SMALL_STRATUM = 10
#: the metrics that get the exact interval: a share of answers that are right, per item in [0, 1]
EXACT_METRICS = frozenset({("Normal", "accuracy")})


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the Beta(a, b) distribution function at x."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1 - front * _beta_fraction(1 - x, b, a) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), by bisection to 1e-12."""
    low, high = 0.0, 1.0
    while high - low > 1e-12:
        middle = (low + high) / 2
        low, high = (middle, high) if regularized_beta(middle, a, b) < q else (low, middle)
    return (low + high) / 2


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
    return exact_of_items(item_accuracy(table), list(table.labels), dict(population.strata), level)


def item_accuracy(table) -> List[float]:
    """Each test item's share of right answers over its repeats (pass 0)."""
    right = table.correct(0)
    T = len(table.items)
    return [math.fsum(right[k * T + i] for k in range(table.repeats)) / table.repeats for i in range(T)]


def exact_of_items(values: List[float], labels: List[Hashable], full: Dict[Hashable, int],
                   level: float) -> Optional[Tuple[float, float]]:
    """The Korn-Graubard interval of the stratified mean of the subset's item ``values`` where a label has fewer
    than :data:`SMALL_STRATUM` items in the subset (a property of the design alone), else None."""
    counts: Dict[Hashable, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    if min(counts.values()) >= SMALL_STRATUM:
        return None
    mean, variance = stratified_mean_and_variance(values, labels, full)
    return korn_graubard(mean, variance, len(values), level)
