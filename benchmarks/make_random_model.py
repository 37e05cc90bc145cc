"""Save a random-weight causal LM of a real model's shape, with a BPE tokenizer trained on the datasets.

For timing the one-command path (``staicc run --model hf``) where no weights can be
downloaded: throughput depends on the shape, not on the values.

    python benchmarks/make_random_model.py --preset tiny --out runs/tiny-random     # 0.3 M parameters, seconds
    python benchmarks/make_random_model.py --preset small --out runs/small-random   # 27 M parameters
    python benchmarks/make_random_model.py --preset 1b --out runs/llama-1b-random   # 1.2 B, 2.4 GB: for GPUs
    python -m StaICC run --model hf --model-args pretrained=runs/tiny-random --benchmarks all --limit 16

Every preset's tokenizer has a chat template (``StaICC.backends.tiny_models.TINY_CHAT_TEMPLATE``),
so the chat options (``chat=true``, ``system=...``, ``fewshot_as_multiturn=true``,
``scoring=generate``) run on it too.  The 1b preset is the Llama-3.2-1B shape; on a CPU
the whole suite takes hours with it, so start with tiny (a smoke test of the path) or small.
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_kernel import PRESETS, random_llama  # noqa: E402


#: preset -> LlamaConfig arguments (random weights)
SHAPES = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 128, "tie_word_embeddings": True},
    "small": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4,
              "intermediate_size": 1536, "tie_word_embeddings": True},
    "1b": PRESETS["llama-3.2-1b"],
}
#: what each preset weighs with the tokenizer this script trains (tied embeddings counted once);
#: tests/backends/test_tiny_preset.py checks the figures against a built model
SIZES = {"tiny": "0.3 M", "small": "27 M", "1b": "1.2 B"}


def demonstration_texts() -> List[str]:
    """Every demonstration text of the ten datasets (what the tokenizer is trained on), in suite order."""
    from StaICC import Normal
    from bench_kernel import _demonstration_texts
    return [text for experimentor in Normal() for text in _demonstration_texts(experimentor)]


def make_model(preset: str, out: str, texts: Sequence[str], vocab: Optional[int] = None,
               dtype: Optional[str] = None) -> int:
    """Save the preset's random model and its tokenizer (with a chat template) into ``out``; the parameter count."""
    import torch

    from StaICC.backends.tiny_models import TINY_CHAT_TEMPLATE, tiny_tokenizer
    vocab = vocab or (32000 if preset == "1b" else 4096)
    tokenizer = tiny_tokenizer(texts, vocab_size=vocab, chat_template=TINY_CHAT_TEMPLATE)
    shape = dict(SHAPES[preset])
    if preset != "1b":
        shape["vocab_size"] = len(tokenizer)
    model = random_llama(shape, "cuda" if torch.cuda.is_available() else "cpu",
                         getattr(torch, dtype or ("bfloat16" if preset == "1b" else "float32")))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny", choices=sorted(SHAPES),
                        help=f"tiny ({SIZES['tiny']} parameters), small ({SIZES['small']}), 1b (the Llama-3.2-1B "
                             f"shape, {SIZES['1b']})")
    parser.add_argument("--out", required=True, help="directory to write the model and tokenizer into")
    parser.add_argument("--vocab", type=int, default=None,
                        help="trained tokenizer's vocabulary (default: 4096 for tiny and small, 32000 for 1b)")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="default: float32 for tiny and small, bfloat16 for 1b")
    args = parser.parse_args()
    parameters = make_model(args.preset, args.out, demonstration_texts(), args.vocab, args.dtype)
    print(f"saved {parameters / 1e6:.1f} M parameters to {args.out}")


if __name__ == "__main__":
    main()
