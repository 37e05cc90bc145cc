"""Run directories made by real runs of the package, in the documented format.

The results writer of ``staicc run`` lives elsewhere; these helpers write exactly what
``docs/architecture.md`` specifies (``results.json`` + ``samples.jsonl``) from real
sub-benchmark runs with the built-in reference models, so the statistics and the report
are tested on real predictions, real prompt hashes and real demonstration indexes.
"""
import hashlib
import json
import math
import os
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

from StaICC.errors import TamperingWarning
from StaICC.inference import predicted_labels
from StaICC.requests import prompt_sha256

#: small datasets with 2 and 6 labels: enough variety, fast runs
FIXTURE_DATASETS = ["rotten_tomatoes", "TREC"]

TRIPLET_PARTS = {"contextual": "Contextual_bias", "domain": "Domain_bias", "post": "Post_bias"}


def _prompt_key(prompt) -> Any:
    return tuple(prompt) if isinstance(prompt, list) else prompt


def prompt_set_sha256(prompts: Sequence) -> str:
    """SHA-256 of all prompts joined with U+0000 (noisy-channel lists joined with U+0001)."""
    digest = hashlib.sha256()
    for i, prompt in enumerate(prompts):
        if i:
            digest.update(b"\x00")
        text = "\x01".join(prompt) if isinstance(prompt, (list, tuple)) else prompt
        digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def run_sub_benchmark(bench, f: Callable, benchmark_name: Optional[str] = None):
    """(ResultDict-like body, metadata, records) of one real run of ``bench`` with ``f``."""
    from StaICC.results import ResultDict
    name = benchmark_name or bench.benchmark_name
    divided: Dict[str, Any] = {}
    records: List[Dict[str, Any]] = []
    hashes: Dict[str, str] = {}
    for experimentor in bench:
        dataset = experimentor.dataset_name
        prompts = experimentor.prompt_set()
        result, _ok, outputs = experimentor.auto_run(f, return_outputs=True)
        divided[dataset] = result
        hashes[dataset] = prompt_set_sha256(prompts)
        T = len(experimentor.test_set())
        per_pass = T * experimentor.get_repeat_times()
        sampler = experimentor.demonstration_sampler
        rows, truth = outputs["prob."], outputs["groundtruth"]
        argmaxes = predicted_labels(rows)
        for q, prompt in enumerate(prompts):
            within = q % per_pass
            records.append({
                "benchmark": name, "dataset": dataset, "query_index": q, "pass": q // per_pass,
                "test_index": within % T, "repeat": within // T, "demonstrations": list(sampler[within]),
                "prompt_sha256": prompt_sha256(_prompt_key(prompt)), "label": truth[q],
                "prediction": rows[q], "predicted": argmaxes[q]})
    averaged = bench.averaging(divided, len(bench))
    metadata = bench._metadata(0.0)
    metadata["prompt_sha256"] = hashes
    return ResultDict({"Divided results": divided, "Averaged results": averaged}, metadata=metadata), records


