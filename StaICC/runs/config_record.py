"""A run's :class:`~StaICC.runs.RunConfig` as provenance records it, and the config planned again from it.

``staicc verify`` writes a run's prompts again to audit its answers.  A run made in Python has no
command line to parse again, so provenance records what writes the prompts: the sub-benchmarks,
k, the datasets (each bundled one by its name), the noisy channel, the test items
and the backend's arguments (secrets removed, as everywhere in provenance).  What cannot be
written as data (a retriever object, a function that picks test items, task files, a dataset
not bundled with StaICC) makes the record say so in ``not_replayable``: verify then
falls back on the recorded command line, or says in one line why the audit cannot be made.
"""
from typing import Any, Dict, List, Mapping, Optional

from ..errors import InvalidValueError
from ..datasets.tables import DrawnTable

#: the record's format; a later change of what is recorded changes it
RECORD_VERSION = 1


def config_record(config: Any) -> Dict[str, Any]:
    """What writes the prompts of ``config`` (a :class:`~StaICC.runs.RunConfig`), as JSON values."""
    from ..results.provenance import redact
    missing: List[str] = []
    record: Dict[str, Any] = {"version": RECORD_VERSION, "model": config.model,
                              "arguments": redact(dict(config.provenance_arguments)),
                              "benchmarks": config.benchmarks if isinstance(config.benchmarks, str)
                              else list(config.benchmarks),
                              "k": config.k, "noisy_channel": bool(config.noisy_channel),
                              "datasets": _datasets(config.datasets, missing),
                              "test_items": _test_items(config.test_items, missing),
                              "exact_sum": config.exact_sum, "methods": len(config.methods)}
    if config.retriever is not None:
        missing.append(f"a retriever object ({type(config.retriever).__name__})")
    if config.tasks:
        missing.append("task files (--tasks)")
    given = sorted(set(getattr(config, "suite_options", {})) - {"own_distribution"})  # it writes no prompt
    if given:
        missing.append(f"sub-benchmark options given in Python ({', '.join(given)})")
    if missing:
        record["not_replayable"] = missing
    return record


def _datasets(datasets: Optional[Any], missing: List[str]) -> Optional[List[Any]]:
    if datasets is None:
        return None
    out: List[Any] = []
    for dataset in datasets:
        if isinstance(dataset, (str, int)) and not isinstance(dataset, bool):
            out.append(dataset)
        elif isinstance(getattr(dataset, "table", None), DrawnTable):  # a bundled dataset: its name writes it
            out.append(dataset.get_dataset_name())
        else:
            missing.append(f"a dataset not bundled with StaICC ({_name(dataset)})")
    return out


def _test_items(subset: Any, missing: List[str]) -> Optional[Dict[str, Any]]:
    if subset is None:
        return None
    if subset.first_count is not None:
        return {"first": subset.first_count}
    sample = subset.lite_sample
    if sample is not None:
        return {"lite": {"fraction": sample.fraction, "items": sample.items}}
    if subset.pick is not None:
        missing.append("test items picked by a function")
        return None
    return {"chosen": [[benchmark, dataset, list(items)] for (benchmark, dataset), items in subset.chosen],
            "description": subset.description}


def config_from_record(record: Mapping[str, Any], model: str, arguments: Mapping[str, Any]) -> Any:
    """The run ``record`` describes, answered by ``model`` with ``arguments`` (the verifier's); ValueError
    saying why when the record cannot write the run's prompts again."""
    from ..engine.selection import QuerySubset
    from .config import RunConfig
    if not isinstance(record, Mapping) or record.get("version") != RECORD_VERSION:
        raise InvalidValueError(f"the recorded run configuration is not of format {RECORD_VERSION}")
    if record.get("not_replayable"):
        raise InvalidValueError("the run's prompts cannot be written again from its recorded configuration: it used "
                                + "; ".join(str(m) for m in record["not_replayable"]))
    items = record.get("test_items") or {}
    subset = None
    if "first" in items:
        subset = QuerySubset.first(int(items["first"]))
    elif "lite" in items:
        subset = QuerySubset.lite(items["lite"].get("fraction"), items=items["lite"].get("items"))
    elif "chosen" in items:
        subset = QuerySubset.of({(b, d): values for b, d, values in items["chosen"]}, items.get("description", ""))
    benchmarks = record["benchmarks"]
    return RunConfig(model=model, arguments=dict(arguments), k=int(record["k"]),
                     benchmarks=benchmarks if isinstance(benchmarks, str) else tuple(benchmarks),
                     datasets=_resolved(record.get("datasets")), noisy_channel=bool(record.get("noisy_channel")),
                     test_items=subset, progress=False)


def _resolved(datasets: Optional[List[Any]]) -> Optional[tuple]:
    """The recorded datasets, by name or benchmark index."""
    if datasets is None:
        return None
    from ..datasets import resolve_dataset
    return tuple(resolve_dataset(entry) for entry in datasets)


def _name(dataset: Any) -> str:
    name = getattr(dataset, "get_dataset_name", None)
    return str(name()) if callable(name) else type(dataset).__name__
