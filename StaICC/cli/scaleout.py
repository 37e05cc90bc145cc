"""``staicc run --shard I/N`` and ``--launcher``: which shard this process runs, and the merge that follows.

Every launcher ends the same way: one process merges the shard caches into ``--cache``
and runs the command once more over it, which asks no prompt and writes the results
(:mod:`StaICC.cli.launchers`).
"""
import argparse
import os
import re
import sys
from dataclasses import replace
from typing import Any, Callable, Dict

from ..engine.selection import Nothing, Shard
from ..runs.config import RunConfig
from .launchers import Launch
from .common import ArgumentError, as_argument_error, one_line


def launch_of(args: argparse.Namespace) -> Launch:
    """The launch ``--shard``/``--launcher``/the environment ask for, checked before any inference."""
    from .launchers import resolve_launch
    launch = as_argument_error(resolve_launch, args.shard, args.launcher, os.environ)
    if launch.kind != "single":
        what = "--shard" if launch.kind == "shard" else f"--launcher {launch.kind}"
        if not args.cache and not (args.dry_run and launch.kind == "shard"):  # a shard's dry run stores nothing
            raise ArgumentError(f"{what} needs --cache FILE: the shards' answers are stored there and merged")
        if args.dry_run and launch.kind == "ray":
            raise ArgumentError("--dry-run counts one process's prompts; use it without --launcher ray")
    if launch.kind == "shard" and (args.output_dir or args.log_samples):
        raise ArgumentError("--shard writes answers to --cache only; run once more over the merged cache "
                            "with --output-dir to write results")
    return launch


def _ray_cause(exc: BaseException) -> str:
    """The first line of what made a Ray task fail: the task's own exception (Ray wraps it), without colour codes."""
    cause = getattr(exc, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else exc) or type(exc).__name__
    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip().splitlines()[0]


def shard_config(config: RunConfig, launch: Launch, **changes: Any) -> RunConfig:
    """This process's part of ``config``'s run: shard ``launch.index`` of ``launch.count`` (a dry run counts it),
    the model on this rank's device; ``changes``: what else differs (a launched shard's own cache)."""
    from .launchers import rank_model_arguments
    shard = as_argument_error(Shard, launch.index, launch.count, config.shard_unit)
    return replace(config, selection=Nothing(shard) if isinstance(config.selection, Nothing) else shard,
                   arguments=rank_model_arguments(config.model, config.arguments, launch), **changes)


def launched(config: RunConfig, launch: Launch, run_once: Callable[[RunConfig], int], main: Callable[..., int]) -> int:
    """Run this process's part of ``config``'s sharded run; the merging process also merges and summarises
    (``main``: the ``staicc`` entry point a Ray task runs on its shard's command line)."""
    from . import launchers
    if launch.kind == "shard" or isinstance(config.selection, Nothing):
        return run_once(shard_config(config, launch))
    if launch.kind == "ray":
        try:
            paths = launchers.run_ray_shards(list(config.command or ())[1:], config.cache, launch.options, main)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        except (launchers.RayConnectionError, ImportError) as exc:  # nothing ran: say so (and how to connect)
            print(f"staicc: error: {one_line(str(exc))}", file=sys.stderr)
            return 1
        except Exception as exc:  # a task that failed after its retries: Ray's own error types
            print(f"staicc: error: a Ray shard failed after its retries: {one_line(_ray_cause(exc))}; the answers "
                  f"given so far are in {one_line(config.cache)}.shard-*; run the same command to resume", file=sys.stderr)
            return 1
        return _merge_and_summarise(config, paths, run_once, "ray")
    status = run_once(shard_config(config, launch, output_dir=None, log_samples=None,
                                   cache=launchers.shard_cache_path(config.cache, launch.index, launch.count)))
    if launch.kind == "slurm":
        if status == 0:
            pattern = launchers.shard_cache_path(config.cache, "*", launch.count)
            print(f"shard {launch.index}/{launch.count} done; when every array task has finished: "
                  f"staicc cache merge {config.cache} {pattern} && staicc run ... --cache {config.cache}")
        return status
    if status != 0:
        return status  # torchrun stops the other ranks when one fails
    launchers.torchrun_barrier(launch)
    if launch.index != 0:
        return 0
    return _merge_and_summarise(config, launchers.shard_cache_paths(config.cache, launch.count), run_once, "torchrun")


def _merge_and_summarise(config: RunConfig, paths: Any, run_once: Callable[[RunConfig], int], launcher: str) -> int:
    """Merge the shards' caches into the run's, then run it once more over them: nothing is asked, the results
    are written."""
    from ..cache import CacheError
    from ..cache.merge import merge_caches
    try:
        warnings: list = []
        counts = merge_caches(config.cache, paths, warnings=warnings)
    except CacheError as exc:
        print(f"staicc: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"merged {len(paths)} shard caches into {config.cache}: {counts['added']} new answers, "
          f"{counts['equal']} already there")
    for line in warnings:
        print(f"staicc: warning: the shards computed under different settings, {line}", file=sys.stderr)
    return run_once(replace(config, sharded={"launcher": launcher, "count": len(paths)}))


def shard_counts(metadata: Dict[str, Any]) -> str:
    """``shard I/N (plan …): D distinct prompts of T``: a shard's part of the run, as its run and its dry run say it."""
    shard = metadata["shard"]
    return (f"shard {shard['index']}/{shard['count']} (plan {shard['plan_sha256'][:12]}): "
            f"{metadata['distinct_prompts']} distinct prompts of {shard['run_distinct_requests']}")


def print_shard(metadata: Dict[str, Any], cache: str) -> int:
    """The one-line summary of a shard run (it writes no results)."""
    print(f"{shard_counts(metadata)}, {metadata['asked']} asked, {metadata['from_cache']} from the cache, {metadata['seconds']:.2f} s; "
          f"answers in {cache}")
    return 0
