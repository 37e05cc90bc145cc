"""Command line: ``staicc run|compare|report`` and, with no command, the built-in main job.

``python -m StaICC`` (no arguments) prints the Normal table of the built-in lexical model,
as it always did; the original flags (``--benchmark``, ``--k``, ``--json`` ...) still work.
``staicc run --model hf --model-args pretrained=DIR ...`` evaluates any backend on any
sub-benchmarks and writes a run directory.  Every argument is checked before any
inference: a bad one prints one line and exits with status 2.
"""
import argparse
import sys
import time
import warnings
from typing import Any, Dict, List, Optional

from .errors import TamperingWarning

COMMANDS = ("run", "compare", "report", "tasks")


class ArgumentError(Exception):
    """A command-line argument is wrong: printed as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an argument error is one line on stderr and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(message)


#: every character str.splitlines() breaks at, shown escaped so that an error stays one line
_LINE_BREAKS = {ord(c): ascii(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(message: str) -> str:
    """``message`` with line-breaking characters (an argument may hold any) written as escapes."""
    return message.translate(_LINE_BREAKS)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            return _command(argv)
        return _legacy(argv)
    except ArgumentError as exc:
        print(f"staicc: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `staicc | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("staicc: interrupted; answers given so far are in the cache (if one was used)", file=sys.stderr)
        return 130


def _command(argv: List[str]) -> int:
    parser = OneLineParser(prog="staicc", description="The StaICC benchmark: run models, compare runs, report.")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    add_run_parser(sub)
    from .report.commands import add_compare_parser, add_report_parser
    add_compare_parser(sub)
    add_report_parser(sub)
    from .cli_tasks_draft import add_tasks_parser
    add_tasks_parser(sub, OneLineParser)
    args = parser.parse_args(argv)
    return args.func(args)


# ----------------------------------------------------------------------------
# staicc run
# ----------------------------------------------------------------------------
def add_run_parser(sub: Any) -> None:
    from .backends.registry import backend_names
    p = sub.add_parser("run", help="evaluate a model on sub-benchmarks and write a run directory",
                       description="Evaluate a model on StaICC sub-benchmarks.")
    p.add_argument("--model", help=f"backend: {', '.join(backend_names())} (default: the tasks' backend, else reference)")
    p.add_argument("--model-args", default="", metavar="K=V,...", help="backend arguments, e.g. pretrained=DIR,dtype=bfloat16")
    p.add_argument("--benchmarks", metavar="NAMES",
                   help="'all' (the standard suite) or comma-separated sub-benchmarks (default: the tasks', else Normal)")
    p.add_argument("--datasets", nargs="+", metavar="NAME", help="dataset names or indexes (default: all ten)")
    p.add_argument("--k", type=int, help="demonstrations per query (default: the tasks', else 4, the standard)")
    p.add_argument("--tasks", metavar="NAME|FILE[,...]",
                   help="task files or names (docs/tasks.md), beside --datasets or alone; see staicc tasks list")
    p.add_argument("--include-path", action="append", default=[], metavar="DIR",
                   help="a folder of task files that --tasks can name; may be repeated")
    p.add_argument("--output-dir", metavar="DIR", help="write DIR/results.json (and samples with --log-samples)")
    p.add_argument("--log-samples", action="store_true", help="write DIR/samples.jsonl: one record per query")
    p.add_argument("--cache", metavar="FILE", help="SQLite prediction cache: resume, share answers between runs")
    p.add_argument("--limit", type=int, metavar="N", help="smoke run: first N test items per dataset (non-standard)")
    p.add_argument("--batch-size", type=int, metavar="N", help="requests per backend call")
    p.add_argument("--noisy-channel", action="store_true", help="noisy-channel prompts (Normal and the bias benchmarks)")
    p.add_argument("--retriever", metavar="NAME[:K=V,...]", help="choose demonstrations with a retriever (non-standard)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="progress bars on stderr even when it is not a terminal (default: only on a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars on stderr")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything and count the prompts to ask (distinct, already cached); no inference")
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Check everything, build the model and the sub-benchmarks, run, write, print."""
    from .backends.registry import make_backend, parse_model_args
    from .suite import build_suite, plan_suite, run_suite
    if args.log_samples and not args.output_dir:
        raise ArgumentError("--log-samples needs --output-dir")
    for flag, value in (("--limit", args.limit), ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            raise ArgumentError(f"{flag} must be a positive integer, got {value}")
    if args.k is not None and args.k < 0:
        raise ArgumentError(f"--k must be >= 0, got {args.k}")
    if args.output_dir:
        from .results.rundir import check_output_dir
        _as_argument_error(check_output_dir, args.output_dir)
    datasets = _dataset_specs(args.datasets)
    options: Dict[str, Any] = {}
    if args.retriever:
        options["retriever"] = _as_argument_error(_retriever, args.retriever)
    arguments = _as_argument_error(parse_model_args, args.model_args)
    from .tasks.runs import command_settings
    settings = _as_argument_error(command_settings, args.tasks, args.include_path, args.benchmarks, args.k,
                                  args.model, arguments)
    args.benchmarks, args.k, args.model, arguments = (settings[key] for key in ("benchmarks", "k", "model", "arguments"))
    args.task_objects = settings["tasks"]
    if args.task_objects:
        datasets = (datasets or []) + [task.dataset for task in args.task_objects]
    with warnings.catch_warnings():
        if args.retriever or args.limit or any(t.config.run.retriever for t in args.task_objects):
            warnings.simplefilter("ignore", TamperingWarning)
        suite = _as_argument_error(_build_suite, build_suite, args, datasets, options)
        backend = _as_argument_error(make_backend, args.model, **arguments)
        if args.batch_size is not None:
            backend.batch_size = args.batch_size
        planned = _as_argument_error(plan_suite, backend, suite)
        cache = _as_argument_error(_open_cache, args.cache)
        if args.dry_run:
            return _dry_run(planned, backend, cache)
        from .results.provenance import collect, utc_now
        started, started_at = utc_now(), time.perf_counter()
        try:
            result = run_suite(backend, suite=suite, planned=planned, cache=cache, progress=args.progress)
        except (ValueError, TypeError, RuntimeError) as exc:
            print(f"staicc: error: {str(exc).splitlines()[0]}", file=sys.stderr)
            if args.cache:
                print(f"staicc: the answers given so far are in {args.cache}; run the same command to resume",
                      file=sys.stderr)
            return 1
        finally:
            backend.close()
            if cache is not None:
                cache.close()
    provenance = collect(backend, arguments, started, time.perf_counter() - started_at)
    provenance["suite"] = result.metadata
    if args.task_objects:
        from .tasks.runs import provenance as task_provenance
        provenance["tasks"] = task_provenance(args.task_objects)
    _print_tables(result, args)
    if args.output_dir:
        from .results.rundir import write_run_dir
        write_run_dir(args.output_dir, dict(result), provenance, args.log_samples)
        print(f"wrote {args.output_dir}/results.json" + (" and samples.jsonl" if args.log_samples else ""))
    return 0


def _build_suite(build_suite, args, datasets, options):
    from .tasks.runs import apply_metrics, apply_retrievers
    suite = build_suite(args.benchmarks, datasets, args.k, **options)
    for name, bench in suite.items():
        parts = bench.benchmarks().values() if hasattr(bench, "benchmarks") else [bench]
        for part in parts:
            if args.noisy_channel:
                if not part.supports_noisy_channel:
                    raise ValueError(f"{part.benchmark_name} does not support noisy-channel prompts")
                part.re_initialize(args.k, True)
            apply_retrievers(part, args.task_objects)
            if args.limit:
                part.limit_test_items(args.limit)
            apply_metrics(part, args.task_objects)
    return suite


def _dry_run(planned, backend, cache) -> int:
    """Print what a run would send: prompts, distinct prompts, and how many the cache already answers."""
    requests = {}
    total = 0
    for runs in planned.values():
        for _plan, run_requests in runs:
            total += len(run_requests)
            for request in run_requests:
                requests.setdefault(request.key(), request)
    cached = 0
    if cache is not None:
        cached = sum(answer is not None for answer in cache.lookup(backend.fingerprint(), list(requests.values())))
        cache.close()
    print(f"{total} prompts, {len(requests)} distinct, {cached} already in the cache, "
          f"{len(requests) - cached} to ask (model {backend.fingerprint()[:12]})")
    return 0


def _open_cache(path: Optional[str]):
    """The run's cache, opened before any inference so that a foreign file is an argument error."""
    if path is None:
        return None
    from .cache import open_cache
    return open_cache(path)


def _retriever(spec: str):
    from .backends.registry import parse_model_args
    from .retrieval import retriever_from_name
    name, _, text = spec.partition(":")
    arguments = {key: _number_or_text(value) for key, value in parse_model_args(text).items()}
    try:
        return retriever_from_name(name, **arguments)
    except TypeError as exc:
        raise ValueError(f"retriever {name!r}: {exc}") from None


def _number_or_text(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _as_argument_error(function, *args, **kwargs):
    """Call ``function`` (a check or a construction, before any inference); its ValueError,
    TypeError or ImportError (a missing extra) becomes a one-line argument error."""
    try:
        return function(*args, **kwargs)
    except (ValueError, TypeError, ImportError, OSError) as exc:
        raise ArgumentError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def _print_tables(result, args) -> None:
    from .report import format_table
    model = args.model + (f" ({args.model_args})" if args.model_args else "")
    for name, bench_result in result.items():
        parts = bench_result.items() if name == "Triplet_bias" else [(name, bench_result)]
        for part_name, part in parts:
            label = part_name if name != "Triplet_bias" else f"Triplet_bias/{part_name}"
            note = "" if part.metadata.get("standard", True) else "  [NOT STANDARD: " + \
                "; ".join(sorted({s for v in part.metadata.get("non_standard_settings", {}).values() for s in v})) + "]"
            print(format_table(part, f"{label} (k={args.k}, model={model}){note}"))
            print()
    meta = result.metadata
    print(f"{meta['prompts']} prompts, {meta['distinct_prompts']} distinct, {meta['asked']} asked, "
          f"{meta['from_cache']} from the cache, {meta['seconds']:.2f} s")


# ----------------------------------------------------------------------------
# no command: the built-in main job, with the original flags
# ----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from .benchmark import SUB_BENCHMARKS
    from .reference_model import REFERENCE_MODELS
    parser = OneLineParser(prog="staicc", description="Run a StaICC sub-benchmark with a built-in, dependency-free "
                           "reference model and print the results. Commands: staicc run|compare|report --help.")
    parser.add_argument("--benchmark", "-b", default="Normal", choices=sorted(SUB_BENCHMARKS),
                        help="sub-benchmark to run (default: Normal)")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per query (default: 4, the standard)")
    parser.add_argument("--model", default="lexical", choices=sorted(REFERENCE_MODELS),
                        help="built-in inference: 'lexical' in-context learner (default) or 'uniform' chance")
    parser.add_argument("--datasets", nargs="+", metavar="NAME",
                        help="dataset names or indexes (default: the ten standard datasets)")
    parser.add_argument("--noisy-channel", action="store_true", help="noisy-channel prompts (Normal and the bias benchmarks)")
    parser.add_argument("--retriever", metavar="NAME[:K=V,...]", help="choose demonstrations with a retriever "
                        "(zero, fixk, random, bm25, topk, mmr); non-standard")
    parser.add_argument("--json", metavar="PATH", help="also write results and metadata as JSON")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when a terminal)")
    parser.add_argument("--list-datasets", action="store_true", help="list the standard datasets and exit")
    return parser


def _dataset_specs(names: Optional[List[str]]) -> Optional[List[Any]]:
    """Names stay names; plain ASCII digits are benchmark indexes; each is resolved now."""
    if names is None:
        return None
    from .datasets import resolve_dataset
    specs = [int(n) if n.isascii() and n.isdigit() else n for n in names]
    return [_as_argument_error(resolve_dataset, spec) for spec in specs]


def _legacy(argv: List[str]) -> int:
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
    options: Dict[str, Any] = {"datasets": _dataset_specs(args.datasets), "progress": args.progress}
    if args.retriever:
        options["retriever"] = _as_argument_error(_retriever, args.retriever)
    if args.noisy_channel:
        options["noisy_channel"] = True
    if args.json:
        from .results.rundir import check_output_dir
        import os
        _as_argument_error(check_output_dir, os.path.dirname(os.path.abspath(args.json)))
    started = time.perf_counter()
    with warnings.catch_warnings():
        if args.retriever:
            warnings.simplefilter("ignore", TamperingWarning)
        bench = _as_argument_error(SUB_BENCHMARKS[args.benchmark], k=args.k, **options)
        result = _as_argument_error(bench, REFERENCE_MODELS[args.model])
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
