"""Command line: ``staicc run|compare|report|tasks|batch|cache|export|verify`` and, with no command, the built-in main job.

``python -m StaICC`` (no arguments) prints the Normal table of the built-in lexical model,
as it always did; the original flags (``--benchmark``, ``--k``, ``--json`` ...) still work.
``staicc run --model hf --model-args pretrained=DIR ...`` evaluates any backend on any
sub-benchmarks and writes a run directory.  Every argument is checked before any
inference: a bad one prints one line and exits with status 2.
"""
import sys
from typing import Any, List, Optional, Tuple

from .common import COMMANDS, ArgumentError, OneLineParser, one_line  # noqa: F401  (the CLI's error type, importable here)


def main(argv: Optional[List[str]] = None) -> int:
    from .common import one_line_warnings
    with one_line_warnings():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: List[str]) -> int:
    try:
        if argv and argv[0] in COMMANDS:
            return _command(argv)
        from .main_job import main_job
        return main_job(argv)
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
    """Parse and run one command; only that command's modules are imported (``staicc run`` reads no statistics)."""
    parser, sub = _top_parser()
    _add_parser(argv[0], sub)
    args = parser.parse_args(argv)
    args.argv = argv  # a launcher runs the same command once per shard
    return args.func(args)


def full_parser() -> OneLineParser:
    """``staicc`` with the parser of every command, for the generated reference (``tools/cli_reference.py``).

    ``main`` builds only the parser of the command it runs, so that a command imports only its own
    modules; this builds them all, so it imports every command's modules.
    """
    parser, sub = _top_parser()
    for command in COMMANDS:
        _add_parser(command, sub)
    return parser


def _top_parser() -> Tuple[OneLineParser, Any]:
    """The ``staicc COMMAND`` parser and its sub-command action, without any command yet."""
    parser = OneLineParser(prog="staicc", description="The StaICC benchmark: run models, compare runs, report.")
    return parser, parser.add_subparsers(dest="command", parser_class=OneLineParser)


def _add_parser(command: str, sub) -> None:
    if command == "run":
        from .run import add_run_parser
        add_run_parser(sub)
    elif command in ("compare", "report"):
        from ..report.commands import add_compare_parser, add_report_parser
        (add_compare_parser if command == "compare" else add_report_parser)(sub)
    elif command == "tasks":
        from .tasks import add_tasks_parser
        add_tasks_parser(sub, OneLineParser)
    elif command == "batch":
        from .batch import add_batch_parser
        add_batch_parser(sub)
    elif command == "export":
        from .export import add_export_parser
        add_export_parser(sub)
    elif command == "verify":
        from .verify import add_verify_parser
        add_verify_parser(sub)
    else:
        from .cache import add_cache_parser
        add_cache_parser(sub)
