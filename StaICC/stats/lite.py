"""Lite runs: the full run's numbers estimated from a stratified subset of its test items, with intervals.

The full run is the population: its T test items (with all their repeats, passes and templates) give every number of
the standard. A lite run asks a label-stratified subset of n items (:mod:`StaICC.sampling.subsets`); its records are
exactly the full run's records of those items. Each metric is then estimated by the *weighted plug-in* estimator:
the metric's own formula on the subset, each item weighted by its label's share of the full test set over its share
of the subset (N_s / n_s, normalised), so that a label the subset over- or under-represents by rounding counts as it
does in the full run. A label of the full test set that the subset misses has its weight spread over the others.

The interval is a stratified rescaling bootstrap (Rao & Wu, 1988): each resample draws n_s - 1 items with replacement
within each label and rescales the weights so that their spread is that of a sample of n_s drawn *without* replacement
from the label's N_s items (the finite-population correction; labels with a single item in the subset are resampled
together). The metric is recomputed with each resample's weights; for the small samples a lite run has, the deviations
from the estimate are widened by Student's t quantile over the normal one with n - G degrees of freedom (G: the groups
resampled; the "expanded percentile interval"), and the interval is their percentile interval. The averaged row
averages each resample over datasets (:mod:`.lite_averaged`).

Which metrics this works for is measured, not assumed: ``benchmarks/bench_lite_coverage.py`` restricts full runs of
several models to many subsets and counts how often the interval holds the full run's value. :data:`ESTIMABLE` holds
what that study found (coverage of at least 95 % over all its models and 90 % for each, for a nominal 95 %); every
other metric is reported as not estimable at the fraction. The estimates need NumPy.
"""
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..metrics.exact_sum import CHECK, recorded_rules
from .flips import has_ground_truth
from .items import ItemTable, draw_resamples
from .lite_branches import hull, hulled, item_flags, other_branch, post_branches, undecided
from .lite_debiased import bias_of
from .lite_averaged import averaged, census_resamples, followed, reach
from .lite_bounds import cell_bounds, subset_is_probability_rows, within_range
from .lite_ece import METRIC as ECE, ece_of_rows, ece_widened, gaps_for
from .lite_scaled import resample_interval, scaled_all, snapped
from .lite_unseen import IntervalRules, interval_rules
from .statistic import Statistic
from .vectorized import numpy_module, weighted_values

#: the fractions the coverage study measured
STUDIED_FRACTIONS = (0.0625, 0.125, 0.25)
#: the least coverage (of a nominal 95 % interval) over all models of the study for a metric to be reported
REQUIRED_COVERAGE = 0.95
#: the least coverage for each model of the study: a metric that one kind of model breaks is not reported,
#: even when models it estimates exactly (chance, a constant answer) lift the overall coverage
REQUIRED_MODEL_COVERAGE = 0.90
#: (sub-benchmark, metric, "dataset" or "averaged") -> the smallest studied fraction from which on the study measured
#: REQUIRED_COVERAGE over all and REQUIRED_MODEL_COVERAGE for each of twelve models, tiny HF among them (200 subsets at
#: 12.5 %: lite_coverage.txt; Normal ECE, Post_bias, GLER, the prior biases, the consistencies:
#: lite_coverage_{ece,post_bias,gler,bias,template}.txt)
ESTIMABLE: Dict[Tuple[str, str, str], float] = {
    ('Contextual_bias', 'distribution', 'dataset'): 0.125,
    ('Contextual_bias', 'entropy', 'dataset'): 0.125,
    ('Contextual_bias', 'entropy', 'averaged'): 0.125,
    ('Demo_sens', 'consistency', 'dataset'): 0.125,
    ('Demo_sens', 'consistency', 'averaged'): 0.125,
    ('Domain_bias', 'distribution', 'dataset'): 0.125,
    ('Domain_bias', 'entropy', 'dataset'): 0.125,
    ('Domain_bias', 'entropy', 'averaged'): 0.125,
    ('GLER', 'accuracy', 'dataset'): 0.125,
    ('GLER', 'accuracy', 'averaged'): 0.125,
    ('GLER', 'averaged_truelabel_likelihood', 'dataset'): 0.125,
    ('GLER', 'averaged_truelabel_likelihood', 'averaged'): 0.125,
    ('GLER', 'expected_calibration_error_1', 'dataset'): 0.125,
    ('GLER', 'expected_calibration_error_1', 'averaged'): 0.125,
    ('GLER', 'macro_F1', 'dataset'): 0.125,
    ('GLER', 'macro_F1', 'averaged'): 0.125,
    ('Normal', 'accuracy', 'dataset'): 0.125,
    ('Normal', 'accuracy', 'averaged'): 0.125,
    ('Normal', 'averaged_truelabel_likelihood', 'dataset'): 0.125,
    ('Normal', 'averaged_truelabel_likelihood', 'averaged'): 0.125,
    ('Normal', 'expected_calibration_error_1', 'dataset'): 0.125,
    ('Normal', 'expected_calibration_error_1', 'averaged'): 0.125,
    ('Normal', 'macro_F1', 'dataset'): 0.125,
    ('Normal', 'macro_F1', 'averaged'): 0.125,
    ('Post_bias', 'DL div.', 'dataset'): 0.125,
    ('Post_bias', 'DL div.', 'averaged'): 0.125,
    ('Post_bias', 'distribution', 'dataset'): 0.125,
    ('Template_sens', 'consistency', 'dataset'): 0.125,
    ('Template_sens', 'consistency', 'averaged'): 0.125,
}


