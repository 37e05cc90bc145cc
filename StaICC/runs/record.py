"""A run's record: the :class:`Run` value that :func:`~StaICC.runs.execute.execute` returns and
:func:`~StaICC.runs.write.write` writes.

A run made in a notebook with :func:`~StaICC.subbenchmarks.suite.run_suite` becomes one with
:meth:`Run.from_result` (the provenance assembled as ``staicc run`` assembles it), so that it
writes the run directory ``staicc compare``, ``staicc report`` and ``staicc export`` read.  The
statistics read a ``Run`` as they read a loaded one: ``compare_runs(execute(a), execute(b))``.
"""
import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from .config import RunConfig


@dataclass(frozen=True)
class Run:
    """One run: its results (a suite result; a methods run's: a result per method), its provenance and
    configuration; a lite run's estimates; a methods run's tests against vanilla."""

    result: Any = field(hash=False)
    provenance: Optional[Dict[str, Any]] = field(default=None, hash=False)  # None: a dry run or a shard
    config: Optional[RunConfig] = None
    lite: Any = field(default=None, hash=False)  # the LiteResult of a lite run
    comparisons: Mapping[str, Any] = field(default_factory=dict, hash=False)  # method -> its test against vanilla
    comparison_error: Optional[str] = None  # why the methods were not tested against vanilla
    label: str = "run"  # the run's name in comparisons and tables

    #: where the run is: in memory until it is written
    path = "(in memory)"

    @functools.cached_property
    def parts(self) -> Dict[str, Any]:
        """Each sub-benchmark (a compound one unfolded into its parts) with its records by dataset: what the
        statistics read of a run (``compare_runs(run, load_run(directory))`` compares it with a written one)."""
        from ..results.rundir import result_parts
        return result_parts(self.result) if self.summarised and not self.is_methods_run else {}

    def has_records(self) -> bool:
        return any(part.records for part in self.parts.values())

    @property
    def summarised(self) -> bool:
        """False for a dry run or a shard: they count or store answers and have no results to write."""
        return self.provenance is not None

    @property
    def metadata(self) -> Dict[str, Any]:
        return self.result.metadata

    @property
    def is_methods_run(self) -> bool:
        return hasattr(self.result, "methods")

    @classmethod
    def from_result(cls, result: Any, model: Any, *, config: Optional[RunConfig] = None,
                    arguments: Optional[Mapping[str, Any]] = None, started: Optional[str] = None,
                    command: Optional[List[str]] = None) -> "Run":
        """The record of a suite result computed in a notebook (``run_suite(model, ...)``), with the
        provenance ``staicc run`` records: ``model`` is the backend (or function) that answered,
        ``arguments`` the backend's arguments to record, ``started`` when the run began (default: now,
        less the result's seconds).  A lite result's estimates (``result.lite``) come along."""
        from ..backends.base import as_backend
        from .build import Prepared
        from .provenance import run_provenance
        backend = as_backend(model)
        given = config is not None
        config = config or RunConfig(model=getattr(backend, "name", "function"),
                                     arguments=dict(arguments or {}))
        seconds = float(result.metadata.get("seconds", 0.0))
        prepared = Prepared(config, {}, backend, {}, owns_backend=False)
        lite = getattr(result, "lite", None)
        provenance = run_provenance(prepared, result, started or _started(seconds), seconds,
                                    result.metadata.get("lite"), command)
        if not given:  # the suite's settings are unknown: no prompts from them
            provenance["run_config"]["not_replayable"] = ["a result recorded without its RunConfig (Run.from_result)"]
        return cls(result, provenance, config, lite=lite)


def _started(seconds: float) -> str:
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return now.isoformat(timespec="seconds")
