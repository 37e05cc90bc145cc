"""``staicc run``: evaluate a backend on sub-benchmarks and write a run directory."""
import argparse
import sys
import time
import warnings
from typing import Any, Dict, Optional

from ..errors import TamperingWarning
from .common import ArgumentError, as_argument_error, dataset_specs, one_line, parse_retriever

def add_run_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="evaluate a model on sub-benchmarks and write a run directory",
                       description="Evaluate a model on StaICC sub-benchmarks.")
    add_selection_arguments(p)
    p.add_argument("--output-dir", metavar="DIR", help="write DIR/results.json (and samples with --log-samples)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --output-dir (its files are removed); without it such a "
                        "directory is refused")
    p.add_argument("--log-samples", nargs="?", const="compact", choices=["compact", "full"], default=None,
                   help="write DIR/samples.jsonl (one record per query) and DIR/samples.columns.json; "
                        "--log-samples=full also stores each prompt's text")
    p.add_argument("--write-out", type=int, default=0, metavar="N",
                   help="print the first N prompts of every sub-benchmark and dataset before running")
    p.add_argument("--show-config", action="store_true",
                   help="print the resolved run (backend, sub-benchmarks, datasets, k, retriever, settings) first")
    p.add_argument("--cache", metavar="FILE", help="SQLite prediction cache: resume, share answers between runs")
    p.add_argument("--batch-size", type=int, metavar="N", help="requests per backend call")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="progress bars on stderr even when it is not a terminal (default: only on a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars on stderr")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything and count the prompts to ask (distinct, already cached); no inference")
    p.add_argument("--shard", metavar="I/N", help="ask only shard I of N of the distinct prompts and store the "
                   "answers in --cache; merge the shard caches with `staicc cache merge` (see docs/scaling.md)")
    p.add_argument("--shard-unit", choices=("query", "call"), default="query",
                   help="what a shard takes whole: a query with all its passes (default; shares prefixes) or a "
                        "backend call of the one-process run (numbers identical to it at any --batch-size)")
    p.add_argument("--launcher", metavar="NAME", help="run every shard: torchrun (also detected from WORLD_SIZE), "
                   "slurm (one array task per shard) or ray[:address=...,shards=N,num_gpus=G,retries=R]")
    p.set_defaults(func=run_command)


def add_selection_arguments(p: Any) -> None:
    """What a run asks: model, sub-benchmarks, datasets, tasks and prompt settings (shared with ``staicc batch``)."""
    from ..backends.registry import backend_names
    p.add_argument("--model", help=f"backend: {', '.join(backend_names())} (default: the tasks' backend, else reference)")
    p.add_argument("--model-args", default="", metavar="K=V,...", help="backend arguments, e.g. pretrained=DIR,dtype=bfloat16")
    p.add_argument("--benchmarks", metavar="NAMES",
                   help="'all' (the standard suite) or comma-separated sub-benchmarks, e.g. all,Order_sens,Format_spread "
                        "(default: the tasks', else Normal)")
    p.add_argument("--datasets", nargs="+", metavar="NAME", help="dataset names or indexes (default: all ten)")
    p.add_argument("--k", type=int, help="demonstrations per query (default: the tasks', else 4, the standard)")
    p.add_argument("--tasks", metavar="NAME|FILE[,...]",
                   help="task files or names (docs/tasks.md), beside --datasets or alone; see staicc tasks list")
    p.add_argument("--include-path", action="append", default=[], metavar="DIR",
                   help="a folder of task files that --tasks can name; may be repeated")
    p.add_argument("--limit", type=int, metavar="N", help="smoke run: first N test items per dataset (non-standard)")
    p.add_argument("--noisy-channel", action="store_true", help="noisy-channel prompts (Normal and the bias benchmarks)")
    p.add_argument("--retriever", metavar="NAME[:K=V,...]", help="choose demonstrations with a retriever (non-standard)")


def run_command(args: argparse.Namespace) -> int:
    """One process, one shard, or every shard through a launcher (:mod:`StaICC.cli.scaleout`)."""
    from .scaleout import launch_of, launched
    launch = launch_of(args)
    return run_once(args) if launch.kind == "single" else launched(args, launch, run_once)