@dataclass(frozen=True)
class Population:
    """The full run's test items of one (sub-benchmark, dataset): how many carry each label."""

    strata: Tuple[Tuple[Hashable, int], ...]

    @classmethod
    def from_labels(cls, labels: Sequence[Hashable]) -> "Population":
        counts: Dict[Hashable, int] = {}
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
        return cls(tuple(counts.items()))

    @property
    def total(self) -> int:
        return sum(n for _, n in self.strata)


@dataclass
class LiteEstimate:
    """An estimate of a full-run number with its interval, or why there is none."""

    value: Any = None
    low: Any = None
    high: Any = None
    estimable: bool = True
    note: str = ""
    #: with a proxy (:mod:`StaICC.stats.lite_proxy`): whether it was used, both candidates, its correlation
    proxy: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        found = {"value": self.value, "low": self.low, "high": self.high, "estimable": self.estimable,
                 "note": self.note}
        if self.proxy is not None:
            found["proxy"] = self.proxy
        return found


@dataclass
class Design:
    """How a subset's items stand for the full test set: weights, and the groups resampled."""

    #: each item's weight: its label's count in the full test set over its count in the subset (sum: n)
    weights: List[float]
    #: (items, rescaling factor sqrt(1 - n_g / N_g)) of each group resampled (a label, or the pooled labels of
    #: one item each)
    groups: List[Tuple[List[int], float]]
    #: degrees of freedom of the spread: n minus the groups resampled
    freedom: int = 1


def design(table: ItemTable, population: Population) -> Design:
    """The subset's item weights (summing to n) and resampling groups, against the full test set."""
    labelled = has_ground_truth(table.benchmark)
    strata = [label if labelled else None for label in table.labels]
    full = dict(population.strata) if labelled else {None: population.total}
    n, T = len(strata), population.total
    if n > T:
        raise InvalidValueError(f"{table.benchmark} / {table.dataset}: {n} test items in the subset, {T} in the full run")
    members: Dict[Hashable, List[int]] = {}
    for i, s in enumerate(strata):
        if s not in full:
            raise InvalidValueError(f"{table.benchmark} / {table.dataset}: label {s!r} of the subset is not among the full "
                                    f"run's labels {sorted(full, key=repr)}")
        members.setdefault(s, []).append(i)
    covered = sum(full[s] for s in members)  # labels the subset misses: their weight goes to the others
    weights = [0.0] * n
    for s, items in members.items():
        for i in items:
            weights[i] = (full[s] * T / covered) / len(items) * n / T
    groups = [(items, math.sqrt(1 - len(items) / full[s])) for s, items in members.items() if len(items) > 1]
    pooled = [s for s, items in members.items() if len(items) == 1 and full[s] > 1]
    if len(pooled) > 1:  # labels with one item in the subset: resampled together
        groups.append(([members[s][0] for s in pooled], math.sqrt(1 - len(pooled) / sum(full[s] for s in pooled))))
    return Design(weights, groups, max(n - len(groups), 1))


