"""The standard table as intervals, from the per-query records of a ``scoring=top_logprobs`` run.

Each record of such a run keeps the server's top-k list and its box in its text
(:mod:`StaICC.backends.top_logprobs`); :func:`bound_rows` groups the records by
sub-benchmark and dataset and gives each metric's sound interval
(:mod:`StaICC.metrics.intervals`) beside the recorded point value, and the share of labels
a listed token named:

* a single-pass sub-benchmark (Normal, the bias diagnoses): each metric of its records;
* a label-noise regression (GLER): each metric's interval per pass, then the slope's exact
  range over those intervals (:func:`~StaICC.metrics.intervals.slope_interval`);
* a consistency sub-benchmark (Template_sens, Demo_sens): the consistency of each test item's
  answers over its repetitions (every pass and repeat), bounded by
  :func:`~StaICC.metrics.intervals.consistency_interval`.

A sub-benchmark's averaged row (the standard table's row) is the mean of its datasets'
intervals: the average is increasing in each dataset's value, and the datasets' answers
are independent boxes.
"""
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..backends.top_logprobs import box_of_text
from ..metrics.intervals import consistency_interval, slope_interval, standard_intervals
from ..metrics.registry import METRICS, OWN_DISTRIBUTION_METRICS
from ..spec import SPECS, abscissae_of, label_noise_x_values, unfold

#: the dataset name of a sub-benchmark's averaged row
AVERAGED = "Averaged"
Key = Tuple[str, str]
Item = Tuple[int, int, int, int, Any]  # (pass, repeat, query_index, label, box)


def boxes_by_dataset(records: Iterable[Dict[str, Any]]) -> Dict[Key, List[Item]]:
    """(benchmark, dataset) -> its records' (pass, repeat, query index, true label, box), in record order;
    a group with a record that holds no box is left out (its metrics are not bounded by boxes)."""
    groups: Dict[Key, List[Item]] = {}
    unboxed = set()
    for record in records:
        key = (record["benchmark"], record["dataset"])
        box = box_of_text(record.get("text"))
        if box is None:
            unboxed.add(key)
            continue
        groups.setdefault(key, []).append((int(record.get("pass", 0)), int(record.get("repeat", 0)),
                                           int(record.get("query_index", 0)), record["label"], box))
    return {key: items for key, items in groups.items() if key not in unboxed}


def recorded_values(result: Any) -> Dict[Key, Dict[str, Any]]:
    """(benchmark, dataset) -> the dataset's recorded results, and (benchmark, ``AVERAGED``) -> the averaged
    ones, of a suite result; a compound sub-benchmark's parts (Triplet_bias) under their own names."""
    recorded: Dict[Key, Dict[str, Any]] = {}
    for unfolded in unfold(result):
        part = dict(unfolded.value)
        for dataset, values in dict(part.get("Divided results") or {}).items():
            recorded[(unfolded.part, dataset)] = dict(values)
        recorded[(unfolded.part, AVERAGED)] = dict(part.get("Averaged results") or {})
    return recorded


def dataset_intervals(benchmark: str, items: List[Item]) -> Dict[str, Any]:
    """Metric name -> interval (a list of intervals for a vector metric) of one dataset's answers."""
    spec = SPECS.get(benchmark)
    if spec is not None and spec.has_consistency:
        return {"consistency": consistency_interval(_repetitions(items))}
    passes = sorted({item[0] for item in items})
    per_pass = [standard_intervals([i[3] for i in items if i[0] == p], [i[4] for i in items if i[0] == p])
                for p in passes]
    if spec is not None and spec.has_slopes and len(passes) > 1:
        xs = label_noise_x_values(len(passes), abscissae_of(benchmark))
        return {name: slope_interval(xs, [bounds[name] for bounds in per_pass])
                for name, value in per_pass[0].items() if not isinstance(value, list)}
    return per_pass[0] if len(passes) == 1 else {}


def _repetitions(items: List[Item]) -> List[List[Any]]:
    """Each test item's boxes over its repetitions: the consistency metric reads position i of every
    block of T rows (T the items of one pass and repeat), over every pass (Template_sens carries them)."""
    block = sum(1 for p, r, *_ in items if p == 0 and r == 0) or len(items)
    groups: Dict[int, List[Any]] = {}
    for _, _, query, _, box in items:
        groups.setdefault(query % block, []).append(box)
    return [groups[i] for i in sorted(groups)]


