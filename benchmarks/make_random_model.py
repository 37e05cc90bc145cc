"""Save a random-weight causal LM of a real model's shape, with a BPE tokenizer trained on the datasets.

For timing the one-command path (``staicc run --model hf``) where no weights can be
downloaded: throughput depends on the shape, not on the values.

    python benchmarks/make_random_model.py --preset llama-3.2-1b --out /tmp/llama-1b-random
    python -m StaICC run --model hf --model-args pretrained=/tmp/llama-1b-random --benchmarks all --output-dir run
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_kernel import PRESETS, random_llama, suite_groups  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="llama-3.2-1b", choices=sorted(PRESETS))
    parser.add_argument("--out", required=True, help="directory to write the model and tokenizer into")
    parser.add_argument("--vocab", type=int, default=32000, help="trained tokenizer's vocabulary")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    args = parser.parse_args()
    import torch

    from StaICC.backends.tiny_models import tiny_tokenizer
    _, texts = suite_groups(list(range(10)), 4, 0)
    tokenizer = tiny_tokenizer(texts, vocab_size=args.vocab)
    model = random_llama(PRESETS[args.preset], "cuda" if torch.cuda.is_available() else "cpu",
                         getattr(torch, args.dtype))
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"saved {sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters to {args.out}")


if __name__ == "__main__":
    main()
