"""Command line: ``staicc run|compare|report|tasks|batch|cache|export|verify`` and, with no command, the built-in main job.

``python -m StaICC`` (no arguments) prints the Normal table of the built-in lexical model,
as it always did; the original flags (``--benchmark``, ``--k``, ``--json`` ...) still work.
``staicc run --model hf --model-args pretrained=DIR ...`` evaluates any backend on any
sub-benchmarks and writes a run directory.  Every argument is checked before any
inference: a bad one prints one line and exits with status 2.
"""
import sys
from typing import Any, List, Optional, Tuple

from .common import CLI_COMMANDS, COMMANDS, ArgumentError, HelpedCommands, OneLineParser, one_line

__all__ = ["main", "full_parser", "ArgumentError", "COMMANDS"]


def main(argv: Optional[List[str]] = None) -> int:
    """``staicc COMMAND ...``: parse and run one command (only that command's modules are imported: ``staicc run``
    reads no statistics it does not print); ``staicc`` alone: the built-in main job. The package's warnings print
    as one ``staicc: warning:`` line each."""
    from .common import one_line_warnings
    with one_line_warnings():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: List[str]) -> int:
    try:
        if argv and argv[0] in CLI_COMMANDS:
            parser, sub = _top_parser()
            _add_parser(argv[0], sub)
            args = parser.parse_args(argv)
            args.argv, args.main = argv, main  # a launcher runs the same command once per shard, through main
            return args.func(args)
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


def full_parser() -> OneLineParser:
    """``staicc`` with the parser of every command, for the generated reference (``tools/cli_reference.py``).

    ``main`` builds only the parser of the command it runs, so that a command imports only its own
    modules; this builds them all, so it imports every command's modules.
    """
    parser, sub = _top_parser()
    for command in CLI_COMMANDS.names():
        _add_parser(command, sub)
    return parser


def _top_parser() -> Tuple[OneLineParser, Any]:
    """The ``staicc COMMAND`` parser and its sub-command action, without any command yet."""
    parser = OneLineParser(prog="staicc", description="The StaICC benchmark: run models, compare runs, report.")
    return parser, parser.add_subparsers(dest="command", parser_class=OneLineParser)


def _add_parser(command: str, sub) -> None:
    """Add ``command``'s parser: its registered parser function (imported now), its help text the registry's."""
    CLI_COMMANDS.get(command)(HelpedCommands(sub))
