"""The one runner: planned works -> distinct requests -> ``score_requests`` -> what the policy asks for.

Every run goes through :func:`run_works`: ``Normal()(f)``, ``bench[i].auto_run(...)``,
``run_suite``, ``staicc run`` and its shards, dry runs and write-outs.  Works are taken
dataset by dataset, in order: the dataset's prompts are written (each demonstration's and
query's text rendered once for all its works), the requests not answered yet are asked
(:func:`~StaICC.engine.batches.distinct_requests`, then one ``score_requests`` call per
pass with new prompts, or one call per dataset in text order for a backend that shares
prefixes), each work's answers are summarised (:func:`~StaICC.engine.outcome.summarize`)
and the prompts are dropped.  Nothing climbs back: scoring returns answers, the runner
returns outcomes, the sub-benchmarks assemble results from those.

What is asked is the ``selection`` (:mod:`.selection`): everything; a shard (only the
shard's prompts are written, see :mod:`.sharding`, and its answers only stored); or
nothing (a dry run: the same writing and dedup, counted, then dropped).  What happens to
the answers is the ``policy``: summarised, or only stored; ``write_out`` prints the first
prompts of each sub-benchmark and dataset as the runner writes them.

On any error (the model's, a bad answer, Ctrl-C) the exception carries
``partial_predictions`` (the leading predictions of the work that failed, earlier passes
included) and ``completed_outcomes`` (the outcomes of the works finished before it).

A work need not be a sub-benchmark's: anything shaped like :class:`~StaICC.engine.plan.Work`
runs here, with the same cache and dedup: a ``dataset``, a ``part``, a ``plan`` that slices
its requests into passes (``passes``, ``pass_slice``, ``pass_description``, ``total``),
``requests(rendered, segments=, only=)`` and, when its answers are not a sub-benchmark's, a
``summarize(requests, answers)`` of its own.  A method is such a work
(:class:`StaICC.methods.works.MethodWork`): its calibration prompts and the sub-benchmark's
prompts (asking the label scores again, which the dedup answers from the plain run's, or a
representation of the prompt, ``Request.kind``) in one list; its ``summarize`` fits the
method and applies it before the metrics.  What a request asks is the backend's business
(``Backend.request_kinds``); ``score_requests`` refuses a kind the backend does not answer.
"""
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..errors import InvalidValueError
from ..backends.base import BadAnswersError
from ..requests import Answer, Request
from .batches import Batch, Target, _batch_for, _text_order, distinct_requests  # noqa: F401  (their old import path)
from .outcome import Outcome, digests_remembered, row_rule, summarize, warn_exact_sum
from .refusals import raise_refused
from .plan import Work
from .protocols import AnswerCache, ScoringBackend
from .scoring import call_size, check_preentered, leading_predictions, score_requests
from .selection import EVERYTHING, SUMMARIZE, AnswerPolicy, Everything, Nothing, Selection, Shard

COUNTS = ("asked", "cached", "prompts", "distinct", "calls")


@dataclass
class _Run:
    """What every dataset of one :func:`run_works` call shares."""

    cache: Optional[AnswerCache]
    progress: Optional[bool]
    distinct: bool
    counts: Dict[str, Any]
    requests_per_call: Optional[int]
    selection: Selection
    policy: AnswerPolicy
    planner: Any = None  # the shard plan of a Shard selection (a dry run's: one shard)
    rules: Dict[int, Any] = field(default_factory=dict)  # id(work) -> how its rows meet the exact-sum rule

    @property
    def summarizing(self) -> bool:
        return self.policy.summarize and isinstance(self.selection, Everything)


