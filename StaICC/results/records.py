"""Per-query records: what each query asked, what the model answered, what the metrics read.

Records are built on demand from the run's plan, requests and answers (nothing is
copied), one dict per query and pass in the documented samples format; statistics,
plots and ``--log-samples`` read them.
"""
import json
from typing import Any, Dict, Iterable, Iterator, List, Sequence

from ..metrics import argmax
from ..requests import prompt_sha256

RECORD_FIELDS = ("benchmark", "dataset", "query_index", "pass", "test_index", "repeat", "demonstrations",
                 "prompt_sha256", "label", "prediction", "predicted", "text", "parsed")


class PlanRecords(Sequence):
    """The records of one experimentor run, computed when read."""

    def __init__(self, plan: Any, requests: Sequence[Any], answers: Sequence[Any], truth: List[int],
                 rows: List[list]) -> None:
        self._plan, self._requests, self._answers, self._truth, self._rows = plan, requests, answers, truth, rows
        self._queries = None

    def __len__(self) -> int:
        return len(self._answers)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if self._queries is None:
            self._queries = list(self._plan.queries())
        per_pass = self._plan.queries_per_pass
        test_index, repeat, demos = self._queries[i % per_pass]
        request, answer = self._requests[i], self._answers[i]
        prediction = answer.prediction
        return {"benchmark": self._plan.benchmark, "dataset": self._plan.dataset, "query_index": request.query_index,
                "pass": request.pass_index, "test_index": test_index, "repeat": repeat,
                "demonstrations": list(demos), "prompt_sha256": prompt_sha256(request.prompt),
                "label": self._truth[i % per_pass], "prediction": self._rows[i],
                "predicted": prediction if isinstance(prediction, int) else argmax(prediction),
                "text": answer.text, "parsed": answer.parsed}


class Records(Sequence):
    """Several runs' records read as one sequence (a sub-benchmark's datasets, a suite's benchmarks)."""

    def __init__(self, parts: Sequence[Sequence[Dict[str, Any]]] = ()) -> None:
        self._parts = [p for p in parts if len(p)]

    def __len__(self) -> int:
        return sum(len(p) for p in self._parts)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for part in self._parts:
            yield from part

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        for part in self._parts:
            if i < len(part):
                return part[i]
            i -= len(part)
        raise IndexError(i)


def write_samples(records: Iterable[Dict[str, Any]], path: str) -> int:
    """Write records as JSON Lines to ``path`` (atomically, see :mod:`.safe_files`); returns the count."""
    from .safe_files import atomic_writer
    with atomic_writer(path) as fh:
        return write_records(records, fh)


def write_records(records: Iterable[Dict[str, Any]], fh: Any) -> int:
    """Write records as JSON Lines (strict JSON: non-finite numbers as null) to an open file."""
    from .provenance import strict_json_value
    count = 0
    for record in records:
        fh.write(json.dumps(strict_json_value(record, [], ""), ensure_ascii=False, allow_nan=False))
        fh.write("\n")
        count += 1
    return count