def run_once(args: argparse.Namespace, launch: Any = None) -> int:
    """Check everything, build the model and the sub-benchmarks, run (one shard with a sharded ``launch``), write, print."""
    from ..backends.registry import make_backend, parse_model_args
    from ..subbenchmarks.suite import build_suite, plan_suite, run_suite
    if args.log_samples and not args.output_dir:
        raise ArgumentError("--log-samples needs --output-dir")
    if args.write_out < 0:
        raise ArgumentError(f"--write-out must be >= 0, got {args.write_out}")
    for flag, value in (("--limit", args.limit), ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            raise ArgumentError(f"{flag} must be a positive integer, got {value}")
    if args.k is not None and args.k < 0:
        raise ArgumentError(f"--k must be >= 0, got {args.k}")
    if args.output_dir:
        from ..results.rundir import check_output_dir
        as_argument_error(check_output_dir, args.output_dir, overwrite=args.overwrite)
    datasets = dataset_specs(args.datasets)
    options: Dict[str, Any] = {}
    if args.retriever:
        options["retriever"] = as_argument_error(parse_retriever, args.retriever)
    arguments = as_argument_error(parse_model_args, args.model_args)
    from ..tasks.runs import command_settings
    settings = as_argument_error(command_settings, args.tasks, args.include_path, args.benchmarks, args.k,
                                 args.model, arguments)
    args.benchmarks, args.k, args.model, arguments, recorded = (
        settings[key] for key in ("benchmarks", "k", "model", "arguments", "recorded_arguments"))
    args.task_objects = settings["tasks"]
    if args.task_objects:
        datasets = (datasets or []) + [task.dataset for task in args.task_objects]
    shard = (launch.index, launch.count, args.shard_unit) if launch is not None and launch.sharded else None
    if shard is not None:
        from .launchers import rank_model_arguments
        arguments = rank_model_arguments(args.model, arguments, launch)
    with warnings.catch_warnings():
        if args.retriever or args.limit or any(task.config.run.retriever for task in args.task_objects):
            warnings.simplefilter("ignore", TamperingWarning)
        suite = as_argument_error(_build_suite, build_suite, args, datasets, options)
        backend = as_argument_error(make_backend, args.model, **arguments)
        planned = as_argument_error(plan_suite, backend, suite)
        cache = as_argument_error(_open_cache, args.cache)
        if args.show_config:
            print(_config_text(args, backend, suite, options, arguments))
        if args.write_out:
            print(_write_out(planned, args.write_out))
        if args.dry_run:
            return _dry_run(planned, backend, cache)
        from ..results.provenance import collect, utc_now
        started, started_at = utc_now(), time.perf_counter()
        try:
            result = run_suite(backend, suite=suite, planned=planned, cache=cache, progress=args.progress,
                               requests_per_call=args.batch_size, shard=shard)
        except (ValueError, TypeError, RuntimeError, OSError) as exc:
            from ..cache import CacheError
            print(f"staicc: error: {one_line((str(exc) or type(exc).__name__).splitlines()[0])}", file=sys.stderr)
            if args.cache and not isinstance(exc, CacheError):
                print(f"staicc: the answers given so far are in {one_line(args.cache)}; run the same command to "
                      "resume", file=sys.stderr)
            return 1
        finally:
            backend.close()
            if cache is not None:
                cache.close()
    if shard is not None:
        from .scaleout import print_shard
        return print_shard(result.metadata, args.cache)
    provenance = collect(backend, recorded, started, time.perf_counter() - started_at)
    provenance["suite"] = result.metadata
    if getattr(args, "sharded", None):  # the launcher's shards answered this run: record their plan
        from ..scaleout.shards import one_process_calls, planned_requests, shard_plan
        calls = one_process_calls(backend, planned, args.batch_size) if args.shard_unit == "call" else None
        provenance["shards"] = dict(args.sharded, unit=args.shard_unit, plan_sha256=shard_plan(
            planned_requests(planned), args.sharded["count"], calls).digest)
    from ..results.provenance import run_numerics
    provenance["numerics"] = run_numerics(backend, args.batch_size, result, shards=provenance.get("shards"),
                                          cache=args.cache)
    if args.task_objects:
        from ..tasks.runs import provenance as task_provenance
        provenance["tasks"] = task_provenance(args.task_objects)
    _print_tables(result, args)
    if args.output_dir:
        from ..results.rundir import write_run_dir
        try:
            write_run_dir(args.output_dir, dict(result), provenance, bool(args.log_samples),
                          prompts=args.log_samples == "full")
        except OSError as exc:  # a full disk, a quota, a directory removed under the run
            return _write_failed(args, exc)
        print(f"wrote {one_line(args.output_dir)}/results.json" + (" and samples.jsonl" if args.log_samples else ""))
    return 0


def _config_text(args, backend, suite, options, arguments: Dict[str, Any]) -> str:
    """The resolved run as JSON: what lm-eval's --show_config prints, for this package's settings."""
    import json
    from ..results.provenance import redact
    benchmarks = {}
    for name, bench in suite.items():
        parts = bench.benchmarks() if hasattr(bench, "benchmarks") else {name: bench}
        benchmarks[name] = {part_name: part.dataset_names() for part_name, part in parts.items()}
    retriever = options.get("retriever")
    config = {"backend": args.model, "model_args": redact({k: str(v) for k, v in arguments.items()}),
              "identity": redact(backend.identity()), "benchmarks": benchmarks, "k": args.k,
              "noisy_channel": args.noisy_channel, "limit": args.limit,
              "retriever": retriever.describe() if retriever is not None else None,
              "requests_per_call": args.batch_size or getattr(backend, "requests_per_call", None), "cache": args.cache, "output_dir": args.output_dir,
              "log_samples": args.log_samples}
    return "resolved configuration:\n" + json.dumps(config, indent=1, default=str)


def _write_out(planned, count: int) -> str:
    """The first ``count`` prompts of every (sub-benchmark, dataset), as the model will receive them."""
    lines = []
    for name, runs in planned.items():
        for plan, requests in runs:
            for number, request in enumerate(requests[:count]):
                prompt = request.prompt
                text = "\n---\n".join(prompt) if isinstance(prompt, (list, tuple)) else prompt
                lines.append(f"===== {name} / {plan.dataset}: prompt {number + 1} of {len(requests)} =====")
                lines.append(text)
    return "\n".join(lines)


def _write_failed(args: argparse.Namespace, exc: OSError) -> int:
    """One line saying what was not written and where the answers are (the run's files were left as they were)."""
    print(f"staicc: error: cannot write the run directory {one_line(args.output_dir)}: "
          f"{one_line(exc.strerror or str(exc))}", file=sys.stderr)
    if args.cache:
        print(f"staicc: every answer is in the cache {one_line(args.cache)}: make room and run the same command "
              "again; it writes the results without asking the model again", file=sys.stderr)
    else:
        print("staicc: the answers were not kept; run with --cache FILE to keep them across such failures",
              file=sys.stderr)
    return 1


def _build_suite(build_suite, args, datasets, options):
    from ..metrics import with_own_distribution_metrics
    from ..subbenchmarks.suite import suite_parts
    from ..tasks.runs import apply_metrics, apply_retrievers
    suite = build_suite(args.benchmarks, datasets, args.k, **options)
    for name, bench in suite.items():
        for _key, _part_name, part in suite_parts(name, bench):
            if args.noisy_channel:
                if not part.supports_noisy_channel:
                    raise ValueError(f"{part.benchmark_name} does not support noisy-channel prompts")
                part.re_initialize(args.k, True)
            apply_retrievers(part, args.task_objects)  # a task's settings: after any rebuild, metrics after a limit
            if args.limit:
                part.limit_test_items(args.limit)
            apply_metrics(part, args.task_objects)
            for experimentor in part:  # beside the standard's likelihood and ECE: the same on the model's own distribution
                experimentor.metrics = with_own_distribution_metrics(experimentor.metrics)
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
    from ..cache import open_cache
    return open_cache(path)


def _print_tables(result, args) -> None:
    from ..report import format_table
    from ..report.notices import notices
    metadatas = []
    model = args.model + (f" ({one_line(args.model_args)})" if args.model_args else "")
    from ..subbenchmarks.spec import parts_of
    for name, bench_result in result.items():
        pairs = parts_of(name)
        compound = not (len(pairs) == 1 and pairs[0][1] == name)
        for key, _part_name in pairs:
            part = bench_result[key] if compound else bench_result
            label = f"{name}/{key}" if compound else name
            print(format_table(part, f"{label} (k={args.k}, model={model})"))
            print()
            metadatas.append(part.metadata)
    meta = result.metadata
    print(f"{meta['prompts']} prompts, {meta['distinct_prompts']} distinct, {meta['asked']} asked, "
          f"{meta['from_cache']} from the cache, {meta['seconds']:.2f} s")
    for line in notices(metadatas):  # said once more where a reader of the log looks last
        print(f"staicc: warning: {line}", file=sys.stderr)
