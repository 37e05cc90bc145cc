"""Proxy-assisted lite runs: a cheap model scored on every test item corrects the subset's estimate.

A lite run asks the target model on a stratified subset of the test items.  A *proxy* (the
built-in lexical reference model, which runs the whole suite in seconds, or a cached run of
another model on the same prompts) is known on every item, so the part of each metric that
the proxy predicts needs no sampling.  The **difference estimator** (prediction-powered
inference with the proxy's own labels replaced by its full-run value; Särndal, Swensson &
Wretman, 1992, ch. 6; Angelopoulos et al., 2023) estimates a metric M of the full run as

    M_proxy(all items) + [M_target(subset) - M_proxy(subset)],

both subset values weighted by label as :mod:`StaICC.stats.lite` weights them, and takes
the spread of the bracket from the same stratified rescaling bootstrap, the target and
the proxy resampled *together* (the same weights for both).  For a metric that is a mean
over items (accuracy, likelihood) this is the stratified difference estimator: unbiased
whatever the proxy, with a finite-population variance of sum_s W_s^2 (1 - n_s/N_s) S_d,s^2 / n_s
(d = target - proxy); its interval is narrower than the plain one as far as the proxy's
item values correlate with the target's.  For the other metrics (macro-F1, ECE, slopes,
consistency, KL) it is the same construction on the plug-in: unbiased to first order.

**Which interval is reported.**  Both the plain interval (:func:`~.lite.estimate_statistic`)
and the difference interval are computed at level 1 - alpha/2 (97.5 % for a nominal 95 %),
and the narrower one is reported.  By the union bound both hold the full run's value with
probability at least 1 - alpha, so the one chosen by looking at both does too (a Bonferroni
split: the choice costs a factor z(0.9875)/z(0.975) = 1.14 in width, paid back by any proxy
correlating better than about 0.5).  Each row (a dataset, or the averaged row) chooses on
its own.  At fraction 1 the subset is the full run and both are its own number.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .items import ItemTable
from .lite_debiased import bias_of
from .lite import (LiteEstimate, LiteResult, _interval, _resample_weights, _snapped, census_values, design,
                   is_census, lite_estimates, t_over_z)
from .statistic import Statistic
from .vectorized import weighted_values


@dataclass
class Proxy:
    """A proxy's records on every test item: (sub-benchmark, dataset) -> its full records, and its name."""

    name: str
    records: Dict[Tuple[str, str], Sequence[Any]]
    #: (sub-benchmark, dataset) -> the label words it was asked with, where its run recorded them
    label_words: Dict[Tuple[str, str], List[str]] = field(default_factory=dict)
    _tables: Dict[Tuple[str, str], Statistic] = field(default_factory=dict, repr=False)

    def statistic(self, benchmark: str, dataset: str) -> Statistic:
        """The proxy's statistic over the full test set of one part (built once)."""
        key = (benchmark, dataset)
        if key not in self._tables:
            from .statistic import _metric_table
            records = self.records.get(key)
            if not records:
                raise ValueError(f"the proxy {self.name} has no records of {benchmark} / {dataset}: a proxy must have "
                                 "been run on every sub-benchmark and dataset of the lite run, with --log-samples")
            self._tables[key] = Statistic(benchmark, ItemTable(benchmark, dataset, records),
                                          list(_metric_table(benchmark)))
        return self._tables[key]


def proxy_of_run(run: Any, name: str) -> Proxy:
    """A :class:`Proxy` from a loaded run (``report.runs.load_run``) or a run_suite result with records."""
    from .lite import _grouped
    records = getattr(run, "records", None) if getattr(run, "parts", None) is None else run
    if records is None:
        raise ValueError(f"the proxy {name} has no records: run it with --log-samples")
    proxy = Proxy(name, _grouped(records))
    for part_name, part in (getattr(run, "parts", None) or {}).items():
        for dataset, words in ((part.metadata or {}).get("label_words") or {}).items():
            proxy.label_words[(part_name, dataset)] = list(words)
    return proxy


def reference_proxy(suite: Dict[str, Any]) -> Proxy:
    """The built-in lexical reference model scored on every test item of ``suite`` (built without a subset):
    the default proxy, free to run (seconds for the whole standard suite)."""
    from ..backends.reference import reference_backend
    from ..subbenchmarks.suite import run_suite
    return proxy_of_run(run_suite(reference_backend(), suite=suite, progress=False), "the reference model")


