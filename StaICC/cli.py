"""Command line: ``python -m StaICC`` / ``staicc`` runs a sub-benchmark with a built-in model.

The default runs Normal with the lexical reference model and prints a per-dataset
table in a few seconds; ``--json`` writes results and metadata.
"""
import argparse
import sys
import time
import warnings
from typing import List, Optional

from .errors import TamperingWarning


def build_parser() -> argparse.ArgumentParser:
    from .benchmark import SUB_BENCHMARKS
    from .reference_model import REFERENCE_MODELS
    parser = argparse.ArgumentParser(prog="staicc", description="Run a StaICC sub-benchmark with a built-in, "
                                     "dependency-free reference model and print the results.")
    parser.add_argument("--benchmark", "-b", default="Normal", choices=sorted(SUB_BENCHMARKS),
                        help="sub-benchmark to run (default: Normal)")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per query (default: 4, the standard)")
    parser.add_argument("--model", default="lexical", choices=sorted(REFERENCE_MODELS),
                        help="built-in inference: 'lexical' in-context learner (default) or 'uniform' chance")
    parser.add_argument("--datasets", nargs="+", metavar="NAME",
                        help="dataset names or indexes (default: the ten standard datasets)")
    parser.add_argument("--noisy-channel", action="store_true", help="noisy-channel prompts (Normal and the bias benchmarks)")
    parser.add_argument("--retriever", help="choose demonstrations with a retriever (zero, fixk, random, bm25, topk, "
                                            "mmr); non-standard")
    parser.add_argument("--json", metavar="PATH", help="also write results and metadata as JSON")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction if hasattr(argparse, "BooleanOptionalAction")
                        else "store_true", default=None, help="progress bar on stderr (default: when a terminal)")
    parser.add_argument("--list-datasets", action="store_true", help="list the standard datasets and exit")
    return parser


def _dataset_specs(names: Optional[List[str]]):
    if names is None:
        return None
    return [int(n) if n.isdigit() else n for n in names]


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. `staicc | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0


def _main(argv: Optional[List[str]] = None) -> int:
    from .benchmark import SUB_BENCHMARKS
    from .datasets import dataset_constants, standard_dataset_names
    from .reference_model import REFERENCE_MODELS
    from .report import format_table
    args = build_parser().parse_args(argv)
    if args.list_datasets:
        for i, name in enumerate(standard_dataset_names()):
            const = dataset_constants(name)
            print(f"{i}  {name:22s} {const['task']:30s} {', '.join(const['label_space'])}")
        return 0
    options = {"datasets": _dataset_specs(args.datasets), "progress": args.progress}
    if args.retriever:
        from .retrieval import retriever_from_name
        options["retriever"] = retriever_from_name(args.retriever)
    cls = SUB_BENCHMARKS[args.benchmark]
    if args.noisy_channel:
        options["noisy_channel"] = True
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            if args.retriever:
                warnings.simplefilter("ignore", TamperingWarning)
            bench = cls(k=args.k, **options)
            result = bench(REFERENCE_MODELS[args.model])
    except (ValueError, TypeError) as exc:
        print(f"staicc: error: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    parts = result.items() if args.benchmark == "Triplet_bias" else [(args.benchmark, result)]
    for name, part in parts:
        print(format_table(part, f"{name} (k={args.k}, model={args.model})"))
        print()
    print(f"{seconds:.2f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(result.to_json())
            fh.write("\n")
    return 0
