"""Statistics over runs: bootstrap confidence intervals over test items, paired comparisons.

The unit of resampling is the **test item**: the R repeats of an item (and its GLER
passes, its Template_sens templates, its Demo_sens demonstration sets) move together,
because they share the query; resampling prompts would understate the variance.  A
resample draws T test items with replacement and takes every record of each drawn
item; the metrics are then recomputed with the package's own metric functions, on
rows laid out exactly as the run laid them out (pass-major, then repeat-major), so the
identity resample reproduces the recorded numbers bit for bit.

Two runs on the same prompts are compared *paired*: both are resampled with the same
items.  Accuracy also gets McNemar's exact test on the discordant prompts.  p-values of
one metric are Holm-corrected across datasets; the averaged row is a test of its own.

Randomness: :class:`random.Random` seeded with a string built from the seed, the
sub-benchmark and the dataset, drawing each index as ``int(random() * T)``; the numbers
depend only on the seed, not on the other datasets of the run or the Python version.
Only the standard library is used.
"""
import math
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

from . import metrics as _metrics
from .metrics import (PredictionRows, accuracy_from_labels, argmax, consistency_from_labels, ece_bin,
                      ece_from_confidence, is_probability_matrix, linear_regression, macro_f1_from_labels,
                      softmax)
from .standard import ECE_BINS

DEFAULT_SEED = 20250101
DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_ALPHA = 0.05

#: sub-benchmarks whose metric is the consistency over all passes of an item
CONSISTENCY_BENCHMARKS = ("Template_sens", "Demo_sens")
#: sub-benchmarks whose numbers are regression slopes over label-noise passes
SLOPE_BENCHMARKS = ("GLER", "GLER_corrected")

#: direction of the metrics of the standard (None: no better direction)
_HIGHER_IS_BETTER: Dict[str, Optional[bool]] = {
    "accuracy": True, "averaged_truelabel_likelihood": True, "macro_F1": True,
    "expected_calibration_error_1": False, "entropy": True, "DL div.": False, "consistency": True,
    "distribution": None,
}


class UnpairedRunsError(ValueError):
    """Two runs that were not run on the same prompts cannot be compared paired."""


