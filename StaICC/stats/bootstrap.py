"""Bootstrap confidence intervals of one run: per sub-benchmark, dataset and metric, and the averaged row.

Every dataset's test items are resampled with replacement; each resample's metric
values come from :class:`~StaICC.stats.statistic.Statistic`, and the interval is the
central percentile interval of those values.  Before any resampling, the metrics
recomputed from the run's records must match its results.json, so that intervals are
never reported around numbers the records do not produce.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

from ..errors import InvalidValueError
from ..metrics import sequential_sum
from ..numeric import loaded_numpy
from ..results import flatten
from .items import ItemTable, draw_resamples
from .significance import percentile_interval
from .statistic import Statistic
from .vectorized import float_values, resample_values

#: defaults of bootstrap_run, compare_runs and the staicc commands that call them
DEFAULT_SEED = 20250101
DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_ALPHA = 0.05


# ----------------------------------------------------------------------------
# confidence intervals of one run
# ----------------------------------------------------------------------------
@dataclass
class Estimate:
    """A metric's value and its bootstrap interval (vectors: one interval per component)."""

    value: Any
    low: Any = None
    high: Any = None
    #: resamples whose value was not finite (KL with a label no drawn item carries): left out of the interval
    unbounded: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "unbounded_resamples": self.unbounded}


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


def finite_interval(values: Sequence[Any], level: float) -> Tuple[Any, Any, int]:
    """(low, high, non-finite count): the percentile interval over the finite resamples.

    An unbounded metric (the KL divergence to label frequencies is infinite in a resample
    that draws no item of a label the model gives probability to) would otherwise get
    ``[x, inf]``; its interval is taken over the finite resamples and the count of the
    others is reported beside it, so that the reader sees how many were left out.
    """
    if values and isinstance(values[0], list):  # a vector metric: each component's percentile interval
        pairs = [percentile_interval([v[c] for v in values], level) for c in range(len(values[0]))]
        return [a for a, _ in pairs], [b for _, b in pairs], 0
    array = float_values(values)
    if array is None:
        finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
        left_out = sum(1 for v in values if isinstance(v, (int, float)) and math.isinf(v))
    else:  # the same selection and count, at once
        np = loaded_numpy()
        finite, left_out = array[np.isfinite(array)].tolist(), int(np.isinf(array).sum())
    low, high = percentile_interval(finite, level) if finite else (math.nan, math.nan)
    return low, high, left_out


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
    return flatten(result)


def _mean(values: Sequence[float]) -> float:
    return sequential_sum(values) / len(values)


def extra_metric_names(part, recorded: Dict[str, Any], extra_metrics: Sequence[str]) -> List[str]:
    """The extra metrics (e.g. the calibration metrics outside the standard) that apply to a part.

    Score metrics apply to the parts that score each query once (their results report
    accuracy, and they are neither grouped by item nor regression slopes); the grouped
    metrics of :mod:`StaICC.metrics.agreement` (kappa) to the parts that ask each item
    several times (Template_sens, Demo_sens).  They are estimated and compared beside the
    recorded metrics; nothing recorded changes.
    """
    from ..metrics.agreement import GROUPED_METRICS
    from .items import is_consistency, is_slope
    if is_consistency(part.name):  # the agreement metrics over an item's passes or repeats
        return [n for n in extra_metrics if n in GROUPED_METRICS and n not in recorded]
    if "accuracy" not in recorded or is_slope(part.name):
        return []
    return [n for n in extra_metrics if n not in recorded and n not in GROUPED_METRICS]


def part_statistics(part, *, check: bool = True, extra_metrics: Sequence[str] = ()) -> Dict[str, Statistic]:
    """One :class:`Statistic` per dataset of a loaded sub-benchmark (``results.run.Part``).

    ``extra_metrics``: registry names estimated beside the recorded ones (see :func:`extra_metric_names`).
    """
    check_records(part)
    return {dataset: dataset_statistic(part, dataset, check=check, extra_metrics=extra_metrics)
            for dataset in part.datasets()}


def check_records(part) -> None:
    """Refuse a sub-benchmark without records, or one of whose datasets has none."""
    if not part.records:
        raise InvalidValueError(f"{part.name}: the run has no per-query records (samples.jsonl); "
                                "confidence intervals need them: run with --log-samples")
    for dataset in part.datasets():
        if dataset not in part.records:
            raise InvalidValueError(f"{part.name} / {dataset}: no records for this dataset in samples.jsonl")


def dataset_statistic(part, dataset: str, *, check: bool = True, extra_metrics: Sequence[str] = (),
                      table: Optional[ItemTable] = None) -> Statistic:
    """The :class:`Statistic` of one dataset of a sub-benchmark, checked against results.json.

    Built one dataset at a time so that a caller can drop each dataset's item table (every
    record as Python rows) before building the next: a part's tables for two runs at once
    are the largest thing the comparison would otherwise hold.  ``table``: the dataset's
    :meth:`ItemTable.of_part` where the caller holds it already (a lite run's proxy, whose
    statistics read the same table), so that it is not built twice.
    """
    recorded = _recorded(part.divided.get(dataset, {}))
    table = ItemTable.of_part(part, dataset) if table is None else table
    statistic = Statistic(part.name, table, list(recorded) + extra_metric_names(part, recorded, extra_metrics),
                          part.metadata)
    if check:
        point = statistic.point()
        for name, value in point.items():
            if name in recorded and not _same(value, recorded[name]):
                raise InvalidValueError(f"{part.name} / {dataset}: {name} recomputed from the records is {value!r}, "
                                        f"but results.json records {recorded[name]!r}: the records do not belong "
                                        "to these results")
    return statistic


