"""A run plan: everything one experimentor run sends to the model, as frozen values.

:class:`RunPlan` holds the demonstration rows of every query, the passes and which test
items the queries ask; :func:`plan_requests` turns it and a frozen
:class:`~StaICC.prompt.source.PromptSource` into the run's
:class:`~StaICC.requests.Request` list with one loop, used both by ``prompt_set()`` and by
the run itself.  :class:`Work` adds what turns the answers back into results (procedure,
metrics, ground truth), so that a run can write its prompts when it asks them and drop
them afterwards.  Queries are repeat-major: query ``q`` asks test item ``items[q % T]`` in
repeat ``q // T``, where ``T`` is the number of test items evaluated.
"""
from dataclasses import dataclass, field, replace
from itertools import cycle, islice
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..prompt.source import PromptSource
from ..requests import Request, requests_of
from ..rng import fresh_stream
from .procedures import PassSpec


@dataclass(frozen=True)
class RunPlan:
    """``test_items``: the test indexes evaluated, in order (None: the first ``test_count``).

    ``full_run``: for a plan of a subset of the test items, (the full run's test count, every
    query's rows in the full run): the subset's prompts are then written over the full run's
    label-noise and pseudo-query streams, so that each is its twin in the full run (and a full
    run after a lite run asks only the rest).  No part of equality.
    """

    benchmark: str
    dataset: str
    test_count: int
    demonstrations: Tuple[Tuple[int, ...], ...]  # one row per query of a pass
    passes: Tuple[PassSpec, ...]
    test_items: Optional[Tuple[int, ...]] = None
    full_run: Optional[Tuple[int, Tuple[Tuple[int, ...], ...]]] = field(default=None, repr=False, compare=False)

    @property
    def queries_per_pass(self) -> int:
        return len(self.demonstrations)

    @property
    def total(self) -> int:
        return len(self.demonstrations) * len(self.passes)

    def pass_slice(self, number: int) -> slice:
        """Where pass ``number`` lies in the run's requests and answers (the one place passes are sliced)."""
        per_pass = len(self.demonstrations)
        return slice(number * per_pass, (number + 1) * per_pass)

    def pass_description(self, number: int) -> str:
        """What a progress bar says for pass ``number``: "GLER sst2 pass 2/5 (label noise 0.25)"."""
        text = f"{self.benchmark} {self.dataset}"
        if len(self.passes) > 1:
            text += f" pass {number + 1}/{len(self.passes)}"
        detail = self.passes[number].describe()
        return text + (f" ({detail})" if detail else "")

    def tests(self) -> Iterator[int]:
        """The test index of each query of one pass, in order: query q asks test item items[q % T]."""
        items = self.test_items if self.test_items is not None else range(self.test_count)
        return islice(cycle(items), len(self.demonstrations))

    def test_of(self, q: int) -> int:
        """The test index query ``q`` of a pass asks."""
        position = q % self.test_count
        return self.test_items[position] if self.test_items is not None else position

    def queries(self) -> Iterator[Tuple[int, int, Tuple[int, ...]]]:
        """(test index, repeat, demonstration indexes) of each query of one pass, in order."""
        T = self.test_count
        for q, (test, demos) in enumerate(zip(self.tests(), self.demonstrations)):
            yield test, q // T, demos


def pass_sources(plan: RunPlan, writer: Any) -> PromptSource:
    """The writer's state as the frozen source of ``plan``'s prompts: one template per pass.

    Reads the writer's public state only (template, triplet, pseudo-query generator); a
    pass the template refuses (a noise rate outside [0, 1], a bad template row) fails here,
    when the run is planned.
    """
    triplet = writer.triplet_dataset
    templates = tuple(spec.template_for(writer.template, triplet) for spec in plan.passes)
    return PromptSource(triplet, templates, writer.pseudo_query_generater)


