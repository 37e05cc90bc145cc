"""The one runner: planned works -> distinct requests -> ``score_requests`` -> ``summarize``.

Every run goes through :func:`run_works`: ``Normal()(f)``, ``bench[i].auto_run(...)``,
``run_suite`` and ``staicc run`` (a sub-benchmark call is the suite of one).  Works are
taken dataset by dataset, in order: the dataset's prompts are written, the requests not
answered yet are asked (:func:`distinct_requests`, then one ``score_requests`` call per
pass with new prompts, or one call per dataset in text order for a backend that shares
prefixes), each work's answers are summarised (:func:`~StaICC.engine.outcome.summarize`)
and the prompts are dropped.  Nothing climbs back: scoring returns answers, the runner
returns outcomes, the sub-benchmarks assemble results from those.

On any error (the model's, a bad answer, Ctrl-C) the exception carries
``partial_predictions`` (the leading predictions of the work that failed, earlier passes
included) and ``completed_outcomes`` (the outcomes of the works finished before it).
"""
from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from ..requests import Answer, Request
from .outcome import Outcome, row_rule, summarize, warn_exact_sum
from .plan import Work
from .scoring import leading_predictions, check_preentered, score_requests

#: (work number, request number) of a request within a dataset's works
Target = Tuple[int, int]


@dataclass
class Batch:
    """Requests for one ``score_requests`` call, and where each answer goes (one request: several targets)."""

    backend: Any
    description: str
    requests: List[Request]
    targets: List[List[Target]]


def distinct_requests(works: Sequence[Work], requests: Sequence[Sequence[Request]], backends: Sequence[Any], *,
                      distinct: bool, in_text_order: bool) -> List[Batch]:
    """The requests to ask for these works (one dataset's), as batches, each request once.

    ``distinct``: a prompt asked by several queries, passes or works (with the same backend)
    is asked once (the suite; a run with a cache); otherwise every request is asked, as
    the standard does.  Without ``in_text_order`` there is one batch per pass that has new
    prompts, so progress reads "GLER sst2 pass 2/5"; with it one batch per backend, sorted
    by prompt text, so that prompts sharing demonstrations meet in one call.  Works whose
    backend is None (preentered predictions) ask nothing.  This is the one place that
    decides what is asked: filtering its batches (a shard of the requests) is enough.
    """
    # backend id -> label space -> prompt -> the targets of the prompt's first request (the batch's list)
    first: Dict[int, Dict[Tuple[str, ...], Dict[Hashable, List[Target]]]] = {}
    batches: List[Batch] = []
    for w, (work, asked, backend) in enumerate(zip(works, requests, backends)):
        if backend is None:
            continue
        by_space = first.setdefault(id(backend), {})
        for number in range(len(work.plan.passes)):
            batch = _batch_for(batches, backend, work.plan.pass_description(number), in_text_order)
            part = work.plan.pass_slice(number)
            if distinct:
                _add_distinct(batch, asked, w, part, by_space)
            else:
                batch.requests.extend(asked[part])
                batch.targets.extend([(w, i)] for i in range(part.start, part.stop))
    batches = [b for b in batches if b.requests]
    if in_text_order:
        for batch in batches:
            parts = list(dict.fromkeys(works[w].part for targets in batch.targets for w, _ in targets))
            batch.description = f"{', '.join(parts)} {batch.requests[0].dataset}"
            order = sorted(range(len(batch.requests)), key=lambda j: _text_order(batch.requests[j]))
            batch.requests = [batch.requests[j] for j in order]
            batch.targets = [batch.targets[j] for j in order]
    return batches


def _add_distinct(batch: Batch, asked: Sequence[Request], w: int, part: slice,
                  by_space: Dict[Tuple[str, ...], Dict[Hashable, List[Target]]]) -> None:
    """Add the requests of ``asked[part]`` (work ``w``) to ``batch``, a prompt already seen as a target of its first."""
    requests, targets = batch.requests, batch.targets
    space: Any = None
    seen: Dict[Hashable, List[Target]] = {}
    for i, request in enumerate(asked[part], part.start):
        if request.label_space is not space:  # a work's requests share one label space object
            space = request.label_space
            seen = by_space.setdefault(space, {})
        places = seen.get(request.prompt)
        if places is not None:
            places.append((w, i))
            continue
        seen[request.prompt] = places = [(w, i)]
        requests.append(request)
        targets.append(places)


def _batch_for(batches: List[Batch], backend: Any, description: str, in_text_order: bool) -> Batch:
    """The batch a pass's new requests join: the backend's one batch in text order, else a new one."""
    if in_text_order:
        for batch in batches:
            if batch.backend is backend:
                return batch
    elif batches and not batches[-1].requests and batches[-1].backend is backend:
        batches[-1].description = description  # the previous pass asked nothing new: reuse its empty batch
        return batches[-1]
    batches.append(Batch(backend, description, [], []))
    return batches[-1]


def _text_order(request: Request) -> Tuple[Tuple[str, ...], Any]:
    """Sort key that puts prompts with a common beginning next to each other."""
    prompt = request.prompt
    return request.label_space, (prompt,) if isinstance(prompt, str) else tuple(prompt)


