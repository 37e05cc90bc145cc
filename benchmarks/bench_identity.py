"""What a trustworthy model identity costs: the hf weights digest (sampled and full) and
the in-memory digest, timed once each on one saved model.

    python benchmarks/make_random_model.py --preset llama-3.2-1b --out /tmp/llama-1b-random
    python benchmarks/bench_identity.py /tmp/llama-1b-random

The first read of a file comes from disk, the next ones from the page cache; both are
printed (``cold`` is only cold when the file is not cached yet).
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from StaICC.backends.hf import in_memory_digest, weights_digest  # noqa: E402


def timed(label: str, function) -> None:
    started = time.perf_counter()
    function()
    print(f"{label:40s} {time.perf_counter() - started:8.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", help="a saved HF model (safetensors)")
    parser.add_argument("--in-memory", action="store_true", help="also load the model and time in_memory_digest")
    args = parser.parse_args()
    size = sum(os.path.getsize(os.path.join(args.directory, n)) for n in os.listdir(args.directory)
               if n.endswith(".safetensors"))
    print(f"{args.directory}: {size / 2**30:.2f} GiB of safetensors")
    timed("weights_digest, sampled (first call)", lambda: weights_digest(args.directory))
    timed("weights_digest, sampled", lambda: weights_digest(args.directory))
    timed("weights_digest, full", lambda: weights_digest(args.directory, full=True))
    if args.in_memory:
        import transformers
        model = transformers.AutoModelForCausalLM.from_pretrained(args.directory)
        count = sum(p.numel() for p in model.parameters())
        timed(f"in_memory_digest ({count / 1e9:.2f} B parameters)", lambda: in_memory_digest(model))


if __name__ == "__main__":
    main()
