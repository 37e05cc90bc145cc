"""Scoring throughput: per-prompt kernel, CausalLMScorer's packings, the suite runner, lm-eval HFLM — one run, one table.

All methods score the same real benchmark prompts with the same model; rounds are
interleaved (every method once per round, each method's fastest round reported), so a
machine shared with other jobs slows every method alike and the ratios stay fair.

Workloads:

* ``normal``: one dataset's Normal prompts and its noisy-channel prompts: per-prompt
  kernel, ``last_token``, ``sequence`` and the noisy channel, each as one row per
  sequence (``packing="rows"``), through today's prefix tree (``"prefix"``: tree levels
  continued from KV caches) and tree-packed (``"tree"``: one flat row per group, tree
  mask, no padding), and lm-eval's ``HFLM.loglikelihood`` when installed;
* ``suite``: the distinct prompts of every sub-benchmark of the standard suite, as the
  suite runner plans them (``--dataset all`` for all ten datasets): ``last_token`` one row
  per prompt, prefix tree, tree-packed, and the real suite runner (``run_suite`` over the
  ``hf`` backend, every framework cost included; ``--runner-packing`` picks its packing).

Agreement is against the reference of the same quantity: the one-prompt kernel for
``last_token`` (one row per prompt in the suite workload), the unshared computation for
``sequence`` and the noisy channel, lm-eval for the sum of label-token log-probabilities.
``--reference-dtype float32`` adds each ``last_token`` method's argmax agreement with a
float32 copy of the model: in bf16 two correct computations of different shapes round
differently, and this column says how much of a disagreement is bf16 rounding.

    python benchmarks/bench_kernel.py                                # CPU, tiny random Llama
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b --prompts 0   # random weights, bf16
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b --workload suite --dataset all --prompts 0
    python benchmarks/bench_kernel.py --device cuda --model /path/to/local/hf/model

The random models' predictions are meaningless; their shapes, tokenization and code
paths are a real model's.  The columns "tokens given", "tokens run", "TFLOP/s", "bound s"
and "x bound" are defined in ``kernel_table.py``: the bound is
(2 · non-embedding parameters · tokens given + 2 · hidden · vocabulary · read positions)
/ peak, with the peak 400e12 on CUDA (--peak-flops) and a measured product on CPU.
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
from StaICC.metrics import softmax  # noqa: E402

import kernel_table  # noqa: E402  (benchmarks/, the script's own folder)
from kernel_table import fmt, short, agreement  # noqa: E402
from model_presets import PRESETS, random_llama  # noqa: E402

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
    parser.add_argument("--queries", type=int, default=None,
                        help="suite: only the first N queries of every pass of every sub-benchmark (keeps the "
                             "prompts that share demonstrations together)")
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
    parser.add_argument("--runner-packing", default="auto",
                        help="suite: comma-separated packing values of the runner's scorer (auto, tree, prefix, rows)")
    parser.add_argument("--pack-tokens", type=int, default=None, help="tree-packed rows: tokens per pack at most")
    parser.add_argument("--tree-attention", default="auto", choices=["auto", "flex", "dense"],
                        help="tree-packed rows: FlexAttention block mask or a dense mask (auto: flex on CUDA)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model in the scorers")
    parser.add_argument("--peak-flops", type=float, default=None,
                        help="for the FLOP-bound columns (default 400e12 on CUDA; on CPU the rate of a 1024x1024 "
                             "product measured in the run)")
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
        return suite_groups(dataset_names(args), args.k, limit, args.queries)
    groups, texts = [], []
    for dataset in dataset_names(args):
        experimentor = Normal(k=args.k, datasets=[dataset])[0]
        noisy = Normal(k=args.k, noisy_channel=True, datasets=[dataset])[0].prompt_set()[:limit]
        groups.append(Group(str(dataset), experimentor.prompt_set()[:limit], experimentor.get_label_space(), noisy))
        texts.extend(_demonstration_texts(experimentor))
    return groups, texts


def suite_groups(datasets: List[Any], k: int, limit: Optional[int],
                 queries: Optional[int] = None) -> Tuple[List[Group], List[str]]:
    """Per dataset, the distinct prompts the suite runner asks, in its order (first ``limit`` of each).

    ``queries``: only the first that many queries of every pass of every sub-benchmark, so
    that the prompts sharing a query's demonstrations (GLER's passes, the bias parts) stay
    together, as in the whole suite.
    """
    from StaICC.backends.reference import ReferenceBackend
    from StaICC.subbenchmarks.suite import build_suite, plan_suite
    benches = build_suite("all", datasets=datasets, k=k)
    planned = plan_suite(ReferenceBackend(), benches)
    prompts: Dict[str, Dict[str, None]] = {}
    labels: Dict[str, List[str]] = {}
    for plans in planned.values():
        for _, requests in plans:
            first: Dict[int, int] = {}
            for request in requests:
                first[request.pass_index] = min(first.get(request.pass_index, request.query_index),
                                                request.query_index)
            for request in requests:
                if queries is None or request.query_index - first[request.pass_index] < queries:
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
        shape = {"hidden_size": args.hidden, "num_hidden_layers": args.layers, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "intermediate_size": 2 * args.hidden, "vocab_size": len(tokenizer)}
        name = f"tiny random Llama (hidden {args.hidden}, {args.layers} layers)"
    model = random_llama(shape, args.device, dtype)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)  # sharper label distributions: argmax comparisons mean something
    return model.to(args.device).eval(), tokenizer, name


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
    common = {"token_budget": args.token_budget, "dtype": model.dtype, "compile_model": args.compile}

    def scorer(**kwargs: Any) -> CausalLMScorer:
        return CausalLMScorer(model, tokenizer, **common, **kwargs)

    methods: List[Method] = []
    tree = {"packing": "tree", "pack_tokens": args.pack_tokens, "tree_attention": args.tree_attention}
    if args.workload == "suite":
        plain = scorer(packing="rows")
        methods.append(Method("last_token, one row per prompt", "last_token",
                              over_groups(groups, lambda g: plain.score(g.prompts, g.labels)), plain))
        for overhead in [int(x) for x in args.overheads.split(",") if x.strip()] or [None]:
            shared = scorer(packing="prefix", prefix_overhead_tokens=overhead)
            methods.append(Method(f"last_token, prefix tree >={shared.prefix_overhead_tokens}", "last_token",
                                  over_groups(groups, lambda g, shared=shared: shared.score(g.prompts, g.labels)),
                                  shared, "last_token, one row per prompt"))
        packed = scorer(**tree)
        methods.append(Method("last_token, tree-packed", "last_token",
                              over_groups(groups, lambda g: packed.score(g.prompts, g.labels)), packed,
                              "last_token, one row per prompt"))
        if not args.prompts:  # the runner asks every prompt; with a --prompts cut the workloads would differ
            methods.extend(suite_runner(args, model, tokenizer, int(calls), packing)
                           for calls in args.runner_calls.split(",") if int(calls) > 0
                           for packing in args.runner_packing.split(","))
        return methods
    methods.append(Method("per-prompt kernel", "last_token", over_groups(
        groups, lambda g: kernels.batched_ICL_inference_with_torch_Causal_LM(g.prompts, model, tokenizer, g.labels))))
    for label, options in (("", {"packing": "prefix"}), (", tree-packed", tree)):
        last = scorer(**options)
        methods.append(Method("batched last_token" + label, "last_token",
                              over_groups(groups, lambda g, last=last: last.score(g.prompts, g.labels)), last,
                              "per-prompt kernel"))
    lm_eval = lm_eval_scorer(model, tokenizer, args.lm_eval_batch)
    if lm_eval is not None:
        methods.append(Method("lm-eval HFLM", "sequence", over_groups(groups, lambda g: lm_eval(g.prompts, g.labels))))
    reference = "lm-eval HFLM" if lm_eval else "sequence, unshared rows"
    for name, options in (("sequence, unshared rows", {"packing": "rows"}),
                          ("sequence, context shared", {"packing": "prefix"}), ("sequence, tree-packed", tree)):
        seq = scorer(scoring="sequence", **options)
        methods.append(Method(name, "sequence", over_groups(groups, lambda g, seq=seq: seq.score(g.prompts, g.labels)),
                              seq, reference if name != reference else None))
    for name, options in (("noisy channel, unshared", {"packing": "rows"}),
                          ("noisy channel, prefix-shared", {"packing": "prefix"}),
                          ("noisy channel, tree-packed", tree)):
        noisy = scorer(**options)
        methods.append(Method(name, "noisy", over_groups(
            groups, lambda g, noisy=noisy: noisy.score_noisy_channel(g.noisy, g.labels)), noisy,
            "noisy channel, unshared" if "unshared" not in name else None))
    return methods


def suite_runner(args: argparse.Namespace, model: Any, tokenizer: Any, requests_per_call: int,
                 packing: str) -> Method:
    """``run_suite`` over the ``hf`` backend: planning, requests, dedup, scoring and metrics, no cache."""
    from StaICC.backends.hf import HFBackend
    from StaICC.subbenchmarks.suite import run_suite
    backend = HFBackend(model, tokenizer, model_id="bench", token_budget=args.token_budget,
                        requests_per_call=requests_per_call, packing=packing.strip())
    if args.runner_overhead is not None:
        backend.scorer.prefix_overhead_tokens = args.runner_overhead

    def run() -> List[List[float]]:
        run_suite(backend, datasets=dataset_names(args), k=args.k, progress=False)
        return []
    return Method(f"suite runner, {requests_per_call}/call, {backend.scorer.packing}", "last_token", run,
                  backend.scorer)


def fp32_reference(args: argparse.Namespace, groups: List[Group], model: Any, tokenizer: Any) -> List[List[float]]:
    import torch
    reference = CausalLMScorer(copy.deepcopy(model).to(torch.float32), tokenizer, dtype=torch.float32,
                               share_prefixes=False, token_budget=args.token_budget)
    rows = [row for g in groups for row in reference.score(g.prompts, g.labels)]
    del reference
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


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
    shape = kernel_table.shape_of(model)
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
    peak = args.peak_flops or (400e12 if cuda else kernel_table.measured_peak(torch, args.device, model.dtype))

    times: Dict[str, List[float]] = {m.name: [] for m in methods}
    results: Dict[str, Any] = {}
    peaks: Dict[str, str] = {}
    work: Dict[str, kernel_table.Work] = {}
    for round_number in range(args.rounds):
        for method in methods:
            before = copy.copy(method.engine.stats) if method.engine is not None else None
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            synchronize()
            start = time.perf_counter()
            results[method.name] = method.run()
            synchronize()
            times[method.name].append(time.perf_counter() - start)
            if method.engine is not None:
                after = method.engine.stats
                work[method.name] = kernel_table.Work(
                    after.tokens_requested - before.tokens_requested, after.reads - before.reads,
                    after.tokens_computed - before.tokens_computed, after.logit_positions - before.logit_positions)
            if round_number == 0:
                peaks[method.name] = (f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if cuda
                                      else f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB*")
            print(f"round {round_number + 1}: {method.name} {times[method.name][-1]:.2f} s", file=sys.stderr,
                  flush=True)
    work["per-prompt kernel"] = kernel_table.Work(prompt_tokens, prompts, prompt_tokens, prompt_tokens)
    if "sequence, unshared rows" in work:
        work["lm-eval HFLM"] = kernel_table.Work(work["sequence, unshared rows"].given,
                                                 work["sequence, unshared rows"].reads)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          + (f", {torch.cuda.get_device_name()}" if cuda else ""))
    print(f"model: {model_name}, {params / 1e6:.1f} M parameters ({shape.nonembedding / 1e6:.1f} M outside the "
          f"embedding and the output head), hidden {shape.hidden}, vocab {shape.vocab}, {model.dtype}, "
          f"device {args.device}, attention {getattr(model.config, '_attn_implementation', '?')}")
    datasets = ", ".join(g.dataset for g in groups) if len(groups) < 4 else f"{len(groups)} datasets"
    print(f"prompts: {prompts} ({args.workload}, {datasets}, k={args.k}), {prompt_tokens} tokens, "
          f"mean {prompt_tokens / prompts:.0f}; noisy-channel queries {noisy_queries}, {noisy_tokens} tokens")
    print(f"rounds: {args.rounds} interleaved, fastest shown; bound = (2 x {shape.nonembedding / 1e6:.1f} M x tokens "
          f"given + 2 x {shape.hidden} x {shape.vocab} x read positions) / {peak / 1e12:.3g} TFLOP/s"
          + (" (given)" if args.peak_flops or cuda else f" (a {model.dtype} 1024x1024 product, measured now)") + "\n")
    rows = []
    for method in methods:
        wall = min(times[method.name])
        count = noisy_queries if method.quantity == "noisy" else prompts
        agree, diff = (agreement(results[method.name], results[method.reference])
                       if method.reference in results and results[method.name] else (None, None))
        fp32_agree = (agreement(results[method.name], fp32)[0]
                      if fp32 is not None and method.quantity == "last_token" and results[method.name] else None)
        speed = (f"{min(times[method.reference]) / wall:.2f}x {short(method.reference)}"
                 if method.reference in times else "")
        rows.append({"name": method.name, "quantity": method.quantity, "count": count, "wall": wall,
                         "work": work.get(method.name, kernel_table.Work(0, 0)), "agree": fmt(agree, ".1f"),
                         "diff": fmt(diff, ".1e"), "fp32": fmt(fp32_agree, ".1f"),
                         "largest": method.engine.largest_batch if method.engine is not None else "",
                         "peak": peaks[method.name], "speed": speed})
    kernel_table.print_table(rows, shape, peak)
    if not cuda:
        print("\n* CPU: the process's resident-memory high-water mark after the method's first run")
    if args.workload == "normal" and not any(m.name == "lm-eval HFLM" for m in methods):
        print("lm-eval is not installed: pip install lm-eval==0.4.13 to add its row")


if __name__ == "__main__":
    main()
