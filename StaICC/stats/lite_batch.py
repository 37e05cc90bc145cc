"""Lite estimates of many subsets of one full run at once: the coverage study's fast path.

A subset's weighted estimate (:mod:`StaICC.stats.lite`) is a function of sums over its items
with item weights.  Those are the same sums over the *full* table's items with weight zero
off the subset, and the subset's weights scaled by T / n, a factor every metric's formula
divides out (a mean divides by the weights' total, a ratio of sums cancels it).  So the full
run's per-item columns are built once, and one matrix product gives the point value and
every resample of many subsets together.  Everything else is the package's own code: each
subset's design and resample weights (:func:`~StaICC.stats.lite.design`,
``_resample_weights``), the interval and bias correction (:func:`~StaICC.stats.lite.finished`),
the exact interval (:func:`~StaICC.stats.lite_exact.exact_of_items`) and the proxy's
power-tuned estimate (:func:`~StaICC.stats.lite_proxy.power_tuned`; Normal's ECE with the proxies' signed bin
gaps read off their full tables' item gaps, as :func:`~StaICC.stats.lite_ece.proxy_gaps` reads them).

This equals :func:`~StaICC.stats.lite.estimate_statistic` on the subset's own table (and
:class:`~StaICC.stats.lite_proxy.TunedEstimator`) wherever the subset takes the full table's
branches: the softmax decision of each metric call (all rows pass the exact probability check,
or not), the bias entropy's exact-check branch, and the ECE's least number of rows.  A subset
that takes another branch is computed by those functions on its own table.  Post_bias's hull of both
branches (:mod:`.lite_branches`) is computed here too, one more product per branch for each subset whose
resamples cross them.  Sums in another order agree within 1e-12 (``tests/stats/test_lite_batch.py`` checks
it on many subsets).
"""
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidValueError
from ..numeric import CHECK, is_probability_vector
from ..standard import ECE_BINS
from .items import is_consistency
from .lite import Population, _resample_weights, design, estimate_statistic, finished
from .lite_bounds import subset_is_probability_rows, subset_rows_of, within_range
from .lite_branches import (has_post_bias, hull, hulled, item_flags, off_branch, on_branch, other_branch,
                            post_branches, undecided)
from .lite_ece import bin_gaps, full_gaps, row_gaps
from .lite_exact import ALWAYS_EXACT, EXACT_METRICS, exact_of_items, item_accuracy, item_values, unscaled
from .lite_unseen import rules
from .lite_entropy import row_entropy
from .lite_proxy import Proxy, TunedEstimator, power_tuned
from .lite_residual import residual_hulls, subset_items
from .statistic import Statistic, entropy_branch_of
from .vectorized import numpy_module, weighted_values

#: the most weights (subsets x (resamples + 1) x items) that go through one matrix product: 32 MB of floats
CHUNK_WEIGHTS = 4_000_000

Found = Dict[str, Tuple[Any, Any, Any, List[Any]]]


@dataclass(frozen=True)
class SubsetLabels:
    """What :func:`~StaICC.stats.lite.design` reads of a subset: its part and its items' labels."""

    benchmark: str
    dataset: str
    labels: List[Hashable]


def _raw_items(statistic: Statistic) -> Optional[List[bool]]:
    """Per item, whether every row the full table's softmax decision read passes the exact check; None where
    that decision cannot change on a subset (the table kept its rows raw, or the rule never keeps them)."""
    table = statistic.table
    together = is_consistency(statistic.benchmark)
    passes = range(table.passes) if together else [0]
    if table.rule != CHECK or all(table.normalized[p] is table.rows[p] for p in passes):
        return None
    return [all(is_probability_vector(table.rows[p][k][i]) for p in passes for k in range(table.repeats))
            for i in range(len(table))]


def _entropy_branch(statistic: Statistic, raw: Optional[List[bool]], positions: Sequence[int]) -> Any:
    """The bias entropy's exact-check branch the subset's own table takes (None: no entropy), or ``False`` in a
    list where the subset's table takes another softmax decision or has too few rows for the ECE (those
    subsets are computed on their own table)."""
    table = statistic.table
    if raw is not None and all(raw[i] for i in positions):
        return [False]  # the subset's rows would be kept raw where the full run softmaxed them
    if not is_consistency(statistic.benchmark) and table.repeats * len(positions) < ECE_BINS:
        return [False]
    if statistic.entropy_branch is None:
        return None
    _, rows = table.layout(list(positions), [0])
    return entropy_branch_of(table.rule, rows)


