"""Comparing two runs: run B minus run A per metric, with intervals, p-values and Holm's correction.

Two runs on the same prompts are compared *paired*: both are resampled with the same
items, and accuracy also gets McNemar's exact test on the discordant prompts.  Runs on
different prompts can only be compared as independent samples; a paired comparison of
them raises :class:`UnpairedRunsError` saying what differs.  p-values of one metric are
Holm-corrected across datasets; the averaged row is a test of its own.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from .bootstrap import (DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, RunEstimates, _check_options,
                        PartEstimates, _PartTable, add_dataset, add_metric_names, average_datasets,
                        check_records, dataset_statistic, finite_interval)
from .items import draw_resamples, is_consistency, is_slope
from .resolution import noise_floor, resolved
from .significance import bootstrap_p_value, holm, mcnemar_exact
from .statistic import metric_function
from .vectorized import float_values
from ..numeric import loaded_numpy
from ..errors import InvalidValueError, StaICCError


class UnpairedRunsError(StaICCError, ValueError):
    """Two runs that were not run on the same prompts cannot be compared paired."""


# ----------------------------------------------------------------------------
# comparing two runs
# ----------------------------------------------------------------------------
def prompt_differences(a, b) -> List[str]:
    """What makes two runs' prompts differ (empty: the same prompts, a paired comparison is valid)."""
    differences: List[str] = []
    for name in a.parts:
        if name not in b.parts:
            continue
        pa, pb = a.parts[name], b.parts[name]
        ma, mb = pa.metadata, pb.metadata
        for key in ("k", "noisy_channel", "retriever", "datasets"):
            if key in ma and key in mb and ma[key] != mb[key]:
                differences.append(f"{name}: {key} {_short(ma[key])} vs {_short(mb[key])}")
        ha, hb = ma.get("prompt_sha256") or {}, mb.get("prompt_sha256") or {}
        differing = set()
        for dataset in ha:
            if dataset in hb and ha[dataset] != hb[dataset]:
                differing.add(dataset)
                differences.append(f"{name} / {dataset}: prompt set sha256 {ha[dataset][:12]}... vs {hb[dataset][:12]}...")
        for dataset in pa.records:
            if dataset not in pb.records or dataset in differing:
                continue
            ra, rb = pa.records[dataset], pb.records[dataset]
            if len(ra) != len(rb):
                differences.append(f"{name} / {dataset}: {len(ra)} vs {len(rb)} records")
                continue
            first = _first_prompt_difference(ra, rb)
            if first is not None:
                x = ra[first]
                differences.append(f"{name} / {dataset}: prompt of query {x['query_index']} (test item "
                                   f"{x['test_index']}, repeat {x['repeat']}) differs")
        if set(pa.datasets()) != set(pb.datasets()) and "datasets" not in ma:
            differences.append(f"{name}: datasets {pa.datasets()} vs {pb.datasets()}")
    return differences


def _first_prompt_difference(ra, rb) -> Optional[int]:
    """Position of the first record whose prompt or query differs (None: all the same); reads the
    columns of compact records without making a dict per record.  Records of a run in memory that carry
    equal digests of their requests (``prompt_set_sha256``: every prompt, in record order) have the same
    prompts and query indexes: none is written again."""
    digest = getattr(ra, "prompt_set_sha256", None)
    if digest is not None and digest == getattr(rb, "prompt_set_sha256", None):
        return None
    ca, cb = getattr(ra, "columns", None), getattr(rb, "columns", None)
    if ca is not None and cb is not None:
        if ca["prompt_sha256"] == cb["prompt_sha256"] and ca["query_index"] == cb["query_index"]:
            return None
        pairs = zip(ca["prompt_sha256"], cb["prompt_sha256"], ca["query_index"], cb["query_index"])
    else:
        pairs = ((x["prompt_sha256"], y["prompt_sha256"], x["query_index"], y["query_index"]) for x, y in zip(ra, rb))
    for i, (ha, hb, qa, qb) in enumerate(pairs):
        if ha != hb or qa != qb:
            return i
    return None


def _short(value: Any) -> str:
    """A metadata value in a message: a retriever by its name, not its parameters."""
    if isinstance(value, dict) and "retriever" in value:
        return repr(value["retriever"])
    return repr(value)


