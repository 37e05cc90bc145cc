"""A run as Every Eval Ever files: one aggregate JSON and its instance-level JSON Lines (schema 0.3.0).

Every Eval Ever (EEE) is the schema the field exchanges evaluation results in
(``every_eval_ever`` on PyPI; the schemas are copied in ``tests/reference/eee/``).  The
export lays the files out as its datastore does, so that its validator accepts them as
they are::

    OUT/data/staicc/<developer>/<model>/<uuid>.json            aggregate results
    OUT/data/staicc/<developer>/<model>/<uuid>_samples.jsonl   one record per query (when the run logged samples)

The uuid (a version-4 UUID in form) is derived from the run's content and the export
options, so exporting a run twice writes the same files.  What goes where is in
``docs/exchange.md``; in short: every number of ``results.json`` is one entry of
``evaluation_results`` (its place in StaICC's result dict kept in ``score_details.details``),
with the bootstrap interval and standard error over test items where StaICC computes one;
provenance goes to ``model_info``, ``eval_library`` and ``source_metadata``; each
sub-benchmark's metadata is kept whole (JSON text) so that ``staicc compare`` can read the
export back as the run it came from (:mod:`.eee_import`).
"""
import datetime
import hashlib
import json
import os
import uuid
from typing import Any, Dict, List, Mapping, Optional

from .exchange import CANONICAL_IDS, Value, check_export_names, metric_facts, model_identity, model_names, \
    path_components, public_provenance, reported_values, settings_text, standard_source
from .safe_files import atomic_writer, make_folders

SCHEMA_VERSION = "0.3.0"
#: marks an export of StaICC, so that it can be read back
EXPORT_FORMAT = "staicc-eee/1"
COLLECTION = "staicc"
INTERVAL_METHOD = "percentile bootstrap over test items"


