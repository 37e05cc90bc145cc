"""``staicc run``: evaluate a backend on sub-benchmarks and write a run directory."""
import argparse
import os
import sys
import warnings
from typing import Any, Dict, Optional

from ..engine.selection import Nothing, Shard
from ..errors import TamperingWarning
from ..runs.config import RunConfig
from ..results.run import Run
from .common import loading_bars, one_line
from .run_output import Terminal, write_failed

def add_run_parser(sub: Any) -> None:
    p = sub.add_parser("run", description="Evaluate a model on StaICC sub-benchmarks.")
    add_selection_arguments(p)
    from .cost import add_cost_arguments
    from .lite import add_lite_arguments
    add_lite_arguments(p)
    p.add_argument("--methods", metavar="NAME|FILE[,...]",
                   help="run every method and print methods x datasets tables tested against vanilla: a built-in "
                        "name (vanilla, noisy_channel, pmi, contextual, domain, generative, ucpa, batch, bcl, "
                        "prototypical, knn, knn_centroid, hidden, anchors, surprise, sucpa, temperature, platt, "
                        "supervised, linc), all (every built-in method the backend serves) or a method file (.py, see "
                        "docs/methods.md); with --output-dir, each method's run is DIR/methods/NAME")
    p.add_argument("--method-args", metavar="K=V,...",
                   help="parameters of the built-in methods, each given to every method that takes it: "
                        "calibration_number (default 128), sample_length (domain), batch_size (batch, bcl), "
                        "knn_k (knn), l2 (platt, supervised, linc, temperature, anchors, surprise), calibration "
                        "(crossfit or prompts) and folds (ucpa, sucpa, temperature, platt, supervised, linc), "
                        "decays (surprise), gamma_bound and gamma_steps (bcl), iterations (ucpa, sucpa), "
                        "em_iterations and reg_covar (prototypical); see docs/methods.md")
    p.add_argument("--resamples", type=int, metavar="N",
                   help="bootstrap resamples of the methods table's tests against vanilla (default 1000)")
    p.add_argument("--output-dir", metavar="DIR", help="write DIR/results.json (and samples with --log-samples)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --output-dir (its files are removed); without it such a "
                        "directory is refused")
    p.add_argument("--log-samples", nargs="?", const="compact", choices=["compact", "full"], default=None,
                   help="write DIR/samples.jsonl (one record per query) and DIR/samples.columns.json; "
                        "--log-samples=full also stores each prompt's text")
    p.add_argument("--exact-sum", choices=["standard", "original"], default="standard",
                   help="the exact-sum rule of a model backend's probabilities: standard (the softmax branch "
                        "always: the same numbers on every route) or original (the original's exact check, to "
                        "replicate a published run; route-dependent, recorded, not standard)")
    p.add_argument("--write-out", type=int, default=0, metavar="N",
                   help="print the first N prompts of every sub-benchmark and dataset as the run writes them, "
                        "before it asks them")
    p.add_argument("--show-config", action="store_true",
                   help="print the resolved run (backend, sub-benchmarks, datasets, k, retriever, settings) first")
    p.add_argument("--cache", metavar="FILE", help="SQLite prediction cache: resume, share answers between runs")
    p.add_argument("--batch-size", type=int, metavar="N", help="requests per backend call")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="progress bars on stderr even when it is not a terminal (default: only on a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars on stderr")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything and count the prompts to ask (distinct, already cached) and, for the hf "
                        "backend, their tokens with the model's tokenizer (the weights are not loaded); no inference")
    add_cost_arguments(p)
    p.add_argument("--shard", metavar="I/N", help="ask only shard I of N of the distinct prompts (I counts from 0: "
                   "--shard 0/2 and --shard 1/2 are the two halves) and store the answers in --cache; merge the "
                   "shard caches with `staicc cache merge` (see docs/scaling.md)")
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
    """``args`` resolved once into the run's :class:`RunConfig`; then one process, one shard, or every shard
    through a launcher (:mod:`StaICC.cli.scaleout`), each running its part of that configuration."""
    from .run_config import resolve_config
    from .scaleout import launch_of, launched
    launch = launch_of(args)
    config = resolve_config(args, launch)
    return run_once(config) if launch.kind == "single" else launched(config, launch, run_once, args.main)