def check_same_prompts(a, b) -> None:
    """Raise :class:`UnpairedRunsError` saying what differs when two runs' prompts differ."""
    differences = prompt_differences(a, b)
    if differences:
        raise UnpairedRunsError(
            f"runs {a.label!r} and {b.label!r} were not run on the same prompts, so they cannot be compared "
            f"paired: {'; '.join(differences)}. Compare them as independent samples with paired=False "
            "(staicc compare --unpaired)")


@dataclass
class Difference:
    """Run B minus run A for one metric: the difference, its interval, its p-value."""

    a: Any
    b: Any
    delta: Any
    low: Any = None
    high: Any = None
    p_value: Optional[float] = None
    test: str = ""
    p_adjusted: Optional[float] = None
    significant: bool = False
    counts: Optional[Dict[str, int]] = None
    #: resamples whose difference was not finite, left out of the interval (see finite_interval)
    unbounded: int = 0
    #: differences smaller than this are reported as zero (:func:`~StaICC.stats.resolution.noise_floor`)
    noise_floor: float = 0.0

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("a", "b", "delta", "low", "high", "p_value", "test", "p_adjusted",
                                               "significant", "counts", "unbounded", "noise_floor")}


@dataclass
class PartComparison(_PartTable[Difference]):
    """Differences of one sub-benchmark: per dataset, and the averaged row."""


@dataclass
class Comparison:
    """Run B against run A (the baseline), per sub-benchmark, dataset and metric."""

    a: str
    b: str
    paired: bool
    seed: int
    resamples: int
    level: float
    alpha: float
    parts: Dict[str, PartComparison] = field(default_factory=dict)
    estimates_a: Optional[RunEstimates] = None
    estimates_b: Optional[RunEstimates] = None
    skipped: List[str] = field(default_factory=list)

    def _repr_markdown_(self) -> str:
        """Jupyter shows a comparison as its tables."""
        from ..results.display import shown
        return shown("comparison/markdown", self)

    def _repr_html_(self) -> str:
        from ..results.display import shown
        return shown("comparison/html", self)

    def to_dict(self) -> Dict[str, Any]:
        return {"a": self.a, "b": self.b, "paired": self.paired, "seed": self.seed, "resamples": self.resamples,
                "level": self.level, "alpha": self.alpha, "skipped": self.skipped,
                "correction": "Holm across datasets, per sub-benchmark and metric; the averaged row is not corrected",
                "benchmarks": {name: p.to_dict() for name, p in self.parts.items()}}


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare_runs(a, b, *, paired: bool = True, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA, engine: str = "auto",
                 progress: Optional[Callable[[str], None]] = None, extra_metrics: Sequence[str] = ()) -> Comparison:
    """Compare run ``b`` with run ``a`` on every sub-benchmark both have records for.

    Paired (default): both runs must have been run on the same prompts (checked with the
    prompt hashes; :class:`UnpairedRunsError` says what differs); every resample uses the
    same test items in both runs, and accuracy gets McNemar's exact test on the
    prompts where exactly one run is right.  ``paired=False``: independent resamples of
    each run; p-values from the bootstrap distribution of the difference.  ``engine`` and
    ``progress`` as in :func:`~StaICC.stats.bootstrap.bootstrap_run`.  ``extra_metrics``:
    registry metrics compared beside the recorded ones where they apply (e.g.
    :data:`StaICC.metrics.CALIBRATION_METRICS`).
    """
    _check_options(resamples, level, seed)
    if paired:
        check_same_prompts(a, b)
    result = Comparison(a.label, b.label, paired, seed, resamples, level, alpha)
    result.estimates_a = RunEstimates(a.label, seed, resamples, level)
    result.estimates_b = RunEstimates(b.label, seed, resamples, level)
    for name in a.parts:
        if name not in b.parts:
            result.skipped.append(f"{name}: only in {a.label}")
            continue
        pa, pb = a.parts[name], b.parts[name]
        if progress is not None:
            progress(f"resampling {name}: {b.label} against {a.label}")
        for run, part in ((a, pa), (b, pb)):
            if not part.records:
                raise InvalidValueError(f"{name}: run {run.label!r} ({run.path}) has no per-query records; comparing "
                                        "runs needs samples.jsonl (run with --log-samples)")
        ea, eb, correct = _estimate_pair(name, pa, pb, paired, resamples, seed, level, engine, extra_metrics)
        result.estimates_a.parts[name], result.estimates_b.parts[name] = ea, eb
        result.parts[name] = _part_comparison(name, ea, eb, correct, paired, level, alpha)
    for name in b.parts:
        if name not in a.parts:
            result.skipped.append(f"{name}: only in {b.label}")
    if not result.parts:
        raise InvalidValueError(f"runs {a.label!r} and {b.label!r} have no sub-benchmark in common "
                                f"({', '.join(a.parts)} vs {', '.join(b.parts)})")
    return result


