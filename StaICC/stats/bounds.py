"""The standard table as intervals, from the per-query records of a ``scoring=top_logprobs`` run.

Each record of such a run keeps the server's top-k list and its box in its text
(:mod:`StaICC.backends.top_logprobs`); :func:`bound_rows` groups the records by
sub-benchmark and dataset and gives each metric's sound interval
(:mod:`StaICC.metrics.intervals`) beside the recorded point value, and the share of labels
a listed token named.  Sub-benchmarks of several passes (label-noise slopes, sensitivity
over templates) are left out: their numbers are regressions or spreads over passes, for
which no interval is derived here.
"""
from typing import Any, Dict, Iterable, List, Tuple

from ..backends.top_logprobs import box_of_text
from ..metrics.intervals import standard_intervals


def boxes_by_dataset(records: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, str], Tuple[List[int], List[Any]]]:
    """(benchmark, dataset) -> (true labels, boxes) of the single-pass records that hold a box."""
    groups: Dict[Tuple[str, str], Tuple[List[int], List[Any]]] = {}
    multi = set()
    for record in records:
        key = (record["benchmark"], record["dataset"])
        if record.get("pass", 0):
            multi.add(key)
        box = box_of_text(record.get("text"))
        if box is not None:
            truth, boxes = groups.setdefault(key, ([], []))
            truth.append(record["label"])
            boxes.append(box)
    return {key: value for key, value in groups.items() if key not in multi}


def bound_rows(records: Iterable[Dict[str, Any]], recorded: Dict[Tuple[str, str], Dict[str, Any]]
               ) -> List[Dict[str, Any]]:
    """One row per (benchmark, dataset, metric): ``low``, ``high``, ``width``, the recorded ``point`` (the
    stated convention) where the results hold it, and ``labels_listed`` (the dataset's share of labels a
    listed token named)."""
    rows = []
    for (benchmark, dataset), (truth, boxes) in boxes_by_dataset(records).items():
        listed = [flag for box in boxes for flag in box.listed()]
        share = sum(listed) / len(listed)
        values = recorded.get((benchmark, dataset), {})
        for metric, interval in standard_intervals(truth, boxes).items():
            if isinstance(interval, list):  # a vector metric: one row per label
                for c, (low, high) in enumerate(interval):
                    rows.append(_row(benchmark, dataset, f"{metric}[{c}]", low, high, None, share))
                continue
            rows.append(_row(benchmark, dataset, metric, interval[0], interval[1], values.get(metric), share))
    return rows


def _row(benchmark: str, dataset: str, metric: str, low: float, high: float, point: Any, share: float
         ) -> Dict[str, Any]:
    return {"benchmark": benchmark, "dataset": dataset, "metric": metric, "low": low, "high": high,
            "width": high - low, "point": point, "labels_listed": share}


def format_bounds(rows: List[Dict[str, Any]]) -> str:
    """A plain table of the intervals (the point value between them)."""
    lines = [f"{'benchmark/dataset':32} {'metric':32} {'low':>8} {'point':>8} {'high':>8} {'width':>8} listed"]
    for r in rows:
        point = f"{r['point']:8.4f}" if isinstance(r["point"], float) else f"{'':8}"
        lines.append(f"{r['benchmark'] + '/' + r['dataset']:32.32} {r['metric']:32.32} {r['low']:8.4f} {point} "
                     f"{r['high']:8.4f} {r['width']:8.4f} {r['labels_listed']:.2f}")
    return "\n".join(lines)