# ----------------------------------------------------------------------------
# elementary statistics
# ----------------------------------------------------------------------------
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: binomial(b + c, 1/2) on the discordant pairs.

    ``b``: pairs right in the first run only; ``c``: right in the second only.
    p = min(1, 2 · Σ_{i ≤ min(b, c)} C(n, i) / 2^n), computed in exact integers.
    """
    for name, value in (("b", b), ("c", c)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"McNemar counts must be non-negative ints: {name} = {value!r}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def holm(p_values: Sequence[Optional[float]]) -> List[Optional[float]]:
    """Holm's step-down adjusted p-values (None entries are left out of the family and kept None)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(indexed)
    adjusted: List[Optional[float]] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) by linear interpolation between order statistics (NumPy's default)."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    h = (len(sorted_values) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(sorted_values) - 1)
    a, b = sorted_values[low], sorted_values[high]
    if a == b or h == low:
        return a
    return a + (h - low) * (b - a)


def percentile_interval(values: Sequence[float], level: float) -> Tuple[float, float]:
    """The central ``level`` percentile interval of a bootstrap distribution (NaNs ignored)."""
    ordered = sorted(v for v in values if not math.isnan(v))
    if not ordered:
        return math.nan, math.nan
    tail = (1 - level) / 2
    return percentile(ordered, tail), percentile(ordered, 1 - tail)


def bootstrap_p_value(deltas: Sequence[float]) -> float:
    """Two-sided p-value of "no difference" from a bootstrap distribution of differences.

    p = min(1, 2 · (min(#{δ ≤ 0}, #{δ ≥ 0}) + 1) / (B + 1)): the smallest two-sided
    percentile level whose interval excludes 0, with the usual +1 so that p > 0.
    """
    if not deltas:
        return math.nan
    below = sum(1 for d in deltas if d <= 0)
    above = sum(1 for d in deltas if d >= 0)
    return min(1.0, 2 * (min(below, above) + 1) / (len(deltas) + 1))


def draw_resamples(item_count: int, resamples: int, seed: int, *tags: str) -> List[List[int]]:
    """``resamples`` lists of ``item_count`` item positions drawn with replacement."""
    rng = random.Random("/".join([str(seed), *tags]))
    draw = rng.random
    return [[int(draw() * item_count) for _ in range(item_count)] for _ in range(resamples)]


def higher_is_better(metric: str) -> Optional[bool]:
    """True/False when the metric has a better direction, None otherwise (the metric registry first)."""
    registry = getattr(_metrics, "higher_is_better", None)
    if callable(registry):
        try:
            found = registry(metric)
        except (KeyError, ValueError, TypeError):
            found = None
        if found is not None:
            return found
    return _HIGHER_IS_BETTER.get(metric)


# ----------------------------------------------------------------------------
# records of one (sub-benchmark, dataset), by item
# ----------------------------------------------------------------------------
class ItemTable:
    """The records of one dataset of one sub-benchmark, indexed [pass][repeat][item].

    ``normalized`` holds the rows the score metrics read: the standard softmaxes every
    row of a metric call unless all of them pass the exact probability check, so the
    decision is taken once on the rows the run's metric saw together (one pass; all
    passes for the consistency benchmarks) and then kept for every resample.
    """

    def __init__(self, benchmark: str, dataset: str, records: Sequence[Dict[str, Any]]) -> None:
        if not records:
            raise ValueError(f"{benchmark} / {dataset}: no records")
        self.benchmark, self.dataset = benchmark, dataset
        self.items = sorted({r["test_index"] for r in records})
        self.passes = 1 + max(r["pass"] for r in records)
        self.repeats = 1 + max(r["repeat"] for r in records)
        position = {t: i for i, t in enumerate(self.items)}
        T = len(self.items)
        expected = self.passes * self.repeats * T
        if len(records) != expected:
            raise ValueError(f"{benchmark} / {dataset}: {len(records)} records, expected {expected} "
                             f"({self.passes} passes x {self.repeats} repeats x {T} test items)")
        self.rows: List[List[List[Any]]] = [[[None] * T for _ in range(self.repeats)] for _ in range(self.passes)]
        self.hashes: List[List[List[Any]]] = [[[None] * T for _ in range(self.repeats)] for _ in range(self.passes)]
        self.labels: List[Optional[int]] = [None] * T
        width = len(records[0]["prediction"])
        for r in records:
            p, k, i = r["pass"], r["repeat"], position[r["test_index"]]
            if self.rows[p][k][i] is not None:
                raise ValueError(f"{benchmark} / {dataset}: two records for pass {p}, repeat {k}, "
                                 f"test item {r['test_index']} (query_index {r['query_index']})")
            if len(r["prediction"]) != width:
                raise ValueError(f"{benchmark} / {dataset}, query_index {r['query_index']}: prediction of "
                                 f"{len(r['prediction'])} scores, the others have {width}")
            if self.labels[i] is None:
                self.labels[i] = r["label"]
            elif self.labels[i] != r["label"]:
                raise ValueError(f"{benchmark} / {dataset}: test item {r['test_index']} has labels "
                                 f"{self.labels[i]} and {r['label']} in different records")
            self.rows[p][k][i] = [float(v) for v in r["prediction"]]
            self.hashes[p][k][i] = r["prompt_sha256"]
        self.width = width
        self.normalized = self._normalize(benchmark in CONSISTENCY_BENCHMARKS)
        self.summaries = [[[_row_summary(row, self.labels[i]) for i, row in enumerate(rep)] for rep in norm]
                          for norm in self.normalized]

    def _normalize(self, together: bool) -> List[List[List[List[float]]]]:
        groups = [list(range(self.passes))] if together else [[p] for p in range(self.passes)]
        normalized: List[Any] = [None] * self.passes
        for group in groups:
            everything = [row for p in group for rep in self.rows[p] for row in rep]
            keep = is_probability_matrix(everything)
            for p in group:
                normalized[p] = [rep if keep else [softmax(row) for row in rep] for rep in self.rows[p]]
        return normalized

    def __len__(self) -> int:
        return len(self.items)

    def identity(self) -> List[int]:
        return list(range(len(self.items)))

    def layout(self, sample: Sequence[int], passes: Sequence[int]) -> Tuple[List[int], PredictionRows]:
        """Ground truth and rows of the sampled items, pass-major then repeat-major (the run's order)."""
        truth: List[int] = []
        rows = PredictionRows()
        normalized: List[List[float]] = []
        labels = self.labels
        for p in passes:
            for rep, norm in zip(self.rows[p], self.normalized[p]):
                for i in sample:
                    truth.append(labels[i])
                    rows.append(rep[i])
                    normalized.append(norm[i])
        rows.normalized = normalized
        return truth, rows

    def correct(self, p: int = 0) -> List[bool]:
        """Per prompt of pass p (repeat-major): whether the argmax is the true label."""
        return [argmax(norm[i]) == self.labels[i] for norm in self.normalized[p] for i in range(len(self.items))]


# ----------------------------------------------------------------------------
# the score metrics on per-row summaries (bit-identical to the metric functions)
# ----------------------------------------------------------------------------
def _row_summary(row: List[float], label: int) -> Tuple[int, float, float, int]:
    """(argmax, confidence, true-label probability, ECE bin) of a normalized row."""
    confidence = max(row)
    return argmax(row), confidence, row[label], ece_bin(confidence)


def _score_metrics(summaries: Sequence[Tuple[int, float, float, int]], truth: Sequence[int], width: int,
                   names: Sequence[str]) -> Dict[str, float]:
    """accuracy, averaged_truelabel_likelihood, macro_F1 and ECE from row summaries.

    The metric functions of :mod:`StaICC.metrics` reduce their rows to the same
    summaries and call the same formulas, so the numbers are the same bits; here the
    per-row argmax, confidence and bin are computed once per run instead of once per
    metric and resample.  :class:`Statistic` checks the identity on the full run before
    using this.
    """
    out: Dict[str, float] = {}
    predicted, confidence, truelabel, bin_indexes = zip(*summaries)
    if "accuracy" in names:
        out["accuracy"] = accuracy_from_labels(truth, predicted)
    if "averaged_truelabel_likelihood" in names:
        out["averaged_truelabel_likelihood"] = _metrics.sequential_sum(truelabel) / len(truelabel)
    if "macro_F1" in names:
        out["macro_F1"] = macro_f1_from_labels(truth, predicted, width)
    if "expected_calibration_error_1" in names:
        correct = [a == g for a, g in zip(predicted, truth)]
        out["expected_calibration_error_1"] = ece_from_confidence(confidence, correct, ECE_BINS, bin_indexes)
    return out


FAST_METRICS = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")


# ----------------------------------------------------------------------------
# a sub-benchmark's statistic: metric values from a resample of items
# ----------------------------------------------------------------------------
def _metric_table(benchmark: str) -> Dict[str, Callable]:
    if benchmark in ("Contextual_bias", "Domain_bias"):
        return _metrics.bias_metrics()
    if benchmark == "Post_bias":
        return _metrics.post_bias_metrics()
    return _metrics.normal_metrics()


def metric_function(benchmark: str, name: str) -> Optional[Callable]:
    """The metric function a sub-benchmark used for ``name`` (None when unknown)."""
    table = _metric_table(benchmark)
    if name in table:
        return table[name]
    found = getattr(_metrics, name, None)
    return found if callable(found) and not isinstance(found, type) else None


class Statistic:
    """Metric values of one (sub-benchmark, dataset) on a resample of its test items.

    The four score metrics and consistency run on per-row summaries (argmax, confidence,
    bin) computed once; that path is used only after it gave the same bits as the
    metric functions on the whole run (``fast``).  Other metrics always call their
    function on the laid-out rows.
    """

    def __init__(self, benchmark: str, table: ItemTable, metric_names: Sequence[str],
                 metadata: Optional[Dict[str, Any]] = None) -> None:
        self.benchmark = benchmark
        self.table = table
        self.functions: Dict[str, Callable] = {}
        if benchmark in CONSISTENCY_BENCHMARKS:
            self.functions = {n: _metrics.consistency for n in metric_names if n.startswith("consistency")}
        else:
            for name in metric_names:
                f = metric_function(benchmark, name)
                if f is not None:
                    self.functions[name] = f
        self.x_values: Optional[List[float]] = None
        if benchmark in SLOPE_BENCHMARKS:
            procedure = (metadata or {}).get("procedure") or {}
            abscissae = procedure.get("abscissae") or ("correctness" if benchmark == "GLER_corrected" else "standard")
            from .experiment import LabelNoiseProcedure
            self.x_values = LabelNoiseProcedure(table.passes, abscissae).x_values()
        self.fast_names = [n for n, f in self.functions.items()
                           if (n in FAST_METRICS and f is getattr(_metrics, n)) or f is _metrics.consistency]
        self.fast = False
        if self.fast_names:
            full = table.identity()
            self.fast = self._evaluate(full, True) == self._evaluate(full, False)

    def names(self) -> List[str]:
        return list(self.functions)

    def __call__(self, sample: Sequence[int]) -> Dict[str, Any]:
        return self._evaluate(sample, self.fast)

    def _pass_values(self, sample: Sequence[int], passes: Sequence[int], fast: bool) -> Dict[str, Any]:
        table = self.table
        slow = [n for n in self.functions if not fast or n not in self.fast_names]
        values: Dict[str, Any] = {}
        if fast:
            summaries, truth = [], []
            labels = table.labels
            for p in passes:
                for rep in table.summaries[p]:
                    for i in sample:
                        summaries.append(rep[i])
                        truth.append(labels[i])
            if self.benchmark in CONSISTENCY_BENCHMARKS:
                for n in self.fast_names:
                    values[n] = consistency_from_labels([s[0] for s in summaries], len(sample))
            else:
                values.update(_score_metrics(summaries, truth, table.width, self.fast_names))
        if slow:
            truth, rows = table.layout(sample, passes)
            for n in slow:
                if self.benchmark in CONSISTENCY_BENCHMARKS:
                    values[n] = self.functions[n](truth, rows, len(sample))
                else:
                    values[n] = self.functions[n](truth, rows)
        return {n: values[n] for n in self.functions}

    def _evaluate(self, sample: Sequence[int], fast: bool) -> Dict[str, Any]:
        table = self.table
        if self.benchmark in CONSISTENCY_BENCHMARKS:
            return self._pass_values(sample, range(table.passes), fast)
        if self.x_values is not None:
            per_pass = [self._pass_values(sample, [p], fast) for p in range(table.passes)]
            return {n: linear_regression(self.x_values, [r[n] for r in per_pass])[0] for n in self.functions}
        return self._pass_values(sample, [0], fast)


# ----------------------------------------------------------------------------
# confidence intervals of one run
# ----------------------------------------------------------------------------
@dataclass
class Estimate:
    """A metric's value and its bootstrap interval (vectors: one interval per component)."""

    value: Any
    low: Any = None
    high: Any = None

    def to_dict(self) -> Dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high}


