"""One run, every kind: plan, ask, record.  ``staicc run`` and a notebook call the same :func:`execute`.

1. :func:`~StaICC.runs.build.prepare`: the sub-benchmarks, the backend, the works (a methods
   run's too), the shard and the cache; every check before any inference.
2. :func:`answer`: the one runner asks what the run's selection says (everything, a shard, or
   nothing: a dry run that counts), through the suite's runner or the methods' runner, telling
   the run's :class:`~StaICC.runs.observer.RunObserver` what it does.
3. :func:`record`: the answers' :class:`~StaICC.results.run.Run`: the results, a lite run's
   estimates, a methods run's tests against vanilla, and the provenance.

:func:`execute` is the three in a row, the one orchestration of a run: ``staicc run`` calls it
with an observer that prints between the steps; :func:`~StaICC.runs.write.write` writes the run
directory ``staicc run --output-dir`` writes.
"""
import time
from typing import Any, Dict, List, Optional, Tuple

from ..engine.selection import Everything, Nothing, Shard
from .build import Prepared, prepare
from .config import RunConfig
from .observer import SILENT, Counting, RunObserver, counting_of
from ..results.run import Run

#: when the answers were first asked: (UTC time as provenance records it, ``time.perf_counter()``)
Clock = Tuple[str, float]


def execute(config: RunConfig, *, backend: Any = None, measure: Any = None,
            command: Optional[List[str]] = None, observer: RunObserver = SILENT, recorded: bool = True,
            suite: Optional[Dict[str, Any]] = None, planned: Optional[Dict[str, List[Any]]] = None,
            noisy_suite: Optional[Dict[str, Any]] = None) -> Run:
    """Run ``config`` and return its record (``backend``: a backend or function instead of ``config.model``'s;
    ``measure``: a dry run's token counter instead of the backend's own; ``command``: the command line
    provenance records, default ``sys.argv``; ``observer``: told what the run does between its steps, as
    ``staicc run`` prints it; by default nobody).  ``recorded=False``: the answers only (``run.result``, what
    ``StaICC.run_suite`` and ``StaICC.run_methods`` return), without the provenance, the parts and a methods
    run's tests against vanilla, which cost more than a small run's answers; such a run is recorded afterwards
    with ``Run.from_result(run.result, model)``.  ``suite``, ``planned``, ``noisy_suite``: sub-benchmarks built
    beforehand (see :func:`~StaICC.runs.build.prepare`).  Example, a small run of the reference model::

        >>> from StaICC.runs import RunConfig, execute
        >>> from StaICC.engine.selection import QuerySubset
        >>> run = execute(RunConfig(datasets=("TREC",), test_items=QuerySubset.first(8), progress=False))
        >>> sorted(run.result), run.provenance["model"]["backend"]
        (['Normal'], 'reference')
    """
    from ..subbenchmarks.suite import fewer_collections
    with fewer_collections():
        prepared = prepare(config, backend, suite=suite, planned=planned, noisy=noisy_suite)
        result, clock = answer(prepared, measure, observer)
        if not recorded:
            return Run(result=result, config=prepared.config)
        return record(prepared, result, clock, command)


#: what asking a run can fail with (a refused answer, a server, a disk); the observer is told, then it is raised
ANSWER_FAILURES = (ValueError, TypeError, RuntimeError, OSError)


def answer(prepared: Prepared, measure: Any = None, observer: RunObserver = SILENT) -> Tuple[Any, Clock]:
    """Ask what the run's selection says, in one runner call, then close the backend and the cache (``observer``:
    told that the run is planned, that asking begins, and why it failed)."""
    failure: Optional[Exception] = None
    try:
        observer.planned(prepared)
        counting = counting_of(prepared, measure)
        observer.asking(prepared, counting)
        started = _now()
        try:
            result = _ask(prepared, counting)
            _count_full_run(prepared, result)
        except ANSWER_FAILURES as exc:
            failure = exc
            raise
    finally:
        prepared.close()
        if failure is not None:  # told once the backend and the cache are closed: the answers given are kept
            observer.failed(prepared, failure)
    return result, started


