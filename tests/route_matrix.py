"""One model through every route the package offers: the runs, and the largest difference per metric.

The workload is the one that first showed routes disagreeing: Normal and GLER on TREC and
rotten_tomatoes, ``--limit 8`` (192 prompts, 160 distinct), with the likelihood and ECE on
the model's own distribution beside the standard's, as ``staicc run`` reports them.  The
model is a tiny random-weight Llama saved to disk, with a byte-level BPE trained here on the
workload's prompts and label words (so every label is one token and no two labels tie).

Each route is a function ``route(context) -> numbers`` (``{"Normal/Divided results/TREC/accuracy":
0.25, ...}``: every number of both sub-benchmarks, GLER's passes and regressions included);
:func:`differences` reduces two of them to the largest absolute difference per metric.
``tests/routes/test_route_matrix.py`` asserts the promises (:data:`ROUTES`); ``benchmarks/route_matrix.py``
prints the table.  Routes that need what is not installed (llama.cpp's server, Ray, lm-eval)
raise :class:`RouteUnavailable` saying what is missing.
"""
import contextlib
import io
import json
import math
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
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
#: the largest difference each metric may show on a route that is not bit-identical: argmax metrics
#: none (float32 rounding of 1e-7 moves no argmax of this model), the others far above the float32
#: rounding they carry (1e-7 relative) and far below any difference a reader would report
TOLERANCE = {"accuracy": 0.0, "macro_F1": 0.0, "averaged_truelabel_likelihood": 1e-6,
             "expected_calibration_error_1": 1e-6, "own_likelihood_nonstandard": 1e-6, "own_ece_nonstandard": 1e-6}

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
            from transformers import AutoModelForCausalLM, AutoTokenizer
            self.cache["pair"] = (AutoModelForCausalLM.from_pretrained(self.model_dir).eval(),
                                  AutoTokenizer.from_pretrained(self.model_dir))
        return self.cache["pair"]


# ----------------------------------------------------------------------------
# the model and the workload
# ----------------------------------------------------------------------------
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


# ----------------------------------------------------------------------------
# numbers and differences
# ----------------------------------------------------------------------------
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


# ----------------------------------------------------------------------------
# the routes
# ----------------------------------------------------------------------------
def _suite_run(model: Any, **options: Any) -> Numbers:
    from StaICC.subbenchmarks.suite import run_suite
    return numbers_of(run_suite(model, suite=workload_suite(), progress=False, **options))


def _hf(context: Context, **arguments: Any) -> Any:
    from StaICC.backends.registry import make_backend
    arguments.setdefault("threads", 1)
    return make_backend("hf", pretrained=context.model_dir, **arguments)


def hf_route(**arguments: Any) -> Callable[[Context], Numbers]:
    def route(context: Context) -> Numbers:
        return _suite_run(_hf(context, **arguments))
    return route


def function_route(kind: Optional[str]) -> Callable[[Context], Numbers]:
    """The scorer as a plain batched function (``Normal()(scorer, batched_inference=True)``)."""
    def route(context: Context) -> Numbers:
        from StaICC.backends.causal_lm import CausalLMScorer
        model, tokenizer = context.pair()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            numbers = _suite_run(CausalLMScorer(model, tokenizer), batched=True, prediction_kind=kind)
        context.cache[f"notices function {kind}"] = [str(w.message) for w in caught if "NUMERICS" in str(w.message)]
        return numbers
    return route


def shard_route(count: int, unit: str) -> Callable[[Context], Numbers]:
    """``--shard I/N`` for every I (the same code: ``run_suite(shard=...)``), ``cache merge``, the final run."""
    def route(context: Context) -> Numbers:
        from StaICC.cache.merge import merge_caches
        from StaICC.subbenchmarks.suite import run_suite
        stem = context.path(f"shards-{count}-{unit}")
        caches = [f"{stem}.shard-{i}-of-{count}" for i in range(count)]
        for index, cache in enumerate(caches):
            run_suite(_hf(context), suite=workload_suite(), cache=cache, shard=(index, count, unit), progress=False)
        merge_caches(stem, caches)
        return _suite_run(_hf(context), cache=stem)
    return route


def cache_replay(context: Context) -> Numbers:
    cache = context.path("replay.sqlite")
    _suite_run(_hf(context), cache=cache)
    return _suite_run(_hf(context), cache=cache)


