"""What a run tells whoever watches it, between its steps: a :class:`RunObserver`.

:func:`~StaICC.runs.execute.execute` is the one orchestration of a run, for ``staicc run`` and a
notebook alike.  It says what it is doing through an observer's three events, so that
``staicc run`` prints its lines where they belong (the resolved configuration once the run is
planned, the dry run's status line while it counts, the answers a backend refused when asking
fails) without taking the steps itself; a notebook's run tells nobody (:data:`SILENT`).

A dry run's :class:`Counting` is made here too, from the backend's capability row: the token
counter the runner hands each planned batch (the ``hf`` backend's tokenizer, or characters / 4
where a price is asked of a backend without one) and the model's shape for the FLOP bound.
"""
from dataclasses import dataclass
from typing import Any, Optional

from ..engine.selection import Nothing
from .build import Prepared


@dataclass(frozen=True)
class Counting:
    """A dry run's measure: ``counter`` is called with each batch the run would ask; ``shape`` is the model's
    (:class:`~StaICC.backends.token_counts.ModelShape`), read only for the FLOP bound (None: not read)."""

    counter: Any
    shape: Any = None


class RunObserver:
    """The events of one run, each doing nothing here: an observer overrides the ones it shows.

    The order is fixed: ``planned``, then ``asking``, then, only when asking raised, ``failed``.  An error
    raised before ``asking`` is the run's arguments' (nothing was asked); one raised after it is the run's.

        >>> from StaICC.runs import RunConfig, RunObserver, execute
        >>> from StaICC.engine.selection import QuerySubset
        >>> class Said(RunObserver):
        ...     def planned(self, prepared):
        ...         print("planned:", prepared.backend.name, sorted(prepared.suite))
        >>> run = execute(RunConfig(datasets=("TREC",), test_items=QuerySubset.first(8), progress=False),
        ...               observer=Said())
        planned: reference ['Normal']
    """

    def planned(self, prepared: Prepared) -> None:
        """The run is built and checked (its sub-benchmarks, backend, works, shard and cache); nothing is asked."""

    def asking(self, prepared: Prepared, counting: Optional[Counting]) -> None:
        """The first request is about to be asked (a dry run: counted by ``counting``, None where nothing counts)."""

    def failed(self, prepared: Prepared, error: Exception) -> None:
        """Asking raised ``error`` (a refused answer, a server, a full disk); the backend and the cache are closed,
        and ``error`` is raised again after this."""


#: the observer of a run nobody watches (a notebook's, the default)
SILENT = RunObserver()


def counting_of(prepared: Prepared, measure: Any = None) -> Optional[Counting]:
    """The measure of a dry run (None for any other run): ``measure`` when given, else the selection's own
    (``Nothing(measure=...)``), else the backend's exact token counter where its capability row says it counts
    tokens (a backend made from the configuration: its arguments load the tokenizer), an approximate one
    (characters / 4) where a price is asked of another backend, else none.  A tokenizer that cannot be loaded
    is refused here, before any count."""
    config, backend = prepared.config, prepared.backend
    if not isinstance(config.selection, Nothing):
        return None
    measure = measure if measure is not None else config.selection.measure
    if measure is not None:
        return Counting(measure)
    options = config.cost
    from ..backends.registry import capabilities
    if prepared.owns_backend and capabilities(config.model).token_counting:
        from ..backends.token_counts import hf_token_counter
        described = hf_token_counter(config.arguments, backend, config.requests_per_call,
                                     options is not None and options.peak is not None)
        return Counting(described.counter, described.shape)
    if options is None:
        return None
    from ..backends.token_counts import ApproximateTokenCounter
    from ..engine.scoring import call_size
    return Counting(ApproximateTokenCounter(backend, call_size(backend, config.requests_per_call)))
