"""Flips: the queries whose prediction changed between two runs on the same prompts.

A query's prediction is the argmax the standard's metrics read: the row after the run's
softmax decision (every row of a metric call is softmaxed unless all pass the exact
probability check; see :class:`~StaICC.stats.items.ItemTable`), the first maximum on a
tie.  A flip is *fixed* when run A was wrong and run B is right, *broken* when A was
right and B is wrong, *changed* when both are wrong with different labels, or when the
query has no ground truth (the content-free and domain pseudo queries of
Contextual_bias and Domain_bias, whose records carry a placeholder label).

The records are compared where they sit in both runs (pass, repeat, test item), so the
runs must have been run on the same prompts (:func:`~StaICC.stats.compare.check_same_prompts`).
"""
import json
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..errors import InvalidValueError
from ..spec import SPECS
from .items import ItemTable

FIXED, BROKEN, CHANGED = "fixed", "broken", "changed"


@dataclass(frozen=True)
class Flip:
    """One query whose prediction differs: where it sits, its ground truth and both predictions."""

    query_index: int
    pass_index: int
    repeat: int
    test_index: int
    label: Optional[int]
    predicted_a: int
    predicted_b: int
    kind: str
    prompt: Any = None
    row_id: Any = None  # the test item's own row id (None: a run written without it, or a pseudo query)

    def to_dict(self) -> Dict[str, Any]:
        return {"query_index": self.query_index, "pass": self.pass_index, "repeat": self.repeat,
                "test_index": self.test_index, "row_id": self.row_id, "label": self.label, "predicted_a": self.predicted_a,
                "predicted_b": self.predicted_b, "kind": self.kind, "prompt": self.prompt}


@dataclass
class DatasetFlips:
    """The flips of one (sub-benchmark, dataset), with the counts of each kind."""

    benchmark: str
    dataset: str
    prompts: int
    flips: List[Flip] = field(default_factory=list)
    #: whether run A's records carry each test item's own row id (runs written before it did not)
    row_ids: bool = False

    def count(self, kind: str) -> int:
        return sum(1 for f in self.flips if f.kind == kind)

    def to_dict(self) -> Dict[str, Any]:
        return {"benchmark": self.benchmark, "dataset": self.dataset, "prompts": self.prompts, "row_ids": self.row_ids,
                "flipped": len(self.flips), "fixed": self.count(FIXED), "broken": self.count(BROKEN),
                "changed": self.count(CHANGED), "flips": [f.to_dict() for f in self.flips]}


def has_ground_truth(benchmark: str) -> bool:
    """Whether a sub-benchmark's records carry a real label (pseudo queries carry a placeholder)."""
    spec = SPECS.get(benchmark)
    return spec is None or spec.pseudo_query is None


def _predictions(table: ItemTable) -> Dict[Tuple[int, int, int], int]:
    """(pass, repeat, test index) -> the argmax the metrics read."""
    return {(p, k, test): summaries[i][0] for p, reps in enumerate(table.summaries)
            for k, summaries in enumerate(reps) for i, test in enumerate(table.items)}


def _kind(label: Optional[int], a: int, b: int) -> str:
    if label is None:
        return CHANGED
    if b == label:
        return FIXED
    return BROKEN if a == label else CHANGED


def _record_keys(records) -> Tuple[Any, bool]:
    """(query, pass, repeat, test index, row id) of every record, read by column where the records have
    columns; and whether they carry row ids (a run written before records had them: every row id None)."""
    columns = getattr(records, "columns", None)
    if columns is not None:
        ids = columns.get("row_id")
        known = ids is not None
        return zip(columns["query_index"], columns["pass"], columns["repeat"], columns["test_index"],
                   ids if known else repeat(None)), known
    known = bool(len(records)) and "row_id" in records[0]
    return ((r["query_index"], r["pass"], r["repeat"], r["test_index"], r.get("row_id")) for r in records), known


def dataset_flips(benchmark: str, dataset: str, records_a, records_b) -> DatasetFlips:
    """The flips of one (sub-benchmark, dataset) from both runs' records (same prompts, same layout)."""
    table_a = ItemTable(benchmark, dataset, records_a)
    table_b = ItemTable(benchmark, dataset, records_b)
    if (table_a.passes, table_a.repeats, table_a.items) != (table_b.passes, table_b.repeats, table_b.items):
        raise InvalidValueError(f"{benchmark} / {dataset}: the runs' records are laid out differently "
                                f"({table_a.passes} x {table_a.repeats} x {len(table_a)} vs "
                                f"{table_b.passes} x {table_b.repeats} x {len(table_b)} passes x repeats x items)")
    pa, pb = _predictions(table_a), _predictions(table_b)
    truth = has_ground_truth(benchmark)
    labels = dict(zip(table_a.items, table_a.labels))
    found = DatasetFlips(benchmark, dataset, len(records_a))
    keys, found.row_ids = _record_keys(records_a)
    for query, p, k, test, row_id in keys:
        a, b = pa[(p, k, test)], pb[(p, k, test)]
        if a != b:
            label = labels[test] if truth else None
            found.flips.append(Flip(query, p, k, test, label, a, b, _kind(label, a, b), row_id=row_id))
    found.flips.sort(key=lambda f: f.query_index)
    return found


def find_flips(a, b, progress: Optional[Callable[[str], None]] = None) -> List[DatasetFlips]:
    """Every (sub-benchmark, dataset) both runs have records for, with its flips (B against A).

    ``a`` and ``b`` are loaded runs (:func:`StaICC.report.runs.load_run`) on the same prompts.
    """
    from .compare import check_same_prompts
    check_same_prompts(a, b)
    out: List[DatasetFlips] = []
    for name, part_a in a.parts.items():
        part_b = b.parts.get(name)
        if part_b is None or not part_a.records or not part_b.records:
            continue
        if progress is not None:
            progress(f"flips of {a.label} vs {b.label}: {name}")
        for dataset in part_a.records:
            if dataset in part_b.records:
                out.append(dataset_flips(name, dataset, part_a.records[dataset], part_b.records[dataset]))
    return out


def attach_prompts(samples_path: Optional[str], flips: List[DatasetFlips]) -> bool:
    """Fill each flip's prompt from a ``samples.jsonl`` written with ``--log-samples=full``.

    Returns False (nothing attached) when the file holds no prompt text.  Only the flipped
    queries' lines are kept; the file is read once, line by line.
    """
    if not samples_path or not any(d.flips for d in flips):
        return False
    wanted: Dict[Tuple[str, str], Set[int]] = {(d.benchmark, d.dataset): {f.query_index for f in d.flips}
                                               for d in flips if d.flips}
    prompts: Dict[Tuple[str, str, int], Any] = {}
    with open(samples_path, encoding="utf-8") as fh:
        first = fh.readline()
        if not first.strip() or "prompt" not in json.loads(first):
            return False  # written without --log-samples=full: no line holds a prompt
        fh.seek(0)
        for line in fh:
            if '"prompt"' not in line:
                continue
            record = json.loads(line)
            key = (record.get("benchmark"), record.get("dataset"))
            if record.get("query_index") in wanted.get(key, ()) and "prompt" in record:
                prompts[key + (record["query_index"],)] = record["prompt"]
    if not prompts:
        return False
    for d in flips:
        d.flips = [replace(f, prompt=prompts.get((d.benchmark, d.dataset, f.query_index))) for f in d.flips]
    return True
