"""``staicc cache merge OUT IN...``: one prediction cache from several (the shard caches of a split run)."""
import argparse
import os
import sys
from typing import Any

from .common import ArgumentError


def add_cache_parser(sub: Any) -> None:
    p = sub.add_parser("cache", help="prediction-cache tools: merge shard caches",
                       description="Prediction-cache tools.")
    commands = p.add_subparsers(dest="cache_command", parser_class=type(p))
    merge = commands.add_parser("merge", help="copy every answer of IN... into OUT (created if missing)",
                                description="Merge prediction caches. Two different answers for one key are an "
                                            "error naming the key; nothing is written then.")
    merge.add_argument("output", metavar="OUT", help="the merged cache")
    merge.add_argument("inputs", metavar="IN", nargs="+", help="caches to merge (for example CACHE.shard-*-of-N)")
    merge.add_argument("--allow-mixed-numerics", action="store_true",
                       help="merge answers computed under settings that can differ beyond the last bits (another "
                            "device, dtype or library version); without it such inputs are refused")
    merge.set_defaults(func=merge_command)
    p.set_defaults(func=lambda args: (_ for _ in ()).throw(ArgumentError("cache needs a command: merge")))


def merge_command(args: argparse.Namespace) -> int:
    from ..cache import CacheError
    from ..cache.merge import merge_caches
    for path in args.inputs:
        if not os.path.isfile(path):
            raise ArgumentError(f"cache merge: the input cache {path!r} does not exist")
    try:
        warnings: list = []
        counts = merge_caches(args.output, args.inputs, allow_mixed_numerics=args.allow_mixed_numerics,
                              warnings=warnings)
    except CacheError as exc:
        print(f"staicc: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise ArgumentError(str(exc)) from None
    print(f"merged {len(args.inputs)} caches into {args.output}: {counts['read']} answers read, "
          f"{counts['added']} added, {counts['equal']} already there, {counts['models']} model(s)")
    for line in warnings:
        print(f"staicc: warning: the merged answers were computed under different settings, {line}", file=sys.stderr)
    return 0