def estimate_part(part, draws: Dict[str, List[List[int]]], level: float,
                  statistics: Optional[Dict[str, Statistic]] = None, engine: str = "auto") -> PartEstimates:
    """Estimates of one sub-benchmark from given resamples (``draws[dataset]``).

    ``engine``: "auto" computes the resamples with NumPy when it is installed, "python"
    one resample at a time (the reference the NumPy path is tested against).
    """
    statistics = statistics or part_statistics(part)
    estimates = PartEstimates(part.name, [])
    for s in statistics.values():
        add_metric_names(estimates, s)
    for dataset, statistic in statistics.items():
        add_dataset(estimates, dataset, statistic, draws[dataset], level, engine)
    average_datasets(estimates, len(statistics), level)
    return estimates


def add_metric_names(estimates: PartEstimates, statistic: Statistic) -> None:
    """Add a dataset's metric names to the part's, in first-seen order."""
    estimates.metrics.extend(n for n in statistic.names() if n not in estimates.metrics)


def add_dataset(estimates: PartEstimates, dataset: str, statistic: Statistic, draws: Sequence[Sequence[int]],
                level: float, engine: str = "auto") -> None:
    """One dataset's values on every resample and its intervals (the statistic is not kept)."""
    point = statistic.point()
    values = resample_values(statistic, draws, engine)
    estimates.distributions[dataset] = {n: values[n] for n in point}
    estimates.datasets[dataset] = {}
    for n, value in point.items():
        low, high, left_out = finite_interval(estimates.distributions[dataset][n], level)
        estimates.datasets[dataset][n] = Estimate(value, low, high, left_out)


def average_datasets(estimates: PartEstimates, dataset_count: int, level: float) -> None:
    """The averaged row of every scalar metric that all ``dataset_count`` datasets have."""
    for n in estimates.metrics:
        per_dataset = [d[n] for d in estimates.distributions.values() if n in d]
        if len(per_dataset) != dataset_count or isinstance(per_dataset[0][0], list):
            continue  # vectors (the bias distributions) have no averaged value
        value = _mean([estimates.datasets[d][n].value for d in estimates.datasets])
        averaged = [_mean(column) for column in zip(*per_dataset)]
        low, high, left_out = finite_interval(averaged, level)
        estimates.averaged[n] = Estimate(value, low, high, left_out)
        estimates.distributions.setdefault("Averaged", {})[n] = averaged


def _check_options(resamples: int, level: float, seed: int) -> None:
    from ..validation import Real, check, check_int
    check_int(resamples, "resamples", minimum=1)
    check_int(seed, "seed")
    check(level, Real(0, 1, closed="neither", kind="a real number", text="strictly between 0 and 1"), "level")


def bootstrap_run(run, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  level: float = DEFAULT_LEVEL, benchmarks: Optional[Sequence[str]] = None,
                  engine: str = "auto", progress: Optional[Callable[[str], None]] = None,
                  extra_metrics: Sequence[str] = ()) -> RunEstimates:
    """Bootstrap intervals over test items for every metric of every sub-benchmark with records.

    ``benchmarks`` limits the work to some sub-benchmarks (names as in the records);
    ``engine`` as in :func:`estimate_part`; ``progress`` is called with each sub-benchmark's
    name before its work starts; ``extra_metrics`` adds registry metrics to the parts they
    apply to (:func:`extra_metric_names`).
    """
    _check_options(resamples, level, seed)
    if benchmarks is not None:
        unknown = [b for b in benchmarks if b not in run.parts]
        if unknown:
            raise InvalidValueError(f"run {run.label!r} has no sub-benchmark {unknown}; it has {list(run.parts)}")
    result = RunEstimates(run.label, seed, resamples, level)
    for name, part in run.parts.items():
        if not part.records or (benchmarks is not None and name not in benchmarks):
            continue
        if progress is not None:
            progress(f"resampling {name} of {run.label}")
        check_records(part)
        estimates = result.parts[name] = PartEstimates(name, [])
        for dataset in part.datasets():  # one dataset's item table at a time (see dataset_statistic)
            statistic = dataset_statistic(part, dataset, extra_metrics=extra_metrics)
            draws = draw_resamples(len(statistic.table), resamples, seed, name, dataset)
            add_metric_names(estimates, statistic)
            add_dataset(estimates, dataset, statistic, draws, level, engine)
            del statistic, draws
        average_datasets(estimates, len(part.datasets()), level)
    if not result.parts:
        raise InvalidValueError(f"run {run.label!r} ({run.path}) has no per-query records: confidence intervals "
                                "need samples.jsonl (run with --log-samples)")
    return result
