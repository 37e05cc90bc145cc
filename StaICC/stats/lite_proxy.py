"""Proxy-assisted lite runs: a cheap model scored on every test item corrects the subset's estimate.

A lite run asks the target model on a stratified subset of the test items.  A *proxy* (the
built-in lexical reference model, which runs the whole suite in seconds, or a cached run of
another model on the same prompts) is known on every item, so the part of each metric that
the proxy predicts needs no sampling.  The **power-tuned difference estimator** (the
regression estimator of survey sampling, Särndal, Swensson & Wretman, 1992, ch. 7; PPI++,
Angelopoulos, Duchi & Zrnic, 2023, with the proxy's value known on every item) estimates a
metric M of the full run as

    M_target(subset) + lambda [M_proxy(all items) - M_proxy(subset)],

both subset values weighted by label as :mod:`StaICC.stats.lite` weights them, and the
spread taken from the same stratified rescaling bootstrap, the target and the proxy
resampled *together* (the same weights for both).  The weight lambda is estimated on the
subset, from those resamples, as the variance-minimising one,
lambda = Cov(M_target*, M_proxy*) / Var(M_proxy*), clipped to [0, 1] (per element of a
vector metric): lambda = 0 is the plain estimate, lambda = 1 the plain difference estimator.  The variance
t - lambda p is a quadratic in lambda with its minimum at the unclipped value, so any lambda between 0 and twice
that minimum, the clipped one included, has a variance no larger than the plain estimator's.  Estimating lambda
costs one degree of freedom of the small-sample widening, and its own variability from subset to subset widens the
resampled spread by sqrt(d / (d - 2)) (:func:`~.lite_proxy_weights.weight_widening`); so lambda is kept only where
the fitted interval, after those costs, is expected no wider than the plain one, and is 0 elsewhere (the plain
cell, bit for bit): :func:`~.lite_proxy_weights.paying`, a choice made on the subset's resampled spreads, as lambda
is, never on where the estimates lie (no Bonferroni split of the level; its coverage cost measured in docs/lite.md).  For a metric that is a mean over items
(accuracy, likelihood) this is the stratified regression estimator with a common slope; for the others (macro-F1,
slopes, KL, entropies) the same construction on the plug-in.  The bias corrections of :mod:`.lite_debiased` apply
to the combined resamples.  Where the design gives the exact interval (accuracy with a small label, the
consistencies always: :mod:`.lite_exact`), lambda is 0: the choice rests on the design alone.  At fraction 1 the
subset is the full run and the estimate is its own number.

A proxy never makes an interval less valid than the plain one, so every rule of the plain path
applies: the exact intervals and the widenings for unseen answers (:mod:`.lite_unseen`), the
hulls of the standard's branches (:mod:`.lite_branches`, the other branches' plain estimates).
Normal's ECE takes the proxy on its signed bin gaps, each a mean over items (:mod:`.lite_ece`), not on the biased
plug-in ECE; near their maximum the bias entropies take it on their mean row (:mod:`.lite_entropy`).  The
difference M_proxy(all) - M_proxy(subset) must compare one functional: a proxy's evaluations that leave its full
run's Post_bias branch take no proxy there, and its full-run entropy is on the exact-check branch its subset takes.

**Several proxies** (cached runs of other models on the same prompts, the reference model
among them if wished: the setting of a cache of past models' item results) are one estimator
with a weight per proxy, M_target(subset) + sum_j lambda_j [M_j(all items) - M_j(subset)], the
weights minimising the same resampled variance over [0, 1]^m (the bounded least-squares
regression of the target's resamples on the proxies', :mod:`.lite_proxy_weights`); one proxy
is its special case, computed as above bit for bit.  Each weight costs a degree of freedom.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..numeric import CHECK
from .items import ItemTable
from .lite import (LiteResult, _resample_weights, branch_hulls, census_values, design, finished, is_census,
                   lite_estimates, plain_on)
from .lite_bounds import subset_is_probability_rows, within_range
from .lite_branches import off_branch, on_branch
from .lite_ece import METRIC as ECE, gaps_for, proxy_gaps, tuned_gaps
from .lite_entropy import row_entropy, through_rows
from .lite_proxy_weights import details as weight_details, paying, spliced, widened_spread
from .lite_residual import of_subset, residual_hulls
from .lite_unseen import interval_rules
from .statistic import Statistic
from .vectorized import numpy_module, weighted_values


@dataclass
class Proxy:
    """A proxy's records on every test item: (sub-benchmark, dataset) -> its full records, and its name."""

    name: str
    records: Dict[Tuple[str, str], Sequence[Any]]
    #: (sub-benchmark, dataset) -> the label words it was asked with, where its run recorded them
    label_words: Dict[Tuple[str, str], List[str]] = field(default_factory=dict)
    #: (sub-benchmark, dataset) -> the exact-sum rule its rows took (``metrics.exact_sum.recorded_rules``)
    rules: Dict[Tuple[str, str], str] = field(default_factory=dict)
    #: the model its run asked (``results.run.model_description``: redacted); "" where no provenance names one
    model: str = ""
    _tables: Dict[Tuple[str, str], Statistic] = field(default_factory=dict, repr=False)

    def statistic(self, benchmark: str, dataset: str) -> Statistic:
        """The proxy's statistic over the full test set of one part (built once)."""
        key = (benchmark, dataset)
        if key not in self._tables:
            from .statistic import _metric_table
            records = self.records.get(key)
            if not records:
                raise InvalidValueError(f"the proxy {self.name} has no records of {benchmark} / {dataset}: a proxy must have "
                                        "been run on every sub-benchmark and dataset of the lite run, with --log-samples")
            table = ItemTable(benchmark, dataset, records, self.rules.get(key, CHECK))
            self._tables[key] = Statistic(benchmark, table, list(_metric_table(benchmark)))
        return self._tables[key]


