"""Run directories made by real runs of the package, written by the package's own results writer.

The statistics and the report are tested on real predictions, real prompt hashes and
real demonstration indexes of the built-in reference models.
"""
import json
import os
import warnings
from typing import Any, Callable, Dict, Sequence

from StaICC.errors import TamperingWarning

#: small datasets with 2 and 6 labels: enough variety, fast runs
FIXTURE_DATASETS = ["rotten_tomatoes", "TREC"]

TRIPLET_PARTS = {"contextual": "Contextual_bias", "domain": "Domain_bias", "post": "Post_bias"}


def write_run(directory: str, model_name: str, f: Callable, benchmarks: Dict[str, Any],
              log_samples: bool = True) -> str:
    """Run ``benchmarks`` ({name: instance}) with ``f`` through the suite runner and write its run directory."""
    from StaICC.backends import FunctionBackend
    from StaICC.results.provenance import collect, utc_now
    from StaICC.results.rundir import write_run_dir
    from StaICC.subbenchmarks.suite import run_suite
    backend = FunctionBackend(f, model_id=model_name)
    started = utc_now()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        result = run_suite(backend, suite=benchmarks, progress=False)
    write_run_dir(directory, dict(result), collect(backend, {}, started, 1.0, ["tests/run_fixtures.py"]), log_samples)
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
    from StaICC.backends.reference_model import lexical_icl, uniform
    return {"lexical": write_run(os.path.join(root, "lexical"), "lexical", lexical_icl, all_benchmarks(datasets)),
            "uniform": write_run(os.path.join(root, "uniform"), "uniform", uniform, all_benchmarks(datasets))}


def make_bm25(root: str, datasets: Sequence[str] = FIXTURE_DATASETS) -> str:
    """The lexical model on BM25-retrieved demonstrations (Normal only): other prompts than the standard."""
    from StaICC import Normal
    from StaICC.backends.reference_model import lexical_icl
    from StaICC.retrieval import retriever_from_name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=list(datasets), retriever=retriever_from_name("bm25"))
    return write_run(os.path.join(root, "bm25"), "lexical", lexical_icl, {"Normal": bench})


def make_k2(root: str, datasets: Sequence[str] = FIXTURE_DATASETS) -> str:
    """The lexical model with k = 2 (Normal only)."""
    from StaICC import Normal
    from StaICC.backends.reference_model import lexical_icl
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


def run_cli(argv, capsys) -> str:
    """``staicc ARGV`` in this process; asserts exit status 0 and returns what it printed."""
    from StaICC import cli
    code = cli.main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def read_results(directory: str) -> Dict[str, Any]:
    """A run directory's results.json."""
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as handle:
        return json.load(handle)