def run_once(config: RunConfig) -> int:
    """``config`` run by :func:`StaICC.runs.execute` with a terminal observer that prints between its steps; then
    what the run says: a dry run's counts, a shard's summary, a methods run's tables (:mod:`StaICC.cli.methods`)
    or the suite's tables, and the run directory."""
    from ..runs.execute import execute
    terminal = Terminal(config)
    with warnings.catch_warnings():
        if config.quiet_departures:
            warnings.simplefilter("ignore", TamperingWarning)
        with loading_bars(config.progress):  # a model may load at the first request it must answer
            try:
                run = execute(config, observer=terminal)
            except Exception as exc:  # an argument error before anything is asked (2), a failed run (1) or raised
                return terminal.exit_status(exc)
            return _report(run, terminal)


def _report(run: Run, terminal: Terminal) -> int:
    """What the executed run says on the terminal, and its run directory (``terminal``: the run's observer, which
    saw its backend and a dry run's counting)."""
    config, backend = terminal.config, terminal.backend
    if isinstance(config.selection, Nothing):
        return _print_dry_run(run.metadata, config, backend, terminal.counting)
    if isinstance(config.selection, Shard):
        from .scaleout import print_shard
        return print_shard(run.metadata, config.cache)
    if config.methods:
        from .methods import finish_methods
        return finish_methods(run)  # run.config: 'all' less what the backend cannot serve
    return _finish(run.config, run, backend)


def _finish(config: RunConfig, run: Run, backend: Any) -> int:
    """The tables and the run directory of a summarised run (:class:`StaICC.runs.Run`)."""
    lite = run.provenance.get("lite")
    _print_tables(run.result, config, lite)
    bounds = _print_bounds(backend, run.result)
    if run.provenance.get("usage", {}).get("tokens"):
        from .cost import usage_line
        print(usage_line(run.provenance["usage"]))
    if config.output_dir:
        from ..runs import write
        try:
            write(run, config.output_dir, overwrite=True)  # refused before any inference unless --overwrite
        except OSError as exc:  # a full disk, a quota, a directory removed under the run
            return write_failed(config, exc)
        if bounds:
            import json
            from ..results.provenance import strict_json_value
            from ..results.safe_files import write_text
            write_text(os.path.join(config.output_dir, "bounds.json"),
                       json.dumps(strict_json_value(bounds, [], "bounds"), allow_nan=False) + "\n")
        print(f"wrote {one_line(config.output_dir)}/results.json"
              + (" and samples.jsonl" if config.log_samples else ""))
    return 0


def _print_bounds(backend: Any, result: Any) -> list:
    """A ``scoring=top_logprobs`` run's metrics as sound intervals (printed; returned for bounds.json)."""
    if getattr(backend, "scoring", None) != "top_logprobs" or not getattr(result, "records", None):
        return []
    from ..stats.bounds import bound_rows, format_bounds, recorded_values
    rows = bound_rows(result.records, recorded_values(result))
    print("Sound intervals from the top-k answer tokens (point: the unlisted mass spread evenly; "
          "listed: share of labels a listed token named)")
    print(format_bounds(rows))
    print()
    return rows


def _model_name(config: Any) -> str:
    """The model as the command line named it: the backend, then its arguments (secrets are never arguments)."""
    return config.model + (f" ({one_line(config.model_args_text)})" if config.model_args_text else "")


def _print_dry_run(metadata: Dict[str, Any], config: RunConfig, backend: Any, counting: Any) -> int:
    """What a run would send: prompts, distinct prompts, how many the cache already answers, what a lite run
    saves, and what the rest costs (tokens, the FLOP bound's time, money) where it was counted."""
    distinct, cached = metadata["distinct_prompts"], metadata["from_cache"]
    if "shard" in metadata:
        from .scaleout import shard_counts
        counted = shard_counts(metadata)
    else:
        counted = f"{metadata['prompts']} prompts, {distinct} distinct"
    print(f"{counted}, {cached} already in the cache, {distinct - cached} to ask "
          f"(model {_model_name(config)}, fingerprint {metadata['fingerprint'][:12]})")
    if config.test_items is not None and config.test_items.lite_sample is not None:
        from .lite import dry_run_line
        print(dry_run_line(config, metadata))
    if counting is not None:
        counting.counter.say.done()
        from .cost import cost_lines
        for line in cost_lines(counting.counter.count, counting.shape, config.cost):
            print(line)
    elif hasattr(backend, "generation_limit"):  # a model whose tokens cost: say how to count them
        print("tokens: not counted (no tokenizer for this backend here); --price-per-mtok P counts them as "
              "characters / 4 and gives the money")
    return 0