def _embedded(np: Any, plans: List[Tuple[List[int], Any, Any]], total: int) -> Any:
    """One weight row per (subset, point or resample) over the full table's items: zero off the subset, the
    subset's weights scaled by total / n on it."""
    width = plans[0][2].shape[0] + 1
    matrix = np.zeros((len(plans) * width, total))
    for j, (positions, plan, rows) in enumerate(plans):
        scale = total / len(positions)
        matrix[j * width, positions] = np.asarray(plan.weights) * scale
        matrix[j * width + 1:(j + 1) * width, positions] = rows * scale
    return matrix


def _split(values: Dict[str, List[Any]], j: int, width: int) -> Tuple[Dict[str, Any], Dict[str, List[Any]]]:
    """The j-th subset's (point, resampled) values out of a stacked evaluation."""
    return ({n: v[j * width] for n, v in values.items()},
            {n: v[j * width + 1:(j + 1) * width] for n, v in values.items()})


def subset_estimates(statistic: Statistic, population: Population, subsets: Sequence[Sequence[int]], *,
                     resamples: int, seed: Union[int, Sequence[int]], level: float,
                     proxies: Sequence[Statistic] = (),
                     groups: Optional[Sequence[Sequence[int]]] = None) -> List[Tuple[Found, List[Found]]]:
    """For each subset (positions into the full table's items): (its plain estimates, its power-tuned ones
    with each group of ``proxies``, full tables of the same items), each what
    :func:`~StaICC.stats.lite.estimate_statistic` (and :class:`~StaICC.stats.lite_proxy.TunedEstimator`)
    gives on the subset's own table.  ``groups``: positions into ``proxies`` combined in one estimate each
    (default: each proxy alone); each proxy is evaluated once whatever the groups.  ``seed``: the resamples'
    seed, one for all or one per subset."""
    numpy_module("numpy")  # the estimates need NumPy: ImportError naming the extra, before any work
    table = statistic.table
    if any(proxy.table.items != table.items for proxy in proxies):
        raise InvalidValueError(f"{table.benchmark} / {table.dataset}: a proxy's full table has other items")
    seeds = [seed] * len(subsets) if isinstance(seed, int) else list(seed)
    groups = [(i,) for i in range(len(proxies))] if groups is None else [tuple(g) for g in groups]
    raw = [(s, _raw_items(s)) for s in (statistic, *proxies)]
    flags = item_flags(statistic)
    exact_items = item_values(table) if any(b == table.benchmark for b, _ in EXACT_METRICS) else None
    out: List[Any] = [None] * len(subsets)
    fast: Dict[Tuple[Any, ...], List[Tuple[int, List[int]]]] = {}
    for j, subset in enumerate(subsets):
        positions = sorted(set(subset))
        branches = tuple(_entropy_branch(s, r, positions) for s, r in raw)
        if len(positions) < population.total and [False] not in branches:
            fast.setdefault(branches, []).append((j, positions))
        else:
            out[j] = _one_by_one(statistic, population, positions, resamples, seeds[j], level, proxies, groups)
    for branches, group in fast.items():
        evaluated = [on_branch(s, b) for (s, _), b in zip(raw, branches)]
        # each proxy's full-run values on the branch its subset takes: a difference across two branches of the
        # standard's exact check measures the branches' distance, not the subset's error (lite_proxy)
        truths = [on_branch(proxy, b).point() for proxy, b in zip(proxies, branches[1:])]
        step = max(1, CHUNK_WEIGHTS // ((resamples + 1) * len(table)))
        for start in range(0, len(group), step):
            chunk = group[start:start + step]
            plans = _plans(table, population, chunk, seeds, resamples)
            _chunk(evaluated, truths, groups, population, chunk, plans, level, exact_items, out)
            _hull_undecided(evaluated[0], flags, chunk, plans, level, out)
            _hull_post(evaluated[0], chunk, plans, level, out)
    rows = subset_rows_of(table.benchmark, table)  # where a metric's range holds (lite_bounds)
    return [_in_range(table.benchmark, found, rows(subset)) for found, subset in zip(out, subsets)]


def _in_range(benchmark: str, found: Tuple[Found, List[Found]], probabilities: bool) -> Tuple[Found, List[Found]]:
    """A subset's plain and tuned estimates cut to their metrics' ranges (:func:`~.lite_bounds.within_range`)."""
    plain, tuned = found
    return (within_range(benchmark, plain, probabilities), [within_range(benchmark, t, probabilities) for t in tuned])


def _plans(table: Any, population: Population, chunk: List[Tuple[int, List[int]]], seeds: List[int],
           resamples: int) -> List[Tuple[List[int], Any, Any]]:
    """(positions, design, resample weights) of each subset of ``chunk``: what the lite run draws on it."""
    plans = []
    for j, positions in chunk:
        plan = design(SubsetLabels(table.benchmark, table.dataset, [table.labels[i] for i in positions]), population)
        plans.append((positions, plan, _resample_weights(plan, resamples, seeds[j],
                                                         ("lite", table.benchmark, table.dataset))))
    return plans


def _chunk(evaluated: List[Statistic], truths: List[Dict[str, Any]], groups: List[Tuple[int, ...]], population: Population,
           chunk: List[Tuple[int, List[int]]], plans: List[Tuple[List[int], Any, Any]], level: float,
           exact_items: Optional[Tuple[List[float], float]], out: List[Any]) -> None:
    """One matrix product for the subsets of ``chunk`` (the target and each proxy, with the proxies' full-run
    values ``truths``); their estimates (plain, and with each group of proxies) into ``out``."""
    np = numpy_module("numpy")
    statistic = evaluated[0]
    table = statistic.table
    resamples = plans[0][2].shape[0]
    weights = _embedded(np, plans, len(table))
    values = [weighted_values(s, weights) for s in evaluated]
    gaps = row_gaps(statistic, weights)  # Normal's signed ECE bin gaps (lite_ece), every row at once
    helping = [_proxy_rows(proxy, weights) for proxy in evaluated[1:]]  # the proxies' (rows, full run)
    exact_metrics = {m for b, m in EXACT_METRICS if b == table.benchmark}
    always = {m for b, m in ALWAYS_EXACT if b == table.benchmark}
    accuracy = lru_cache(maxsize=None)(item_accuracy)  # a near-perfect proxy's rule reads the full tables' items
    entropy = row_entropy(statistic)  # the bias entropy of a tuned row, on the target's branch (lite_entropy)
    for k, ((j, positions), (_, plan, _)) in enumerate(zip(chunk, plans)):
        exact = rules(statistic, positions, plan.weights, dict(population.strata), level,
                      _exact(exact_items, exact_metrics, always, [table.labels[i] for i in positions], positions,
                             population, level))
        target = _split(values[0], k, resamples + 1)
        at = k * (resamples + 1)
        mine = None if gaps is None else (gaps[at], gaps[at + 1:at + resamples + 1])
        rows = weights[at:at + resamples + 1]  # a proxy off its full run's post-bias branch here corrects nothing
        off = [off_branch(proxy, rows, proxy) for proxy in evaluated[1:]]
        out[j] = (finished(table.benchmark, *target, plan.freedom, level, exact, mine),
                  [residual_hulls(table.benchmark, *power_tuned(  # a near-perfect proxy's rare disagreements
                      table.benchmark, target, [_split(values[1 + i], k, resamples + 1) for i in group],
                      [truths[i] for i in group], plan.freedom, level, exact, mine,
                      frozenset().union(*(off[i] for i in group)), [_ece_at(helping[i], at, resamples) for i in group],
                      entropy),
                      _items(evaluated, group, positions, plan, population, accuracy), level) for group in groups])


def _items(evaluated: List[Statistic], group: Tuple[int, ...], positions: List[int], plan: Any,
           population: Population, accuracy: Any) -> Any:
    """A subset's :class:`~StaICC.stats.lite_residual.SubsetItems` with the proxies of ``group``, built when called
    (``accuracy``: the full tables' item values, each computed once for the chunk)."""
    tables = [evaluated[1 + i].table for i in group]
    return lambda: subset_items(evaluated[0].table, tables, positions, plan.weights, tables, dict(population.strata),
                                accuracy)


def _proxy_rows(proxy: Statistic, weights: Any) -> Any:
    """A proxy's signed ECE bin gaps on every weight row and on its full run (None where it has none): what
    :func:`~StaICC.stats.lite_ece.proxy_gaps` reads of one subset, for all at once."""
    found = full_gaps(proxy)
    if found is None:
        return None
    return bin_gaps(found[0], weights, proxy.table.repeats), found[1]


def _ece_at(rows: Any, at: int, resamples: int) -> Any:
    """One subset's (point, resampled, full run) proxy gaps out of :func:`_proxy_rows` (None stays None)."""
    return None if rows is None else (rows[0][at], rows[0][at + 1:at + resamples + 1], rows[1])


def _hull_undecided(statistic: Statistic, flags: Any, chunk: List[Tuple[int, List[int]]],
                    plans: List[Tuple[List[int], Any, Any]], level: float, out: List[Any]) -> None:
    """For the subsets of ``chunk`` whose full run's entropy branch is a last-bit accident
    (:mod:`.lite_branches`), the entropy's interval widened to the hull of both branches' (plain and
    power-tuned alike), from one more product on the other branch."""
    chosen = [k for k, (_, positions) in enumerate(chunk) if undecided(flags, positions)]
    if not chosen:
        return
    np = numpy_module("numpy")
    table, width = statistic.table, plans[0][2].shape[0] + 1
    values = weighted_values(other_branch(statistic), _embedded(np, [plans[k] for k in chosen], len(table)))
    for at, k in enumerate(chosen):
        j, plan = chunk[k][0], plans[k][1]
        other = finished(table.benchmark, *_split(values, at, width), plan.freedom, level)
        plain, tuned = out[j]
        out[j] = (hulled(plain, lambda o=other: o), [hulled(t, lambda o=other: o) for t in tuned])


def _hull_post(statistic: Statistic, chunk: List[Tuple[int, List[int]]], plans: List[Tuple[List[int], Any, Any]],
               level: float, out: List[Any]) -> None:
    """For the subsets of ``chunk`` whose evaluations cross between Post_bias's branches (:mod:`.lite_branches`),
    the post-bias intervals widened to the hull of both branches' (plain and power-tuned alike)."""
    if not has_post_bias(statistic):
        return
    np = numpy_module("numpy")
    table = statistic.table
    for (j, _), plan in zip(chunk, plans):
        weights = _embedded(np, [plan], len(table))

        def evaluate(forced: Statistic, weights: Any = weights, freedom: int = plan[1].freedom) -> Found:
            return finished(table.benchmark, *_split(weighted_values(forced, weights), 0, len(weights)), freedom, level)
        others = post_branches(statistic, weights[0], weights[1:], evaluate)
        if others:
            plain, tuned = out[j]
            out[j] = (hull(plain, others), [hull(t, others) for t in tuned])


def _exact(exact_items: Optional[Tuple[List[float], float]], metrics: Any, always: Any, labels: List[Hashable],
           positions: Sequence[int], population: Population, level: float) -> Any:
    """:func:`~StaICC.stats.lite_exact.exact_interval` of the subset, from the full table's item values."""
    if exact_items is None:
        return None
    values, least = [exact_items[0][i] for i in positions], exact_items[1]

    def exact(name: str) -> Optional[Tuple[float, float]]:
        found = exact_of_items(values, labels, dict(population.strata), level,
                               name in always) if name in metrics else None
        return found and unscaled(found, least)
    return exact


def _one_by_one(statistic: Statistic, population: Population, positions: List[int], resamples: int, seed: int,
                level: float, proxies: Sequence[Statistic],
                groups: List[Tuple[int, ...]]) -> Tuple[Found, List[Found]]:
    """A subset on a branch of its own: the package's estimators on its own table."""
    subset = Statistic(statistic.benchmark, statistic.table.restricted(positions), statistic.names())
    subset.x_values = statistic.x_values
    rows = subset_is_probability_rows(statistic.benchmark, subset.table)  # read once for every estimator
    plain = estimate_statistic(subset, population, resamples=resamples, seed=seed, level=level, probabilities=rows)
    key = (statistic.benchmark, statistic.table.dataset)
    return plain, [TunedEstimator([Proxy(f"proxy {i}", {}, _tables={key: proxies[i]}) for i in group])(
        subset, population, resamples=resamples, seed=seed, level=level, probabilities=rows) for group in groups]
