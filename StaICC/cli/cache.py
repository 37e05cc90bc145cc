"""``staicc cache merge OUT IN...``: one prediction cache from several (the shard caches of a split run)."""
import argparse
import os
import sqlite3
import sys
from typing import Any

from ..errors import error_name
from .common import ArgumentError, needs_a_command


def add_cache_parser(sub: Any) -> None:
    p = sub.add_parser("cache", description="Prediction-cache tools.")
    commands = p.add_subparsers(dest="cache_command", parser_class=type(p))
    merge = commands.add_parser("merge", help="copy every answer of IN... into OUT (created if missing)",
                                description="Merge prediction caches. Two different answers for one key are an "
                                            "error naming the key; nothing is written then.")
    merge.add_argument("output", metavar="OUT", nargs="?", help="the merged cache (or -o OUT)")
    merge.add_argument("-o", "--output", dest="output_option", metavar="OUT", help="the merged cache, as an option")
    merge.add_argument("inputs", metavar="IN", nargs="+", help="caches to merge (for example CACHE.shard-*-of-N)")
    merge.add_argument("--allow-mixed-numerics", action="store_true",
                       help="merge answers computed under settings that can differ beyond the last bits (another "
                            "device, dtype or library version); without it such inputs are refused")
    merge.set_defaults(func=merge_command)
    needs_a_command(p, "cache", ["merge"])


def _with_output(args: argparse.Namespace) -> argparse.Namespace:
    """``merge OUT IN...`` or ``merge -o OUT IN...`` (then the first word is an input): the same merge."""
    if args.output_option is None:
        if args.output is None:
            raise ArgumentError("cache merge needs the merged cache: staicc cache merge OUT IN... (or -o OUT IN...)")
        return args
    inputs = ([args.output] if args.output is not None else []) + list(args.inputs)
    return argparse.Namespace(**{**vars(args), "output": args.output_option, "inputs": inputs})


def merge_command(args: argparse.Namespace) -> int:
    from ..cache import CacheError
    from ..cache.merge import merge_caches
    args = _with_output(args)
    for path in args.inputs:
        if not os.path.isfile(path):
            raise ArgumentError(f"cache merge: the input cache {path!r} does not exist")
    for path, what in [(p, "input") for p in args.inputs] + [(args.output, "output")]:
        if os.path.exists(path):  # a file that is not a cache is an argument error, before anything is merged
            _check_cache(path, what)
    try:
        warnings: list = []
        counts = merge_caches(args.output, args.inputs, allow_mixed_numerics=args.allow_mixed_numerics,
                              warnings=warnings)
    except CacheError as exc:
        print(f"staicc: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise ArgumentError(str(exc)) from None
    except (sqlite3.Error, OSError) as exc:  # a full disk, a file-size limit, a read-only folder
        reason = (str(exc).splitlines() or [error_name(exc)])[0]
        print(f"staicc: error: cannot write the merged cache {args.output}: {reason}; nothing was merged (the "
              "inputs are unchanged): make room and run the same command again", file=sys.stderr)
        return 1
    print(f"merged {len(args.inputs)} caches into {args.output}: {counts['read']} answers read, "
          f"{counts['added']} added, {counts['equal']} already there, {counts['models']} model(s)")
    for line in warnings:
        print(f"staicc: warning: the merged answers were computed under different settings, {line}", file=sys.stderr)
    return 0


def _check_cache(path: str, what: str) -> None:
    """Open an existing file as a prediction cache, as ``staicc run --cache`` does: a foreign file is refused."""
    from ..cache import CacheError, PredictionCache
    try:
        with PredictionCache(path):
            pass
    except CacheError as exc:
        raise ArgumentError(f"cache merge: the {what} {str(exc).splitlines()[0]}") from None
