"""Per-query records: what each query asked, what the model answered, what the metrics read.

Records are built on demand from the run's work (plan, truth) and answers, one dict per
query and pass in the documented samples format; statistics, plots and
``--log-samples`` read them.  They keep no prompt text: the prompt hashes are computed
when first read by writing the work's prompts again (equal plans give equal prompts), and
:meth:`PlanRecords.prompt` rebuilds one prompt.
"""
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

from ..errors import OutOfRangeError
from ..metrics import argmax
from ..requests import prompt_sha256
from ..spec import SPECS

RECORD_FIELDS = ("benchmark", "dataset", "query_index", "pass", "test_index", "row_id", "repeat", "demonstrations",
                 "prompt_sha256", "label", "prediction", "predicted", "text", "parsed")
class _NoIds:
    """Row ids where none is known: None for every test item."""

    def __getitem__(self, index: int) -> None:
        return None


_NONE_IDS = _NoIds()
#: the field a record has when its generated text has a thinking section (see StaICC.backends.thinking)
THINKING_FIELD = "thinking"


class RecordSequence(Sequence):
    """A read-only list of records, each a dict made when read by :meth:`record`: indexes and
    slices behave as a list's, so a record set need not hold its records."""

    def record(self, i: int) -> Dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.record(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise OutOfRangeError(i)
        return self.record(i)


class PlanRecords(RecordSequence):
    """The records of one experimentor run, computed when read."""

    def __init__(self, work: Any, answers: Sequence[Any], rows: List[list], copy_int_rows: bool = False,
                 prompt_set_sha256: Optional[str] = None, predictions: Optional[List[Any]] = None) -> None:
        """``copy_int_rows``: the rows of int answers are shared between queries (see
        :func:`~StaICC.engine.scoring.expand`) and get one list each when first read.  ``prompt_set_sha256``:
        the digest of the very requests these records are of, in their order (equal digests: every record's
        prompt is the same, so a comparison need not write them again).  ``predictions``: the validated
        predictions where they are not the answers' own (a method's, beside the answers it calibrated)."""
        self._work, self._answers, self._rows = work, answers, rows
        self._predictions = predictions
        self._copy_int_rows = copy_int_rows
        self.prompt_set_sha256 = prompt_set_sha256
        self._hashes: Optional[List[str]] = None
        self._row_ids: Optional[Sequence[Any]] = None

    def __len__(self) -> int:
        return len(self._answers)

    @property
    def dataset(self) -> str:
        """The dataset every record here is of."""
        return self._work.plan.dataset

    def raw(self) -> List[Any]:
        """The validated predictions in call order (ints or score vectors)."""
        return [a.prediction for a in self._answers] if self._predictions is None else list(self._predictions)

    def rows(self) -> List[list]:
        """The rows the metrics read, in call order (one list per query)."""
        if self._copy_int_rows:
            self._rows = [row[:] if isinstance(prediction, int) else row
                          for row, prediction in zip(self._rows, self.raw())]
            self._copy_int_rows = False
        return self._rows

    def statistics_columns(self, rows: bool = False) -> Dict[str, List[Any]]:
        """The columns the statistics read (the compact samples file's), from the plan and the rows alone:
        no prompt is written, so ``prompt_sha256`` is None (:meth:`prompt_hashes` writes them when asked).
        ``rows``: ``prediction`` holds the rows themselves, one list per record, rather than their values
        in one flat list."""
        plan, n = self._work.plan, len(self)
        per_pass, T = plan.queries_per_pass, plan.test_count
        passes, rest = divmod(n, per_pass) if per_pass else (0, 0)
        tests = [plan.test_of(q) for q in range(per_pass)]
        repeats = [q // T for q in range(per_pass)]
        labels = [self._work.truth[q] for q in range(per_pass)]
        return {"query_index": list(range(n)), "pass": [p for p in range(passes) for _ in range(per_pass)]
                + [passes] * rest, "test_index": tests * passes + tests[:rest],
                "repeat": repeats * passes + repeats[:rest], "label": labels * passes + labels[:rest],
                "prediction": self.rows() if rows else [v for row in self.rows() for v in row],
                "prompt_sha256": [None] * n}

    def prompt(self, i: int) -> Any:
        """The prompt of record ``i``, written again (a str, or a tuple of str for noisy channel)."""
        return self._work.requests()[i].prompt

    def prompt_hashes(self) -> List[str]:
        """Every record's ``prompt_sha256``: the prompts are written again once, hashed, dropped."""
        if self._hashes is None:
            self._hashes = [prompt_sha256(r.prompt) for r in self._work.requests()]
        return self._hashes

    def row_ids(self) -> Sequence[Any]:
        """Each test item's own row id (see ``triplet_dataset.test_row_ids``); None for pseudo queries,
        which are no row of the data, and where the test part's rows are not known."""
        if self._row_ids is None:
            triplet = self._work.prompts.triplet
            spec = SPECS.get(self._work.plan.benchmark)
            ids = triplet.test_row_ids() if spec is None or spec.pseudo_query is None else None
            self._row_ids = ids if ids is not None else _NONE_IDS
        return self._row_ids

    def record(self, i: int) -> Dict[str, Any]:
        plan = self._work.plan
        per_pass, T = plan.queries_per_pass, plan.test_count
        q = i % per_pass
        test = plan.test_of(q)
        answer = self._answers[i]
        prediction = answer.prediction if self._predictions is None else self._predictions[i]
        record = {"benchmark": plan.benchmark, "dataset": plan.dataset, "query_index": i,
                  "pass": i // per_pass, "test_index": test, "row_id": self.row_ids()[test], "repeat": q // T,
                  "demonstrations": list(plan.demonstrations[q]), "prompt_sha256": self.prompt_hashes()[i],
                  "label": self._work.truth[q], "prediction": self.rows()[i],
                  "predicted": prediction if isinstance(prediction, int) else argmax(prediction),
                  "text": answer.text, "parsed": answer.parsed}
        thinking = getattr(answer, "thinking", None)
        if thinking is not None:
            record[THINKING_FIELD] = thinking_record(thinking)
        return record

    def thinking_summary(self) -> Optional[Dict[str, Any]]:
        """The thinking sections of these answers, summed (None: no answer has one)."""
        return thinking_summary(getattr(a, "thinking", None) for a in self._answers)


def thinking_record(thinking: Any) -> Dict[str, Any]:
    """A :class:`~StaICC.requests.Thinking` as the record's ``thinking`` field."""
    return {"chars": thinking.chars, "tokens": thinking.tokens, "finished": thinking.finished,
            "over_budget": thinking.over_budget}


def thinking_summary(sections: Iterable[Any]) -> Optional[Dict[str, Any]]:
    """Per dataset: answers with a thinking section, how many never ended or overran the budget, their
    characters, and their tokens where the backend counted them (``counted`` answers)."""
    found = [t for t in sections if t is not None]
    if not found:
        return None
    counted = [t.tokens for t in found if t.tokens is not None]
    return {"answers": len(found), "unfinished": sum(1 for t in found if not t.finished),
            "over_budget": sum(1 for t in found if t.over_budget), "chars": sum(t.chars for t in found),
            "tokens": sum(counted) if counted else None, "counted": len(counted)}


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
        raise OutOfRangeError(i)


def write_records(records: Iterable[Dict[str, Any]], fh: Any) -> int:
    """Write records as JSON Lines (strict JSON: non-finite numbers as null) to an open file."""
    from .jsonl import jsonl_line
    from .provenance import strict_json_value
    count = 0
    for record in records:
        fh.write(jsonl_line(strict_json_value(record, [], ""), ensure_ascii=False, allow_nan=False))
        fh.write("\n")
        count += 1
    return count