def check_proxy(proxy: Proxy, planned: Dict[str, Sequence[Any]]) -> None:
    """Refuse, before anything is asked, a proxy that lacks a planned (sub-benchmark, dataset), answers another
    label space, or was asked other prompts than the lite run will ask (ValueError naming where)."""
    from ..requests import prompt_sha256
    for works in planned.values():
        for work in works:
            plan, where = work.plan, f"{work.plan.benchmark} / {work.dataset}"
            table = proxy.statistic(plan.benchmark, work.dataset).table
            requests = work.requests()
            words = proxy.label_words.get((plan.benchmark, work.dataset))
            space = list(requests[0].label_space) if requests else []
            if requests and (len(space) != table.width or words is not None and words != space):
                raise ValueError(f"the proxy {proxy.name} answers another label space on {where} "
                                 f"({words or table.width} against the lite run's {space})")
            position = {t: i for i, t in enumerate(table.items)}
            per_pass, count = plan.queries_per_pass, plan.test_count
            for i, request in enumerate(requests):
                q = i % per_pass
                p, k, test = i // per_pass, q // count, plan.test_of(q)
                known = test in position and p < table.passes and k < table.repeats
                if not known or table.hashes[p][k][position[test]] != prompt_sha256(request.prompt):
                    raise ValueError(f"the proxy {proxy.name} was asked other prompts than the lite run on {where} "
                                     f"(pass {p}, repeat {k}, test item {test}): run it with the same benchmarks, "
                                     "datasets, k and settings")


def matched_subset(target: Statistic, proxy: Statistic, name: str) -> Statistic:
    """The proxy's statistic on the target subset's items, in the same order, its prompts checked to be the
    target's (a proxy of other prompts, or another label space, estimates another quantity)."""
    full, table = proxy.table, target.table
    where = f"{table.benchmark} / {table.dataset}"
    position = {t: i for i, t in enumerate(full.items)}
    missing = [t for t in table.items if t not in position]
    if missing or (full.passes, full.repeats) != (table.passes, table.repeats):
        raise ValueError(f"the proxy {name} was not run on the lite run's items of {where} (test item "
                         f"{missing[0] if missing else '?'}, or other passes/repeats): run it on the same suite")
    if full.width != table.width:
        raise ValueError(f"the proxy {name} answers {full.width} labels on {where}, the target {table.width}: "
                         "another label space")
    sub = full.restricted([position[t] for t in table.items])
    if sub.hashes != table.hashes or sub.labels != table.labels:
        raise ValueError(f"the proxy {name} was asked other prompts (or other ground truth) than the lite run on "
                         f"{where}: run it with the same benchmarks, datasets, k and seeds")
    matched = Statistic(table.benchmark, sub, target.names())
    matched.x_values = target.x_values  # a slope's abscissae are the target's
    return matched


class DifferenceEstimator:
    """:func:`~.lite.estimate_statistic`'s signature, with the difference estimator; it keeps, per
    (sub-benchmark, dataset, metric), the proxy's full-run value and the correlation of the target's and
    the proxy's resampled values (how much the proxy helps)."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.details: Dict[Tuple[str, str, str], Dict[str, Any]] = {}

    def __call__(self, statistic: Statistic, population: Any, *, resamples: int, seed: int,
                 level: float) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
        table = statistic.table
        whole = self.proxy.statistic(table.benchmark, table.dataset)
        sub = matched_subset(statistic, whole, self.proxy.name)
        if is_census(table, population):
            return census_values(statistic, resamples)
        plan = design(table, population)
        rows = _resample_weights(plan, resamples, seed, ("lite", table.benchmark, table.dataset))
        target, mine = weighted_values(statistic, [plan.weights]), weighted_values(sub, [plan.weights])
        target_spread, mine_spread = weighted_values(statistic, rows), weighted_values(sub, rows)
        truth = whole.point()
        scale = t_over_z(level, plan.freedom)
        out: Dict[str, Tuple[Any, Any, Any, List[Any]]] = {}
        for name, values in target.items():
            t, p, known = values[0], (mine.get(name) or [None])[0], truth.get(name)
            if t is None or p is None or known is None or name not in target_spread or name not in mine_spread:
                continue
            differences = [_minus(tr, pr) for tr, pr in zip(target_spread[name], mine_spread[name])]
            bias = bias_of(table.benchmark, name, _minus(t, p), differences)  # the plug-in difference's bias
            value = _combine(known, t, p)
            if bias:  # a scalar corrected for its plug-in bias (StaICC.stats.lite_debiased)
                value -= bias
            scaled = [_combine(value, d, _minus(t, p), scale) for d in differences]
            low, high = _interval(scaled, level)
            out[name] = (value, _snapped(name, value, low), _snapped(name, value, high), scaled)
            self.details[(table.benchmark, table.dataset, name)] = {
                "proxy_full_value": known, "correlation": _correlation(target_spread[name], mine_spread[name])}
        return out


def _minus(a: Any, b: Any) -> Any:
    if isinstance(a, list):
        return [_minus(x, y) for x, y in zip(a, b)] if isinstance(b, list) else None
    if a is None or b is None:
        return math.nan
    return a - b


def _combine(base: Any, a: Any, b: Any, scale: float = 1.0) -> Any:
    """base + scale * (a - b), element-wise for a vector; NaN where a value is missing or not finite."""
    if isinstance(base, list):
        if not (isinstance(a, list) and isinstance(b, list)):
            return [math.nan] * len(base)
        return [_combine(x, y, z, scale) for x, y, z in zip(base, a, b)]
    if any(v is None or not isinstance(v, (int, float)) or not math.isfinite(v) for v in (base, a, b)):
        return math.nan
    return base + scale * (a - b)


def _correlation(a: Sequence[Any], b: Sequence[Any]) -> Optional[float]:
    """Pearson's correlation of two resampled scalar metrics (None for vectors or no spread)."""
    pairs = [(x, y) for x, y in zip(a, b) if isinstance(x, (int, float)) and isinstance(y, (int, float))
             and math.isfinite(x) and math.isfinite(y)]
    if len(pairs) < 3:
        return None
    mx, my = (math.fsum(v) / len(pairs) for v in zip(*pairs))
    sxy = math.fsum((x - mx) * (y - my) for x, y in pairs)
    sxx, syy = math.fsum((x - mx) ** 2 for x, _ in pairs), math.fsum((y - my) ** 2 for _, y in pairs)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def split_level(level: float) -> float:
    """Each of the two candidate intervals' level: 1 - alpha/2 (the Bonferroni split of alpha = 1 - level)."""
    return 1 - (1 - level) / 2


