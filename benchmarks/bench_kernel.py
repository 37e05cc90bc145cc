"""Scoring throughput: per-prompt kernel, CausalLMScorer modes, prefix sharing, the suite runner, lm-eval HFLM — one run, one table.

All methods score the same real benchmark prompts with the same model; rounds are
interleaved (every method once per round, each method's fastest round reported), so a
machine shared with other jobs slows every method alike and the ratios stay fair.

Workloads:

* ``normal``: one dataset's Normal prompts (``Normal(k)[dataset].prompt_set()``) and its
  noisy-channel prompts: per-prompt kernel, batched ``last_token``, ``sequence`` (one row
  per (prompt, label) vs the context computed once), noisy channel (unshared vs
  prefix-shared) and lm-eval's ``HFLM.loglikelihood`` when installed;
* ``suite``: the distinct prompts of every sub-benchmark of the standard suite, as the
  suite runner plans them (``--dataset all`` for all ten datasets): ``last_token`` with
  one row per prompt vs with shared prefixes, and the real suite runner
  (``run_suite`` over the ``hf`` backend, every framework cost included).

Agreement is measured against the reference of the same quantity: the one-prompt kernel
for ``last_token`` (the unshared engine in the suite workload), the unshared computation
for ``sequence`` and the noisy channel, and lm-eval for the sum of label-token
log-probabilities.  ``--reference-dtype float32`` adds each ``last_token`` method's
argmax agreement with a float32 copy of the model: in bf16 two correct computations
of different shapes round differently, and this column says how much of a disagreement
is bf16 rounding.

    python benchmarks/bench_kernel.py                                # CPU, tiny random Llama
    python benchmarks/bench_kernel.py --hidden 768 --layers 4
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b --prompts 0   # random weights, bf16
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b --workload suite --dataset all
    python benchmarks/bench_kernel.py --device cuda --model /path/to/local/hf/model

The random models' predictions are meaningless; their shapes, tokenization and code
paths are a real model's (the tokenizer is a byte-level BPE trained on the datasets'
demonstrations).  The FLOP-bound columns are 2 · parameters · tokens / --peak-flops
(on CUDA 400e12 by default, an effective bf16 dense figure for an H100-class GPU; on CPU
only when given): "bound s"
counts the tokens the method computed, "× bound" divides the wall time by the bound of
the tokens given (every distinct prompt computed once, nothing shared).
"""
import argparse
import copy
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from StaICC import Normal  # noqa: E402
from StaICC.backends import kernels  # noqa: E402
from StaICC.backends.causal_lm import CausalLMScorer  # noqa: E402
from StaICC.metrics import argmax, softmax  # noqa: E402

PRESETS = {  # name -> LlamaConfig arguments (random weights)
    "llama-3.2-1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                         intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True),
}


@dataclass
class Group:
    """One dataset's prompts, scored with its label space."""

    dataset: str
    prompts: List[str]
    labels: List[str]
    noisy: List[List[str]] = field(default_factory=list)