def _point(benchmark: str, values: Dict[str, Any], metric: str) -> Any:
    """The recorded value of ``metric`` (under its result key), the slope for a regression; None if absent."""
    key = METRICS[metric].result_key if metric in METRICS else metric
    source = values.get("sensitivity", values) if isinstance(values.get("sensitivity"), dict) else values
    value = source.get(key)
    spec = SPECS.get(benchmark)
    if spec is not None and spec.has_slopes and isinstance(value, (list, tuple)) and value:
        return value[0]
    return value


def _reported(benchmark: str, values: Dict[str, Any], metric: str) -> bool:
    """Whether the results report ``metric``: one of its sub-benchmark's metrics (or their own-distribution
    counterparts), whose value the results hold (where any are recorded)."""
    spec = SPECS.get(benchmark)
    if spec is not None:
        own = {OWN_DISTRIBUTION_METRICS[m] for m in spec.metrics if m in OWN_DISTRIBUTION_METRICS}
        if metric not in spec.metrics and metric not in own:
            return False
    return not values or _point(benchmark, values, metric) is not None


def bound_rows(records: Iterable[Dict[str, Any]], recorded: Dict[Key, Dict[str, Any]]
               ) -> List[Dict[str, Any]]:
    """One row per (benchmark, dataset, metric) the results report: ``low``, ``high``, ``width``, the
    recorded ``point`` (the stated convention) where the results hold it, and ``labels_listed`` (the
    dataset's share of labels a listed token named); then each sub-benchmark's averaged rows."""
    rows: List[Dict[str, Any]] = []
    for (benchmark, dataset), items in boxes_by_dataset(records).items():
        listed = [flag for item in items for flag in item[4].listed()]
        share = sum(listed) / len(listed)
        values = recorded.get((benchmark, dataset), {})
        for metric, interval in dataset_intervals(benchmark, items).items():
            if not _reported(benchmark, values, metric):
                continue
            if isinstance(interval, list):  # a vector metric: one row per label
                for c, (low, high) in enumerate(interval):
                    rows.append(_row(benchmark, dataset, f"{metric}[{c}]", low, high, None, share))
                continue
            rows.append(_row(benchmark, dataset, metric, interval[0], interval[1],
                             _point(benchmark, values, metric), share))
    return rows + averaged_rows(rows, recorded)


def averaged_rows(rows: List[Dict[str, Any]], recorded: Dict[Key, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Each sub-benchmark's averaged row per scalar metric: the mean of its datasets' lows and highs, where
    every dataset the results name has one."""
    by_metric: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for row in rows:
        if "[" not in row["metric"]:
            by_metric.setdefault((row["benchmark"], row["metric"]), []).append(row)
    out = []
    for (benchmark, metric), group in by_metric.items():
        named = {d for b, d in recorded if b == benchmark and d != AVERAGED}
        if named - {row["dataset"] for row in group}:
            continue  # a dataset without boxes: no sound average
        n = len(group)
        low, high = sum(r["low"] for r in group) / n, sum(r["high"] for r in group) / n
        share = sum(r["labels_listed"] for r in group) / n
        out.append(_row(benchmark, AVERAGED, metric, low, high,
                        _averaged_point(recorded.get((benchmark, AVERAGED), {}), metric), share))
    return out


def _averaged_point(values: Dict[str, Any], metric: str) -> Optional[Any]:
    key = METRICS[metric].result_key if metric in METRICS else metric
    return values.get(key)


def _row(benchmark: str, dataset: str, metric: str, low: float, high: float, point: Any, share: float
         ) -> Dict[str, Any]:
    return {"benchmark": benchmark, "dataset": dataset, "metric": metric, "low": low, "high": high,
            "width": 0.0 if low == high else high - low, "point": point, "labels_listed": share}


def format_bounds(rows: List[Dict[str, Any]]) -> str:
    """A plain table of the intervals (the point value between them)."""
    lines = [f"{'benchmark/dataset':32} {'metric':32} {'low':>8} {'point':>8} {'high':>8} {'width':>8} listed"]
    for r in rows:
        point = f"{r['point']:8.4f}" if isinstance(r["point"], float) else f"{'':8}"
        lines.append(f"{r['benchmark'] + '/' + r['dataset']:32.32} {r['metric']:32.32} {r['low']:8.4f} {point} "
                     f"{r['high']:8.4f} {r['width']:8.4f} {r['labels_listed']:.2f}")
    return "\n".join(lines)
