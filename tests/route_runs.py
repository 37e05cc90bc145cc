"""The routes of the route matrix: each ``route(context) -> numbers`` runs the workload one way.

Routes that need what is not installed (llama.cpp's server, Ray, transformers' serving extra)
raise :class:`~route_workload.RouteUnavailable` saying what is missing.
"""
import contextlib
import io
import json
import os
import random
import sys
import urllib.request
import warnings
from typing import Any, Callable, List, Optional

from route_workload import (BENCHMARKS, DATASETS, GENERATED_TOKENS, LIMIT, ROOT, TESTS, Context, Numbers,
                            RouteUnavailable, _cli, _free_port, _hf, _rows_by_dataset, _suite_run, cli_selection,
                            results_numbers, with_predictions, workload_suite)


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


def shard_route(count: int, unit: str, **arguments: Any) -> Callable[[Context], Numbers]:
    """``--shard I/N`` for every I (the same code: ``run_suite(shard=...)``), ``cache merge``, the final run."""
    def route(context: Context) -> Numbers:
        from StaICC.cache.merge import merge_caches
        from StaICC.subbenchmarks.suite import run_suite
        stem = context.path(f"shards-{count}-{unit}-{'-'.join(map(str, arguments.values()))}")
        caches = [f"{stem}.shard-{i}-of-{count}" for i in range(count)]
        for index, cache in enumerate(caches):
            run_suite(_hf(context, **arguments), suite=workload_suite(), cache=cache, shard=(index, count, unit),
                      progress=False)
        merge_caches(stem, caches)
        return _suite_run(_hf(context, **arguments), cache=stem)
    return route


def cache_replay(context: Context) -> Numbers:
    cache = context.path("replay.sqlite")
    _suite_run(_hf(context), cache=cache)
    return _suite_run(_hf(context), cache=cache)


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
        return with_predictions(out)
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
            encoded = tokenizer(prompt, return_tensors="pt").to(model.device)
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
            assert main(["run", *selection, "--cache", cache, "--output-dir", out, "--no-progress", "--log-samples"]) == 0
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
