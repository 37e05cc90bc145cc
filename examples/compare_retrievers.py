"""Compare demonstration retrievers (Random, BM25, MMR) with the standard sampler.

    python examples/compare_retrievers.py [DATASET ...]     # default: rotten_tomatoes TREC

Each retriever chooses k = 4 demonstrations per test query from the demonstration
split; the built-in reference model ``StaICC.backends.reference_model.lexical_icl`` (a
dependency-free lexical in-context learner) answers.  The "standard" row uses the
standard's random sampler with R = 2 (1024 queries); a retriever gives one
demonstration set per test item (R = 1, 512 queries), and its results are marked
non-standard.  Swap ``lexical_icl`` for your own ``f(prompt, label_space)``.
"""
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from StaICC import Normal  # noqa: E402
from StaICC.errors import TamperingWarning  # noqa: E402
from StaICC.backends.reference_model import lexical_icl  # noqa: E402
from StaICC.retrieval import BM25Retriever, MMRRetriever, RandomRetriever  # noqa: E402

RETRIEVERS = [
    ("standard sampler", None),
    ("Random (seed 42)", RandomRetriever(seed=42)),
    ("BM25", BM25Retriever()),
    ("MMR (lambda 0.5)", MMRRetriever(lambda_=0.5)),
]


def main(datasets) -> None:
    started = time.perf_counter()
    results = {}  # (retriever, dataset) -> (accuracy, macro_F1, queries, standard)
    for label, retriever in RETRIEVERS:
        bench = Normal(datasets=datasets, retriever=retriever)
        queries = [len(e) for e in bench]
        result = bench(lexical_icl)
        for name, q in zip(bench.dataset_names(), queries):
            metrics = result["Divided results"][name]
            results[label, name] = (metrics["accuracy"], metrics["macro_F1"], q, result.metadata["standard"])

    names = list(dict.fromkeys(name for _label, name in results))
    header = f"{'retriever':<18}" + "".join(f"{name + ' acc':>20}{name + ' F1':>20}" for name in names) + \
        f"{'mean acc':>10}{'mean F1':>10}  queries/dataset  standard"
    print(f"lexical_icl, k = 4, datasets: {', '.join(names)}")
    print(header)
    print("-" * len(header))
    for label, _retriever in RETRIEVERS:
        cells = [results[label, name] for name in names]
        line = f"{label:<18}" + "".join(f"{acc:>20.4f}{f1:>20.4f}" for acc, f1, _q, _s in cells)
        line += f"{sum(c[0] for c in cells) / len(cells):>10.4f}{sum(c[1] for c in cells) / len(cells):>10.4f}"
        line += f"  {cells[0][2]:>15}  {cells[0][3]}"
        print(line)
    print(f"\ndone in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    warnings.simplefilter("ignore", TamperingWarning)  # retrievers are non-standard on purpose
    main(sys.argv[1:] or ["rotten_tomatoes", "TREC"])