def plan_requests(plan: RunPlan, source: PromptSource, rendered: Optional[Dict[Any, Any]] = None, *,
                  segments: bool = False, only: Optional[Sequence[Sequence[int]]] = None) -> List[Request]:
    """The requests of every pass, in call order, written from ``source``.

    Each call starts from fresh label-noise and pseudo-query streams, so equal plans give
    equal prompts however often they are asked.  ``rendered``: a dict the caller keeps
    while it writes several plans over the same data (the runner: one dataset's works), so
    each demonstration's and test query's text is rendered once per template for all of them.
    ``segments``: also give each request its prompt's segments (for a backend that reads
    demonstration boundaries); the prompts, and so the cache keys, are the same either way.
    ``only[n]``: write only these query positions of pass ``n`` (ascending; a shard's share);
    the streams still advance over every query, so each request equals its twin in the full list.
    """
    if plan.full_run is not None and _streamed(source):
        return _subset_requests(plan, source, rendered, segments, only)
    noise, pseudo = fresh_stream(), source.fresh_queries()
    rendered = rendered if rendered is not None else {}
    queries = list(zip(plan.demonstrations, plan.tests()))
    requests: List[Request] = []
    try:
        for number in range(len(plan.passes)):
            chosen = None if only is None else only[number]
            if chosen is not None and not chosen:
                source.flips(number, plan.demonstrations, noise)  # the stream still advances over the pass
                if pseudo is not None:
                    for _ in islice(pseudo, len(queries)):
                        pass
                continue
            requests += _pass_requests(plan, source, number, queries, noise, pseudo, rendered, segments, chosen)
    finally:
        if pseudo is not None and hasattr(pseudo, "restart"):
            pseudo.restart()  # also frees the domain generator's word cache
    return requests


def _streamed(source: PromptSource) -> bool:
    """Whether a query's prompt depends on the queries before it (label noise, pseudo queries drawn in turn)."""
    return source.pseudo_queries is not None or any(t.label_wrong_rate for t in source.templates)