Cell = TypeVar("Cell")


@dataclass
class _PartTable(Generic[Cell]):
    """One sub-benchmark's cells (estimates or differences): per dataset and metric, and the averaged row."""

    benchmark: str
    metrics: List[str]
    datasets: Dict[str, Dict[str, Cell]] = field(default_factory=dict)
    averaged: Dict[str, Cell] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"datasets": {d: {m: x.to_dict() for m, x in v.items()} for d, v in self.datasets.items()},
                "averaged": {m: x.to_dict() for m, x in self.averaged.items()}}


@dataclass
class PartEstimates(_PartTable[Estimate]):
    """Estimates of one sub-benchmark: per dataset, and the averaged row."""

    #: bootstrap distributions: dataset -> metric -> values (one per resample)
    distributions: Dict[str, Dict[str, List[Any]]] = field(default_factory=dict)


@dataclass
class RunEstimates:
    label: str
    seed: int
    resamples: int
    level: float
    parts: Dict[str, PartEstimates] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"run": self.label, "seed": self.seed, "resamples": self.resamples, "level": self.level,
                "benchmarks": {name: p.to_dict() for name, p in self.parts.items()}}


def _interval(values: List[Any], level: float) -> Tuple[Any, Any]:
    if values and isinstance(values[0], list):
        pairs = [percentile_interval([v[c] for v in values], level) for c in range(len(values[0]))]
        return [a for a, _ in pairs], [b for _, b in pairs]
    return percentile_interval(values, level)


