"""``staicc run``'s arguments resolved once into a frozen :class:`RunConfig`, and the run built from it.

Every argument is checked here, before any model loads: a bad one is a one-line
:class:`~StaICC.cli.common.ArgumentError` (exit status 2).  The sub-benchmarks are then
built from the configuration in one step (k, noisy channel, retrievers, test items and
task metrics given at construction; nothing is changed on them afterwards), and the
backend is made so that it loads its model only when a request must be asked
(:func:`~StaICC.backends.registry.planned_backend`).  Task files are read only when
``--tasks`` names some.
"""
import argparse
from typing import Any, Dict, Optional, Tuple

from ..engine.selection import Everything, Nothing, QuerySubset, Selection
from ..runs.build import build_suite_of  # noqa: F401  (the run's sub-benchmarks: built by the runs floor)
from ..runs.config import RunConfig
from ..standard import DEFAULT_K
from ..validation import check, Integer
from .common import ArgumentError, as_argument_error, dataset_specs, parse_retriever


def _option(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    """An option of ``staicc run`` that other commands sharing its selection arguments do not have."""
    return getattr(args, name, default)


def _check_numbers(args: argparse.Namespace) -> None:
    if _option(args, "log_samples") and not _option(args, "output_dir"):
        raise ArgumentError("--log-samples needs --output-dir")
    as_argument_error(check, _option(args, "write_out", 0), Integer(0), "--write-out")
    for flag, value in (("--limit", args.limit), ("--batch-size", _option(args, "batch_size"))):
        if value is not None:
            as_argument_error(check, value, Integer(1, text="a positive integer"), flag)
    if args.k is not None:
        as_argument_error(check, args.k, Integer(0), "--k")


def resolve_config(args: argparse.Namespace, launch: Any = None) -> RunConfig:
    """The whole run ``args`` describe (``launch``: how this process takes part, for what a launched run refuses;
    a shard's part of the run is :func:`StaICC.cli.scaleout.shard_config` of it)."""
    _check_numbers(args)
    if _option(args, "output_dir"):
        from ..results.rundir import check_output_dir
        as_argument_error(check_output_dir, args.output_dir, overwrite=args.overwrite)
    datasets = dataset_specs(args.datasets)
    retriever = as_argument_error(parse_retriever, args.retriever) if args.retriever else None
    settings = _settings(args)
    if settings["tasks"]:
        datasets = (datasets or []) + [task.dataset for task in settings["tasks"]]
    selection: Selection = Nothing() if _option(args, "dry_run") else Everything()
    from .cost import check_cost_backend, cost_options
    cost = cost_options(args)
    check_cost_backend(settings["model"], cost)
    from .lite import lite_proxy, lite_sample, lite_until, proxy_reads
    lite = lite_sample(args)
    methods = _methods(args, launch)
    if lite is not None and methods:
        raise ArgumentError("--lite with --methods: the methods table tests each method against vanilla on the "
                            "full test set; run the methods without --lite, or a lite run without --methods")
    test_items = QuerySubset.first(args.limit) if args.limit else \
        QuerySubset.lite(lite.fraction, items=lite.items) if lite is not None else None
    return RunConfig(
        model=settings["model"], arguments=settings["arguments"], recorded_arguments=settings["recorded_arguments"],
        benchmarks=settings["benchmarks"], k=settings["k"], datasets=tuple(datasets) if datasets else None,
        tasks=tuple(settings["tasks"]), noisy_channel=args.noisy_channel, retriever=retriever,
        test_items=test_items, selection=selection,
        shard_unit=_option(args, "shard_unit", "query"), write_out=_option(args, "write_out", 0),
        show_config=_option(args, "show_config", False), cache=_option(args, "cache"),
        output_dir=_option(args, "output_dir"), log_samples=_option(args, "log_samples"),
        requests_per_call=_option(args, "batch_size"), progress=_option(args, "progress"),
        model_args_text=args.model_args, methods=methods,
        resamples=_option(args, "resamples"), cost=cost,
        lite_proxy=lite_proxy(args, proxy_reads(settings["benchmarks"], settings["tasks"], datasets)),
        lite_until=lite_until(args), exact_sum=_exact_sum(args, methods), command=_command(args))


def _command(args: argparse.Namespace) -> Optional[Tuple[str, ...]]:
    """The argument list ``main`` parsed (``staicc`` first), which provenance records; not ``sys.argv``, which
    is another program's when ``main(argv)`` is called in its process."""
    argv = getattr(args, "argv", None)
    return ("staicc",) + tuple(str(a) for a in argv) if isinstance(argv, list) else None


def _exact_sum(args: argparse.Namespace, methods: Tuple[Any, ...]) -> str:
    exact_sum = _option(args, "exact_sum", "standard")
    if exact_sum != "standard" and methods:
        raise ArgumentError("--exact-sum original with --methods: the methods table compares methods under the "
                            "standard's rule; run --exact-sum original without --methods")
    return exact_sum


def _methods(args: argparse.Namespace, launch: Any) -> Tuple[Any, ...]:
    """``--methods``, each name or file resolved now (a method file is imported and hashed), with the options
    a methods run cannot take refused in one line."""
    text = _option(args, "methods")
    if text is None:
        for flag, name in (("--resamples", "resamples"), ("--method-args", "method_args")):
            if _option(args, name) is not None:
                raise ArgumentError(f"{flag} sets the methods of a --methods run; it needs --methods")
        return ()
    if args.noisy_channel:
        raise ArgumentError("--noisy-channel with --methods: the noisy channel is a method of its own; list "
                            "noisy_channel among the methods instead")
    for flag, given in (("--dry-run", _option(args, "dry_run")), ("--shard", _option(args, "shard")),
                        ("--launcher", _option(args, "launcher") or launch is not None and launch.sharded)):
        if given:
            raise ArgumentError(f"{flag} with --methods: a methods run is one process (the cache resumes it); "
                                f"leave {flag} out")
    if _option(args, "resamples") is not None:
        as_argument_error(check, args.resamples, Integer(1, text="a positive integer"), "--resamples")
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if not entries:
        raise ArgumentError("--methods needs at least one method, e.g. vanilla,contextual")
    from ..backends.registry import parse_model_args
    from ..methods.files import resolve_methods
    from .common import number_or_text
    if _option(args, "output_dir"):
        from ..runs.methods_dirs import check_methods_output
        as_argument_error(check_methods_output, args.output_dir, bool(_option(args, "overwrite")))
    parameters = {key: number_or_text(value) for key, value in
                  as_argument_error(parse_model_args, _option(args, "method_args") or "").items()}
    return tuple(as_argument_error(resolve_methods, entries, parameters))


def _settings(args: argparse.Namespace) -> Dict[str, Any]:
    """Backend, model arguments, sub-benchmarks and k: the command's, else its tasks', else the defaults."""
    from ..backends.registry import parse_model_args
    arguments = as_argument_error(parse_model_args, args.model_args)
    if args.tasks is None:  # no task file to read: the tasks package is not imported
        from ..subbenchmarks.suite import resolve_benchmark_names
        benchmarks = args.benchmarks or "Normal"
        as_argument_error(resolve_benchmark_names, benchmarks)
        return {"tasks": [], "benchmarks": benchmarks, "k": DEFAULT_K if args.k is None else args.k,
                "model": args.model or "reference", "arguments": arguments, "recorded_arguments": dict(arguments)}
    from ..tasks.runs import command_settings
    return as_argument_error(command_settings, args.tasks, args.include_path, args.benchmarks, args.k,
                             args.model, arguments)
