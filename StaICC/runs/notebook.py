"""A notebook's result recorded as ``staicc run`` records it: ``Run.from_result(result, model)``.

:class:`~StaICC.results.run.Run` (``StaICC.runs.Run``) is the one run value; given the model that
answered, its :meth:`~StaICC.results.run.Run.from_result` asks this module (by name, through
:data:`StaICC.results.run.RECORDERS`) for the provenance the CLI assembles, so that a
:func:`~StaICC.subbenchmarks.suite.run_suite` result computed in a notebook writes the run
directory ``staicc compare``, ``staicc report`` and ``staicc export`` read.
"""
from dataclasses import replace
from typing import Any, List, Mapping, Optional

from ..results.run import Run
from .config import RunConfig


def notebook_provenance(cls: type, result: Any, model: Any, *, label: str = "run",
                        config: Optional[RunConfig] = None, arguments: Optional[Mapping[str, Any]] = None,
                        started: Optional[str] = None, command: Optional[List[str]] = None,
                        resamples: Optional[int] = None) -> Run:
    """The run of a suite result computed in a notebook (``run_suite(model, ...)``), with the provenance
    ``staicc run`` records: ``model`` is the backend (or function) that answered, ``arguments`` the
    backend's arguments to record, ``started`` when the run began (default: now, less the result's
    seconds).  A lite result's estimates (``result.lite``) come along (with its ``config``, the full run's
    prompt counts too, counted as ``staicc run --lite`` counts them: a dry run, no inference); a ``run_methods`` result has each
    method tested against vanilla, as ``staicc run --methods`` does (``resamples``: the tests' bootstrap
    resamples, as ``--resamples``; default the configuration's, else the statistics')."""
    from ..backends.base import as_backend
    from .build import Prepared
    from .provenance import run_provenance
    backend = as_backend(model)
    given = config is not None
    config = config or RunConfig(model=getattr(backend, "name", "function"), arguments=dict(arguments or {}))
    if resamples is not None:
        config = replace(config, resamples=resamples)
    seconds = float(result.metadata.get("seconds", 0.0))
    prepared = Prepared(config, {}, backend, {}, owns_backend=False)
    if hasattr(result, "methods"):  # a run_methods result: its directories are each method's run
        from .execute import methods_record
        return methods_record(prepared, result, started or _started(seconds), seconds, command, label)
    provenance = run_provenance(prepared, result, started or _started(seconds), seconds,
                                _lite_section(result, config if given else None, backend), command)
    if not given:  # the suite's settings are unknown: no prompts can be planned from them
        provenance["run_config"]["not_replayable"] = ["a result recorded without its RunConfig (Run.from_result)"]
    return cls.from_result(result, label=label, provenance=provenance, config=config,
                           lite=getattr(result, "lite", None))


def _lite_section(result: Any, config: Optional[RunConfig], backend: Any) -> Optional[Mapping[str, Any]]:
    """A lite result's ``provenance.lite`` (None for any other result), with the full run's prompt counts where
    the configuration says what the full run is."""
    section = result.metadata.get("lite")
    if section is None or config is None or config.lite_sample is None or "full_run" in section:
        return section
    from .lite_record import full_counts_of
    return dict(section, full_run=full_counts_of(config, backend))


def _started(seconds: float) -> str:
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return now.isoformat(timespec="seconds")