def _same(recomputed: Any, recorded: Any) -> bool:
    if isinstance(recomputed, list):
        return isinstance(recorded, list) and len(recorded) == len(recomputed) and \
            all(_same(a, b) for a, b in zip(recomputed, recorded))
    if recorded is None:  # a non-finite number written as null
        return not math.isfinite(recomputed)
    if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
        return False
    return recomputed == recorded or math.isclose(recomputed, recorded, rel_tol=1e-9, abs_tol=1e-12)


def _recorded(result: Dict[str, Any]) -> Dict[str, Any]:
    from .report.tables import flatten
    return flatten(result)


def _mean(values: Sequence[float]) -> float:
    return _metrics.sequential_sum(values) / len(values)


def part_statistics(part, *, check: bool = True) -> Dict[str, Statistic]:
    """One :class:`Statistic` per dataset of a loaded sub-benchmark (``report.runs.Part``)."""
    if not part.records:
        raise ValueError(f"{part.name}: the run has no per-query records (samples.jsonl); "
                         "confidence intervals need them: run with --log-samples")
    statistics = {}
    for dataset in part.datasets():
        if dataset not in part.records:
            raise ValueError(f"{part.name} / {dataset}: no records for this dataset in samples.jsonl")
        recorded = _recorded(part.divided.get(dataset, {}))
        table = ItemTable(part.name, dataset, part.records[dataset])
        statistic = Statistic(part.name, table, list(recorded), part.metadata)
        if check:
            point = statistic(table.identity())
            for name, value in point.items():
                if name in recorded and not _same(value, recorded[name]):
                    raise ValueError(f"{part.name} / {dataset}: {name} recomputed from the records is {value!r}, "
                                     f"but results.json records {recorded[name]!r}: the records do not belong "
                                     "to these results")
        statistics[dataset] = statistic
    return statistics


