"""The route matrix's workload: the model, the runs' numbers, and how two runs' numbers differ.

The workload is the one that first showed routes disagreeing: Normal and GLER on TREC and
rotten_tomatoes, ``--limit 8`` (192 prompts, 160 distinct), with the likelihood and ECE on
the model's own distribution beside the standard's, as ``staicc run`` reports them.  The
model is a tiny random-weight Llama saved to disk, with a byte-level BPE trained here on the
workload's prompts and label words (so every label is one token and no two labels tie).
A run's numbers are ``{"Normal/Divided results/TREC/accuracy": 0.25, ...}``: every number of
both sub-benchmarks, GLER's passes and regressions included.
"""
import json
import math
import os
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
BENCHMARKS = "Normal,GLER"
DATASETS = ("TREC", "rotten_tomatoes")
LIMIT = 8
#: the metrics of the table, in its column order
METRIC_NAMES = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1",
                "own_likelihood_nonstandard", "own_ece_nonstandard")
#: tokens a generating route may write per answer
GENERATED_TOKENS = 2
#: where and in what precision the model runs (the tests: the CPU in float32; benchmarks/route_matrix.py
#: --device cuda --dtype bfloat16 sets these for a GPU's figures)
DEVICE = os.environ.get("STAICC_ROUTES_DEVICE", "cpu")
DTYPE = os.environ.get("STAICC_ROUTES_DTYPE", "float32")

Numbers = Dict[str, float]


class RouteUnavailable(Exception):
    """A route that cannot run here (what is missing is the message)."""


@dataclass
class Context:
    """What the routes share: the model directory, its objects, a scratch directory, the reference numbers."""

    model_dir: str
    scratch: str
    cache: Dict[str, Any] = field(default_factory=dict)

    def path(self, name: str) -> str:
        return os.path.join(self.scratch, name)

    def pair(self) -> Tuple[Any, Any]:
        if "pair" not in self.cache:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            model = AutoModelForCausalLM.from_pretrained(self.model_dir).to(DEVICE, getattr(torch, DTYPE)).eval()
            self.cache["pair"] = (model, AutoTokenizer.from_pretrained(self.model_dir))
        return self.cache["pair"]


def workload_suite() -> Dict[str, Any]:
    """Normal and GLER on the two datasets, 8 test items each, with the own-distribution metrics (as the CLI)."""
    from StaICC.errors import TamperingWarning
    from StaICC.metrics import with_own_distribution_metrics
    from StaICC.subbenchmarks.suite import build_suite
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        suite = build_suite(BENCHMARKS, list(DATASETS), 4)
        for bench in suite.values():
            bench.limit_test_items(LIMIT)
            for experimentor in bench:
                experimentor.metrics = with_own_distribution_metrics(experimentor.metrics)
    return suite


def label_words() -> List[str]:
    return sorted({label for bench in workload_suite().values() for labels in bench.get_label_spaces_for_experimentors()
                   for label in labels})


def make_model(directory: str) -> str:
    """The tiny random Llama and its tokenizer (trained on the workload's prompts and labels), saved."""
    import torch

    from StaICC.backends.tiny_models import tiny_causal_lm, tiny_tokenizer
    suite = workload_suite()
    texts = [prompt for bench in suite.values() for experimentor in bench for prompt in experimentor.prompt_set()]
    texts += [word for word in label_words() for _ in range(40)]
    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(texts, bos=True, vocab_size=1024)
    model = tiny_causal_lm("llama", vocab_size=len(tokenizer), hidden_size=64, layers=2, seed=0)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def numbers_of(results: Dict[str, Any]) -> Numbers:
    """Every number of a suite result (or of results.json's "benchmarks" results), by path."""
    out: Numbers = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}/{key}" if path else str(key))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[path] = float(value)
    walk({name: dict(result) for name, result in results.items()}, "")
    return out


def metric_of(path: str) -> Optional[str]:
    """The metric a number belongs to (GLER's slopes and intercepts belong to theirs)."""
    for part in reversed(path.replace("[", "/[").split("/")):
        if part in METRIC_NAMES:
            return part
    return None


