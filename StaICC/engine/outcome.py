"""Running a plan: requests -> answers (model or preentered) -> metric rows -> results and records.

This is where a model's outputs go after :func:`~StaICC.engine.scoring.score_requests`
validated them: expanded to the rows the metrics read, summarised by the procedure, and
kept as per-query records (what statistics, plots and ``--log-samples`` read).
"""
import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..errors import where
from .scoring import check_preentered, expand, predicted_labels, score_requests
from ..metrics import PredictionRows
from .plan import RunPlan
from .procedures import Procedure
from ..requests import Answer, Request
from ..results.records import PlanRecords


@dataclass(frozen=True)
class Outcome:
    """One experimentor run: the procedure's summary, what the original returned as outputs, records."""

    summary: Dict[str, Any]
    outputs: Dict[str, list]
    records: PlanRecords
    unparsed: int
    prompt_set_sha256: str


def answer_plan(plan: RunPlan, requests: Sequence[Request], *, backend=None, preentered: Optional[Sequence] = None,
                cache=None, progress: Optional[bool] = None) -> List[Answer]:
    """One validated answer per request: from the backend (pass by pass) or from preentered predictions."""
    if preentered is not None:
        label_space = requests[0].label_space if requests else ()
        return [Answer(p) for p in check_preentered(preentered, plan.total, list(label_space), plan.dataset)]
    answers: List[Answer] = []
    per_pass = plan.queries_per_pass
    for number, spec in enumerate(plan.passes):
        chunk = requests[number * per_pass:(number + 1) * per_pass]
        try:
            answers.extend(score_requests(backend, chunk, cache=cache, progress=progress,
                                          description=pass_description(plan, number, spec.describe())))
        except BaseException as exc:
            earlier = [a.prediction for a in answers]
            exc.partial_predictions = earlier + getattr(exc, "partial_predictions", [])  # type: ignore[attr-defined]
            raise
    return answers


def pass_description(plan: RunPlan, number: int, detail: str) -> str:
    text = f"{plan.benchmark} {plan.dataset}"
    if len(plan.passes) > 1:
        text += f" pass {number + 1}/{len(plan.passes)}"
    return text + (f" ({detail})" if detail else "")


def summarize(plan: RunPlan, procedure: Procedure, metrics: Dict[str, Callable], truth: List[int],
              requests: Sequence[Request], answers: Sequence[Answer],
              previous: Optional[List] = None) -> Outcome:
    """Metrics of every pass, the procedure's summary, the original's outputs and per-query records."""
    per_pass = plan.queries_per_pass
    base = list(previous) if previous is not None else []
    stored: List[list] = base
    results, raw_all, rows_all = [], [], []
    for number, spec in enumerate(plan.passes):
        raw = [a.prediction for a in answers[number * per_pass:(number + 1) * per_pass]]
        label_count = len(requests[number * per_pass].label_space) if requests else 0
        rows = expand(raw, label_count, plan.dataset)
        stored = PredictionRows((stored if spec.carry else base) + rows)
        results.append(compute_metrics(metrics, truth, stored, plan.dataset))
        raw_all.extend(raw)
        rows_all.extend(rows)
    outputs = {"groundtruth": truth * len(plan.passes), "predicted": predicted_labels(raw_all), "prob.": rows_all}
    records = PlanRecords(plan, requests, answers, truth, rows_all)
    return Outcome(procedure.summarize(results), outputs, records, sum(1 for a in answers if not a.parsed),
                   prompt_set_digest(requests))


def prompt_set_digest(requests: Sequence[Request]) -> str:
    """SHA-256 over every prompt (length-prefixed UTF-8) and label space of a run: equal digests, equal prompts."""
    digest = hashlib.sha256()
    label_space = None
    for request in requests:
        if request.label_space != label_space:
            label_space = request.label_space
            digest.update(b"L" + "\x00".join(label_space).encode("utf-8", "surrogatepass") + b"\x00")
        for text in (request.prompt if isinstance(request.prompt, tuple) else (request.prompt,)):
            data = text.encode("utf-8", "surrogatepass")
            digest.update(b"%d:" % len(data))
            digest.update(data)
    return digest.hexdigest()


def compute_metrics(metrics: Dict[str, Callable], truth: List[int], stored: List[list], dataset: str) -> Dict[str, Any]:
    results = {}
    for name, metric in metrics.items():
        try:
            results[name] = metric(truth, stored)
        except (ValueError, ZeroDivisionError, IndexError, TypeError, OverflowError) as exc:
            raise ValueError(f"metric {name!r} failed{where(dataset)} on {len(stored)} predictions: {exc}") from exc
    return results