def _subset_requests(plan: RunPlan, source: PromptSource, rendered: Optional[Dict[Any, Any]], segments: bool,
                     only: Optional[Sequence[Sequence[int]]]) -> List[Request]:
    """A subset's requests written as the full run writes them (its streams advance over every query of the
    full run), renumbered as the subset's queries; ``only``: the subset's positions, as for any plan."""
    count, rows = plan.full_run  # type: ignore[misc]
    full = replace(plan, test_count=count, demonstrations=rows, test_items=None, full_run=None)
    items = plan.test_items if plan.test_items is not None else range(plan.test_count)
    # query q of a subset's pass asks item items[q % n] in repeat q // n: the full run's query repeat·T + item
    n = plan.test_count
    twins = [(q // n) * count + items[q % n] for q in range(plan.queries_per_pass)]
    wanted = [range(plan.queries_per_pass) if only is None else only[p] for p in range(len(plan.passes))]
    written = plan_requests(full, source, rendered, segments=segments,
                            only=[sorted(twins[q] for q in positions) for positions in wanted])
    requests: List[Request] = []
    start = 0
    for number, positions in enumerate(wanted):
        chunk = written[start:start + len(positions)]
        start += len(positions)
        if not chunk:
            continue
        first = number * full.queries_per_pass
        by_twin = {r.query_index - first: r for r in chunk}
        mine = [by_twin[twins[q]] for q in positions]
        requests += requests_of([r.prompt for r in mine], chunk[0].label_space, plan.benchmark, plan.dataset,
                                number * plan.queries_per_pass, number,
                                [r.segments for r in mine] if segments else None, list(positions))
    return requests


def _pass_requests(plan: RunPlan, source: PromptSource, number: int, queries: list, noise: Any, pseudo: Any,
                   rendered: Dict[Any, Any], segments: bool, chosen: Optional[Sequence[int]]) -> List[Request]:
    template = source.templates[number]
    parts: Optional[list] = [] if segments else None
    key, prompts = (None, None) if chosen is not None else _equal_pass(plan, source, number, rendered, parts)
    if prompts is None:
        prompts = source.write_pass(number, queries, noise, pseudo, _pieces(rendered, source, number), parts, chosen)
        if key is not None:
            rendered[key] = (plan.demonstrations, prompts, parts)
    if template.noisy_channel:  # one prompt per label: a tuple in the request
        prompts = [tuple(prompt) for prompt in prompts]
    # the template's own (long-lived) tuple: the pass's requests share one label space
    return requests_of(prompts, template.label_space, plan.benchmark, plan.dataset, number * plan.queries_per_pass,
                       number, parts, chosen)


def _equal_pass(plan: RunPlan, source: PromptSource, number: int, rendered: Dict[Any, Any],
                segments: Optional[list]) -> Tuple[Optional[Tuple[Any, ...]], Optional[list]]:
    """(key, prompts): the prompts of a pass equal to this one written before over the same data, if any.

    Without label noise and pseudo queries a pass's prompts depend only on the template, the
    rows and the queries, so such a pass (Post_bias's and GLER's first pass are Normal's)
    takes the earlier pass's prompts, the same string objects (and their segments); ``key``
    is where its own prompts are kept for the next one (None: prompts that depend on a stream).
    """
    template = source.templates[number]
    if template.label_wrong_rate or source.pseudo_queries is not None:
        return None, None
    triplet = source.triplet
    key = (template, "prompts", _rows_identity(triplet.demonstration.table), _rows_identity(triplet.test.table),
           plan.test_count, plan.test_items, segments is not None)
    earlier = rendered.get(key)
    if earlier is None or earlier[0] != plan.demonstrations:
        return key, None
    if segments is not None:
        segments += earlier[2]
    return key, earlier[1]


def _pieces(rendered: Dict[Any, Any], source: PromptSource, number: int) -> Dict[str, dict]:
    """The text pieces of pass ``number`` within ``rendered``: demonstration texts depend on the template
    (noise rate aside) and the demonstration rows, query texts on the template and the test rows."""
    triplet = source.triplet
    template = source.templates[number]
    template = replace(template, label_wrong_rate=0) if template.label_wrong_rate else template
    return {"demonstrations": rendered.setdefault((template, "demonstrations",
                                                   _rows_identity(triplet.demonstration.table)), {}),
            "queries": rendered.setdefault((template, "queries", _rows_identity(triplet.test.table)), {})}


def _rows_identity(table: Any) -> Tuple[Any, ...]:
    """Equal for tables holding the same rows during a run: a slice of a bundled draw by draw and range."""
    source, start, stop = getattr(table, "table", None), getattr(table, "start", None), getattr(table, "stop", None)
    if source is not None and isinstance(start, int) and isinstance(stop, int):
        return id(source), start, stop
    return (id(table),)


@dataclass(frozen=True, eq=False)
class Work:
    """One experimentor's share of a run: its plan, what its prompts are written from, how answers become results.

    Every field is a value fixed when the work was planned: the prompts are written from
    ``prompts`` (a frozen copy of the writer's state), so changing the experimentor or its
    writer afterwards changes no planned work.  ``departures`` lists the experimentor's,
    its prompt writer's and its dataset's departures from the standard (the backend adds
    its own when the run summarises).  Iterating a work gives ``(plan, requests)``, as
    :func:`~StaICC.subbenchmarks.suite.plan_suite`'s entries always did.
    """

    part: str
    plan: RunPlan
    prompts: PromptSource = field(repr=False)
    procedure: Any
    metrics: Dict[str, Callable]
    truth: Tuple[int, ...]
    departures: Tuple[str, ...] = ()
    previous: Optional[List[Any]] = None

    @property
    def dataset(self) -> str:
        return self.plan.dataset

    def requests(self, rendered: Optional[Dict[Any, Any]] = None, *, segments: bool = False,
                 only: Optional[Sequence[Sequence[int]]] = None) -> List[Request]:
        """The requests of every pass, written now (``rendered``, ``segments``, ``only``: see :func:`plan_requests`).

        Within one ``rendered`` (one dataset's works, written together), works over the same plan and
        prompt source (a plain work and the methods' works that calibrate it) get the same Request
        objects: written once, and a digest of them is computed once (:func:`~.outcome.prompt_set_digest`).
        """
        if rendered is None or only is not None:
            return plan_requests(self.plan, self.prompts, rendered, segments=segments, only=only)
        key = ("requests", id(self.plan), id(self.prompts), segments)
        kept = rendered.get(key)
        if kept is None or kept[0] is not self.plan or kept[1] is not self.prompts:
            kept = rendered[key] = (self.plan, self.prompts,  # kept alive with the entry: their ids stay theirs
                                    plan_requests(self.plan, self.prompts, rendered, segments=segments))
        return list(kept[2])

    def __iter__(self) -> Iterator[Any]:
        yield self.plan
        yield self.requests()