def _strict(value: Any, path: str, non_finite: List[str]) -> Any:
    """JSON-safe copy: tuples as lists, non-finite floats as null (their paths collected)."""
    if isinstance(value, dict):
        return {str(k): _strict(v, f"{path}/{k}", non_finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v, f"{path}/{i}", non_finite) for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        non_finite.append(path)
        return None
    return value


def write_run(directory: str, model_name: str, f: Callable, benchmarks: Dict[str, Any],
              log_samples: bool = True) -> str:
    """Run every benchmark of ``benchmarks`` ({name: instance}) with ``f`` and write a run directory.

    A ``Triplet_bias`` instance is written as one entry with its three parts, as the
    results writer does; its records carry the part's own benchmark name.
    """
    os.makedirs(directory, exist_ok=True)
    body: Dict[str, Any] = {}
    records: List[Dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        for name, bench in benchmarks.items():
            if name == "Triplet_bias":
                results, metadata = {}, {}
                for part, part_name in TRIPLET_PARTS.items():
                    r, recs = run_sub_benchmark(bench[part], f, part_name)
                    results[part], metadata[part] = dict(r), r.metadata
                    records.extend(recs)
                body[name] = {"results": results, "metadata": metadata}
            else:
                r, recs = run_sub_benchmark(bench, f, name)
                body[name] = {"results": dict(r), "metadata": r.metadata}
                records.extend(recs)
    non_finite: List[str] = []
    document = {"format": "staicc-results/1",
                "provenance": {"model": {"name": model_name}, "fingerprint": hashlib.sha256(model_name.encode()).hexdigest(),
                               "staicc_version": "0.2.0", "git_commit": None, "python": "3", "packages": {},
                               "device": "cpu", "data_manifest_sha256": None, "command": ["tests/run_fixtures.py"],
                               "started": "2025-01-01T00:00:00", "finished": "2025-01-01T00:00:01", "seconds": 1.0},
                "benchmarks": _strict(body, "/benchmarks", non_finite)}
    if non_finite:
        document["non_finite"] = non_finite
    if log_samples:
        document["samples"] = "samples.jsonl"
        with open(os.path.join(directory, "samples.jsonl"), "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(_strict(record, "", []), ensure_ascii=False, allow_nan=False))
                fh.write("\n")
    with open(os.path.join(directory, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(document, fh, indent=1, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
    return directory


def all_benchmarks(datasets: Sequence[str] = FIXTURE_DATASETS, retriever=None, **options) -> Dict[str, Any]:
    """One instance of each standard sub-benchmark on ``datasets`` (Triplet_bias for the bias ones)."""
    from StaICC import GLER, Demo_sens, Normal, Template_sens, Triplet_bias
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        extra = {"retriever": retriever} if retriever is not None else {}
        return {"Normal": Normal(datasets=list(datasets), **extra, **options),
                "Triplet_bias": Triplet_bias(datasets=list(datasets), **extra, **options),
                "GLER": GLER(datasets=list(datasets), **extra, **options),
                "Template_sens": Template_sens(datasets=list(datasets), **options),
                "Demo_sens": Demo_sens(datasets=list(datasets), **options)}


def make_lexical_and_uniform(root: str, datasets: Sequence[str] = FIXTURE_DATASETS) -> Dict[str, str]:
    """Two run directories on the same standard prompts: the lexical model and the chance model."""
    from StaICC.reference_model import lexical_icl, uniform
    return {"lexical": write_run(os.path.join(root, "lexical"), "lexical", lexical_icl, all_benchmarks(datasets)),
            "uniform": write_run(os.path.join(root, "uniform"), "uniform", uniform, all_benchmarks(datasets))}


def make_bm25(root: str, datasets: Sequence[str] = FIXTURE_DATASETS) -> str:
    """The lexical model on BM25-retrieved demonstrations (Normal only): other prompts than the standard."""
    from StaICC import Normal
    from StaICC.reference_model import lexical_icl
    from StaICC.retrieval import retriever_from_name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=list(datasets), retriever=retriever_from_name("bm25"))
    return write_run(os.path.join(root, "bm25"), "lexical", lexical_icl, {"Normal": bench})


def make_k2(root: str, datasets: Sequence[str] = FIXTURE_DATASETS) -> str:
    """The lexical model with k = 2 (Normal only)."""
    from StaICC import Normal
    from StaICC.reference_model import lexical_icl
    return write_run(os.path.join(root, "k2"), "lexical", lexical_icl, {"Normal": Normal(k=2, datasets=list(datasets))})


_CACHE: Dict[str, str] = {}


def fixture_runs() -> Dict[str, str]:
    """The fixture runs of this test session, made once: lexical, uniform (all sub-benchmarks), bm25, k2 (Normal)."""
    if not _CACHE:
        import atexit
        import shutil
        import tempfile
        root = tempfile.mkdtemp(prefix="staicc-runs-")
        atexit.register(shutil.rmtree, root, True)
        _CACHE.update(make_lexical_and_uniform(root))
        _CACHE["bm25"] = make_bm25(root)
        _CACHE["k2"] = make_k2(root)
    return dict(_CACHE)