@dataclass
class Method:
    name: str
    quantity: str  # last_token, sequence, noisy
    run: Callable[[], List[List[float]]]
    engine: Optional[CausalLMScorer] = None
    reference: Optional[str] = None


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="rotten_tomatoes",
                        help="benchmark dataset names or indices, comma-separated, or 'all'")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per prompt")
    parser.add_argument("--prompts", type=int, default=256, help="prompts per dataset to score (0: all)")
    parser.add_argument("--workload", default="normal", choices=["normal", "suite"],
                        help="normal: one dataset's Normal prompts; suite: the distinct prompts of every "
                             "sub-benchmark (last_token)")
    parser.add_argument("--model", default=None, help="local HuggingFace model directory")
    parser.add_argument("--preset", default=None, choices=sorted(PRESETS), help="a random model of this shape")
    parser.add_argument("--hidden", type=int, default=256, help="tiny model: hidden size")
    parser.add_argument("--layers", type=int, default=4, help="tiny model: layers")
    parser.add_argument("--vocab", type=int, default=None,
                        help="trained tokenizer's vocabulary (default 4096; 32000 with --preset)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model dtype (default: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--reference-dtype", default=None, choices=["float32"],
                        help="add argmax agreement with a float32 copy of the model (last_token)")
    parser.add_argument("--token-budget", type=int, default=None, help="tokens per batch (default: the scorer's)")
    parser.add_argument("--lm-eval-batch", type=int, default=32, help="HFLM batch size")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timed rounds; the fastest is reported")
    parser.add_argument("--skip", default="", help="method names to leave out, separated by ';'")
    parser.add_argument("--overheads", default="",
                        help="suite: comma-separated prefix_overhead_tokens values, one prefix-shared row each "
                             "(default: the scorer's)")
    parser.add_argument("--runner-overhead", type=int, default=None,
                        help="suite: prefix_overhead_tokens of the runner's scorer (default: the scorer's)")
    parser.add_argument("--runner-calls", default="256",
                        help="suite: comma-separated requests_per_call values, one runner row each (0: no runner)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model in the scorers")
    parser.add_argument("--peak-flops", type=float, default=None,
                        help="for the FLOP-bound columns (default 400e12 on CUDA; none on CPU unless given)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    return parser.parse_args()


def dataset_names(args: argparse.Namespace) -> List[Any]:
    if args.dataset == "all":
        return list(range(10))
    return [int(name) if name.isdigit() else name.strip() for name in args.dataset.split(",")]


def workload(args: argparse.Namespace) -> Tuple[List[Group], List[str]]:
    """The groups to score and the demonstration texts (to train the tokenizer on)."""
    limit = args.prompts or None
    if args.workload == "suite":
        return suite_groups(dataset_names(args), args.k, limit)
    groups, texts = [], []
    for dataset in dataset_names(args):
        experimentor = Normal(k=args.k, datasets=[dataset])[0]
        noisy = Normal(k=args.k, noisy_channel=True, datasets=[dataset])[0].prompt_set()[:limit]
        groups.append(Group(str(dataset), experimentor.prompt_set()[:limit], experimentor.get_label_space(), noisy))
        texts.extend(_demonstration_texts(experimentor))
    return groups, texts


def suite_groups(datasets: List[Any], k: int, limit: Optional[int]) -> Tuple[List[Group], List[str]]:
    """Per dataset, the distinct prompts the suite runner asks, in its order (first ``limit`` of each)."""
    from StaICC.backends.reference import ReferenceBackend
    from StaICC.subbenchmarks.suite import build_suite, plan_suite
    benches = build_suite("all", datasets=datasets, k=k)
    planned = plan_suite(ReferenceBackend(), benches)
    prompts: Dict[str, Dict[str, None]] = {}
    labels: Dict[str, List[str]] = {}
    for plans in planned.values():
        for _, requests in plans:
            for request in requests:
                prompts.setdefault(request.dataset, {})[request.prompt] = None
                labels[request.dataset] = list(request.label_space)
    texts = [text for e in benches["Normal"] for text in _demonstration_texts(e)]
    return [Group(name, list(p)[:limit], labels[name]) for name, p in prompts.items()], texts


def _demonstration_texts(experimentor: Any) -> List[str]:
    demonstrations = experimentor.demonstration_set()
    return [text for i in range(len(demonstrations)) for text in demonstrations[i][0]]


def load_model(args: argparse.Namespace, texts: List[str]) -> Tuple[Any, Any, str]:
    import torch
    import transformers
    dtype = getattr(torch, args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32"))
    if args.model is not None:
        tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
        model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa")
        return model.to(args.device).eval(), tokenizer, args.model
    from StaICC.backends.tiny_models import tiny_tokenizer
    vocab = args.vocab or (32000 if args.preset else 4096)
    tokenizer = tiny_tokenizer(texts + ["sentiment: review: sentence: negative positive\n"] * 20, vocab_size=vocab)
    if args.preset:
        shape = dict(PRESETS[args.preset])
        name = f"{args.preset}-shaped random Llama"
    else:
        shape = dict(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=4,
                     num_key_value_heads=2, intermediate_size=2 * args.hidden, vocab_size=len(tokenizer))
        name = f"tiny random Llama (hidden {args.hidden}, {args.layers} layers)"
    model = random_llama(shape, args.device, dtype)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)  # sharper label distributions: argmax comparisons mean something
    return model.to(args.device).eval(), tokenizer, name


def random_llama(shape: Dict[str, Any], device: str, dtype: Any) -> Any:
    """A LlamaForCausalLM of this shape with seed-0 random weights, built on ``device``."""
    import torch
    import transformers
    from StaICC.backends.tiny_models import BOS_ID, EOS_ID, PAD_ID
    torch.manual_seed(0)
    config = transformers.LlamaConfig(max_position_embeddings=8192, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                                      pad_token_id=PAD_ID, attn_implementation="sdpa", **shape)
    with torch.device(device):
        return transformers.LlamaForCausalLM(config).to(dtype)


def lm_eval_scorer(model: Any, tokenizer: Any, batch_size: int) -> Optional[Callable[[List[str], List[str]], Any]]:
    """Σ log p(label | prompt) per (prompt, label) from HFLM.loglikelihood, softmaxed per prompt; None if absent."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, device=str(model.device),
              add_bos_token=bool(tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id))

    def score(prompts: List[str], labels: List[str]) -> List[List[float]]:
        requests = [Instance(request_type="loglikelihood", doc={}, arguments=(p, label), idx=i)
                    for i, (p, label) in enumerate((p, label) for p in prompts for label in labels)]
        results = lm.loglikelihood(requests, disable_tqdm=True)
        n = len(labels)
        return [softmax([results[q * n + j][0] for j in range(n)]) for q in range(len(prompts))]
    return score


def over_groups(groups: List[Group], score: Callable[[Group], List[List[float]]]) -> Callable[[], List[List[float]]]:
    return lambda: [row for group in groups for row in score(group)]


def build_methods(args: argparse.Namespace, groups: List[Group], model: Any, tokenizer: Any) -> List[Method]:
    common = dict(token_budget=args.token_budget, dtype=model.dtype, compile_model=args.compile)

    def scorer(**kwargs: Any) -> CausalLMScorer:
        return CausalLMScorer(model, tokenizer, **common, **kwargs)

    methods: List[Method] = []
    if args.workload == "suite":
        plain = scorer(share_prefixes=False)
        methods.append(Method("last_token, one row per prompt", "last_token",
                              over_groups(groups, lambda g: plain.score(g.prompts, g.labels)), plain))
        for overhead in [int(x) for x in args.overheads.split(",") if x.strip()] or [None]:
            shared = scorer(prefix_overhead_tokens=overhead)
            methods.append(Method(f"last_token, prefix-shared >={shared.prefix_overhead_tokens}", "last_token",
                                  over_groups(groups, lambda g, shared=shared: shared.score(g.prompts, g.labels)),
                                  shared, "last_token, one row per prompt"))
        if not args.prompts:  # the runner asks every prompt; with a --prompts cut the workloads would differ
            methods.extend(suite_runner(args, model, tokenizer, int(calls))
                           for calls in args.runner_calls.split(",") if int(calls) > 0)
        return methods
    methods.append(Method("per-prompt kernel", "last_token", over_groups(
        groups, lambda g: kernels.batched_ICL_inference_with_torch_Causal_LM(g.prompts, model, tokenizer, g.labels))))
    last = scorer()
    methods.append(Method("batched last_token", "last_token",
                          over_groups(groups, lambda g: last.score(g.prompts, g.labels)), last, "per-prompt kernel"))
    lm_eval = lm_eval_scorer(model, tokenizer, args.lm_eval_batch)
    if lm_eval is not None:
        methods.append(Method("lm-eval HFLM", "sequence", over_groups(groups, lambda g: lm_eval(g.prompts, g.labels))))
    rows = scorer(scoring="sequence", share_prefixes=False)
    methods.append(Method("sequence, unshared rows", "sequence",
                          over_groups(groups, lambda g: rows.score(g.prompts, g.labels)), rows,
                          "lm-eval HFLM" if lm_eval else None))
    seq = scorer(scoring="sequence")
    methods.append(Method("sequence, context shared", "sequence",
                          over_groups(groups, lambda g: seq.score(g.prompts, g.labels)), seq,
                          "lm-eval HFLM" if lm_eval else "sequence, unshared rows"))
    noisy_plain, noisy_shared = scorer(share_prefixes=False), scorer()
    methods.append(Method("noisy channel, unshared", "noisy", over_groups(
        groups, lambda g: noisy_plain.score_noisy_channel(g.noisy, g.labels)), noisy_plain))
    methods.append(Method("noisy channel, prefix-shared", "noisy", over_groups(
        groups, lambda g: noisy_shared.score_noisy_channel(g.noisy, g.labels)), noisy_shared,
        "noisy channel, unshared"))
    return methods


def suite_runner(args: argparse.Namespace, model: Any, tokenizer: Any, requests_per_call: int) -> Method:
    """``run_suite`` over the ``hf`` backend: planning, requests, dedup, scoring and metrics, no cache."""
    from StaICC.backends.hf import HFBackend
    from StaICC.subbenchmarks.suite import run_suite
    backend = HFBackend(model, tokenizer, model_id="bench", token_budget=args.token_budget,
                        requests_per_call=requests_per_call)
    if args.runner_overhead is not None:
        backend.scorer.prefix_overhead_tokens = args.runner_overhead

    def run() -> List[List[float]]:
        run_suite(backend, datasets=dataset_names(args), k=args.k, progress=False)
        return []
    return Method(f"suite runner, {requests_per_call}/call >={backend.scorer.prefix_overhead_tokens}", "last_token",
                  run, backend.scorer)


def fp32_reference(args: argparse.Namespace, groups: List[Group], model: Any, tokenizer: Any) -> List[List[float]]:
    import torch
    reference = CausalLMScorer(copy.deepcopy(model).to(torch.float32), tokenizer, dtype=torch.float32,
                               share_prefixes=False, token_budget=args.token_budget)
    rows = [row for g in groups for row in reference.score(g.prompts, g.labels)]
    del reference
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


def agreement(rows: List[List[float]], reference: List[List[float]]) -> Tuple[float, float]:
    agree = sum(argmax(a) == argmax(b) for a, b in zip(rows, reference)) / len(rows) * 100
    return agree, max(abs(p - q) for a, b in zip(rows, reference) for p, q in zip(a, b))


def main() -> None:
    args = parse_args()
    import torch
    import transformers
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    groups, texts = workload(args)
    model, tokenizer, model_name = load_model(args, texts)
    cuda = args.device.startswith("cuda")
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    params = sum(p.numel() for p in model.parameters())
    prompts = sum(len(g.prompts) for g in groups)
    noisy_queries = sum(len(g.noisy) for g in groups)
    prompt_tokens = sum(len(ids) for g in groups for ids in tokenizer(g.prompts)["input_ids"])
    noisy_tokens = sum(len(ids) for g in groups for q in g.noisy for ids in tokenizer(q)["input_ids"])
    methods = [m for m in build_methods(args, groups, model, tokenizer)
               if m.name not in {s.strip() for s in args.skip.split(";")}]
    print(f"workload ready in {time.perf_counter() - started:.1f} s: {prompts} prompts, {prompt_tokens} tokens",
          file=sys.stderr, flush=True)
    fp32 = fp32_reference(args, groups, model, tokenizer) if args.reference_dtype else None

    warm = [Group(g.dataset, g.prompts[:32], g.labels, g.noisy[:32]) for g in groups[:1]]  # compiles, first allocations
    for method in build_methods(args, warm, model, tokenizer) if args.workload == "normal" else []:
        method.run()
    for method in methods if args.workload == "suite" else []:  # full-size batches: the allocator's blocks
        method.engine.score(groups[0].prompts[:1024], groups[0].labels)
    synchronize()

    times: Dict[str, List[float]] = {m.name: [] for m in methods}
    results: Dict[str, Any] = {}
    peaks: Dict[str, str] = {}
    computed: Dict[str, int] = {}
    for round_number in range(args.rounds):
        for method in methods:
            before = method.engine.stats.tokens_computed if method.engine is not None else 0
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            synchronize()
            start = time.perf_counter()
            results[method.name] = method.run()
            synchronize()
            times[method.name].append(time.perf_counter() - start)
            if method.engine is not None:
                computed[method.name] = method.engine.stats.tokens_computed - before
            if round_number == 0:
                peaks[method.name] = (f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if cuda
                                      else f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB*")
            print(f"round {round_number + 1}: {method.name} {times[method.name][-1]:.2f} s", file=sys.stderr,
                  flush=True)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          + (f", {torch.cuda.get_device_name()}" if cuda else ""))
    print(f"model: {model_name}, {params / 1e6:.1f} M parameters, vocab {len(tokenizer)}, {model.dtype}, "
          f"device {args.device}, attention {getattr(model.config, '_attn_implementation', '?')}")
    datasets = ", ".join(g.dataset for g in groups) if len(groups) < 4 else f"{len(groups)} datasets"
    print(f"prompts: {prompts} ({args.workload}, {datasets}, k={args.k}), {prompt_tokens} tokens, "
          f"mean {prompt_tokens / prompts:.0f}; noisy-channel queries {noisy_queries}, {noisy_tokens} tokens")
    peak = args.peak_flops or (400e12 if cuda else None)
    print(f"rounds: {args.rounds} interleaved, fastest shown"
          + (f"; FLOP bounds at {peak / 1e12:.0f} TFLOP/s\n" if peak else "\n"))
    header = (f"{'method':34} {'quantity':10} {'prompts/s':>9} {'tokens/s':>9} {'wall s':>8} {'bound s':>8} "
              f"{'x bound':>7} {'tokens run':>10} {'argmax %':>8} {'max |dp|':>8} {'fp32 argmax %':>13} "
              f"{'largest batch':>13} {'peak mem':>9} {'speed-up':>14}")
    print(header)
    print("-" * len(header))
    for method in methods:
        wall = min(times[method.name])
        noisy = method.quantity == "noisy"
        count, given = (noisy_queries, noisy_tokens) if noisy else (prompts, prompt_tokens)
        ran = computed.get(method.name, given if method.name == "per-prompt kernel" else 0)
        bound = f"{2 * params * ran / peak:8.3g} {wall / (2 * params * given / peak):7.2f}" if peak and ran else " " * 16
        agree, diff = (agreement(results[method.name], results[method.reference])
                       if method.reference in results and results[method.name] else (None, None))
        fp32_agree = (agreement(results[method.name], fp32)[0]
                      if fp32 is not None and method.quantity == "last_token" and results[method.name] else None)
        speed = (f"{min(times[method.reference]) / wall:.2f}x {_short(method.reference)}"
                 if method.reference in times else "")
        print(f"{method.name:34} {method.quantity:10} {count / wall:9.1f} {given / wall:9.0f} {wall:8.2f} "
              f"{bound} "
              f"{ran if ran else '':>10} {_fmt(agree, '.1f'):>8} {_fmt(diff, '.1e'):>8} {_fmt(fp32_agree, '.1f'):>13} "
              f"{method.engine.largest_batch if method.engine is not None else '':>13} {peaks[method.name]:>9} "
              f"{speed:>14}")
    if not cuda:
        print("\n* CPU: the process's resident-memory high-water mark after the method's first run")
    if args.workload == "normal" and not any(m.name == "lm-eval HFLM" for m in methods):
        print("lm-eval is not installed: pip install lm-eval==0.4.13 to add its row")


def _fmt(value: Optional[float], spec: str) -> str:
    return "" if value is None else format(value, spec)


def _short(name: str) -> str:
    return {"per-prompt kernel": "kernel", "lm-eval HFLM": "lm-eval", "sequence, unshared rows": "rows",
            "noisy channel, unshared": "unshared", "last_token, one row per prompt": "rows"}.get(name, name)


if __name__ == "__main__":
    main()
