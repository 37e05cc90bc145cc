"""Time demonstration retrievers: 1024 queries over 4096 demonstrations.

Usage:  python benchmarks/bench_retrieval.py [--source auto|staicc|bundled|synthetic]
                                             [--dataset GLUE-SST2] [--k 4] [--repeat 3]

Data, in the order ``auto`` tries them:
  staicc     the package's loader: demonstration set (4096) and calibration set
             (1024) as queries, or the test set (512) repeated to 1024;
  bundled    the raw rows of the bundled data file, split 1024 / 4096 (no
             loader needed; same texts, not necessarily the standard split);
  synthetic  Zipf-like sentences from a fixed vocabulary, drawn with StableRandom.
Each figure is the best of ``--repeat`` runs of ``build_sampler`` (index
building included).
"""
import argparse
import gzip
import json
import os
import sys
import time
from typing import Callable, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from StaICC.retrieval import (  # noqa: E402
    BM25Retriever, FixKRetriever, MMRRetriever, RandomRetriever, Retriever, ZeroRetriever,
)
from StaICC.rng import StableRandom  # noqa: E402

Rows = List[Tuple[List[str], Optional[str]]]
N_QUERIES = 1024
N_DEMONSTRATIONS = 4096
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "StaICC", "data")


def load_staicc(dataset: str) -> Tuple[Rows, Rows]:
    """Real standard split through the package loader (raises if not available yet)."""
    from StaICC import Normal  # the core package; may not exist yet

    experiment = Normal(datasets=[dataset])[0]
    demos = experiment.demonstration_set()
    source = experiment.calibration_set()
    if len(source) < N_QUERIES:
        source = experiment.test_set()
    queries = [source[i % len(source)] for i in range(N_QUERIES)]
    return [demos[i] for i in range(len(demos))], queries


def load_bundled(dataset: str) -> Tuple[Rows, Rows]:
    """Raw rows of the bundled data file: first 1024 as queries, next 4096 as demonstrations."""
    with open(os.path.join(DATA_DIR, "manifest.json"), encoding="utf-8") as handle:
        file_name = json.load(handle)["files"][dataset]["file"]
    with gzip.open(os.path.join(DATA_DIR, file_name), "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    table = [(list(row[1]), str(row[2])) for row in rows]  # [id, [inputs], label]
    if len(table) < N_QUERIES + 16:
        raise ValueError(f"{file_name} has only {len(table)} rows")
    return table[N_QUERIES:N_QUERIES + N_DEMONSTRATIONS], table[:N_QUERIES]


def load_synthetic(_: str = "") -> Tuple[Rows, Rows]:
    """Zipf-like sentences (frequent function words, a long tail) of 5 to 30 words."""
    stream = StableRandom()
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "de", "pa", "go", "zu"]
    vocabulary = [a + b + c for a in syllables for b in syllables for c in syllables][:1500]
    labels = ["negative", "positive"]

    def sentence() -> str:
        length = stream.int_in_range(5, 31)
        return " ".join(vocabulary[int(len(vocabulary) * stream.next_float() ** 3)] for _ in range(length))

    demos = [([sentence()], labels[i % 2]) for i in range(N_DEMONSTRATIONS)]
    queries = [([sentence()], None) for _ in range(N_QUERIES)]
    return demos, queries


LOADERS: Sequence[Tuple[str, Callable[[str], Tuple[Rows, Rows]]]] = (
    ("staicc", load_staicc), ("bundled", load_bundled), ("synthetic", load_synthetic),
)


def load(source: str, dataset: str) -> Tuple[str, Rows, Rows]:
    for name, loader in LOADERS:
        if source in ("auto", name):
            try:
                demos, queries = loader(dataset)
                return name, demos, queries
            except Exception as error:  # noqa: BLE001 - report and fall back
                if source != "auto":
                    raise
                print(f"[{name}] not available ({type(error).__name__}: {error}); falling back")
    raise ValueError(f"unknown source {source!r}")


def best_time(retriever: Retriever, demos: Rows, queries: Rows, k: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        sampler = retriever.build_sampler(demos, queries, k)
        best = min(best, time.perf_counter() - start)
        assert len(sampler) == len(queries)
    return best


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="auto", choices=["auto"] + [name for name, _ in LOADERS])
    parser.add_argument("--dataset", default="GLUE-SST2")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    source, demos, queries = load(args.source, args.dataset)
    words = sum(len(" ".join(inputs).split()) for inputs, _ in demos) / len(demos)
    print(f"data: {source} ({args.dataset if source != 'synthetic' else 'synthetic'}), {len(queries)} queries, "
          f"{len(demos)} demonstrations, {words:.1f} words per demonstration, k={args.k}, "
          f"Python {sys.version.split()[0]}")
    retrievers = [ZeroRetriever(), FixKRetriever(list(range(args.k))), RandomRetriever(),
                  RandomRetriever(balanced=True), BM25Retriever(), BM25Retriever(balanced=True),
                  MMRRetriever(), MMRRetriever(balanced=True)]
    print(f"{'retriever':<34}{'s / 1024 queries':>18}{'queries / s':>14}")
    for retriever in retrievers:
        seconds = best_time(retriever, demos, queries, args.k, args.repeat)
        label = type(retriever).__name__ + ("(balanced=True)" if getattr(retriever, "balanced", False) else "")
        per_1024 = seconds * N_QUERIES / len(queries)
        print(f"{label:<34}{per_1024:>18.3f}{len(queries) / seconds:>14.0f}")


if __name__ == "__main__":
    main()