def t_over_z(level: float, freedom: int) -> float:
    """Student's t quantile over the normal one at the two-sided ``level``: how much wider a small sample's
    interval is (the Cornish-Fisher expansion of the t quantile in 1 / freedom, Abramowitz & Stegun 26.7.5;
    within 0.3 % for 3 degrees of freedom or more, exact in the limit)."""
    from statistics import NormalDist
    z = NormalDist().inv_cdf(0.5 + level / 2)
    v = max(freedom, 3)
    t = (z + (z ** 3 + z) / (4 * v) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * v ** 2)
         + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * v ** 3)
         + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * v ** 4))
    return t / z


def _resample_weights(plan: Design, resamples: int, seed: int, tags: Sequence[str]) -> Any:
    """One weight row per resample, by the rescaling bootstrap of Rao and Wu (1988).

    In each group of n_g items, n_g - 1 items are drawn with replacement (c_i times item i)
    and item i's weight becomes w_i (1 - lam + lam n_g / (n_g - 1) c_i), lam = sqrt(1 - n_g / N_g):
    never negative, on average w_i, and its spread is the without-replacement spread of a
    sample of n_g from N_g (the finite-population correction), for any smooth statistic.
    Rows are rescaled to sum to n (a pooled group's weights differ, so its total varies).
    Returns a NumPy array (resamples x items).
    """
    np = numpy_module("numpy")
    base = np.asarray(plan.weights, dtype=np.float64)
    rows = np.tile(base, (resamples, 1))
    for g, (group, lam) in enumerate(plan.groups):
        size = len(group)
        drawn = np.asarray(draw_resamples(size, resamples, seed, *tags, f"group {g}"))[:, :size - 1]
        counts = np.zeros((resamples, size))
        np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1.0)
        members = np.asarray(group)
        rows[:, members] = base[members] * (1 - lam + lam * size / (size - 1) * counts)
    return rows * (len(base) / rows.sum(axis=1, keepdims=True))


def estimate_statistic(statistic: Statistic, population: Population, *, resamples: int, seed: int,
                       level: float, probabilities: Optional[bool] = None) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
    """metric -> (estimate, low, high, scaled resample values) from a subset's statistic, for every metric
    with a weighted form (estimable or not: the coverage study reads them all).  ``probabilities``: whether the
    subset's rows are probability vectors (:func:`~.lite_bounds.subset_is_probability_rows`, read here when not
    given), where its metrics' ranges hold."""
    table = statistic.table
    plan = design(table, population)
    if is_census(table, population):
        return census_values(statistic, resamples)
    rows = _resample_weights(plan, resamples, seed, ("lite", table.benchmark, table.dataset))
    on = plain_on(statistic, population, plan, rows, level)
    if probabilities is None:
        probabilities = subset_is_probability_rows(table.benchmark, table)
    return within_range(table.benchmark, branch_hulls(statistic, plan, rows, on(statistic), on), probabilities)


def plain_on(statistic: Statistic, population: Population, plan: Design, rows: Any,
             level: float) -> Callable[[Statistic], Dict[str, Tuple[Any, Any, Any, List[Any]]]]:
    """The plain estimate of a subset on a branch of its statistic (itself, or another branch): the subset's
    interval rules (:mod:`.lite_unseen`) and, for Normal's ECE, the signed bin gaps (:mod:`.lite_ece`)."""
    rules = interval_rules(statistic, population, plan, level)

    def on(branch: Statistic) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
        point = weighted_values(branch, [plan.weights])
        return finished(statistic.table.benchmark, {n: v[0] for n, v in point.items()}, weighted_values(branch, rows),
                        plan.freedom, level, rules, gaps_for(branch, rows, plan.weights))
    return on


def branch_hulls(statistic: Statistic, plan: Design, rows: Any, found: Dict[str, Any], on: Any) -> Dict[str, Any]:
    """``found`` widened to the hull of the other branches' plain estimates ``on`` gives (:mod:`.lite_branches`):
    the bias entropy's where the full run's branch is a last-bit accident, Post_bias's where the resamples cross."""
    if undecided(item_flags(statistic), range(len(statistic.table))):
        found = hulled(found, lambda: on(other_branch(statistic)))
    return hull(found, post_branches(statistic, plan.weights, rows, on))


