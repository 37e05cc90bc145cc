"""Save a random-weight causal LM of a real model's shape, with a BPE tokenizer trained on the datasets.

For timing the one-command path (``staicc run --model hf``) where no weights can be
downloaded: throughput depends on the shape, not on the values.

    python benchmarks/make_random_model.py --preset tiny --out runs/tiny-random     # seconds; minutes per suite
    python benchmarks/make_random_model.py --preset small --out runs/small-random   # ~30 M parameters
    python benchmarks/make_random_model.py --preset 1b --out runs/llama-1b-random   # 1.2 B, 2.4 GB: for GPUs
    python -m StaICC run --model hf --model-args pretrained=runs/tiny-random --benchmarks all --output-dir run

The 1b preset is the Llama-3.2-1B shape; on a CPU the whole suite takes hours with it, so
start with tiny (a smoke test of the path) or small.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_kernel import PRESETS, random_llama, suite_groups  # noqa: E402


#: preset -> LlamaConfig arguments (random weights)
SHAPES = {
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, tie_word_embeddings=True),
    "small": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4,
                  intermediate_size=1536, tie_word_embeddings=True),
    "1b": PRESETS["llama-3.2-1b"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny", choices=sorted(SHAPES),
                        help="tiny (~1 M parameters), small (~30 M), 1b (the Llama-3.2-1B shape, 1.2 B)")
    parser.add_argument("--out", required=True, help="directory to write the model and tokenizer into")
    parser.add_argument("--vocab", type=int, default=None,
                        help="trained tokenizer's vocabulary (default: 4096 for tiny and small, 32000 for 1b)")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="default: float32 for tiny and small, bfloat16 for 1b")
    args = parser.parse_args()
    import torch

    from StaICC.backends.tiny_models import tiny_tokenizer
    _, texts = suite_groups(list(range(10)), 4, 0)
    vocab = args.vocab or (32000 if args.preset == "1b" else 4096)
    tokenizer = tiny_tokenizer(texts, vocab_size=vocab)
    shape = dict(SHAPES[args.preset])
    if args.preset != "1b":
        shape["vocab_size"] = len(tokenizer)
    model = random_llama(shape, "cuda" if torch.cuda.is_available() else "cpu", getattr(torch, args.dtype or ("bfloat16" if args.preset == "1b" else "float32")))
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"saved {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters to {args.out}")


if __name__ == "__main__":
    main()