def estimate_part(part, draws: Dict[str, List[List[int]]], level: float,
                  statistics: Optional[Dict[str, Statistic]] = None) -> PartEstimates:
    """Estimates of one sub-benchmark from given resamples (``draws[dataset]``)."""
    statistics = statistics or part_statistics(part)
    names: List[str] = []
    for s in statistics.values():
        names.extend(n for n in s.names() if n not in names)
    estimates = PartEstimates(part.name, names)
    for dataset, statistic in statistics.items():
        point = statistic(statistic.table.identity())
        values = [statistic(sample) for sample in draws[dataset]]
        estimates.distributions[dataset] = {n: [v[n] for v in values] for n in point}
        estimates.datasets[dataset] = {}
        for n, value in point.items():
            low, high = _interval(estimates.distributions[dataset][n], level)
            estimates.datasets[dataset][n] = Estimate(value, low, high)
    for n in names:
        per_dataset = [d[n] for d in estimates.distributions.values() if n in d]
        if len(per_dataset) != len(statistics) or isinstance(per_dataset[0][0], list):
            continue  # vectors (the bias distributions) have no averaged value
        value = _mean([estimates.datasets[d][n].value for d in statistics])
        averaged = [_mean(column) for column in zip(*per_dataset)]
        low, high = percentile_interval(averaged, level)
        estimates.averaged[n] = Estimate(value, low, high)
        estimates.distributions.setdefault("Averaged", {})[n] = averaged
    return estimates


def _check_options(resamples: int, level: float, seed: int) -> None:
    from .validation import check_int, check_real
    check_int(resamples, "resamples", minimum=1)
    check_int(seed, "seed")
    if check_real(level, "level") <= 0 or level >= 1:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")