def finished(benchmark: str, point: Dict[str, Any], spread: Dict[str, List[Any]], freedom: int, level: float,
             exact: Any = None, gaps: Any = None) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
    """metric -> (estimate, low, high, scaled resamples) from a subset's weighted and resampled values: the t widening,
    the bias correction (:mod:`.lite_debiased`; the resamples' deviations re-centred on the corrected estimate), the
    interval (``exact``'s rules (:mod:`.lite_unseen`), else the percentile interval of the scaled resamples) and the
    widening for unseen answers.  ``gaps``: Normal's signed ECE bin gaps (point, resampled): :mod:`.lite_ece`."""
    scale = t_over_z(level, freedom)
    out: Dict[str, Tuple[Any, Any, Any, List[Any]]] = {}
    for name, value in point.items():
        if value is None or name not in spread:
            continue
        found = ece_of_rows(*gaps, scale, level) if gaps is not None and (benchmark, name) == ECE else None
        if found is not None:  # widened for answers the subset has not seen (lite_unseen.ece_shift)
            out[name] = ece_widened(found, exact.unseen if isinstance(exact, IntervalRules) else None)
            continue
        also = exact.debiased if isinstance(exact, IntervalRules) else frozenset()  # 0 but lite_debiased's:
        bias = bias_of(benchmark, name, value, spread[name], also)
        scaled = scaled_all(value, spread[name], scale, (1 + scale) * bias)  # (value - bias) + scale (v - mean)
        value = value - bias if bias else value
        found = exact and exact(name)
        low, high = found or resample_interval(scaled, level)
        if found and not isinstance(value, list):  # the resamples follow the exact interval (lite_averaged)
            scaled = followed(value, scaled, resample_interval(scaled, level), found)
        low, high = exact.widened(name, low, high) if isinstance(exact, IntervalRules) else (low, high)
        out[name] = (value, snapped(name, value, low), snapped(name, value, high), scaled)
    return out


def is_census(table: ItemTable, population: Population) -> bool:
    """Whether the subset is the whole test set (``--lite 1.0``, or ``--lite-items`` at least the items there)."""
    return len(table) == population.total


def census_values(statistic: Statistic, resamples: int) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
    """The full run's own numbers, computed by the standard's code, each with an interval of width zero: a
    subset that is the whole test set has nothing to estimate (a weighted sum in another order would differ
    in the last bits)."""
    names = set(weighted_values(statistic, [[1.0] * len(statistic.table)]))
    return {name: (value, value, value, census_resamples(statistic.table, name, value, resamples))
            for name, value in statistic.point().items() if name in names and value is not None}


def estimable(benchmark: str, metric: str, fraction: float, row: str = "dataset") -> bool:
    """Whether the coverage study reports ``metric`` of ``benchmark`` at ``fraction``, on one dataset's row
    (``row="dataset"``) or the averaged one (``"averaged"``); see :data:`ESTIMABLE`. At fraction 1 the
    subset is the whole test set, so every metric is its own full-run value."""
    if fraction >= 1:
        return True
    start = ESTIMABLE.get((benchmark, metric, row))
    return start is not None and fraction >= start


def not_estimable_note(fraction: float) -> str:
    return (f"not estimable at this fraction ({fraction:g}): the coverage study did not find a {REQUIRED_COVERAGE:.0%} "
            f"coverage of the full run's value over its models and {REQUIRED_MODEL_COVERAGE:.0%} for each, here and above")


@dataclass
class LiteResult:
    """A lite run's estimates of the full run's numbers: benchmark -> row (dataset or "Averaged") -> metric."""

    fraction: float
    resamples: int
    seed: int
    level: float
    estimates: Dict[str, Dict[str, Dict[str, LiteEstimate]]]

    def to_dict(self) -> Dict[str, Any]:
        return {"fraction": self.fraction, "resamples": self.resamples, "seed": self.seed, "level": self.level,
                "standard": False, "method": "weighted plug-in; stratified bootstrap with finite-population "
                                             "correction (StaICC.stats.lite)",
                "benchmarks": {b: {row: {m: e.to_dict() for m, e in metrics.items()} for row, metrics in rows.items()}
                               for b, rows in self.estimates.items()}}


def _grouped(records: Any) -> Dict[Tuple[str, str], Any]:
    """(benchmark, dataset) -> records, from a loaded run (``report.runs.load_run``) or any iterable of records."""
    parts = getattr(records, "parts", None)
    if parts is not None:
        return {(name, dataset): part.records[dataset] for name, part in parts.items() for dataset in part.records}
    grouped: Dict[Tuple[str, str], List[Any]] = {}
    for record in records:
        grouped.setdefault((record["benchmark"], record["dataset"]), []).append(record)
    return grouped


