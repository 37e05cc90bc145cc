"""A run plan: everything one experimentor run sends to the model, as one frozen value.

The plan holds the demonstration rows of every query, the passes and the label space;
:func:`plan_requests` turns it into the run's :class:`~StaICC.requests.Request` list with
one loop, used both by ``prompt_set()`` and by the run itself.  Queries are repeat-major:
query ``q`` is test item ``q % T`` in repeat ``q // T``.
"""
from dataclasses import dataclass
from typing import Iterator, List, Tuple

from .procedures import PassSpec
from ..requests import Request


@dataclass(frozen=True)
class RunPlan:
    benchmark: str
    dataset: str
    k: int
    repeat_times: int
    test_count: int
    demonstrations: Tuple[Tuple[int, ...], ...]  # one row per query of a pass
    passes: Tuple[PassSpec, ...]

    @property
    def queries_per_pass(self) -> int:
        return len(self.demonstrations)

    @property
    def total(self) -> int:
        return len(self.demonstrations) * len(self.passes)

    def queries(self) -> Iterator[Tuple[int, int, Tuple[int, ...]]]:
        """(test index, repeat, demonstration indexes) of each query of one pass, in order."""
        T = self.test_count
        for q, demos in enumerate(self.demonstrations):
            yield q % T, q // T, demos


def plan_requests(plan: RunPlan, writer) -> List[Request]:
    """The requests of every pass, in call order; the writer is left as it was found.

    Each call starts from fresh label-noise and pseudo-query streams, so equal plans give
    equal prompts however often they are asked.
    """
    state = writer.snapshot()
    writer.restart_streams()
    requests: List[Request] = []
    try:
        for number, spec in enumerate(plan.passes):
            spec.configure(writer)
            label_space = tuple(writer.get_label_space())
            offset = number * plan.queries_per_pass
            write = writer.write_prompt
            for q, (test_index, _repeat, demos) in enumerate(plan.queries()):
                prompt = write(list(demos), test_index)
                if isinstance(prompt, list):
                    prompt = tuple(prompt)
                requests.append(Request(prompt, label_space, plan.benchmark, plan.dataset, offset + q, number))
    finally:
        writer.restore(state)
        writer.restart_streams()  # also frees the domain generator's word cache
    return requests