def run_works(works: Sequence[Work], backends: Sequence[Any], preentered: Sequence[Optional[Sequence]] = (), *,
              cache: Any = None, progress: Optional[bool] = None, distinct: bool = False,
              counts: Optional[Dict[str, int]] = None, requests_per_call: Optional[int] = None,
              preentered_kind: Optional[str] = None) -> List[Outcome]:
    """Every work's outcome; works are run dataset by dataset (in order of first appearance).

    ``backends[i]`` answers ``works[i]`` (None: ``preentered[i]`` holds its predictions, which are
    ``preentered_kind``: see :mod:`StaICC.metrics.exact_sum`; a backend says what its rows are itself).
    ``counts`` accumulates ``asked``, ``cached``, ``prompts`` and ``distinct`` (requests planned,
    requests that needed an answer).  A backend that shares prefixes is asked dataset by
    dataset in text order.
    """
    preentered = list(preentered) or [None] * len(works)
    rules = [row_rule(backend, preentered_kind) for backend in backends]  # how each work's rows meet the exact-sum rule
    counts = counts if counts is not None else {}
    for name in ("asked", "cached", "prompts", "distinct", "calls"):
        counts.setdefault(name, 0)
    outcomes: List[Optional[Outcome]] = [None] * len(works)
    for group in _by_dataset(works):
        try:
            for number, outcome in zip(group, _run_dataset([works[w] for w in group], [backends[w] for w in group],
                                                           [preentered[w] for w in group], cache, progress,
                                                           distinct, counts, requests_per_call,
                                                           [rules[w] for w in group])):
                outcomes[number] = outcome
        except BaseException as exc:
            exc.completed_outcomes = [o for o in outcomes if o is not None] + \
                getattr(exc, "completed_outcomes", [])  # type: ignore[attr-defined]
            raise
    warn_exact_sum(outcomes)  # type: ignore[arg-type]
    return outcomes  # type: ignore[return-value]


def _by_dataset(works: Sequence[Work]) -> List[List[int]]:
    groups: Dict[str, List[int]] = {}
    for number, work in enumerate(works):
        groups.setdefault(work.dataset, []).append(number)
    return list(groups.values())


def _run_dataset(works: List[Work], backends: List[Any], preentered: List[Optional[Sequence]], cache: Any,
                 progress: Optional[bool], distinct: bool, counts: Dict[str, int],
                 requests_per_call: Optional[int], rules: List[Any]) -> List[Outcome]:
    rendered: Dict[Any, dict] = {}  # each demonstration's and query's text, rendered once for the dataset's works
    requests = [work.requests(rendered, segments=getattr(backend, "needs_segments", False))
                for work, backend in zip(works, backends)]
    del rendered
    answers: List[List[Optional[Answer]]] = [[None] * len(r) for r in requests]
    for w, given in enumerate(preentered):
        if backends[w] is None:
            label_space = list(requests[w][0].label_space) if requests[w] else []
            answers[w] = [Answer(p) for p in check_preentered(given, works[w].plan.total, label_space,
                                                              works[w].dataset)]
    in_text_order = distinct and any(getattr(b, "shares_prefixes", False) for b in backends)
    batches = distinct_requests(works, requests, backends, distinct=distinct, in_text_order=in_text_order)
    counts["prompts"] += sum(len(r) for w, r in enumerate(requests) if backends[w] is not None)
    counts["distinct"] += sum(len(b.requests) for b in batches)
    outcomes: List[Outcome] = []
    try:
        for batch in batches:
            counts["calls"] += 1
            try:
                got = score_requests(batch.backend, batch.requests, cache=cache, progress=progress,
                                     description=batch.description, counts=counts,
                                     requests_per_call=requests_per_call)
            except BaseException as exc:
                partial = getattr(exc, "partial_predictions", [])
                _deliver(answers, batch.targets[:len(partial)], [Answer(p) for p in partial])
                raise
            _deliver(answers, batch.targets, got)
        for w, work in enumerate(works):
            outcomes.append(summarize(work, requests[w], answers[w], rules[w]))  # type: ignore[arg-type]
    except BaseException as exc:
        exc.completed_outcomes = outcomes + _finished(works, requests, answers, len(outcomes), rules)  # type: ignore[attr-defined]
        failing = len(exc.completed_outcomes)  # type: ignore[attr-defined]
        exc.partial_predictions = leading_predictions(answers[failing]) if failing < len(works) else []  # type: ignore[attr-defined]
        raise
    return outcomes


def _finished(works: List[Work], requests: List[List[Request]], answers: List[List[Optional[Answer]]],
              start: int, rules: List[Any]) -> List[Outcome]:
    """Outcomes of the fully answered works from ``start`` on, up to the first that is not (or cannot be summarised)."""
    finished = []
    for w in range(start, len(works)):
        if any(a is None for a in answers[w]):
            break
        try:
            finished.append(summarize(works[w], requests[w], answers[w], rules[w]))  # type: ignore[arg-type]
        except Exception:
            break
    return finished


def _deliver(answers: List[List[Optional[Answer]]], targets: Sequence[List[Target]], got: Sequence[Answer]) -> None:
    for places, answer in zip(targets, got):
        for w, i in places:
            answers[w][i] = answer