def _rows_by_dataset(result: Any) -> Dict[str, List[List[float]]]:
    rows: Dict[str, List[Tuple[int, List[float]]]] = {}
    for record in result.records:
        rows.setdefault(record["dataset"], []).append((record["query_index"], record["prediction"]))
    return {dataset: [row for _, row in sorted(found)] for dataset, found in rows.items()}


def preentered_route(representation: str, kind: Optional[str]) -> Callable[[Context], Numbers]:
    """Predictions made elsewhere, in ``prompt_set()`` order: the hf route's probability rows, or log-likelihoods
    of the label tokens computed with transformers directly (as lm-eval's ``loglikelihood`` gives them)."""
    def route(context: Context) -> Numbers:
        from StaICC.subbenchmarks.suite import run_suite
        suite = workload_suite()
        if representation == "probabilities":
            served = run_suite(_hf(context), suite=workload_suite(), progress=False)
            given = {name: _rows_by_dataset(served[name]) for name in suite}
        else:
            given = {name: {e.dataset_name: label_loglikelihoods(context, e.prompt_set(), e.get_label_space())
                            for e in bench} for name, bench in suite.items()}
        out = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for name, bench in suite.items():
                out[name] = bench(preentered_predictions=given[name], prediction_kind=kind, progress=False)
        context.cache[f"notices preentered {representation} {kind}"] = \
            [str(w.message) for w in caught if "NUMERICS" in str(w.message)]
        return numbers_of(out)
    return route


def label_loglikelihoods(context: Context, prompts: List[str], labels: List[str]) -> List[List[float]]:
    """log p(label's last token | prompt) under the model, one forward per prompt, with transformers alone."""
    import torch

    from StaICC.backends.kernels import label_token_ids
    model, tokenizer = context.pair()
    ids = label_token_ids(tokenizer, labels)
    out = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = tokenizer(prompt, return_tensors="pt")
            logits = model(**encoded).logits[0, -1].float()
            row = torch.log_softmax(logits, -1)[ids]
            out.append([float(v) for v in row])
    return out


def label_token_server(context: Context) -> Numbers:
    """The ``openai`` backend (scoring=last_token, label_logprobs=on) against a real HTTP server that offers
    vLLM's /tokenize and label-token log-probabilities, serving the same model one prompt at a time."""
    sys.path.insert(0, os.path.join(TESTS, "scaleout"))
    from label_token_server import LabelTokenServer

    from StaICC.backends.registry import make_backend
    model, tokenizer = context.pair()
    with LabelTokenServer(model, tokenizer) as server:
        backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="last_token",
                               label_logprobs="on", concurrency="1", retries="0")
        try:
            return _suite_run(backend)
        finally:
            backend.close()


def _cli(args: List[str], *, runner: Optional[List[str]] = None, timeout: float = 600) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [*(runner or [sys.executable, "-m"]), "StaICC", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args[:2])} failed: {done.stderr[-2000:]}")
    return done.stdout


def cli_selection(context: Context, arguments: str = "") -> List[str]:
    return ["run", "--model", "hf", "--model-args", f"pretrained={context.model_dir},threads=1{arguments}",
            "--benchmarks", BENCHMARKS, "--datasets", *DATASETS, "--limit", str(LIMIT), "--no-progress"]


def results_numbers(directory: str) -> Numbers:
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    return numbers_of({name: b["results"] for name, b in document["benchmarks"].items()})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(context: Context) -> Numbers:
    """``torchrun --nproc_per_node 2 -m StaICC run ...``: two CPU ranks (gloo), each a shard, rank 0 merges."""
    out = context.path("torchrun")
    runner = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
              "--master_port", str(_free_port()), "--module"]
    _cli([*cli_selection(context), "--cache", out + ".sqlite", "--output-dir", out], runner=runner)
    return results_numbers(out)


def ray_launcher(context: Context) -> Numbers:
    """``staicc run ... --launcher ray:shards=2`` on a local Ray cluster started here."""
    try:
        import ray
    except ImportError:
        raise RouteUnavailable("ray is not installed (pip install ray)") from None
    from StaICC.cli import main
    out = context.path("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([ROOT, TESTS]), "OMP_NUM_THREADS": "1",
                                       "HF_HUB_OFFLINE": "1"}})
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the run's tables: results.json is what is compared
            status = main([*cli_selection(context), "--launcher", "ray:shards=2,num_cpus=1,retries=0", "--cache",
                           out + ".sqlite", "--output-dir", out])
    finally:
        ray.shutdown()
    if status != 0:
        raise AssertionError(f"the Ray run failed with status {status}")
    return results_numbers(out)


