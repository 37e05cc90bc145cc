"""A run as the results JSON lm-evaluation-harness writes (``results_<date>.json``), for tools that read it.

lm-eval keys a task's numbers ``"<metric>,<filter>"`` with ``"<metric>_stderr,<filter>"``
beside them, and writes ``configs``, ``versions``, ``n-shot``, ``higher_is_better``,
``n-samples`` and ``group_subtasks`` per task, ``config`` (model and arguments) and
``date``/``git_hash`` for the run.  Here each (sub-benchmark, dataset) is a task named
``staicc_<sub-benchmark>_<dataset>`` and each sub-benchmark a group whose numbers are the
averages StaICC reports.  The filter is ``none``; the standard error is the bootstrap one
over test items where StaICC computed an interval (``"N/A"``, as lm-eval writes, where
not).  Per-pass GLER numbers are ``<metric>_pass<p>``, its slopes ``<metric>_slope`` and
intercepts ``<metric>_intercept``; vector values (the bias distributions) have no lm-eval
form and are left out.
"""
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional

from .eee_export import interval_of, retrieved_timestamp
from .exchange import Value, check_export_names, metric_facts, model_identity, model_names, public_provenance, reported_values, \
    standard_source
from .safe_files import atomic_writer

FILE_NAME = "results.json"


def task_name(part: str, dataset: Optional[str]) -> str:
    name = f"staicc_{part}" + (f"_{dataset}" if dataset is not None else "")
    return re.sub(r"[^a-z0-9_]+", "_", name.lower())


def lm_eval_document(run: Any, intervals: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The lm-eval-style results document of ``run``."""
    document: Dict[str, Any] = {"results": {}, "groups": {}, "group_subtasks": {}, "configs": {}, "versions": {},
                                "n-shot": {}, "higher_is_better": {}, "n-samples": {}}
    for part in run.parts.values():
        group = task_name(part.name, None)
        document["group_subtasks"][group] = [task_name(part.name, d) for d in part.datasets()]
        _part_values(document, part, intervals)
        for dataset in part.datasets():
            if task_name(part.name, dataset) in document["results"]:
                _task_config(document, run, part, dataset, task_name(part.name, dataset))
    document.update(_run_fields(run))
    return document


def _part_values(document: Dict[str, Any], part: Any, intervals: Optional[Dict[str, Any]]) -> None:
    """A sub-benchmark's numbers: its datasets' under ``results``, its averages under ``groups``."""
    for value in reported_values(part.name, part.results):
        if not value.scalar or value.role.startswith("component"):
            continue
        task = task_name(part.name, value.dataset)
        table = document["groups" if value.dataset is None else "results"].setdefault(
            task, {"alias": f"{part.name}" + (f" / {value.dataset}" if value.dataset else "")})
        key = metric_key(value)
        table[f"{key},none"] = value.value
        found = interval_of(value, (intervals or {}).get(part.name, {})).get("standard_error")
        table[f"{key}_stderr,none"] = found["value"] if found else "N/A"
        facts = metric_facts(value)
        if facts.lower_is_better is not None:
            document["higher_is_better"].setdefault(task, {})[key] = not facts.lower_is_better


def metric_key(value: Value) -> str:
    name = metric_facts(value).name
    if value.role.startswith("pass "):
        return f"{name}_pass{value.role.split()[1]}"
    return name if value.role == "value" else f"{name}_{value.role}"


def _task_config(document: Dict[str, Any], run: Any, part: Any, dataset: str, task: str) -> None:
    metadata = part.metadata
    k = metadata.get("k")
    k = k.get(dataset) if isinstance(k, dict) else k
    source = standard_source(dataset)
    generative = model_identity(run.provenance).get("scoring") == "generate"
    config: Dict[str, Any] = {"task": task, "tag": ["staicc", task_name(part.name, None)],
                              "test_split": "test", "num_fewshot": k,
                              "output_type": "generate_until" if generative else "multiple_choice",
                              "metric_list": [{"metric": name.split(",")[0]} for name in document["results"][task]
                                              if name != "alias" and "_stderr," not in name],
                              "metadata": {"version": 1.0, "staicc_sub_benchmark": part.name, "staicc_dataset": dataset,
                                           "prompt_set_sha256": (metadata.get("prompt_sha256") or {}).get(dataset),
                                           "standard": not (metadata.get("non_standard_settings") or {}).get(dataset),
                                           "non_standard_settings": (metadata.get("non_standard_settings") or {})
                                           .get(dataset, [])}}
    if source is not None:
        config["dataset_path"] = source["hf_source"]["path"]
        config["dataset_name"] = source["hf_source"].get("config")
    document["configs"][task] = config
    document["versions"][task] = 1.0
    document["n-shot"][task] = k
    count = (metadata.get("answer_counts") or {}).get(dataset)
    document["n-samples"][task] = {"original": count, "effective": count}


def _run_fields(run: Any) -> Dict[str, Any]:
    provenance = run.provenance
    name, identifier = model_names(provenance)
    identity = model_identity(provenance)
    model = provenance.get("model") if isinstance(provenance.get("model"), dict) else {}
    arguments = model.get("arguments") if isinstance(model.get("arguments"), dict) else {}
    from .provenance import redact
    return {"config": {"model": identity["backend"], "model_args": ",".join(f"{k}={v}" for k, v in
                                                                             redact(arguments).items()),
                       "model_identity": identity, "fingerprint": model.get("fingerprint"),
                       "bootstrap_iters": None, "staicc_version": provenance.get("staicc_version")},
            "git_hash": provenance.get("git_commit"), "date": float(retrieved_timestamp(run)),
            "model_name": identifier, "model_name_sanitized": identifier.replace("/", "__"),
            "total_evaluation_time_seconds": str(provenance.get("seconds", "")),
            "staicc_provenance": public_provenance(provenance)}


def export_lm_eval(run: Any, out_dir: str, *, intervals: Optional[Dict[str, Any]] = None) -> str:
    """Write ``OUT/results.json`` in lm-eval's layout; returns its path."""
    check_export_names(run, task_name, "the lm-eval task")
    os.makedirs(out_dir, exist_ok=True)
    document = lm_eval_document(run, intervals)
    settings = (intervals or {}).get("_settings") or {}
    document["config"]["bootstrap_iters"] = settings.get("resamples")
    path = os.path.join(out_dir, FILE_NAME)
    with atomic_writer(path) as fh:
        json.dump(document, fh, indent=2, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
    return path


def write_lm_eval(run: Any, out_dir: str, intervals: Optional[Dict[str, Any]], _options: Mapping[str, Any]) -> List[str]:
    """``staicc export --format lm-eval`` (:data:`~StaICC.results.exchange.EXPORT_FORMATS`): :func:`export_lm_eval`."""
    return [export_lm_eval(run, out_dir, intervals=intervals)]