def bootstrap_run(run, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  level: float = DEFAULT_LEVEL, benchmarks: Optional[Sequence[str]] = None) -> RunEstimates:
    """Bootstrap intervals over test items for every metric of every sub-benchmark with records.

    ``benchmarks`` limits the work to some sub-benchmarks (names as in the records).
    """
    _check_options(resamples, level, seed)
    if benchmarks is not None:
        unknown = [b for b in benchmarks if b not in run.parts]
        if unknown:
            raise ValueError(f"run {run.label!r} has no sub-benchmark {unknown}; it has {list(run.parts)}")
    result = RunEstimates(run.label, seed, resamples, level)
    for name, part in run.parts.items():
        if not part.records or (benchmarks is not None and name not in benchmarks):
            continue
        statistics = part_statistics(part)
        draws = {d: draw_resamples(len(s.table), resamples, seed, name, d) for d, s in statistics.items()}
        result.parts[name] = estimate_part(part, draws, level, statistics)
    if not result.parts:
        raise ValueError(f"run {run.label!r} ({run.path}) has no per-query records: confidence intervals "
                         "need samples.jsonl (run with --log-samples)")
    return result


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
            for x, y in zip(ra, rb):
                if x["prompt_sha256"] != y["prompt_sha256"] or x["query_index"] != y["query_index"]:
                    differences.append(f"{name} / {dataset}: prompt of query {x['query_index']} (test item "
                                       f"{x['test_index']}, repeat {x['repeat']}) differs")
                    break
        if set(pa.datasets()) != set(pb.datasets()) and "datasets" not in ma:
            differences.append(f"{name}: datasets {pa.datasets()} vs {pb.datasets()}")
    return differences


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

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("a", "b", "delta", "low", "high", "p_value", "test", "p_adjusted",
                                               "significant", "counts")}


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

    def to_dict(self) -> Dict[str, Any]:
        return {"a": self.a, "b": self.b, "paired": self.paired, "seed": self.seed, "resamples": self.resamples,
                "level": self.level, "alpha": self.alpha, "skipped": self.skipped,
                "correction": "Holm across datasets, per sub-benchmark and metric; the averaged row is not corrected",
                "benchmarks": {name: p.to_dict() for name, p in self.parts.items()}}


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare_runs(a, b, *, paired: bool = True, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA) -> Comparison:
    """Compare run ``b`` with run ``a`` on every sub-benchmark both have records for.

    Paired (default): both runs must have been run on the same prompts (checked with the
    prompt hashes; :class:`UnpairedRunsError` says what differs); every resample uses the
    same test items in both runs, and accuracy gets McNemar's exact test on the
    prompts where exactly one run is right.  ``paired=False``: independent resamples of
    each run; p-values from the bootstrap distribution of the difference.
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
        for run, part in ((a, pa), (b, pb)):
            if not part.records:
                raise ValueError(f"{name}: run {run.label!r} ({run.path}) has no per-query records; comparing "
                                 "runs needs samples.jsonl (run with --log-samples)")
        sa, sb = part_statistics(pa), part_statistics(pb)
        common = [d for d in sa if d in sb]
        sa = {d: sa[d] for d in common}
        sb = {d: sb[d] for d in common}
        for d in common:
            if len(sa[d].table) != len(sb[d].table) and paired:
                raise UnpairedRunsError(f"{name} / {d}: {len(sa[d].table)} vs {len(sb[d].table)} test items")
        draws_a = {d: draw_resamples(len(s.table), resamples, seed, name, d) for d, s in sa.items()}
        draws_b = draws_a if paired else \
            {d: draw_resamples(len(s.table), resamples, seed, name, d, "unpaired-second-run") for d, s in sb.items()}
        ea = estimate_part(pa, draws_a, level, sa)
        eb = estimate_part(pb, draws_b, level, sb)
        result.estimates_a.parts[name], result.estimates_b.parts[name] = ea, eb
        names = [n for n in ea.metrics if n in eb.metrics]
        comparison = PartComparison(name, names)
        for d in common + ["Averaged"]:
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
                deltas = [y - x for x, y in zip(ea.distributions[d][n], eb.distributions[d][n])]
                low, high = percentile_interval(deltas, level)
                difference = Difference(va, vb, vb - va, low, high, bootstrap_p_value(deltas),
                                        "paired bootstrap" if paired else "bootstrap")
                if paired and n == "accuracy" and d != "Averaged" and name not in SLOPE_BENCHMARKS \
                        and name not in CONSISTENCY_BENCHMARKS:
                    right_a, right_b = sa[d].table.correct(), sb[d].table.correct()
                    only_a = sum(1 for x, y in zip(right_a, right_b) if x and not y)
                    only_b = sum(1 for x, y in zip(right_a, right_b) if y and not x)
                    difference.p_value = mcnemar_exact(only_a, only_b)
                    difference.test = "McNemar exact"
                    difference.counts = {"only_a": only_a, "only_b": only_b, "prompts": len(right_a)}
                row[n] = difference
            if row:
                comparison.datasets[d] = row
        averaged = comparison.datasets.pop("Averaged", {})
        for n in names:
            family = [comparison.datasets[d][n] for d in comparison.datasets if n in comparison.datasets[d]]
            for difference, adjusted in zip(family, holm([x.p_value for x in family])):
                difference.p_adjusted = adjusted
                difference.significant = adjusted is not None and adjusted < alpha
        for difference in averaged.values():
            difference.p_adjusted = difference.p_value
            difference.significant = difference.p_value is not None and difference.p_value < alpha
        comparison.averaged = averaged
        result.parts[name] = comparison
    for name in b.parts:
        if name not in a.parts:
            result.skipped.append(f"{name}: only in {b.label}")
    if not result.parts:
        raise ValueError(f"runs {a.label!r} and {b.label!r} have no sub-benchmark in common "
                         f"({', '.join(a.parts)} vs {', '.join(b.parts)})")
    return result
