"""Answers -> results: the one function that turns a work's answers into its metrics and records.

This is where a model's outputs go after :func:`~StaICC.engine.scoring.score_requests`
validated them: expanded to the rows the metrics read, summarised by the procedure, and
kept as per-query records (what statistics, plots and ``--log-samples`` read).  Records
keep no prompt: they rebuild one on demand from the work.
"""
import hashlib
from dataclasses import dataclass
from operator import attrgetter, not_
from typing import Any, Callable, Dict, List, Sequence

from ..errors import where
from .scoring import expand, predicted_labels
from ..metrics.numeric import all_read_rows_only, joined_rows
from .plan import Work
from ..requests import Answer, Request
from ..results.records import PlanRecords


@dataclass(frozen=True)
class Outcome:
    """One experimentor run: the procedure's summary, per-query records, unparsed count, prompt-set digest."""

    summary: Dict[str, Any]
    records: PlanRecords
    unparsed: int
    prompt_set_sha256: str
    work: Work

    @property
    def outputs(self) -> Dict[str, list]:
        """What the original returned as outputs: ground truth, predicted labels and rows of every pass."""
        passes = len(self.work.plan.passes)
        return {"groundtruth": list(self.work.truth) * passes, "predicted": predicted_labels(self.records.raw()),
                "prob.": list(self.records.rows())}


def summarize(work: Work, requests: Sequence[Request], answers: Sequence[Answer]) -> Outcome:
    """Metrics of every pass, the procedure's summary and the per-query records of one work."""
    plan, truth = work.plan, list(work.truth)
    base = list(work.previous) if work.previous is not None else []
    stored: List[list] = base
    prediction_of = attrgetter("prediction")
    share = all_read_rows_only(work.metrics.values())  # one row object per label; records copy them when read
    results, rows_all = [], []
    for number, spec in enumerate(plan.passes):
        where_ = plan.pass_slice(number)
        raw = list(map(prediction_of, answers[where_]))
        label_count = len(requests[where_.start].label_space) if requests else 0
        rows = expand(raw, label_count, plan.dataset, share_rows=share)
        stored = joined_rows(stored if spec.carry else base, rows)
        results.append(compute_metrics(work.metrics, truth, stored, plan.dataset))
        rows_all.extend(rows)
    records = PlanRecords(work, answers, rows_all, copy_int_rows=share)
    unparsed = sum(map(not_, map(attrgetter("parsed"), answers)))
    return Outcome(work.procedure.summarize(results), records, unparsed,
                   prompt_set_digest(requests), work)


def prompt_set_digest(requests: Sequence[Request]) -> str:
    """SHA-256 over every prompt (length-prefixed UTF-8) and label space of a run: equal digests, equal prompts."""
    digest = hashlib.sha256()
    update = digest.update
    label_space = None
    for request in requests:
        if request.label_space != label_space:
            label_space = request.label_space
            update(b"L" + "\x00".join(label_space).encode("utf-8", "surrogatepass") + b"\x00")
        prompt = request.prompt
        if isinstance(prompt, tuple):  # noisy channel: each prompt of the tuple, as a direct prompt is fed
            for text in prompt:
                _update_text(update, text)
            continue
        data = prompt.encode("utf-8", "surrogatepass")  # _update_text, inlined for the one prompt of most requests
        update(b"%d:" % len(data))
        update(data)
    return digest.hexdigest()


def _update_text(update: Callable[[bytes], None], text: str) -> None:
    """Feed one prompt: its UTF-8 length in decimal, a colon, its UTF-8 bytes."""
    data = text.encode("utf-8", "surrogatepass")
    update(b"%d:" % len(data))
    update(data)


def compute_metrics(metrics: Dict[str, Callable], truth: List[int], stored: List[list], dataset: str) -> Dict[str, Any]:
    results = {}
    for name, metric in metrics.items():
        try:
            results[name] = metric(truth, stored)
        except (ValueError, ZeroDivisionError, IndexError, TypeError, OverflowError) as exc:
            raise ValueError(f"metric {name!r} failed{where(dataset)} on {len(stored)} predictions: {exc}") from exc
    return results
