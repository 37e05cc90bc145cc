"""``staicc`` with no command: the built-in main job, with the original release's flags."""
import argparse
import sys
import time
import warnings
from typing import Any, Dict, List

from ..errors import TamperingWarning
from .common import ArgumentError, OneLineParser, as_argument_error, dataset_specs, one_line, parse_retriever


def build_parser() -> argparse.ArgumentParser:
    from ..subbenchmarks.builtin import SUB_BENCHMARKS
    from ..backends.reference_model import REFERENCE_MODELS
    from .common import COMMANDS
    from ..retrieval import RETRIEVERS
    parser = OneLineParser(prog="staicc", description="Run a StaICC sub-benchmark with a built-in, dependency-free "
                           "reference model and print the results. Commands (each with --help): "
                           f"staicc {'|'.join(COMMANDS)}.")
    parser.add_argument("--benchmark", "-b", default="Normal", choices=sorted(SUB_BENCHMARKS),
                        help="sub-benchmark to run (default: Normal)")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per query (default: 4, the standard)")
    parser.add_argument("--model", default="lexical", choices=sorted(REFERENCE_MODELS),
                        help="built-in inference: 'lexical' in-context learner (default) or 'uniform' chance")
    parser.add_argument("--datasets", nargs="+", metavar="NAME",
                        help="dataset names or indexes (default: the ten standard datasets)")
    parser.add_argument("--noisy-channel", action="store_true", help="noisy-channel prompts (Normal and the bias benchmarks)")
    parser.add_argument("--retriever", metavar="NAME[:K=V,...]", help="choose demonstrations with a retriever "
                        f"({', '.join(RETRIEVERS)}); non-standard")
    parser.add_argument("--json", metavar="PATH", help="also write results and metadata as JSON")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when a terminal)")
    parser.add_argument("--list-datasets", action="store_true", help="list the standard datasets and exit")
    return parser


def main_job(argv: List[str]) -> int:
    from ..subbenchmarks.builtin import SUB_BENCHMARKS
    from ..datasets import dataset_constants, standard_dataset_names
    from ..backends.reference_model import REFERENCE_MODELS
    from ..report import format_table
    args = build_parser().parse_args(argv)
    if args.list_datasets:
        for i, name in enumerate(standard_dataset_names()):
            const = dataset_constants(name)
            print(f"{i}  {name:22s} {const['task']:30s} {', '.join(const['label_space'])}")
        return 0
    options: Dict[str, Any] = {"datasets": dataset_specs(args.datasets), "progress": args.progress}
    if args.retriever:
        options["retriever"] = as_argument_error(parse_retriever, args.retriever)
    if args.noisy_channel:
        options["noisy_channel"] = True
    if args.json:
        _check_json_path(args.json)
    started = time.perf_counter()
    with warnings.catch_warnings():
        if args.retriever:
            warnings.simplefilter("ignore", TamperingWarning)
        bench = as_argument_error(SUB_BENCHMARKS[args.benchmark], k=args.k, **options)
        result = as_argument_error(bench, REFERENCE_MODELS[args.model])
    seconds = time.perf_counter() - started
    from ..spec import unfold
    for unfolded in unfold({args.benchmark: result}):
        print(format_table(unfolded.value, f"{unfolded.key} (k={args.k}, model={args.model})"))
        print()
    print(f"{seconds:.2f} s")
    if args.json:
        from ..results.safe_files import write_text
        try:
            write_text(args.json, result.to_json() + "\n")
        except OSError as exc:
            print(f"staicc: error: cannot write {one_line(args.json)}: {one_line(exc.strerror or str(exc))} "
                  "(the tables above are the results)", file=sys.stderr)
            return 1
    return 0


def _check_json_path(path: str) -> None:
    """Before any work: ``--json`` names a file that can be written (not a directory)."""
    import os
    from ..results.rundir import check_output_dir
    if os.path.isdir(path):
        raise ArgumentError(f"--json {path} is a directory; give a file name such as {os.path.join(path, 'results.json')}")
    as_argument_error(check_output_dir, os.path.dirname(os.path.abspath(path)))
