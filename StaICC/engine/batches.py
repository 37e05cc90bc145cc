"""Batches: which requests one dataset's works send to the model, each distinct prompt once.

:func:`distinct_requests` is the one place that decides what is asked: one batch per pass
with new prompts, or, for a backend that shares prefixes, one batch per backend in text
order; a batch's ``targets`` say which work and request each answer goes to (one prompt
asked by several queries, passes or works: several targets).
"""
from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from ..requests import Request
from .plan import Work
from .protocols import ScoringBackend

#: (work number, request number) of a request within a dataset's works
Target = Tuple[int, int]


@dataclass
class Batch:
    """Requests for one ``score_requests`` call, and where each answer goes (one request: several targets)."""

    backend: ScoringBackend
    description: str
    requests: List[Request]
    targets: List[List[Target]]
    group: Optional[str] = None  # the works' ``batch_group`` (in text order, one batch per backend and group)


def distinct_requests(works: Sequence[Work], requests: Sequence[Sequence[Request]],
                      backends: Sequence[Optional[ScoringBackend]], *,
                      distinct: bool, in_text_order: bool) -> List[Batch]:
    """The requests to ask for these works (one dataset's), as batches, each request once.

    ``distinct``: a prompt asked by several queries, passes or works (with the same backend)
    is asked once (the suite; a run with a cache); otherwise every request is asked, as
    the standard does.  Without ``in_text_order`` there is one batch per pass that has new
    prompts, so progress reads "GLER sst2 pass 2/5"; with it one batch per backend, sorted
    by prompt text, so that prompts sharing demonstrations meet in one call; a work with a
    ``batch_group`` (a method's) asks its new prompts in a batch of that group, so that the
    batches of the plain works, and so each of their answers, are those of a run without it.
    Works whose backend is None (preentered predictions) ask nothing.  This is the one place
    that decides what is asked (a shard writes only its own requests; see :mod:`.sharding`).
    """
    # backend id -> (label space, kind) -> prompt -> the targets of the prompt's first request (the batch's list)
    first: Dict[int, Dict[Tuple[Tuple[str, ...], str], Dict[Hashable, List[Target]]]] = {}
    batches: List[Batch] = []
    for w, (work, asked, backend) in enumerate(zip(works, requests, backends)):
        if backend is None:
            continue
        by_space = first.setdefault(id(backend), {})
        group = getattr(work, "batch_group", None)
        for number in range(len(work.plan.passes)):
            batch = _batch_for(batches, backend, work.plan.pass_description(number), in_text_order, group)
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
                  by_space: Dict[Tuple[Tuple[str, ...], str], Dict[Hashable, List[Target]]]) -> None:
    """Add the requests of ``asked[part]`` (work ``w``) to ``batch``, a prompt already seen (for the same label
    space and kind) as a target of its first."""
    requests, targets = batch.requests, batch.targets
    space: Any = None
    kind: Any = None
    seen: Dict[Hashable, List[Target]] = {}
    for i, request in enumerate(asked[part], part.start):
        if request.label_space is not space or request.kind is not kind:  # a pass's requests share both objects
            space, kind = request.label_space, request.kind
            seen = by_space.setdefault((space, kind), {})
        places = seen.get(request.prompt)
        if places is not None:
            places.append((w, i))
            continue
        seen[request.prompt] = places = [(w, i)]
        requests.append(request)
        targets.append(places)


def _batch_for(batches: List[Batch], backend: ScoringBackend, description: str, in_text_order: bool,
               group: Optional[str] = None) -> Batch:
    """The batch a pass's new requests join: the backend's (and group's) one batch in text order, else a new one."""
    if in_text_order:
        for batch in batches:
            if batch.backend is backend and batch.group == group:
                return batch
    elif batches and not batches[-1].requests and batches[-1].backend is backend and batches[-1].group == group:
        batches[-1].description = description  # the previous pass asked nothing new: reuse its empty batch
        return batches[-1]
    batches.append(Batch(backend, description, [], [], group))
    return batches[-1]


def _text_order(request: Request) -> Tuple[Tuple[str, ...], Any, str]:
    """Sort key that puts prompts with a common beginning next to each other (the kinds of one prompt together)."""
    prompt = request.prompt
    return request.label_space, (prompt,) if isinstance(prompt, str) else tuple(prompt), request.kind