def _open_cache(path: Optional[str]):
    """The run's cache, opened before any inference so that a foreign file is an argument error."""
    from ..runs.build import open_cache
    return open_cache(path)


ACCURACY_NOTE = "± standard error of accuracy over test items (analytic: the items' standard deviation / sqrt(n))"
BOOTSTRAP_NOTE = ("{which}: the standard deviation of a {resamples}-resample bootstrap over test items "
                  "(seed {seed})")
INTERVALS_NOTE = "95 % intervals of every metric: staicc report RUN (a run with --log-samples)"
NO_NUMPY_NOTE = "the other metrics' need NumPy (pip install numpy)"


def _standard_errors(part: Any, name: str) -> Dict[str, Dict[str, float]]:
    """{metric: {dataset or "Averaged": standard error}} of a sub-benchmark's result: accuracy's analytic,
    the others' from a small bootstrap (none where the records do not give the reported numbers)."""
    from ..results.stderr import accuracy_standard_errors
    from ..stats.run_errors import bootstrap_errors
    errors = bootstrap_errors(part, name)
    divided = part.get("Divided results", {}) if isinstance(part, dict) else {}
    reported = {d: v.get("accuracy") for d, v in divided.items() if isinstance(v, dict) and "accuracy" in v}
    records = getattr(part, "records", None)
    if reported and records is not None:
        analytic = accuracy_standard_errors(records, reported, part.get("Averaged results", {}).get("accuracy"))
        if analytic:
            errors["accuracy"] = analytic
        else:
            errors.pop("accuracy", None)
    return errors


def _stderr_note(errors: Dict[str, Dict[str, float]]) -> str:
    """The line under a table that says which ± is which."""
    from ..stats.bootstrap import DEFAULT_SEED
    from ..stats.run_errors import RUN_RESAMPLES
    from ..stats.vectorized import numpy_module
    notes = [ACCURACY_NOTE] if "accuracy" in errors else []
    if set(errors) - {"accuracy"}:
        which = "of every other metric" if notes else "± standard error of each metric"
        notes.append(BOOTSTRAP_NOTE.format(which=which, resamples=RUN_RESAMPLES, seed=DEFAULT_SEED))
    elif numpy_module() is None:
        notes.append(NO_NUMPY_NOTE)
    return "; ".join(notes + [INTERVALS_NOTE])


def _print_tables(result: Any, config: Any, lite: Optional[Dict[str, Any]] = None) -> None:
    from ..report import format_table
    from ..report.notices import notices
    metadatas = []
    model = _model_name(config)
    if lite is not None:
        from .lite import counts_line, print_lite_tables
        print_lite_tables(result, lite, config, model)
        meta = result.metadata
        print(f"{counts_line(lite)}; {meta['asked']} asked, {meta['from_cache']} from the cache, "
              f"{meta['seconds']:.2f} s")
        return
    from ..spec import unfold
    for unfolded in unfold(result):
        part = unfolded.value
        errors = _standard_errors(part, unfolded.part)
        print(format_table(part, f"{unfolded.label} (k={config.k}, model={model})", errors))
        if errors:
            print(_stderr_note(errors))
        print()
        metadatas.append(part.metadata)
    meta = result.metadata
    print(f"{meta['prompts']} prompts, {meta['distinct_prompts']} distinct, {meta['asked']} asked, "
          f"{meta['from_cache']} from the cache, {meta['seconds']:.2f} s")
    for line in notices(metadatas):  # said once more where a reader of the log looks last
        print(f"staicc: warning: {line}", file=sys.stderr)