def lite_estimates(records: Any, fraction: float, populations: Dict[Tuple[str, str], Any], *,
                   resamples: int = 1000, seed: int = 20250101, level: float = 0.95,
                   estimator: Any = None, rules: Optional[Dict[Tuple[str, str], str]] = None) -> LiteResult:
    """Estimates, with intervals, of every standard metric of the full run from a lite run's records.

    ``records``: the lite run's records (a loaded run, or an iterable of record dicts with
    ``benchmark``, ``dataset``, ``pass``, ``repeat``, ``test_index``, ``label``, ``prediction``,
    ``prompt_sha256``, ``query_index``: what ``samples.jsonl`` holds); ``fraction``: the fraction
    the subsets were picked at; ``populations``: for each (sub-benchmark, dataset), the full
    run's test labels (a :class:`Population`, or the list of labels; for the pseudo queries of
    the bias benchmarks only their number counts).  A metric the coverage study does not
    report at ``fraction`` gets ``estimable=False`` and a note instead of numbers.  ``estimator``:
    what estimates one part (:func:`estimate_statistic`'s signature, ``probabilities`` given; the proxy-assisted one of
    :mod:`StaICC.stats.lite_proxy`), by default :func:`estimate_statistic`.  ``rules``: the exact-sum rule each
    (sub-benchmark, dataset)'s rows took (``metrics.exact_sum.recorded_rules``; read from a loaded run's metadata).
    """
    from ..sampling.subsets import check_fraction
    from .bootstrap import _check_options
    check_fraction(fraction)
    _check_options(resamples, level, seed)
    rules = recorded_rules(records) if rules is None else rules
    estimates: Dict[str, Dict[str, Dict[str, LiteEstimate]]] = {}
    spreads: Dict[Tuple[str, str], List[Tuple[Any, List[Any]]]] = {}
    sampled = set()  # the sub-benchmarks with a dataset the subset does not cover whole
    for (benchmark, dataset), part_records in _grouped(records).items():
        statistic, population = part_statistic(benchmark, dataset, part_records, populations, rules.get((benchmark, dataset), CHECK))
        if not is_census(statistic.table, population):
            sampled.add(benchmark)
        rows = subset_is_probability_rows(benchmark, statistic.table)  # read once: the estimator's ranges and ours
        found = (estimator or estimate_statistic)(statistic, population, resamples=resamples, seed=seed, level=level,
                                                  probabilities=rows)
        row = estimates.setdefault(benchmark, {}).setdefault(dataset, {})
        for metric, (value, low, high, scaled) in found.items():
            row[metric] = _reported(benchmark, metric, "dataset", fraction, value, low, high)
            if not isinstance(value, list):
                spreads.setdefault((benchmark, metric), []).append(
                    (value, scaled, reach(low, high, scaled, level), cell_bounds(benchmark, metric, found, rows)))
    for (benchmark, metric), per_dataset in spreads.items():
        value, low, high = averaged(per_dataset, level, benchmark not in sampled)
        estimates[benchmark].setdefault("Averaged", {})[metric] = _reported(benchmark, metric, "averaged", fraction,
                                                                            value, low, high)
    return LiteResult(fraction, resamples, seed, level, estimates)


def part_statistic(benchmark: str, dataset: str, records: Sequence[Any], populations: Dict[Tuple[str, str], Any],
                   rule: str = CHECK) -> Tuple[Statistic, Population]:
    """The statistic of one (sub-benchmark, dataset)'s subset records (under the exact-sum ``rule``), and its population."""
    from .statistic import _metric_table
    population = populations.get((benchmark, dataset))
    if population is None:
        raise InvalidValueError(f"{benchmark} / {dataset}: no population (the full run's test labels) was given")
    if not isinstance(population, Population):
        population = Population.from_labels(population)
    return Statistic(benchmark, ItemTable(benchmark, dataset, records, rule), list(_metric_table(benchmark))), population


def _reported(benchmark: str, metric: str, row: str, fraction: float, value: Any, low: Any, high: Any) -> LiteEstimate:
    if estimable(benchmark, metric, fraction, row):
        return LiteEstimate(value, low, high)
    return LiteEstimate(estimable=False, note=not_estimable_note(fraction))