def differences(reference: Numbers, other: Numbers) -> Dict[str, float]:
    """The largest absolute difference per metric (inf where a number is missing on one side)."""
    if set(reference) != set(other):
        missing = sorted(set(reference) ^ set(other))[:3]
        raise AssertionError(f"the two runs report different numbers, e.g. {missing}")
    worst = dict.fromkeys(METRIC_NAMES, 0.0)
    for path, value in reference.items():
        metric = metric_of(path)
        if metric is not None:
            gap = abs(value - other[path]) if math.isfinite(value) or value != other[path] else 0.0
            worst[metric] = max(worst[metric], gap)
    return worst


def predictions_of(part: str, dataset: str, records: Any) -> Numbers:
    """Every prompt's prediction row, by place (``Normal/prediction/TREC/q3/p0/r0[1]``): what a route must give
    bit for bit per prompt, not only per metric."""
    columns = getattr(records, "columns", None)
    if columns is not None:
        width = records.width
        flat = columns["prediction"]
        keys = zip(columns["query_index"], columns["pass"], columns["repeat"])
        rows = [flat[i * width:(i + 1) * width] for i in range(len(columns["query_index"]))]
    else:
        keys = ((r["query_index"], r["pass"], r["repeat"]) for r in records)
        rows = [r["prediction"] for r in records]
    out: Numbers = {}
    for (query, pass_index, repeat), row in zip(keys, rows):
        for j, value in enumerate(row):
            out[f"{part}/prediction/{dataset}/q{query}/p{pass_index}/r{repeat}[{j}]"] = float(value)
    return out


def with_predictions(results: Dict[str, Any]) -> Numbers:
    """:func:`numbers_of` the results, and every prompt's prediction (:func:`predictions_of`)."""
    numbers = numbers_of(results)
    for name, result in results.items():
        by_dataset: Dict[str, List[Any]] = {}
        for record in getattr(result, "records", None) or []:
            by_dataset.setdefault(record["dataset"], []).append(record)
        for dataset, records in by_dataset.items():
            numbers.update(predictions_of(name, dataset, records))
    return numbers


def _suite_run(model: Any, **options: Any) -> Numbers:
    from StaICC.subbenchmarks.suite import run_suite
    return with_predictions(run_suite(model, suite=workload_suite(), progress=False, **options))


def _hf(context: Context, **arguments: Any) -> Any:
    from StaICC.backends.registry import make_backend
    arguments.setdefault("threads", 1)
    arguments.setdefault("dtype", DTYPE)
    return make_backend("hf", pretrained=context.model_dir, device=DEVICE, **arguments)


def _rows_by_dataset(result: Any) -> Dict[str, List[List[float]]]:
    rows: Dict[str, List[Tuple[int, List[float]]]] = {}
    for record in result.records:
        rows.setdefault(record["dataset"], []).append((record["query_index"], record["prediction"]))
    return {dataset: [row for _, row in sorted(found)] for dataset, found in rows.items()}


def _cli(args: List[str], *, runner: Optional[List[str]] = None, timeout: float = 600) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [*(runner or [sys.executable, "-m"]), "StaICC", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args[:2])} failed: {done.stderr[-2000:]}")
    return done.stdout


def cli_selection(context: Context, arguments: str = "") -> List[str]:
    return ["run", "--model", "hf", "--model-args",
            f"pretrained={context.model_dir},threads=1,device={DEVICE},dtype={DTYPE}{arguments}",
            "--benchmarks", BENCHMARKS, "--datasets", *DATASETS, "--limit", str(LIMIT), "--no-progress",
            "--log-samples"]


def results_numbers(directory: str) -> Numbers:
    """A run directory's numbers (results.json) and every prompt's prediction (its samples)."""
    from StaICC.report.runs import load_run
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    numbers = numbers_of({name: b["results"] for name, b in document["benchmarks"].items()})
    for name, part in load_run(directory).parts.items():
        for dataset, records in (part.records or {}).items():
            numbers.update(predictions_of(name, dataset, records))
    return numbers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(run: Callable[[Context], Numbers], context: Context) -> Tuple[Numbers, float]:
    started = time.perf_counter()
    numbers = run(context)
    return numbers, time.perf_counter() - started
