"""A run's provenance, assembled in one place for ``staicc run`` and a notebook alike.

:func:`~StaICC.results.provenance.collect` records the backend, the code, the data, the
environment, the command and the time; a summarised run adds the suite's metadata, the
launcher's shard plan, the numerics record, the task files, what the model computed
(``usage``) and a lite run's estimates.
"""
from typing import Any, Dict, List, Optional

from ..engine.selection import Nothing, Shard
from .build import Prepared


def run_provenance(prepared: Prepared, result: Any, started: str, seconds: float,
                   lite: Optional[Dict[str, Any]] = None, command: Optional[List[str]] = None) -> Dict[str, Any]:
    """The provenance of a summarised suite run (``result``: run_suite's), as ``results.json`` records it."""
    from ..results.provenance import collect, run_numerics
    config, backend = prepared.config, prepared.backend
    command = command if command is not None else _parsed(config)
    provenance = collect(backend, dict(config.provenance_arguments), started, seconds, command)
    # the suite's metadata; a lite result's estimates (run_lite's metadata["lite"]) are provenance.lite alone
    provenance["suite"] = {key: value for key, value in result.metadata.items() if key != "lite"}
    from .config_record import config_record
    provenance["run_config"] = config_record(config)  # what writes the prompts again (staicc verify)
    provenance["exact_sum"] = config.exact_sum
    if config.sharded:  # the launcher's shards answered this run: record their plan
        provenance["shards"] = dict(config.sharded, unit=config.shard_unit, plan_sha256=plan_digest(prepared))
    provenance["numerics"] = run_numerics(backend, config.requests_per_call, result, shards=provenance.get("shards"),
                                          cache=config.cache)
    _add_tasks(provenance, config.tasks)
    usage = getattr(backend, "usage", None)
    if callable(usage) and usage():  # what the model computed: a dry run's token count estimates it
        provenance["usage"] = usage()
    if lite is not None:
        provenance["lite"] = lite
    return provenance


def methods_provenance(prepared: Prepared, started: str, seconds: float,
                       command: Optional[List[str]] = None) -> Dict[str, Any]:
    """What every method's run directory records in common (each adds its suite, method and index)."""
    from ..results.provenance import collect
    command = command if command is not None else _parsed(prepared.config)
    provenance = collect(prepared.backend, dict(prepared.config.provenance_arguments), started, seconds, command)
    _add_tasks(provenance, prepared.config.tasks)
    return provenance


def _parsed(config: Any) -> Optional[List[str]]:
    """The command line ``staicc`` parsed into ``config`` (None: not made by the command line, ``sys.argv``)."""
    return list(config.command) if getattr(config, "command", None) is not None else None


def _add_tasks(provenance: Dict[str, Any], tasks: Any) -> None:
    if tasks:
        from ..tasks.runs import provenance as task_provenance
        provenance["tasks"] = task_provenance(tasks)


def plan_digest(prepared: Prepared) -> str:
    """The shard plan's SHA-256, as each shard printed it: shard 0's part planned again as a dry run."""
    from ..engine.runner import run_works
    config = prepared.config
    works = prepared.works()
    counts: Dict[str, Any] = {}
    shard = Shard(0, config.sharded["count"], config.shard_unit)
    run_works(works, [prepared.backend] * len(works), distinct=True, counts=counts, selection=Nothing(shard),
              requests_per_call=config.requests_per_call)
    return counts["shard"]["plan_sha256"]
