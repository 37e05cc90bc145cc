"""Scoring throughput: per-prompt kernel, CausalLMScorer modes, prefix sharing, lm-eval HFLM — one run, one table.

All methods score the same real benchmark prompts (``Normal(k)[dataset].prompt_set()``)
with the same model; rounds are interleaved (every method once per round, each
method's fastest round reported), so a machine shared with other jobs slows every method
alike and the ratios stay fair.  Agreement is measured against the reference of
the same quantity: the one-prompt kernel for ``last_token``, the unshared
computation for ``sequence`` and the noisy channel, and lm-eval's
``HFLM.loglikelihood`` (when installed) for the sum of label-token log-probabilities.

    python benchmarks/bench_kernel.py                                # CPU, tiny random Llama
    python benchmarks/bench_kernel.py --hidden 768 --layers 4
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b          # random weights, bf16
    python benchmarks/bench_kernel.py --device cuda --preset llama-3.2-1b --workload suite
    python benchmarks/bench_kernel.py --device cuda --model /path/to/local/hf/model

The random models' predictions are meaningless; their shapes, tokenization and
code paths are a real model's.  The FLOP-bound column is 2 · parameters · tokens
computed / --peak-flops (400e12 by default, a bf16 dense figure for an H100-class
GPU): how far the wall time is from the hardware limit.
"""
import argparse
import resource
import sys
import time
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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="rotten_tomatoes", help="benchmark dataset name or index")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per prompt")
    parser.add_argument("--prompts", type=int, default=256, help="how many prompts to score (0: all)")
    parser.add_argument("--workload", default="normal", choices=["normal", "suite"],
                        help="normal: one dataset's Normal prompts; suite: the distinct prompts of every "
                             "sub-benchmark on the dataset (last_token only)")
    parser.add_argument("--model", default=None, help="local HuggingFace model directory")
    parser.add_argument("--preset", default=None, choices=sorted(PRESETS), help="a random model of this shape")
    parser.add_argument("--hidden", type=int, default=256, help="tiny model: hidden size")
    parser.add_argument("--layers", type=int, default=4, help="tiny model: layers")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model dtype (default: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--token-budget", type=int, default=None, help="tokens per batch (default: the scorer's)")
    parser.add_argument("--lm-eval-batch", type=int, default=32, help="HFLM batch size")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timed rounds; the fastest is reported")
    parser.add_argument("--skip", default="", help="comma-separated method names to leave out")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model in the scorers")
    parser.add_argument("--peak-flops", type=float, default=400e12, help="for the FLOP-bound column")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    return parser.parse_args()


def load_model(args: argparse.Namespace, texts: List[str]) -> Tuple[Any, Any, str]:
    import torch
    import transformers
    dtype = getattr(torch, args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32"))
    if args.model is not None:
        tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
        model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa")
        name = args.model
    else:
        from StaICC.backends.tiny_models import BOS_ID, EOS_ID, PAD_ID, tiny_tokenizer
        tokenizer = tiny_tokenizer(texts + ["sentiment: review: sentence: negative positive\n"] * 20)
        if args.preset:
            shape = dict(PRESETS[args.preset])
            name = f"{args.preset}-shaped random Llama"
        else:
            shape = dict(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=2 * args.hidden, vocab_size=len(tokenizer))
            name = f"tiny random Llama (hidden {args.hidden}, {args.layers} layers)"
        torch.manual_seed(0)
        config = transformers.LlamaConfig(max_position_embeddings=8192, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                                          pad_token_id=PAD_ID, attn_implementation="sdpa", **shape)
        with torch.device(args.device):
            model = transformers.LlamaForCausalLM(config).to(dtype)
        with torch.no_grad():
            model.get_output_embeddings().weight.mul_(8.0)  # sharper label distributions: argmax comparisons mean something
    return model.to(args.device).eval(), tokenizer, name


def workload(args: argparse.Namespace) -> Tuple[List[str], List[str], List[List[str]], List[str]]:
    """(prompts, labels, noisy-channel prompt lists, demonstration texts)."""
    dataset = int(args.dataset) if args.dataset.isdigit() else args.dataset
    experimentor = Normal(k=args.k, datasets=[dataset])[0]
    limit = args.prompts or None
    demonstrations = experimentor.demonstration_set()
    texts = [text for i in range(len(demonstrations)) for text in demonstrations[i][0]]
    labels = experimentor.get_label_space()
    if args.workload == "suite":
        import StaICC
        prompts: Dict[str, None] = {}
        for name in ("Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens"):
            bench = getattr(StaICC, name)(k=args.k, datasets=[dataset]) if name != "Triplet_bias" else None
            parts = [bench] if bench is not None else [StaICC.Triplet_bias(k=args.k, datasets=[dataset])[part]
                                                       for part in ("contextual", "domain", "post")]
            for part in parts:
                for prompt in part[0].prompt_set():
                    if isinstance(prompt, str):
                        prompts[prompt] = None
        return list(prompts)[:limit], labels, [], texts
    noisy = Normal(k=args.k, noisy_channel=True, datasets=[dataset])[0].prompt_set()[:limit]
    return experimentor.prompt_set()[:limit], labels, noisy, texts


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


def compare(rows: List[List[float]], reference: List[List[float]]) -> Tuple[float, float]:
    agree = sum(argmax(a) == argmax(b) for a, b in zip(rows, reference)) / len(rows) * 100
    return agree, max(abs(p - q) for a, b in zip(rows, reference) for p, q in zip(a, b))


def main() -> None:
    args = parse_args()
    import torch
    import transformers
    if args.threads:
        torch.set_num_threads(args.threads)
    prompts, labels, noisy, texts = workload(args)
    model, tokenizer, model_name = load_model(args, texts)
    cuda = args.device.startswith("cuda")
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    params = sum(p.numel() for p in model.parameters())
    prompt_tokens = sum(len(ids) for ids in tokenizer(prompts)["input_ids"])
    common = dict(token_budget=args.token_budget, dtype=model.dtype, compile_model=args.compile)

    def scorer(**kwargs: Any) -> CausalLMScorer:
        return CausalLMScorer(model, tokenizer, **common, **kwargs)

    # name -> (quantity, run, scorer or None, reference name, tokens computed if not a scorer)
    methods: Dict[str, Tuple[str, Callable[[], Any], Optional[CausalLMScorer], Optional[str]]] = {}
    methods["per-prompt kernel"] = ("last_token", lambda: kernels.batched_ICL_inference_with_torch_Causal_LM(
        prompts, model, tokenizer, labels), None, None)
    last = scorer()
    methods["batched last_token"] = ("last_token", lambda: last(prompt=prompts, label_space=labels), last,
                                     "per-prompt kernel")
    if args.workload == "normal":
        lm_eval = lm_eval_scorer(model, tokenizer, args.lm_eval_batch)
        if lm_eval is not None:
            methods["lm-eval HFLM"] = ("sequence", lambda: lm_eval(prompts, labels), None, None)
        unshared_seq = scorer(scoring="sequence", share_prefixes=False)
        methods["sequence, unshared rows"] = ("sequence", lambda: unshared_seq(prompt=prompts, label_space=labels),
                                                  unshared_seq, "lm-eval HFLM" if lm_eval else None)
        seq = scorer(scoring="sequence")
        methods["sequence, context shared"] = ("sequence", lambda: seq(prompt=prompts, label_space=labels), seq,
                                               "lm-eval HFLM" if lm_eval else "sequence, unshared rows")
        noisy_plain = scorer(share_prefixes=False)
        methods["noisy channel, unshared"] = ("noisy", lambda: noisy_plain(prompt=noisy, label_space=labels),
                                              noisy_plain, None)
        noisy_shared = scorer()
        methods["noisy channel, prefix-shared"] = ("noisy", lambda: noisy_shared(prompt=noisy, label_space=labels),
                                                   noisy_shared, "noisy channel, unshared")
    for name in filter(None, args.skip.split(",")):
        methods.pop(name.strip(), None)

    times: Dict[str, List[float]] = {name: [] for name in methods}
    results: Dict[str, Any] = {}
    peaks: Dict[str, str] = {}
    for name, (_, run, _, _) in methods.items():  # warm-up round: compiles, caches, first allocations
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        results[name] = run()
        synchronize()
        peaks[name] = (f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if cuda
                       else f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB*")
    for _ in range(args.rounds):
        for name, (_, run, _, _) in methods.items():
            synchronize()
            start = time.perf_counter()
            run()
            synchronize()
            times[name].append(time.perf_counter() - start)

    load = " ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}, "
          f"load average {load}")
    print(f"model: {model_name}, {params / 1e6:.1f} M parameters, vocab {len(tokenizer)}, {model.dtype}, "
          f"device {args.device}, attention {getattr(model.config, '_attn_implementation', '?')}")
    print(f"prompts: {len(prompts)} ({args.workload}, {args.dataset}, k={args.k}), {prompt_tokens} tokens, "
          f"mean {prompt_tokens / len(prompts):.0f}; labels {labels}; noisy-channel queries {len(noisy)}")
    print(f"rounds: {args.rounds} interleaved, fastest shown (other jobs share the machine)\n")
    header = (f"{'method':30} {'quantity':10} {'prompts/s':>10} {'tokens/s':>10} {'wall s':>8} {'FLOP-bound s':>12} "
              f"{'tokens run':>10} {'argmax %':>8} {'max |dp|':>9} {'largest batch':>13} {'peak mem':>9} {'speed-up':>14}")
    print(header)
    print("-" * len(header))
    for name, (quantity, _, engine, reference) in methods.items():
        wall = min(times[name])
        count = len(noisy) if quantity == "noisy" else len(prompts)
        computed = engine.stats.tokens_computed // (args.rounds + 1) if engine is not None else (
            prompt_tokens if name == "per-prompt kernel" else None)
        agree, diff = compare(results[name], results[reference]) if reference in results else (None, None)
        speed = f"{min(times[reference]) / wall:.2f}x {_short(reference)}" if reference in times else ""
        print(f"{name:30} {quantity:10} {count / wall:10.1f} {prompt_tokens * (count / len(prompts)) / wall:10.0f} "
              f"{wall:8.2f} {(2 * params * computed / args.peak_flops) if computed else float('nan'):12.2e} "
              f"{computed if computed else '':>10} {'' if agree is None else f'{agree:.1f}':>8} "
              f"{'' if diff is None else f'{diff:.1e}':>9} "
              f"{engine.largest_batch if engine is not None else '':>13} {peaks[name]:>9} {speed:>14}")
    if not cuda:
        print("\n* CPU: the process's resident-memory high-water mark after the method's first run")
    if "lm-eval HFLM" not in methods and args.workload == "normal":
        print("lm-eval is not installed: pip install lm-eval==0.4.13 to add its row")


def _short(name: str) -> str:
    return {"per-prompt kernel": "kernel", "lm-eval HFLM": "lm-eval", "sequence, unshared rows": "rows",
            "noisy channel, unshared": "unshared"}.get(name, name)


if __name__ == "__main__":
    main()