def proxy_of_run(run: Any, name: str) -> Proxy:
    """A :class:`Proxy` from a loaded run (``report.runs.load_run``) or a run_suite result with records."""
    from .lite import _grouped
    records = getattr(run, "records", None) if getattr(run, "parts", None) is None else run
    if records is None:
        raise InvalidValueError(f"the proxy {name} has no records: run it with --log-samples")
    from ..metrics.exact_sum import recorded_rules
    from ..results.run import model_description
    proxy = Proxy(name, _grouped(records), rules=recorded_rules(run), model=model_description(run))
    for part_name, part in (getattr(run, "parts", None) or {}).items():
        for dataset, words in ((part.metadata or {}).get("label_words") or {}).items():
            proxy.label_words[(part_name, dataset)] = list(words)
    return proxy


def check_proxy(proxy: Any, planned: Dict[str, Sequence[Any]]) -> None:
    """Refuse, before anything is asked, a proxy (or any of several) that lacks a planned (sub-benchmark,
    dataset), answers another label space, or was asked other prompts than the lite run will ask (ValueError
    naming where and which proxy)."""
    for one in as_proxies(proxy):
        _check_one(one, planned)


def _check_one(proxy: Proxy, planned: Dict[str, Sequence[Any]]) -> None:
    """:func:`check_proxy` of one proxy."""
    from ..requests import prompt_sha256
    for works in planned.values():
        for work in works:
            plan, where = work.plan, f"{work.plan.benchmark} / {work.dataset}"
            table = proxy.statistic(plan.benchmark, work.dataset).table
            requests = work.requests()
            words = proxy.label_words.get((plan.benchmark, work.dataset))
            space = list(requests[0].label_space) if requests else []
            if requests and (len(space) != table.width or words is not None and words != space):
                raise InvalidValueError(f"the proxy {proxy.name} answers another label space on {where} "
                                        f"({words or table.width} against the lite run's {space})")
            position = {t: i for i, t in enumerate(table.items)}
            per_pass, count = plan.queries_per_pass, plan.test_count
            for i, request in enumerate(requests):
                q = i % per_pass
                p, k, test = i // per_pass, q // count, plan.test_of(q)
                known = test in position and p < table.passes and k < table.repeats
                if not known or table.hashes[p][k][position[test]] != prompt_sha256(request.prompt):
                    raise InvalidValueError(f"the proxy {proxy.name} was asked other prompts than the lite run on {where} "
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
        raise InvalidValueError(f"the proxy {name} was not run on the lite run's items of {where} (test item "
                                f"{missing[0] if missing else '?'}, or other passes/repeats): run it on the same suite")
    if full.width != table.width:
        raise InvalidValueError(f"the proxy {name} answers {full.width} labels on {where}, the target {table.width}: "
                                "another label space")
    sub = full.restricted([position[t] for t in table.items])
    if sub.hashes != table.hashes or sub.labels != table.labels:
        raise InvalidValueError(f"the proxy {name} was asked other prompts (or other ground truth) than the lite run on "
                                f"{where}: run it with the same benchmarks, datasets, k and seeds")
    matched = Statistic(table.benchmark, sub, target.names())
    matched.x_values = target.x_values  # a slope's abscissae are the target's
    return matched


def tuned_weight(target: Any, proxy: Any) -> Any:
    """The power-tuning weight lambda = Cov(target*, proxy*) / Var(proxy*) over the resamples, clipped to [0, 1]
    (an array: one per element of a vector metric); 0 where the proxy's resamples do not vary beyond rounding
    (a spread of 1e-10 relative), where the ratio would be noise over noise."""
    np = numpy_module("numpy")
    finite = np.isfinite(target) & np.isfinite(proxy)
    count = finite.sum(axis=0)
    t, p = np.where(finite, target, 0.0), np.where(finite, proxy, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mt, mp = t.sum(axis=0) / count, p.sum(axis=0) / count
        dt, dp = np.where(finite, t - mt, 0.0), np.where(finite, p - mp, 0.0)
        spread = (dp * dp).sum(axis=0)
        weight = (dt * dp).sum(axis=0) / spread
        varies = spread > count * (1e-10 * np.maximum(1.0, np.abs(mp))) ** 2  # more than rounding noise
    return np.clip(np.where(np.isfinite(weight) & (count > 2) & varies, weight, 0.0), 0.0, 1.0)


def _array(values: Sequence[Any], width: Optional[int]) -> Any:
    """Resampled values as a float array (resamples, or resamples x width for a vector); None is NaN."""
    np = numpy_module("numpy")
    if width is None:
        return np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    return np.array([v if isinstance(v, list) else [math.nan] * width for v in values], dtype=np.float64)


def weights_of(target: Any, proxies: Sequence[Any]) -> Any:
    """The power-tuning weights of one or several proxies (an array: proxies x the metric's shape): one proxy's
    is :func:`tuned_weight`, the clipped ratio; several minimise the same variance over the box [0, 1]^m
    (:func:`~.lite_proxy_weights.box_weights`, of which the clipped ratio is the one-proxy case)."""
    if len(proxies) == 1:
        return tuned_weight(target, proxies[0])[None]
    from .lite_proxy_weights import box_weights
    return box_weights(target, proxies)


Values = Tuple[Dict[str, Any], Dict[str, List[Any]]]
#: (sub-benchmark, metric) the generic path leaves plain: Normal's ECE, corrected on its signed bin gaps instead
#: (:func:`_tuned_ece`): a difference of plug-in ECEs under-covered (200 subsets: 93 % averaged, 77 % for one model)
PLAIN_ONLY = frozenset({ECE})


def _aligned(name: str, t: Any, proxies: Sequence[Values], truths: Sequence[Dict[str, Any]]) -> Optional[int]:
    """Whether every proxy has the metric (point, resamples and full-run value) in the target's shape: -1 for a
    scalar, the width of a vector, None where a proxy lacks it."""
    width = len(t) if isinstance(t, list) else None
    for (point, resampled), truth in zip(proxies, truths):
        p, known = point.get(name), truth.get(name)
        if p is None or known is None or name not in resampled:
            return None
        if width is not None and not (isinstance(p, list) and isinstance(known, list) and len(p) == len(known) == width):
            return None
    return -1 if width is None else width


def power_tuned(benchmark: str, target: Values, proxies: Sequence[Values], truths: Sequence[Dict[str, Any]],
                freedom: int, level: float, exact: Any = None, gaps: Any = None,
                unfit: frozenset = frozenset(), ece: Sequence[Any] = (),
                entropy: Any = None) -> Tuple[Dict[str, Tuple[Any, Any, Any, List[Any]]], Dict[str, Dict[str, Any]]]:
    """(metric -> (estimate, low, high, scaled resamples), metric -> lambda and correlation) of the power-tuned
    difference estimator with one or several proxies, from the target's and each proxy's (point, resampled)
    weighted values on the subset and the proxies' full-run values ``truths``; the interval as
    :func:`~.lite.finished` makes the plain one, with one degree of freedom less per proxy (its weight is
    estimated).  Several proxies also widen the combined resamples' spread by sqrt((d - 1) / (d - m)) (d the
    subset's degrees of freedom, m the proxies): the m - 1 weights beyond one proxy's are fitted on the same
    resamples, which shrinks their spread as a regression's residuals shrink; every fitted element is widened by
    sqrt(d / (d - m - 1)) more for the weights' own variability (:func:`~.lite_proxy_weights.widened_spread`).
    The weights are kept only where that pays (:func:`~.lite_proxy_weights.paying`: the fitted interval expected no
    wider than the plain one); an element whose weights are 0 is the plain estimate bit for bit
    (:func:`~.lite_proxy_weights.spliced`).  Where the subset cannot carry them (d - m < 2) or the design gives
    the exact interval, the weights are 0.  Normal's ECE (:data:`PLAIN_ONLY`) is corrected on the target's signed
    bin ``gaps`` with each proxy's, ``ece`` (:func:`_tuned_ece`; plain where those are missing); the metrics of
    ``unfit`` (those a proxy's evaluations on the subset take on another branch than its full run's:
    :func:`~.lite_branches.off_branch`) take no proxy.  Near its maximum a bias entropy is the ``entropy`` of the
    tuned label distribution (:mod:`.lite_entropy`)."""
    np = numpy_module("numpy")
    many, spare = len(proxies) > 1, freedom - len(proxies)
    also = math.sqrt((freedom - 1) / spare) if many and spare >= 2 else 1.0  # m fitted weights' residual spread
    points, spreads, details, kept, weights = {}, {}, {}, {}, {}
    for name, t in target[0].items():
        shape = None if t is None or name not in target[1] else _aligned(name, t, proxies, truths)
        if shape is None:
            continue
        width = None if shape < 0 else shape
        ts = _array(target[1][name], width)
        ps = [_array(resampled[name], width) for _, resampled in proxies]
        unfitted = (benchmark, name) in PLAIN_ONLY or name in unfit or bool(exact and exact(name)) or (many and spare < 2)
        weight = paying(weights_of(ts, ps), ts, ps, freedom, level, also) * (0.0 if unfitted else 1.0)
        known = [np.asarray(truth[name], dtype=np.float64) for truth in truths]
        subset = [np.asarray(point[name], dtype=np.float64) for point, _ in proxies]
        shift, combined = weight[0] * (known[0] - subset[0]), ts - weight[0] * ps[0]
        for j in range(1, len(ps)):
            shift, combined = shift + weight[j] * (known[j] - subset[j]), combined - weight[j] * ps[j]
        for j in range(len(ps)):
            combined = combined + weight[j] * known[j]
        kept[name] = np.any(weight != 0, axis=0)  # the elements a proxy corrects; the others are the plain ones
        points[name] = (np.asarray(t, dtype=np.float64) + shift).tolist()
        spreads[name] = widened_spread(combined, weight, freedom, also).tolist()  # the weights' own variability
        details[name] = weight_details(ts, ps, weight, [truth[name] for truth in truths], width)
        weights[name] = weight
    through_rows(benchmark, points, spreads, kept, details, weights, truths, entropy, [target, *proxies], freedom,
                 level)
    fitted = finished(benchmark, {n: points[n] for n in points if kept[n].any()}, spreads, max(spare, 1), level, exact)
    rest = [n for n in points if not kept[n].all()]  # no proxy applies (or pays): the plain estimate and interval
    plain = finished(benchmark, {n: target[0][n] for n in rest}, target[1], freedom, level, exact, gaps)
    found = {n: spliced(fitted.get(n), plain.get(n), kept[n]) for n in points if n in fitted or n in plain}
    tuned = _tuned_ece(benchmark, gaps, ece, freedom, level, exact) if ECE[1] in found else None
    if tuned is not None:
        found[ECE[1]] = found[ECE[1]] if tuned[0] is None else tuned[0]
        details[ECE[1]] = {**details[ECE[1]], **tuned[1], "correlation": None}
    return found, {name: details[name] for name in found}


def _tuned_ece(benchmark: str, gaps: Any, ece: Sequence[Any], freedom: int, level: float,
               exact: Any) -> Optional[Tuple[Optional[Tuple[Any, Any, Any, List[Any]]], Dict[str, Any]]]:
    """(the ECE's cell, its weights per bin and their mean) with the proxies' signed bin gaps ``ece``: each bin's
    gap by the difference estimator, weighted per bin (:func:`~.lite_ece.bin_weights`) where that pays
    (:func:`~.lite_proxy_weights.paying`, each bin an element), then the plain path's interval on the combined gaps
    (:func:`~.lite_ece.tuned_gaps`), at the other fitted metrics' degrees of freedom and widenings (several
    proxies', the weights' own variability); the cell is None (the plain cell stays) where no bin's weight pays;
    None in all where gaps are missing or the weights are 0 by design."""
    many, spare = len(ece) > 1, freedom - len(ece)
    if gaps is None or not ece or any(g is None for g in ece) or (many and spare < 2) or (exact and exact(ECE[1])):
        return None
    also = math.sqrt((freedom - 1) / spare) if many else 1.0
    combined = tuned_gaps(gaps, ece, weights_of, lambda w, t, ps: paying(w, t, ps, freedom, level, also))
    if combined is None:
        return None
    point, resampled, weight = combined  # a bin's widening as any fitted element's, several proxies' included
    means, bins = [float(w.mean()) for w in weight], [w.tolist() for w in weight]
    recorded = {"weight": means if many else means[0], "bin_weights": bins if many else bins[0]}
    if not weight.any():  # no bin pays for its weights: the plain cell, bit for bit
        return None, recorded
    combined = (point, widened_spread(resampled, weight, freedom, also))
    return finished(benchmark, {ECE[1]: 0.0}, {ECE[1]: []}, max(spare, 1), level, exact, combined)[ECE[1]], recorded


class TunedEstimator:
    """:func:`~.lite.estimate_statistic`'s signature with the power-tuned estimator of one proxy or several; it keeps,
    per (sub-benchmark, dataset, metric), the weights, the proxies' full-run values and the resamples' correlation."""

    def __init__(self, proxy: Any) -> None:
        self.proxies = as_proxies(proxy)
        self.details: Dict[Tuple[str, str, str], Dict[str, Any]] = {}

    def __call__(self, statistic: Statistic, population: Any, *, resamples: int, seed: int,
                 level: float, probabilities: Optional[bool] = None) -> Dict[str, Tuple[Any, Any, Any, List[Any]]]:
        table = statistic.table
        wholes = [proxy.statistic(table.benchmark, table.dataset) for proxy in self.proxies]
        subs = [matched_subset(statistic, whole, proxy.name) for whole, proxy in zip(wholes, self.proxies)]
        if is_census(table, population):
            return census_values(statistic, resamples)
        plan = design(table, population)
        rows = _resample_weights(plan, resamples, seed, ("lite", table.benchmark, table.dataset))
        target = ({n: v[0] for n, v in weighted_values(statistic, [plan.weights]).items()},
                  weighted_values(statistic, rows))
        mine = [({n: v[0] for n, v in weighted_values(sub, [plan.weights]).items()}, weighted_values(sub, rows))
                for sub in subs]
        truths = [on_branch(whole, sub.entropy_branch).point() for whole, sub in zip(wholes, subs)]  # its branch
        found, details = power_tuned(table.benchmark, target, mine, truths, plan.freedom, level,
                                     interval_rules(statistic, population, plan, level),
                                     gaps_for(statistic, rows, plan.weights),
                                     frozenset().union(*(off_branch(s, [plan.weights, *rows], w)
                                                         for s, w in zip(subs, wholes))),
                                     [proxy_gaps(whole, table, rows, plan.weights) for whole in wholes],
                                     row_entropy(statistic))
        found = residual_hulls(table.benchmark, found, details,  # a near-perfect proxy's rare disagreements
                               lambda: of_subset(statistic, subs, wholes, plan, population), level)
        found = branch_hulls(statistic, plan, rows, found, plain_on(statistic, population, plan, rows, level))
        self.details.update({(table.benchmark, table.dataset, name): detail for name, detail in details.items()})
        if probabilities is None:
            probabilities = subset_is_probability_rows(table.benchmark, table)
        return within_range(table.benchmark, found, probabilities)


def as_proxies(proxy: Any) -> Tuple[Proxy, ...]:
    """One :class:`Proxy` or several, as a tuple (refusing an empty one)."""
    proxies = tuple(proxy) if isinstance(proxy, (list, tuple)) else (proxy,)
    if not proxies:
        raise InvalidValueError("a proxy-assisted lite run needs at least one proxy")
    return proxies


def proxy_name(proxy: Any) -> str:
    """The proxy's name, or the proxies' names joined with ' + ' (what the tables and results.json say)."""
    return " + ".join(p.name for p in as_proxies(proxy))


def proxy_models(proxy: Any) -> Dict[str, str]:
    """Each proxy's name -> the model its run asked, where its run's provenance names one."""
    return {p.name: p.model for p in as_proxies(proxy) if p.model}


def proxy_lite_estimates(records: Any, fraction: float, populations: Dict[Tuple[str, str], Any], proxy: Proxy, *,
                         resamples: int = 1000, seed: int = 20250101, level: float = 0.95,
                         rules: Optional[Dict[Tuple[str, str], str]] = None) -> LiteResult:
    """:func:`~.lite.lite_estimates` with the power-tuned difference estimator of ``proxy`` at ``level``; each
    cell records lambda, the proxy's full-run value, the correlation and the plain estimate beside it."""
    records = list(records) if getattr(records, "parts", None) is None else records
    plain = lite_estimates(records, fraction, populations, resamples=resamples, seed=seed, level=level, rules=rules)
    estimator = TunedEstimator(proxy)
    helped = lite_estimates(records, fraction, populations, resamples=resamples, seed=seed, level=level,
                            estimator=estimator, rules=rules)
    for benchmark, rows in helped.estimates.items():
        for row, metrics in rows.items():
            for metric, cell in metrics.items():
                alone = plain.estimates.get(benchmark, {}).get(row, {}).get(metric)
                cell.proxy = {**estimator.details.get((benchmark, row, metric), {}),
                              "plain": None if alone is None else [alone.value, alone.low, alone.high]}
    return ProxyLiteResult(fraction, resamples, seed, level, helped.estimates, proxy=proxy_name(proxy),
                           proxies=len(estimator.proxies), models=proxy_models(proxy))


@dataclass
class ProxyLiteResult(LiteResult):
    """A proxy-assisted lite run's estimates: :class:`~.lite.LiteResult` and the proxy's name."""

    proxy: str = ""
    #: how many proxies the estimator combines (their names joined in ``proxy``); each one's model (:func:`proxy_models`)
    proxies: int = 1
    models: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        found = super().to_dict()
        which = f"the proxy {self.proxy} (scored on every test item; its weight estimated on the subset, in [0, 1])" \
            if self.proxies == 1 else (f"{self.proxies} proxies {self.proxy} (each scored on every test item; their "
                                       "weights estimated together on the subset, each in [0, 1])")
        found["method"] = (f"the power-tuned difference estimator with {which}, the interval from the "
                           "stratified bootstrap with finite-population correction (StaICC.stats.lite_proxy)")
        found["proxy"] = self.proxy
        if self.proxies > 1:
            found["proxies"] = self.proxies
        if self.models:
            found["proxy_models"] = dict(self.models)
        return found