def _ask(prepared: Prepared, counting: Optional[Counting]) -> Any:
    """The runner's one call: the methods' runner for a methods run, the suite's for every other (a lite run asked
    look by look until its target half-width)."""
    config = prepared.config
    if config.methods:
        from ..methods.run import run_planned_methods
        return run_planned_methods(prepared.backend, config.methods, prepared.suite, prepared.noisy,
                                   prepared.planned, prepared.cache, config.progress, config.requests_per_call,
                                   write_out=config.answer_policy.write_out)
    from ..subbenchmarks.suite import run_suite
    selection = config.selection
    if isinstance(selection, Nothing) and counting is not None:  # a dry run: what it would cost, counted as planned
        selection = Nothing(selection.shard, measure=counting.counter)
    result = run_suite(prepared.backend, suite=prepared.suite, planned=prepared.planned, cache=prepared.cache,
                       progress=config.progress, requests_per_call=config.requests_per_call, selection=selection,
                       policy=config.answer_policy)
    if config.lite_until is not None and isinstance(config.selection, Everything):
        from .lite_record import continue_until
        result = continue_until(prepared, result)
    return result


def _count_full_run(prepared: Prepared, result: Any) -> None:
    """A lite run's (or lite dry run's) full-run prompt counts, counted while the backend is open (a dry run of
    every test item, no inference), handed to :func:`record` and ``staicc run`` as
    ``result.metadata[FULL_RUN]`` (a summarised run's record moves them into ``provenance.lite``)."""
    config = prepared.config
    if config.lite_sample is None or config.methods or isinstance(config.selection, Shard) \
            or not config.lite_options.full_counts:
        return
    from .lite_record import FULL_RUN, full_counts_of
    result.metadata[FULL_RUN] = full_counts_of(config, prepared.backend)


def record(prepared: Prepared, result: Any, clock: Clock, command: Optional[List[str]] = None) -> Run:
    """The :class:`Run` of the answers: nothing more for a dry run or a shard (they summarise nothing)."""
    config = prepared.config
    if not config.summarises:
        return Run.from_result(result, summarised=False, config=config)
    if config.methods:
        return _methods_run(prepared, result, clock, command)
    from .provenance import run_provenance
    lite, section = None, None
    if config.lite_sample is not None:
        from .lite_record import lite_config, lite_record
        lite, section = lite_record(prepared, result)
    provenance = run_provenance(prepared, result, clock[0], time.perf_counter() - clock[1], section, command)
    return Run.from_result(result, provenance=provenance, lite=lite,
                           config=config if section is None else lite_config(config, section))


def _methods_run(prepared: Prepared, result: Any, clock: Clock, command: Optional[List[str]]) -> Run:
    """A methods run's record, its wall time measured from ``clock``."""
    return methods_record(prepared, result, clock[0], time.perf_counter() - clock[1], command)


def methods_record(prepared: Prepared, result: Any, started: str, seconds: float,
                   command: Optional[List[str]] = None, label: str = "run") -> Run:
    """A methods run's record: each method tested against vanilla (``config.resamples``: the tests' bootstrap
    resamples; the answers are kept when the tests cannot be made) and the provenance every method's run
    directory shares (``staicc run --methods`` and ``Run.from_result`` of a notebook's ``run_methods``)."""
    from .provenance import methods_provenance
    resamples = prepared.config.resamples
    comparisons, failure = {}, None
    try:
        comparisons = result.compare(**({"resamples": resamples} if resamples else {}))
    except (ValueError, ArithmeticError) as exc:
        failure = str(exc)
    provenance = methods_provenance(prepared, started, seconds, command)
    return Run.from_result(result, label=label, provenance=provenance, config=prepared.config,
                           comparisons=comparisons, comparison_error=failure)


def _now() -> Clock:
    from ..results.provenance import utc_now
    return utc_now(), time.perf_counter()