def llama_cpp_server(context: Context) -> Numbers:
    """The ``openai`` backend (scoring=sequence, echo log-probabilities) against llama.cpp's server serving
    the same weights as a float32 GGUF file: other kernels, so a looser tolerance (:data:`LLAMA_CPP_TOLERANCE`)."""
    for module in ("llama_cpp.server.app", "gguf"):
        try:
            __import__(module)
        except ImportError:
            raise RouteUnavailable(f"{module.split('.')[0]} is not installed (pip install "
                                   '"llama-cpp-python[server]" gguf)') from None
    from backend_helpers import LlamaCppServer, write_gguf

    from StaICC.backends.registry import make_backend
    path = write_gguf(context.path("model.gguf"), pair=context.pair())
    with LlamaCppServer(path, alias="tiny") as server:
        backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="sequence",
                               concurrency="1", retries="0")
        try:
            return _suite_run(backend)
        finally:
            backend.close()


#: llama.cpp computes the same float32 weights with its own kernels: probabilities agree to about 2e-3
#: (tests/backends/test_backend_openai_server.py), so an argmax may flip where two labels are that close
#: (one test item of 16 moves accuracy and macro-F1 by at most 1/16 here)
LLAMA_CPP_TOLERANCE = dict(dict.fromkeys(TOLERANCE, 5e-3), accuracy=1 / 16, macro_F1=1 / 16)


# ----------------------------------------------------------------------------
# routes compared against a baseline of another scoring mode
# ----------------------------------------------------------------------------
def batch_api_round_trip(context: Context) -> Numbers:
    """Export the run's requests as Batch-API JSONL, answer them through a real OpenAI-protocol server
    (in shuffled order, as the Batch API may), import, run over the cache (scoring=sequence)."""
    from openai_reference_server import ReferenceServer

    from StaICC.cli import main
    model, tokenizer = context.pair()
    with ReferenceServer(model, tokenizer) as server:
        selection = ["--model", "openai", "--model-args", f"base_url={server.base_url},model=tiny,scoring=sequence",
                     "--benchmarks", BENCHMARKS, "--datasets", *DATASETS, "--limit", str(LIMIT)]
        requests, answers, cache = (context.path(n) for n in ("batch.jsonl", "batch-results.jsonl", "batch.sqlite"))
        out = context.path("batch-run")
        with contextlib.redirect_stdout(io.StringIO()):  # what each command prints: results.json is compared
            assert main(["batch", "export", *selection, "-o", requests]) == 0
            _answer_batch(server.base_url, requests, answers)
            assert main(["batch", "import", answers, *selection, "--cache", cache]) == 0
            assert main(["run", *selection, "--cache", cache, "--output-dir", out, "--no-progress"]) == 0
    return results_numbers(out)


def _answer_batch(base_url: str, requests_path: str, results_path: str) -> None:
    with open(requests_path, encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    random.Random(0).shuffle(lines)
    root = base_url[:-len("/v1")]
    with open(results_path, "w", encoding="utf-8") as out:
        for n, line in enumerate(lines):
            request = urllib.request.Request(root + line["url"], data=json.dumps(line["body"]).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=60) as response:
                body = json.loads(response.read())
            out.write(json.dumps({"id": f"batch_req_{n}", "custom_id": line["custom_id"], "error": None,
                                  "response": {"status_code": 200, "request_id": f"r{n}", "body": body}}) + "\n")


def transformers_serve(context: Context) -> Numbers:
    """The ``openai`` backend (scoring=generate) against ``transformers serve``: the server ignores
    log-probability requests, so generation is what it can be compared on."""
    try:
        from transformers.utils.import_utils import is_serve_available
    except ImportError:
        raise RouteUnavailable("this transformers has no `transformers serve` with is_serve_available") from None
    if not is_serve_available():
        raise RouteUnavailable('transformers serve needs fastapi and uvicorn: pip install "transformers[serving]"')
    from backend_helpers import ServerProcess

    from StaICC.backends.registry import make_backend
    home = context.path("hf-home")
    os.makedirs(home, exist_ok=True)

    class Serve(ServerProcess):
        def __init__(self) -> None:
            self.port = _free_port()
            self.base_url = f"http://127.0.0.1:{self.port}/v1"
            command = [sys.executable, "-m", "transformers.cli.transformers", "serve", context.model_dir, "--host",
                       "127.0.0.1", "--port", str(self.port), "--device", "cpu", "--dtype", "float32"]
            env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=home, OMP_NUM_THREADS="1",
                       TOKENIZERS_PARALLELISM="false")
            self._start("transformers serve", command, os.path.join(home, "server.log"),
                        f"http://127.0.0.1:{self.port}/health", 120.0, env)

    with Serve() as server:
        backend = make_backend("openai", base_url=server.base_url, model=context.model_dir, scoring="generate",
                               max_tokens=str(GENERATED_TOKENS), concurrency="2", retries="0")
        try:
            return _suite_run(backend)
        finally:
            backend.close()