def export_eee(run: Any, out_dir: str, *, intervals: Optional[Dict[str, Any]] = None, model_id: Optional[str] = None,
               organization: str = "unknown", relationship: str = "other") -> Dict[str, str]:
    """Write the EEE files of ``run`` under ``out_dir``; returns their paths (``aggregate``, ``samples``)."""
    from .eee_instances import write_instances
    check_export_names(run)
    name, identifier = model_names(run.provenance, model_id)
    file_uuid = export_uuid(run, identifier, organization, relationship, intervals)
    developer, model = path_components(identifier)
    relative = f"data/{COLLECTION}/{developer}/{model}"
    folder = make_folders(out_dir, *relative.split("/"))
    evaluation_id = f"{COLLECTION}/{identifier}/{retrieved_timestamp(run)}"
    document = aggregate(run, evaluation_id, name, identifier, organization, relationship, intervals or {})
    paths = {"aggregate": os.path.join(folder, f"{file_uuid}.json")}
    if run.samples_path:
        paths["samples"] = os.path.join(folder, f"{file_uuid}_samples.jsonl")
        count, checksum = write_instances(run, paths["samples"], evaluation_id, identifier)
        document["detailed_evaluation_results"] = {
            "format": "jsonl", "file_path": f"{relative}/{file_uuid}_samples.jsonl", "hash_algorithm": "sha256",
            "checksum": checksum, "total_rows": count,
            "additional_details": {"sample_hash": "sha256 of the prompt (StaICC's prompt_sha256)"}}
    with atomic_writer(paths["aggregate"]) as fh:
        json.dump(document, fh, indent=1, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
    return paths


def write_eee(run: Any, out_dir: str, intervals: Optional[Dict[str, Any]], options: Mapping[str, Any]) -> List[str]:
    """``staicc export --format eee`` (:data:`~StaICC.results.exchange.EXPORT_FORMATS`): :func:`export_eee` with
    the command's ``model_id``, ``organization`` and ``evaluator_relationship``."""
    return list(export_eee(run, out_dir, intervals=intervals, model_id=options.get("model_id"),
                           organization=options.get("organization") or "unknown",
                           relationship=options.get("evaluator_relationship") or "other").values())


def export_uuid(run: Any, identifier: str, *options: Any) -> str:
    """A version-4-form UUID from the run's results, provenance and the export options: same run, same name."""
    digest = hashlib.sha256()
    with open(run.path, "rb") as fh:
        digest.update(fh.read())
    digest.update(json.dumps([identifier, *options], sort_keys=True, default=str).encode())
    return str(uuid.UUID(bytes=digest.digest()[:16], version=4))


def retrieved_timestamp(run: Any) -> str:
    """The run's end as Unix seconds (the record is the run's; an export does not change it)."""
    finished = run.provenance.get("finished")
    try:
        moment = datetime.datetime.fromisoformat(str(finished))
    except ValueError:
        moment = datetime.datetime.fromtimestamp(os.path.getmtime(run.path), datetime.timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return str(int(moment.timestamp()))


def aggregate(run: Any, evaluation_id: str, name: str, identifier: str, organization: str, relationship: str,
              intervals: Dict[str, Any]) -> Dict[str, Any]:
    provenance = run.provenance
    results: List[Dict[str, Any]] = []
    unscored: Dict[str, List[Any]] = {}
    for part in run.parts.values():
        for position, value in enumerate(reported_values(part.name, part.results)):
            if value.scalar:
                results.append(result_entry(run, part, value, position, intervals.get(part.name, {})))
            else:  # a non-finite number (null in results.json), or the 0.0 the standard averages vectors to
                unscored.setdefault(part.name, []).append([position, list(value.path), value.value])
    document: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
        "retrieved_timestamp": retrieved_timestamp(run),
        "source_metadata": {"source_name": "StaICC run", "source_type": "evaluation_run",
                            "source_organization_name": organization, "evaluator_relationship": relationship,
                            "additional_details": {"benchmark": "StaICC: standardized in-context-learning "
                                                                "classification"}},
        "model_info": model_info(provenance, name, identifier),
        "eval_library": eval_library(run, unscored, intervals),
        "evaluation_results": results,
    }
    if provenance.get("started"):
        document["evaluation_timestamp"] = str(provenance["started"])
    return document


def model_info(provenance: Dict[str, Any], name: str, identifier: str) -> Dict[str, Any]:
    """The model as EEE describes one: names, engine, deployment, and StaICC's identity (no secrets)."""
    from .provenance import redact, redact_text
    identity = model_identity(provenance)
    backend = identity["backend"]
    model = provenance.get("model") if isinstance(provenance.get("model"), dict) else {}
    from ..backends.registry import capabilities
    able = capabilities(backend if isinstance(backend, str) else None)
    details = {"deployment_type": "externally_managed" if able.hosted and not _local(identity)
               else "self_deployed", "model_availability": "open_weights" if able.open_weights else "unknown",
               "staicc_backend": backend, "fingerprint": str(model.get("fingerprint") or "")}
    for key, value in identity.items():
        if key != "backend":
            details[f"identity.{key}"] = redact_text(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    if isinstance(model.get("arguments"), dict):
        details["arguments"] = json.dumps(redact(model["arguments"]), sort_keys=True, default=str)
    packages = provenance.get("packages") if isinstance(provenance.get("packages"), dict) else {}
    engine = able.engine
    info: Dict[str, Any] = {"name": name, "id": identifier, "additional_details": details,
                            "inference_platform": "OpenAI-compatible API" if able.hosted else "local"}
    if engine:
        info["inference_engine"] = {"name": engine, "version": str(packages.get(engine, "unknown"))}
    return info


def _local(identity: Dict[str, Any]) -> bool:
    url = str(identity.get("base_url") or "")
    return any(host in url for host in ("//127.0.0.1", "//localhost", "//[::1]"))


def eval_library(run: Any, unscored: Dict[str, List[Any]], intervals: Dict[str, Any]) -> Dict[str, Any]:
    """StaICC and everything about the run that has no EEE field of its own (strings, as EEE asks)."""
    provenance = public_provenance(run.provenance)
    details = {"format": EXPORT_FORMAT, "provenance": json.dumps(provenance, sort_keys=True),
               "sub_benchmarks": json.dumps([_compound(p) for p in run.parts]),
               "unscored_values": json.dumps(unscored, allow_nan=False),
               "standard": json.dumps(all(p.metadata.get("standard", True) for p in run.parts.values()))}
    for key in ("git_commit", "python", "platform", "device", "data_manifest_sha256", "started", "finished"):
        if provenance.get(key) is not None:
            details[key] = str(provenance[key])
    for part in run.parts.values():
        details[f"metadata.{part.name}"] = json.dumps(part.metadata, sort_keys=True, allow_nan=False)
    if intervals:
        details["intervals"] = json.dumps(intervals.get("_settings", {}), sort_keys=True)
    return {"name": "StaICC", "version": str(provenance.get("staicc_version") or "unknown"),
            "additional_details": details}


def _compound(part: str) -> List[Any]:
    from ..spec import compound_of
    found = compound_of(part)
    return [part, found[0], found[1]] if found else [part, None, None]


def result_entry(run: Any, part: Any, value: Value, position: int, intervals: Dict[str, Any]) -> Dict[str, Any]:
    """One ``evaluation_results`` entry: a number, its metric, its dataset, its interval."""
    facts = metric_facts(value)
    metadata = part.metadata
    where = value.dataset if value.dataset is not None else f"the average over {len(part.datasets())} datasets"
    role = "" if value.role in ("value", "slope", "intercept") else f" ({value.role})"
    description = f"StaICC {value.part}: {facts.display} on {where}{role}; {settings_text(metadata, value.dataset)}"
    if facts.lower_is_better is None:
        description += "; no better direction"
    config: Dict[str, Any] = {"evaluation_description": description,
                              "metric_id": CANONICAL_IDS.get(facts.name, f"staicc.{facts.name}")
                              if value.role == "value" else f"staicc.{facts.name}.{value.role.split()[0]}",
                              "metric_name": facts.display, "lower_is_better": bool(facts.lower_is_better),
                              "score_type": "continuous", "min_score": facts.bounds[0], "max_score": facts.bounds[1]}
    details = {"path": json.dumps(list(value.path)), "position": str(position), "sub_benchmark": value.part,
               "metric": value.metric, "role": value.role}
    if value.dataset is not None:
        details["dataset"] = value.dataset
    score: Dict[str, Any] = {"score": value.value, "details": details}
    uncertainty = interval_of(value, intervals)
    if uncertainty:
        score["uncertainty"] = uncertainty
    entry = {"evaluation_result_id": value.result_id, "evaluation_name": f"{value.part}/{value.dataset or 'average'}",
             "source_data": source_data(part, value.dataset), "metric_config": config, "score_details": score,
             "generation_config": generation_config(run, metadata, value.dataset)}
    if run.provenance.get("started"):
        entry["evaluation_timestamp"] = str(run.provenance["started"])
    return entry


def interval_of(value: Value, intervals: Dict[str, Any]) -> Dict[str, Any]:
    """The EEE ``uncertainty`` of a number from the caller's bootstrap estimates (empty: none computed)."""
    key = interval_key(value)
    table = intervals.get(value.dataset if value.dataset is not None else "", {})
    found = table.get(key[0]) if key else None
    if not found:
        return {}
    low, high, stderr = found["low"], found["high"], found.get("stderr")
    if key[1] is not None:
        low, high = low[key[1]], high[key[1]]
        stderr = stderr[key[1]] if isinstance(stderr, list) else None
    out: Dict[str, Any] = {"num_bootstrap_samples": found["resamples"]}
    if found.get("items"):
        out["num_samples"] = found["items"]
    if _finite(low) and _finite(high):
        out["confidence_interval"] = {"lower": low, "upper": high, "confidence_level": found["level"],
                                      "method": INTERVAL_METHOD + (f" ({found['unbounded']} resamples with an "
                                                                   "infinite value left out)" if found.get("unbounded")
                                                                   else "")}
    if _finite(stderr):
        out["standard_error"] = {"value": stderr, "method": "bootstrap"}
    return out


def interval_key(value: Value) -> Optional[tuple]:
    """(metric name in the bootstrap estimates, component or None) of a number, or None: no interval."""
    rest = value.path[1:] if value.dataset is None else value.path[2:]
    if value.role == "value" and rest == (value.metric,):
        return value.metric, None
    if value.role == "value" and rest == ("sensitivity", value.metric):
        return value.metric, None
    if value.role == "slope":
        return value.metric, None
    if value.role.startswith("component") and rest == (value.metric, value.path[-1]):
        return value.metric, value.path[-1]
    return None


def _finite(number: Any) -> bool:
    return type(number) in (int, float) and number == number and abs(number) != float("inf")


def source_data(part: Any, dataset: Optional[str]) -> Dict[str, Any]:
    """Where a dataset comes from: its HuggingFace source for the standard's ten, else 'other'."""
    if dataset is None:
        return {"dataset_name": f"StaICC {part.name} ({len(part.datasets())} datasets)", "source_type": "other",
                "additional_details": {"datasets": json.dumps(part.datasets())}}
    details = {"prompt_set_sha256": str((part.metadata.get("prompt_sha256") or {}).get(dataset, "")),
               "answers": str((part.metadata.get("answer_counts") or {}).get(dataset, ""))}
    source = standard_source(dataset)
    if source is None:
        return {"dataset_name": dataset, "source_type": "other", "additional_details": details}
    hf = source["hf_source"]
    details.update({"hf_config": str(hf.get("config")), "hf_splits": ",".join(hf.get("splits") or []),
                    "staicc_split": "test split drawn from these splits by StaICC's fixed triplet split"})
    return {"dataset_name": dataset, "source_type": "hf_dataset", "hf_repo": hf["path"], "additional_details": details}


def generation_config(run: Any, metadata: Dict[str, Any], dataset: Optional[str]) -> Dict[str, Any]:
    identity = model_identity(run.provenance)
    args: Dict[str, Any] = {}
    limit = identity.get("max_new_tokens", identity.get("max_tokens"))
    if identity.get("scoring") == "generate":
        args["temperature"] = 0.0
        if type(limit) is int and limit >= 1:
            args["max_tokens"] = limit
        thinking = identity.get("thinking") if isinstance(identity.get("thinking"), dict) else {}
        args["reasoning"] = thinking.get("mode") == "on" or thinking.get("budget") is not None
    details = {"scoring": str(identity.get("scoring", "model's own")), "settings": settings_text(metadata, dataset),
               "k": json.dumps(metadata.get("k")), "unparsed_answers": str((metadata.get("unparsed_answers") or {}).get(
                   dataset, sum((metadata.get("unparsed_answers") or {}).values()) if dataset is None else 0))}
    return {"generation_args": args, "additional_details": details}