def _part_comparison(name: str, ea: PartEstimates, eb: PartEstimates, correct: Dict[str, Any], paired: bool,
                     level: float, alpha: float) -> PartComparison:
    """The differences of one sub-benchmark: per dataset (Holm across datasets) and the averaged row."""
    names = [n for n in ea.metrics if n in eb.metrics]
    comparison = PartComparison(name, names)
    for d in list(ea.datasets) + ["Averaged"]:
        if d not in ea.distributions or d not in eb.distributions:
            continue
        row: Dict[str, Difference] = {}
        for n in names:
            if n not in ea.distributions[d] or n not in eb.distributions[d]:
                continue
            va = ea.averaged[n].value if d == "Averaged" else ea.datasets[d][n].value
            vb = eb.averaged[n].value if d == "Averaged" else eb.datasets[d][n].value
            if not (_scalar(va) and _scalar(vb)):
                continue
            difference = _difference(name, n, va, vb, ea.distributions[d][n], eb.distributions[d][n], paired, level)
            if paired and n == "accuracy" and d != "Averaged" and not is_slope(name) and not is_consistency(name):
                _mcnemar(difference, *correct[d])
            row[n] = difference
        if row:
            comparison.datasets[d] = row
    averaged = comparison.datasets.pop("Averaged", {})
    for n in names:
        family = [comparison.datasets[d][n] for d in comparison.datasets if n in comparison.datasets[d]]
        for difference, adjusted in zip(family, holm([x.p_value for x in family])):
            difference.p_adjusted = adjusted
            difference.significant = _significant(difference, adjusted, alpha)
    if len(comparison.datasets) == 1:  # one dataset: its average is that dataset, tested the same way
        only = next(iter(comparison.datasets.values()))
        for n, difference in averaged.items():
            if n in only:
                difference.p_value, difference.test, difference.counts = only[n].p_value, only[n].test, \
                    only[n].counts
    for difference in averaged.values():
        difference.p_adjusted = difference.p_value
        difference.significant = _significant(difference, difference.p_value, alpha)
    comparison.averaged = averaged
    return comparison


def _significant(difference: "Difference", p: Optional[float], alpha: float) -> bool:
    """Significant at ``alpha``; a difference below the noise floor (reported as zero) never is."""
    return p is not None and p < alpha and difference.delta != 0


def at_boundary(benchmark: str, metric: str) -> bool:
    """Whether the metric's plug-in value sits at the edge of its range when there is no effect.

    The entropy of a mean distribution is at most log(labels), reached by the uniform mean;
    the KL divergence to the label frequencies is at least 0.  Near that edge the value of
    a sample is biased towards the inside of the range by about its own sampling noise
    (Jensen's inequality: every resample of a near-uniform mean is less uniform), so a
    percentile interval of the bootstrap differences lies entirely on one side of zero
    and stars differences of 1e-5 that are noise.  Such metrics use the basic bootstrap.
    """
    from ..metrics import bias_entropy, post_bias_dl_div
    return metric_function(benchmark, metric) in (bias_entropy, post_bias_dl_div)