def run_works(works: Sequence[Work], backends: Sequence[Optional[ScoringBackend]],
              preentered: Sequence[Optional[Sequence]] = (), *, cache: Optional[AnswerCache] = None,
              progress: Optional[bool] = None, distinct: bool = False, counts: Optional[Dict[str, Any]] = None,
              requests_per_call: Optional[int] = None, selection: Selection = EVERYTHING,
              policy: AnswerPolicy = SUMMARIZE, preentered_kind: Optional[str] = None) -> List[Outcome]:
    """Every work's outcome (none unless the selection is everything and the policy summarises).

    ``backends[i]`` answers ``works[i]`` (None: ``preentered[i]`` holds its predictions, which are
    ``preentered_kind``: see :mod:`StaICC.metrics.exact_sum`; a backend says what its rows are itself).
    ``counts`` accumulates ``asked``, ``cached``, ``prompts`` and ``distinct`` (requests
    planned, requests that needed an answer) and ``calls``; a shard run adds ``shard``, the
    plan's description.  A shard asks only its part and stores the answers in ``cache``.
    """
    preentered = list(preentered) or [None] * len(works)
    counts = counts if counts is not None else {}
    for name in COUNTS:
        counts.setdefault(name, 0)
    run = _Run(cache, progress, distinct, counts, requests_per_call, selection, policy,
               rules={id(work): row_rule(backend, preentered_kind, policy.exact_sum == "original")
                      for work, backend in zip(works, backends)})
    if isinstance(selection, Shard) and cache is None:
        raise InvalidValueError("a shard run needs a cache (--cache FILE): its answers are its only output")
    if isinstance(selection, (Shard, Nothing)):
        from .sharding import shard_planner
        # a dry run counts the distinct requests from the plan's structure, as a shard of one would ask them
        plan = selection if isinstance(selection, Shard) else selection.shard or Shard(0, 1)
        run.planner = shard_planner(plan, works, backends)
    outcomes: List[Optional[Outcome]] = [None] * len(works)
    refused: List[BadAnswersError] = []  # answers a backend refused: the other datasets are asked on
    for group in _by_dataset(works):
        try:
            got = _run_dataset([works[w] for w in group], [backends[w] for w in group],
                               [preentered[w] for w in group], run)
        except BadAnswersError as exc:
            refused.append(exc)
            got = []
        except BaseException as exc:
            exc.completed_outcomes = [o for o in outcomes if o is not None] + \
                getattr(exc, "completed_outcomes", [])  # type: ignore[attr-defined]
            raise
        for number, outcome in zip(group, got):
            outcomes[number] = outcome
    raise_refused(refused, completed_outcomes=[o for o in outcomes if o is not None])  # see .refusals
    if isinstance(selection, Shard) or isinstance(selection, Nothing) and selection.shard is not None:
        counts["shard"] = run.planner.describe()
    if run.summarizing:
        warn_exact_sum(outcomes)  # type: ignore[arg-type]
    return outcomes if run.summarizing else []  # type: ignore[return-value]


def _by_dataset(works: Sequence[Work]) -> List[List[int]]:
    groups: Dict[str, List[int]] = {}
    for number, work in enumerate(works):
        groups.setdefault(work.dataset, []).append(number)
    return list(groups.values())


def _run_dataset(works: List[Work], backends: List[Any], preentered: List[Optional[Sequence]],
                 run: _Run) -> List[Outcome]:
    chosen: List[Any] = [None] * len(works)
    if hasattr(run.planner, "choose"):
        chosen = run.planner.choose(works, backends)
        if isinstance(run.selection, Nothing):
            if not run.policy.write_out:
                return _count_plan(works, backends, chosen, run)
            chosen = [None] * len(works)  # printing the first prompts of every work: all are written
    requests = _written(works, backends, chosen, run)
    if run.policy.write_out:
        _write_out(works, backends, requests, run.policy)
    answers: List[List[Optional[Answer]]] = [[None] * len(r) for r in requests] if run.summarizing else []
    for w, given in enumerate(preentered):
        if backends[w] is None and run.summarizing:
            label_space = list(requests[w][0].label_space) if requests[w] else []
            answers[w] = [Answer(p) for p in check_preentered(given, works[w].plan.total, label_space,
                                                              works[w].dataset)]
    in_text_order = run.distinct and any(getattr(b, "shares_prefixes", False) for b in backends)
    batches = distinct_requests(works, requests, backends, distinct=run.distinct, in_text_order=in_text_order)
    if isinstance(run.selection, Shard) or hasattr(run.planner, "calls"):
        batches = _shard_batches(batches, works, run)
    run.counts["prompts"] += sum(w.plan.total for w, b in zip(works, backends) if b is not None)
    run.counts["distinct"] += sum(len(b.requests) for b in batches)
    if isinstance(run.selection, Nothing):
        _count_cached(batches, run)
        return []
    return _ask_and_summarize(works, requests, answers, batches, run)


def _count_plan(works: List[Work], backends: List[Any], chosen: List[Any], run: _Run) -> List[Outcome]:
    """A dry run of a query plan: the distinct requests are the plan's; only those are written, and only
    when a cache must be asked which of them it answers."""
    run.counts["prompts"] += sum(w.plan.total for w, b in zip(works, backends) if b is not None)
    measuring = getattr(run.selection, "measure", None) is not None
    if run.cache is None and not measuring:
        run.counts["distinct"] += sum(len(q) for passes in chosen if passes is not None for q in passes)
        return []
    requests = _written(works, backends, chosen, run)
    # measured: batched as the run would send them (one per dataset in text order to a backend sharing prefixes)
    in_text_order = measuring and run.distinct and any(getattr(b, "shares_prefixes", False) for b in backends)
    batches = distinct_requests(works, requests, backends, distinct=True, in_text_order=in_text_order)
    run.counts["distinct"] += sum(len(b.requests) for b in batches)
    _count_cached(batches, run)
    return []


def _written(works: List[Work], backends: List[Any], chosen: List[Any], run: _Run) -> List[List[Request]]:
    """The requests of each work, written with shared text pieces (``chosen``: only these positions)."""
    rendered: Dict[Any, Any] = {}  # each demonstration's and query's text, rendered once for the dataset's works
    written = []
    for work, backend, only in zip(works, backends, chosen):
        if run.planner is not None and backend is None:
            written.append([])  # preentered predictions: nothing to ask
            continue
        if only is not None and not any(only):
            written.append([])  # a shard with nothing of this work: nothing to write
            continue
        written.append(work.requests(rendered, segments=getattr(backend, "needs_segments", False), only=only))
    return written


