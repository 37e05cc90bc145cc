"""On a CUDA machine: the hf backend's default packing is the tree-packed forward, and a run with the
default gives the same standard numbers as one that names packing="tree" (a tiny random Llama from the
tests' helpers, so it needs no weights). Prints one line per check; exits 1 if a check fails.

    python benchmarks/gpu_default_packing.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    import torch
    from backend_helpers import tiny_pair

    from StaICC.backends.hf import HFBackend
    from StaICC.engine.selection import QuerySubset
    from StaICC.subbenchmarks.suite import run_suite

    if not torch.cuda.is_available() and not os.environ.get("STAICC_CHECK_ON_CPU"):
        print("no CUDA device: nothing checked")
        return 1
    model, tokenizer = tiny_pair()
    model = model.to("cuda" if torch.cuda.is_available() else "cpu")
    numbers = {}
    for packing in ("auto", "tree", "prefix"):
        backend = HFBackend(model, tokenizer, model_id="tiny-default-check", packing=packing)
        print(f"packing={packing!r} runs as {backend.scorer.packing!r} on {backend.scorer.device}")
        results = run_suite(backend, benchmarks=["Normal"], datasets=["rotten_tomatoes", "TREC"],
                            test_items=QuerySubset.first(32), progress=False)
        numbers[packing] = results
    same = numbers["auto"] == numbers["tree"]
    print(f"default (auto) resolves to tree: {HFBackend(model, tokenizer, model_id='x').scorer.packing == 'tree'}")
    print(f"default equals packing='tree' bit for bit: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