def _difference(benchmark: str, metric: str, va: float, vb: float, resamples_a: Sequence[Any],
                resamples_b: Sequence[Any], paired: bool, level: float) -> "Difference":
    """B minus A with its interval and bootstrap p-value; differences below the noise floor are zero.

    Most metrics use the percentile interval of the resampled differences and the
    bootstrap p-value of "no difference".  Metrics at the edge of their range
    (:func:`at_boundary`) use the *basic* bootstrap: the resampled differences are
    reflected about the estimate (2 * delta - delta*), which removes the bias the
    resamples add, and the interval and p-value are taken on the reflection.
    """
    floor = noise_floor(metric, va, vb)
    delta = resolved(vb - va, floor)
    deltas = _resolved_differences(resamples_a, resamples_b, floor)
    finite = [v for v in deltas if math.isfinite(v)]
    test = "paired bootstrap" if paired else "bootstrap"
    if at_boundary(benchmark, metric) and math.isfinite(delta):
        finite = [resolved(2 * delta - v, floor) for v in finite]
        test = f"{test} (basic)"
    low, high, _ = finite_interval(finite, level)
    return Difference(va, vb, delta, resolved(low, floor), resolved(high, floor), bootstrap_p_value(finite), test,
                      unbounded=len(deltas) - len(finite), noise_floor=floor)


def _resolved_differences(resamples_a: Sequence[Any], resamples_b: Sequence[Any], floor: float) -> List[Any]:
    """``resolved(y - x, floor)`` of each pair of resamples; at once where both are float distributions of one
    length (the same IEEE subtractions, and exactly 0.0 for a finite difference below ``floor``)."""
    a, b = float_values(resamples_a), float_values(resamples_b)
    if a is None or b is None or len(a) != len(b):
        return [resolved(y - x, floor) for x, y in zip(resamples_a, resamples_b)]
    np = loaded_numpy()
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf is nan, as in Python, without a warning
        deltas = b - a
        return np.where(np.isfinite(deltas) & (np.abs(deltas) < floor), 0.0, deltas).tolist()


def _mcnemar(difference: "Difference", right_a: Sequence[bool], right_b: Sequence[bool]) -> None:
    """McNemar's exact test on the prompts where exactly one run is right (accuracy of one dataset)."""
    only_a = sum(1 for x, y in zip(right_a, right_b) if x and not y)
    only_b = sum(1 for x, y in zip(right_a, right_b) if y and not x)
    difference.p_value = mcnemar_exact(only_a, only_b)
    difference.test = "McNemar exact"
    difference.counts = {"only_a": only_a, "only_b": only_b, "prompts": len(right_a)}


def _estimate_pair(name: str, pa, pb, paired: bool, resamples: int, seed: int, level: float, engine: str,
                   extra_metrics: Sequence[str]):
    """Both runs' estimates of one sub-benchmark, and per dataset each run's right answers (pass 0).

    One dataset at a time: both runs' item tables of a dataset are dropped before the next
    dataset's are built, so a comparison holds two datasets' tables, not two whole parts'.
    """
    check_records(pa)
    check_records(pb)
    in_b = set(pb.datasets())
    common = [d for d in pa.datasets() if d in in_b]
    for part, others in ((pa, [d for d in pa.datasets() if d not in in_b]),
                         (pb, [d for d in pb.datasets() if d not in common])):
        for d in others:  # not compared, but their records must still reproduce results.json
            dataset_statistic(part, d, extra_metrics=extra_metrics)
    ea, eb = PartEstimates(name, []), PartEstimates(name, [])
    correct: Dict[str, Any] = {}
    for d in common:
        sa = dataset_statistic(pa, d, extra_metrics=extra_metrics)
        sb = dataset_statistic(pb, d, extra_metrics=extra_metrics)
        if len(sa.table) != len(sb.table) and paired:
            raise UnpairedRunsError(f"{name} / {d}: {len(sa.table)} vs {len(sb.table)} test items")
        draws_a = draw_resamples(len(sa.table), resamples, seed, name, d)
        draws_b = draws_a if paired else \
            draw_resamples(len(sb.table), resamples, seed, name, d, "unpaired-second-run")
        add_metric_names(ea, sa)
        add_metric_names(eb, sb)
        add_dataset(ea, d, sa, draws_a, level, engine)
        add_dataset(eb, d, sb, draws_b, level, engine)
        if paired and not is_slope(name) and not is_consistency(name):
            correct[d] = (sa.table.correct(), sb.table.correct())
        del sa, sb, draws_a, draws_b
    average_datasets(ea, len(common), level)
    average_datasets(eb, len(common), level)
    return ea, eb, correct
