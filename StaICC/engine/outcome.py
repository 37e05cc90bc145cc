"""Answers -> results: the one function that turns a work's answers into its metrics and records.

This is where a model's outputs go after :func:`~StaICC.engine.scoring.score_requests`
validated them: expanded to the rows the metrics read, summarised by the procedure, and
kept as per-query records (what statistics, plots and ``--log-samples`` read).  Records
keep no prompt: they rebuild one on demand from the work.
"""
import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from operator import attrgetter, is_, not_
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError, where
from .scoring import expand, predicted_labels
from ..metrics.bias import bias_entropy
from ..metrics.scores import averaged_truelabel_likelihood, expected_calibration_error_1
from ..metrics.exact_sum import STANDARD_RULE, PassCensus, RowRule, census, original_branch_differs, rows_of_kind
from ..numeric import all_read_rows_only, joined_rows
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
    exact_sum: Tuple[PassCensus, ...] = ()  # per pass: how its rows met the standard's exact-sum rule
    rule: RowRule = STANDARD_RULE
    #: the metrics whose value the original's exact-sum rule would change (rows on the softmax branch always);
    #: said once at run time, not recorded: whether a row sums to exactly 1.0 depends on the route
    original_differs: Tuple[str, ...] = ()

    @property
    def outputs(self) -> Dict[str, list]:
        """What the original returned as outputs: ground truth, predicted labels and rows of every pass."""
        passes = len(self.work.plan.passes)
        return {"groundtruth": list(self.work.truth) * passes, "predicted": predicted_labels(self.records.raw()),
                "prob.": list(self.records.rows())}


def row_rule(backend: Any, preentered_kind: Optional[str] = None, original: bool = False) -> RowRule:
    """How a work's rows meet the exact-sum rule: what its backend declares they are (``prediction_kind``:
    the package's model backends, a function given one), or ``preentered_kind`` for preentered predictions;
    ``original``: declared rows meet the original's check (exact_sum="original")."""
    if backend is None:
        return RowRule(preentered_kind, original=original and preentered_kind is not None)
    kind = getattr(backend, "prediction_kind", None)
    return RowRule(kind, bool(getattr(backend, "reproducible_rows", False)), original and kind is not None)


def summarize(work: Work, requests: Sequence[Request], answers: Sequence[Answer],
              rule: RowRule = STANDARD_RULE, predictions: Optional[Sequence[Sequence[Any]]] = None) -> Outcome:
    """Metrics of every pass, the procedure's summary and the per-query records of one work.

    ``rule`` (from the runner, :func:`row_rule`) says what the rows are and so which branch of
    the exact-sum rule they take; each pass's census records it.  ``predictions``: each pass's
    predictions where they are not the answers' own (a method's rows, beside the model's answers,
    whose text, parsed flag and thinking they keep), so that no answer is built for each.
    """
    plan, truth = work.plan, list(work.truth)
    base = list(work.previous) if work.previous is not None else []
    stored: List[list] = base
    prediction_of = attrgetter("prediction")
    share = all_read_rows_only(work.metrics.values())  # one row object per label; records copy them when read
    results, rows_all, censuses = [], [], []
    chosen = list(work.metrics.values())
    values = averaged_truelabel_likelihood in chosen or expected_calibration_error_1 in chosen
    entropy = bias_entropy in chosen
    differs = [False, False]  # (the score metrics, the bias entropy) under the original's rule
    for number, spec in enumerate(plan.passes):
        where_ = plan.pass_slice(number)
        raw = predictions[number] if predictions is not None else list(map(prediction_of, answers[where_]))
        label_count = len(requests[where_.start].label_space) if requests else 0
        rows = rows_of_kind(expand(raw, label_count, plan.dataset, share_rows=share), rule.kind, plan.dataset,
                            rule.original)
        stored = joined_rows(stored if spec.carry else base, rows)
        results.append(compute_metrics(work.metrics, truth, stored, plan.dataset))
        censuses.append(census(stored, rule, values, entropy))
        differs = [a or b for a, b in zip(differs, original_branch_differs(stored, values, entropy))]
        rows_all.extend(rows)
    digest = prompt_set_digest(requests)
    records = PlanRecords(work, answers, rows_all, copy_int_rows=share, prompt_set_sha256=digest,
                          predictions=None if predictions is None else [p for part in predictions for p in part])
    unparsed = sum(map(not_, map(attrgetter("parsed"), answers)))
    return Outcome(work.procedure.summarize(results), records, unparsed,
                   digest, work, tuple(censuses), rule, _metrics_moved(work.metrics, *differs))


def _metrics_moved(metrics: Dict[str, Callable], scores: bool, entropy: bool) -> Tuple[str, ...]:
    """The names of ``metrics`` that read the score rows (``scores``) or the bias entropy (``entropy``)."""
    moved = ((averaged_truelabel_likelihood, expected_calibration_error_1) if scores else ()) + \
        ((bias_entropy,) if entropy else ())
    return tuple(name for name, metric in metrics.items() if metric in moved)


def warn_exact_sum(outcomes: Sequence[Outcome]) -> None:
    """One warning line for a run whose exact-sum branch rested on rounding or whose rows look like
    log-likelihoods (:func:`StaICC.metrics.exact_sum.notice`); nothing otherwise."""
    from ..errors import warn
    from ..metrics.exact_sum import notice
    from ..metrics.exact_sum import original_rule_notice
    for line in (notice((f"{o.work.part} {o.work.dataset}", o.exact_sum) for o in outcomes),
                 original_rule_notice((f"{o.work.part} {o.work.dataset}", o.original_differs) for o in outcomes)):
        if line is not None:
            warn(line, stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this package: a warning names the user's line."""
    import os
    import sys
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level + 1


#: the digests of the request lists digested within the current :func:`digests_remembered` (one runner call), by
#: the identity of their Request objects: a method's work summarises the very Request objects of the plain work it
#: calibrates (:meth:`~StaICC.engine.plan.Work.requests`), whose digest is then not computed again.  The lists
#: are the runner's own, alive for its call anyway; nothing is kept after it (a memory kept past the call kept
#: whole prompt sets, or one weak reference per request, alive)
_DIGESTS: "ContextVar[Optional[Dict[Tuple[int, int], Tuple[Sequence[Request], str]]]]" = \
    ContextVar("staicc_prompt_set_digests", default=None)


@contextmanager
def digests_remembered() -> Iterator[None]:
    """Within: a request list of the very Request objects of one digested earlier in it has that one's digest."""
    token = _DIGESTS.set({} if _DIGESTS.get() is None else _DIGESTS.get())
    try:
        yield
    finally:
        _DIGESTS.reset(token)


def prompt_set_digest(requests: Sequence[Request]) -> str:
    """SHA-256 over every prompt (length-prefixed UTF-8) and label space of a run: equal digests, equal prompts.

    Within :func:`digests_remembered`, the digest of the very Request objects of an earlier call is that call's.
    """
    memory = _DIGESTS.get()
    if memory is None or not requests:
        return _digest(requests)
    key = (id(requests[0]), len(requests))
    entry = memory.get(key)
    if entry is not None and all(map(is_, entry[0], requests)):
        return entry[1]
    digest = _digest(requests)
    memory[key] = (requests, digest)
    return digest


def _digest(requests: Sequence[Request]) -> str:
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
            raise InvalidValueError(f"metric {name!r} failed{where(dataset)} on {len(stored)} predictions: {exc}") from exc
    return results
