"""Prompts per second: the batched CausalLMScorer vs the original one-prompt-at-a-time loop.

Both run the same model on the same real benchmark prompts
(``Normal(k)[dataset].prompt_set()``); the predictions are compared (argmax
agreement, largest absolute probability difference).

    python benchmarks/bench_kernel.py                       # CPU, tiny random model (no download)
    python benchmarks/bench_kernel.py --device cuda --model /path/to/local/hf/model --prompts 1024

The tiny model is a randomly initialised 2-layer Llama with a BPE tokenizer
trained on the dataset's demonstration texts: its predictions are meaningless
but its shapes and code paths are a real model's.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from StaICC import Normal  # noqa: E402
from StaICC.prefabricate_inference import model_kernel  # noqa: E402
from StaICC.prefabricate_inference.fast_kernel import CausalLMScorer  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="rotten_tomatoes", help="benchmark dataset name or index")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per prompt")
    parser.add_argument("--prompts", type=int, default=256, help="how many of the dataset's prompts to score")
    parser.add_argument("--model", default=None, help="local HuggingFace model directory (default: tiny random model)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model dtype (default: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--scoring", default="last_token", choices=["last_token", "first_token", "sequence"])
    parser.add_argument("--token-budget", type=int, default=None, help="tokens per batch (default: the scorer's)")
    parser.add_argument("--batch-size", type=int, default=None, help="max sequences per batch")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each side; the median is reported")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    return parser.parse_args()


def load_model(args: argparse.Namespace, texts: List[str]) -> Tuple[Any, Any]:
    import torch
    dtype_name = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    dtype = getattr(torch, dtype_name)
    if args.model is None:
        from StaICC.prefabricate_inference.tiny_models import tiny_causal_lm, tiny_tokenizer
        tokenizer = tiny_tokenizer(texts + ["sentiment: review: sentence: negative positive\n"] * 20)
        model = tiny_causal_lm("llama", vocab_size=len(tokenizer))
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        import transformers
        dtype_keyword = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
        model = AutoModelForCausalLM.from_pretrained(args.model, **{dtype_keyword: dtype})
    return model.to(device=args.device, dtype=dtype).eval(), tokenizer


def timed(run: Callable[[], Any], repeat: int, synchronize: Callable[[], None]) -> Tuple[float, Any]:
    """Median wall time over ``repeat`` runs after one warm-up, and the last result."""
    result = run()
    times = []
    for _ in range(repeat):
        synchronize()
        start = time.perf_counter()
        result = run()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def compare(a: List[List[float]], b: List[List[float]]) -> Tuple[float, float]:
    """(argmax agreement in %, largest absolute probability difference)."""
    def top(row: List[float]) -> int:
        return max(range(len(row)), key=row.__getitem__)
    agree = sum(top(x) == top(y) for x, y in zip(a, b)) / len(a) * 100
    return agree, max(abs(p - q) for x, y in zip(a, b) for p, q in zip(x, y))


def main() -> None:
    args = parse_args()
    import torch
    import transformers
    if args.threads:
        torch.set_num_threads(args.threads)
    dataset = int(args.dataset) if args.dataset.isdigit() else args.dataset
    experimentor = Normal(k=args.k, datasets=[dataset])[0]
    prompts = experimentor.prompt_set()[:args.prompts]
    labels = experimentor.get_label_space()
    demonstrations = experimentor.demonstration_set()
    texts = [text for i in range(len(demonstrations)) for text in demonstrations[i][0]]
    model, tokenizer = load_model(args, texts)
    synchronize = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    lengths = [len(ids) for ids in tokenizer(prompts)["input_ids"]]

    scorer = CausalLMScorer(model, tokenizer, scoring=args.scoring, token_budget=args.token_budget,
                            batch_size=args.batch_size, dtype=model.dtype)
    slow_s, slow = timed(lambda: model_kernel.batched_ICL_inference_with_torch_Causal_LM(prompts, model, tokenizer, labels),
                         args.repeat, synchronize)
    fast_s, fast = timed(lambda: scorer(prompt=prompts, label_space=labels), args.repeat, synchronize)
    agree, diff = compare(fast, slow)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    print(f"model: {args.model or 'tiny random llama (2 layers, hidden 64)'}, vocab {len(tokenizer)}, "
          f"{model.dtype}, device {args.device}")
    print(f"prompts: {len(prompts)} from {experimentor.dataset_name} (k={args.k}), "
          f"tokens mean {sum(lengths) / len(lengths):.0f}, max {max(lengths)}; scoring {args.scoring}")
    print(f"one prompt at a time (model_kernel): {len(prompts) / slow_s:9.1f} prompts/s  ({slow_s:.2f} s)")
    print(f"CausalLMScorer (batched):           {len(prompts) / fast_s:9.1f} prompts/s  ({fast_s:.2f} s)")
    print(f"speed-up: {slow_s / fast_s:.2f}x")
    print(f"argmax agreement: {agree:.2f}%   max |prob difference|: {diff:.2e}"
          + ("   (the standard kernel scores only the last label token)" if args.scoring != "last_token" else ""))


if __name__ == "__main__":
    main()
