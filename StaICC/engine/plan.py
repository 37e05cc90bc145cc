"""A run plan: everything one experimentor run sends to the model, as frozen values.

:class:`RunPlan` holds the demonstration rows of every query, the passes and where the
queries come from; :func:`plan_requests` turns it into the run's
:class:`~StaICC.requests.Request` list with one loop, used both by ``prompt_set()`` and by
the run itself.  :class:`Work` adds what turns the answers back into results (procedure,
metrics, ground truth) and the writer state the prompts are written with, so that a run
can write its prompts when it asks them and drop them afterwards.  Queries are
repeat-major: query ``q`` is test item ``q % T`` in repeat ``q // T``.
"""
from dataclasses import dataclass, field, replace
from itertools import cycle, islice
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .procedures import PassSpec
from ..requests import Request, requests_of


@dataclass(frozen=True)
class RunPlan:
    benchmark: str
    dataset: str
    test_count: int
    demonstrations: Tuple[Tuple[int, ...], ...]  # one row per query of a pass
    passes: Tuple[PassSpec, ...]

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
        """The test index of each query of one pass, in order: query q asks test item q % T."""
        return islice(cycle(range(self.test_count)), len(self.demonstrations))

    def queries(self) -> Iterator[Tuple[int, int, Tuple[int, ...]]]:
        """(test index, repeat, demonstration indexes) of each query of one pass, in order."""
        T = self.test_count
        for q, (test, demos) in enumerate(zip(self.tests(), self.demonstrations)):
            yield test, q // T, demos


def plan_requests(plan: RunPlan, writer, rendered: Optional[Dict[Any, dict]] = None, *,
                  segments: bool = False) -> List[Request]:
    """The requests of every pass, in call order; the writer is left as it was found.

    Each call starts from fresh label-noise and pseudo-query streams, so equal plans give
    equal prompts however often they are asked.  ``rendered``: a dict the caller keeps
    while it writes several plans over the same data (the runner: one dataset's works), so
    each demonstration's and test query's text is rendered once per template for all of them.
    ``segments``: also give each request its prompt's segments (for a backend that reads
    demonstration boundaries); the prompts, and so the cache keys, are the same either way.
    """
    state = writer.snapshot()
    writer.restart_streams()
    requests: List[Request] = []
    rendered = rendered if rendered is not None else {}
    queries = list(zip(plan.demonstrations, plan.tests()))
    try:
        for number, spec in enumerate(plan.passes):
            spec.configure(writer)
            parts: Optional[list] = [] if segments else None
            key, prompts = _equal_pass(plan, writer, rendered, parts)
            if prompts is None:
                prompts = writer.write_prompts(queries, _pieces(rendered, writer), parts)
                if key is not None:
                    rendered[key] = (plan.demonstrations, prompts, parts)
            if writer.template.noisy_channel:  # one prompt per label: a tuple in the request
                prompts = [tuple(prompt) for prompt in prompts]
            # the template's own (long-lived) tuple: the pass's requests share one label space
            requests += requests_of(prompts, tuple(writer.template.label_space), plan.benchmark, plan.dataset,
                                    number * plan.queries_per_pass, number, parts)
    finally:
        writer.restore(state)
        writer.restart_streams()  # also frees the domain generator's word cache
    return requests


def _equal_pass(plan: RunPlan, writer, rendered: Dict[Any, Any],
                segments: Optional[list]) -> Tuple[Optional[Tuple[Any, ...]], Optional[list]]:
    """(key, prompts): the prompts of a pass equal to this one written before over the same data, if any.

    Without label noise and pseudo queries a pass's prompts depend only on the template, the
    rows and the queries, so such a pass (Post_bias's and GLER's first pass are Normal's)
    takes the earlier pass's prompts, the same string objects (and their segments); ``key``
    is where its own prompts are kept for the next one (None: prompts that depend on a stream).
    """
    template = writer.template
    if template.label_wrong_rate or writer.pseudo_query_generater is not None:
        return None, None
    triplet = writer.triplet_dataset
    key = (template, "prompts", _rows_identity(triplet.demonstration.table), _rows_identity(triplet.test.table),
           plan.test_count, segments is not None)
    earlier = rendered.get(key)
    if earlier is None or earlier[0] != plan.demonstrations:
        return key, None
    if segments is not None:
        segments += earlier[2]
    return key, earlier[1]


def _pieces(rendered: Dict[Any, dict], writer) -> Dict[str, dict]:
    """The writer's text pieces within ``rendered``: demonstration texts depend on the template (noise
    rate aside) and the demonstration rows, query texts on the template and the test rows."""
    triplet = writer.triplet_dataset
    template = writer.template
    template = replace(template, label_wrong_rate=0) if template.label_wrong_rate else template
    return {"demonstrations": rendered.setdefault((template, "demonstrations",
                                                   _rows_identity(triplet.demonstration.table)), {}),
            "queries": rendered.setdefault((template, "queries", _rows_identity(triplet.test.table)), {})}


def _rows_identity(table) -> Tuple[Any, ...]:
    """Equal for tables holding the same rows during a run: a slice of a bundled draw by draw and range."""
    source, start, stop = getattr(table, "table", None), getattr(table, "start", None), getattr(table, "stop", None)
    if source is not None and isinstance(start, int) and isinstance(stop, int):
        return id(source), start, stop
    return (id(table),)


def check_passes(plan: RunPlan, writer) -> None:
    """Configure the writer for every pass and put it back: a pass it refuses fails before any inference."""
    state = writer.snapshot()
    try:
        for spec in plan.passes:
            spec.configure(writer)
    finally:
        writer.restore(state)


@dataclass(frozen=True, eq=False)
class Work:
    """One experimentor's share of a run: its plan, how its prompts are written, how answers become results.

    ``departures`` lists the experimentor's, its prompt writer's and its dataset's
    departures from the standard (the backend adds its own when the run summarises).
    Iterating a work gives ``(plan, requests)``, as :func:`~StaICC.subbenchmarks.suite.plan_suite`'s
    entries always did.
    """

    part: str
    plan: RunPlan
    writer: Any = field(repr=False)
    writer_state: Any = field(repr=False)
    procedure: Any
    metrics: Dict[str, Callable]
    truth: Tuple[int, ...]
    departures: Tuple[str, ...] = ()
    previous: Optional[List[Any]] = None

    @property
    def dataset(self) -> str:
        return self.plan.dataset

    def requests(self, rendered: Optional[Dict[Any, dict]] = None, *, segments: bool = False) -> List[Request]:
        """The requests of every pass, written now with the writer as it was when the work was planned.

        ``rendered``: shared text pieces of the works of one dataset; ``segments``: give each
        request its prompt's segments (both: see :func:`plan_requests`).
        """
        writer = self.writer
        current = writer.snapshot()
        writer.restore(self.writer_state)
        try:
            return plan_requests(self.plan, writer, rendered, segments=segments)
        finally:
            writer.restore(current)

    def __iter__(self) -> Iterator[Any]:
        yield self.plan
        yield self.requests()