def _shard_batches(batches: List[Batch], works: List[Work], run: _Run) -> List[Batch]:
    """A shard's batches, described as the shard's; a call-unit shard keeps its calls of the one-process run."""
    if hasattr(run.planner, "calls"):
        batches = run.planner.calls(batches, lambda backend: call_size(backend, run.requests_per_call))
    shard = run.planner.shard
    for batch in batches:
        batch.description = f"shard {shard.index}/{shard.count} {works[0].dataset}"
    return batches


def _ask_and_summarize(works: List[Work], requests: List[List[Request]], answers: List[List[Optional[Answer]]],
                       batches: List[Batch], run: _Run) -> List[Outcome]:
    outcomes: List[Outcome] = []
    refused: List[BadAnswersError] = []  # a batch's refused answers: the other batches are asked on
    try:
        for batch in batches:
            run.counts["calls"] += 1
            try:
                got = score_requests(batch.backend, batch.requests, cache=run.cache, progress=run.progress,
                                     description=batch.description, counts=run.counts,
                                     requests_per_call=run.requests_per_call)
            except BadAnswersError as exc:
                refused.append(exc)
                continue
            except BaseException as exc:
                if run.summarizing:
                    partial = getattr(exc, "partial_predictions", [])
                    _deliver(answers, batch.targets[:len(partial)], [Answer(p) for p in partial])
                raise
            if run.summarizing:
                _deliver(answers, batch.targets, got)
        raise_refused(refused)  # no number from a refused answer: the works are not summarised
        if not run.summarizing:
            return []
        with digests_remembered():  # a method's work digests the plain work's very requests: once
            for w, work in enumerate(works):
                outcomes.append(summarized(work, requests[w], answers[w], run.rules[id(work)]))  # type: ignore[arg-type]
    except BaseException as exc:
        if run.summarizing:
            exc.completed_outcomes = outcomes + _finished(works, requests, answers, len(outcomes), run)  # type: ignore[attr-defined]
            failing = len(exc.completed_outcomes)  # type: ignore[attr-defined]
            exc.partial_predictions = leading_predictions(answers[failing]) if failing < len(works) else []  # type: ignore[attr-defined]
        raise
    return outcomes


def _count_cached(batches: List[Batch], run: _Run) -> None:
    """A dry run: how many of the distinct requests the cache already answers (the model is not built), and
    the rest handed to the selection's ``measure``."""
    measure = getattr(run.selection, "measure", None)
    for batch in batches:
        found: Sequence[Any] = [None] * len(batch.requests)
        if run.cache is not None:
            found = run.cache.lookup(batch.backend.fingerprint(), batch.requests)
            run.counts["cached"] += sum(answer is not None for answer in found)
        if measure is not None:
            measure(batch.backend, [r for r, answer in zip(batch.requests, found) if answer is None])


def _write_out(works: List[Work], backends: List[Any], requests: List[List[Request]], policy: AnswerPolicy) -> None:
    """The first ``policy.write_out`` prompts of each work, as the runner wrote them for the model."""
    out = policy.out or (lambda line: print(line, file=sys.stdout))
    for work, backend, written in zip(works, backends, requests):
        if backend is None:
            continue
        for request in written[:policy.write_out]:
            prompt = request.prompt
            number = request.query_index + 1
            out(f"===== {work.part} / {work.dataset}: prompt {number} of {work.plan.total} =====")
            out("\n---\n".join(prompt) if isinstance(prompt, tuple) else prompt)


def _finished(works: List[Work], requests: List[List[Request]], answers: List[List[Optional[Answer]]],
              start: int, run: _Run) -> List[Outcome]:
    """Outcomes of the fully answered works from ``start`` on, up to the first that is not (or cannot be summarised)."""
    finished = []
    for w in range(start, len(works)):
        if any(a is None for a in answers[w]):
            break
        try:
            finished.append(summarized(works[w], requests[w], answers[w], run.rules[id(works[w])]))  # type: ignore[arg-type]
        except Exception:
            break
    return finished


def summarized(work: Any, requests: Sequence[Request], answers: Sequence[Answer], rule: Any) -> Outcome:
    """A work's outcome: :func:`~StaICC.engine.outcome.summarize`, unless the work summarises its answers itself
    (a method's work: it fits the method on its calibration answers and applies it before the metrics).
    ``rule``: how the rows meet the exact-sum rule (:func:`~StaICC.engine.outcome.row_rule`)."""
    own = getattr(work, "summarize", None)
    return own(requests, answers, rule) if own is not None else summarize(work, requests, answers, rule)


def _deliver(answers: List[List[Optional[Answer]]], targets: Sequence[List[Target]], got: Sequence[Answer]) -> None:
    for places, answer in zip(targets, got):
        for w, i in places:
            answers[w][i] = answer