def proxy_lite_estimates(records: Any, fraction: float, populations: Dict[Tuple[str, str], Any], proxy: Proxy, *,
                         resamples: int = 1000, seed: int = 20250101, level: float = 0.95) -> LiteResult:
    """:func:`~.lite.lite_estimates` with a proxy: each cell the narrower of the plain and the difference
    interval, both at :func:`split_level`, so that the reported one holds at ``level``."""
    records = list(records) if getattr(records, "parts", None) is None else records
    each = split_level(level)
    plain = lite_estimates(records, fraction, populations, resamples=resamples, seed=seed, level=each)
    estimator = DifferenceEstimator(proxy)
    helped = lite_estimates(records, fraction, populations, resamples=resamples, seed=seed, level=each,
                            estimator=estimator)
    merged: Dict[str, Dict[str, Dict[str, LiteEstimate]]] = {}
    for benchmark, rows in plain.estimates.items():
        for row, metrics in rows.items():
            for metric, mine in metrics.items():
                other = helped.estimates.get(benchmark, {}).get(row, {}).get(metric)
                detail = estimator.details.get((benchmark, row, metric), {})
                merged.setdefault(benchmark, {}).setdefault(row, {})[metric] = chosen(mine, other, detail)
    return ProxyLiteResult(fraction, resamples, seed, level, merged, proxy=proxy.name)


def width(estimate: Optional[LiteEstimate]) -> float:
    """An interval's width (summed over a vector's elements); infinite where there is none."""
    if estimate is None or not estimate.estimable:
        return math.inf
    lows, highs = (v if isinstance(v, list) else [v] for v in (estimate.low, estimate.high))
    spans = [b - a for a, b in zip(lows, highs) if isinstance(a, (int, float)) and isinstance(b, (int, float))]
    total = math.fsum(spans) if len(spans) == len(lows) else math.nan
    return total if math.isfinite(total) else math.inf


def chosen(plain: LiteEstimate, helped: Optional[LiteEstimate], detail: Dict[str, Any]) -> LiteEstimate:
    """The narrower of the two candidates (the plain one on a tie), with both recorded."""
    use = helped is not None and width(helped) < width(plain)
    best = helped if use else plain
    record = {"used": use, "plain": [plain.value, plain.low, plain.high], **detail}
    if helped is not None:
        record["difference"] = [helped.value, helped.low, helped.high]
    return LiteEstimate(best.value, best.low, best.high, best.estimable, best.note, proxy=record)


@dataclass
class ProxyLiteResult(LiteResult):
    """A proxy-assisted lite run's estimates: :class:`~.lite.LiteResult` and the proxy's name."""

    proxy: str = ""

    def to_dict(self) -> Dict[str, Any]:
        found = super().to_dict()
        found["method"] = (f"the narrower of the weighted plug-in and the difference estimator with the proxy "
                           f"{self.proxy} (scored on every test item), each interval at "
                           f"{split_level(self.level):.1%} (Bonferroni split) from the stratified bootstrap with "
                           "finite-population correction (StaICC.stats.lite_proxy)")
        found["proxy"] = self.proxy
        return found