GENERATED_TOKENS = 2


@dataclass(frozen=True)
class Route:
    """A route, the baseline it is compared with, and what is promised."""

    name: str
    run: Callable[[Context], Numbers]
    bit_identical: bool
    baseline: str = "hf"
    note: str = ""
    tolerance: Optional[Dict[str, float]] = None  # another tolerance than TOLERANCE (other kernels)


#: the baselines the routes are compared with (each an hf backend run in one process)
BASELINES: Dict[str, Callable[[Context], Numbers]] = {
    "hf": hf_route(),
    "hf scoring=sequence": hf_route(scoring="sequence"),
    "hf scoring=generate": hf_route(scoring="generate", max_new_tokens=str(GENERATED_TOKENS)),
}

ROUTES: List[Route] = [
    Route("hf packing=prefix (the CPU default)", hf_route(packing="prefix"), True),
    Route("hf packing=rows", hf_route(packing="rows"), False),
    Route("hf packing=tree", hf_route(packing="tree"), False),
    Route("hf requests_per_call=1", hf_route(requests_per_call=1), False),
    Route("hf requests_per_call=7", hf_route(requests_per_call=7), False),
    Route("hf requests_per_call=64", hf_route(requests_per_call=64), False),
    Route("hf threads=2", hf_route(threads=2), False),
    Route("function (the scorer), prediction_kind='probabilities'", function_route("probabilities"), False),
    Route("--shard 2 (unit query) + cache merge", shard_route(2, "query"), False),
    Route("--shard 3 (unit query) + cache merge", shard_route(3, "query"), False),
    Route("--shard 2 --shard-unit call + cache merge", shard_route(2, "call"), True),
    Route("--shard 3 --shard-unit call + cache merge", shard_route(3, "call"), True),
    Route("torchrun, 2 CPU ranks (gloo)", torchrun, False),
    Route("--launcher ray, local cluster, 2 shards", ray_launcher, False),
    Route("cache replay", cache_replay, True),
    Route("preentered probabilities, prediction_kind='probabilities'", preentered_route("probabilities", "probabilities"),
          True),
    Route("preentered log-likelihoods (transformers), prediction_kind='loglikelihoods'",
          preentered_route("loglikelihoods", "loglikelihoods"), False),
    Route("openai -> label-token server (last_token)", label_token_server, False),
    Route("openai -> llama.cpp server (scoring=sequence)", llama_cpp_server, False, "hf scoring=sequence",
          tolerance=LLAMA_CPP_TOLERANCE),
    Route("Batch API round trip (openai, scoring=sequence)", batch_api_round_trip, False, "hf scoring=sequence"),
    Route("openai -> transformers serve (scoring=generate)", transformers_serve, True, "hf scoring=generate"),
]

#: routes that keep the standard's rule on floating-point probabilities: equal, or a notice says why not
STANDARD_RULE_ROUTES: List[Route] = [
    Route("function (the scorer), the standard's rule", function_route(None), False,
          note="notices function None"),
    Route("preentered log-likelihoods, the standard's rule", preentered_route("loglikelihoods", None), False,
          note="notices preentered loglikelihoods None"),
]


def timed(run: Callable[[Context], Numbers], context: Context) -> Tuple[Numbers, float]:
    started = time.perf_counter()
    numbers = run(context)
    return numbers, time.perf_counter() - started
