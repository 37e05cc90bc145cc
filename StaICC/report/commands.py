"""``staicc compare`` and ``staicc report``: argument parsers and command functions.

The main command line adds these subcommands with :func:`add_compare_parser` and
:func:`add_report_parser`; each parser's ``func`` default is the command to call with the
parsed arguments, which returns the exit status.  Argument errors are one line on
stderr and exit status 2, before any file is read.
"""
import argparse
import os
import sys
from typing import List, Optional

from .command_options import (PROG, CommandError, _add_statistics_options, _emit, _load, _OneLineErrors, _run,
                              _statistics_options, _strict_json)
from .compare_command import add_compare_parser, check_lite_pairs, compare_command

__all__ = ["add_compare_parser", "add_report_parser", "compare_command", "report_command", "build_parser", "main"]


def add_report_parser(subparsers) -> argparse.ArgumentParser:
    """``staicc report RUN [RUN_B ...]``: tables with CIs; ``--html`` a self-contained page with figures."""
    parser = subparsers.add_parser(
        "report", description="Report one or more runs: the summary tables with bootstrap confidence intervals (text, "
                    "Markdown, LaTeX, CSV, JSON), or with --html one self-contained HTML page with the figures "
                    "(needs matplotlib: pip install \"StaICC[plot]\"). With two runs or more, their differences.")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories or results.json files")
    parser.add_argument("--html", metavar="PATH", help="write the HTML report to PATH")
    parser.add_argument("--figures-dir", metavar="DIR",
                        help="also write every figure as PNG and SVG in DIR (default with --html: "
                             "<page name>_figures beside the page)")
    parser.add_argument("--format", default="table", choices=["table", "md", "latex", "csv", "json"],
                        help="format of the tables printed when --html is not given (default: table)")
    parser.add_argument("--ci", default="interval", choices=["interval", "pm", "none"],
                        help="how tables show confidence intervals: [low, high], ± half-width, or not at all")
    parser.add_argument("--output", "-o", metavar="PATH", help="write the tables to PATH instead of standard output")
    _add_statistics_options(parser)
    parser.set_defaults(func=report_command)
    return parser


def report_command(args) -> int:
    """Tables of one or more runs with intervals; with ``--html``, the self-contained report."""
    return _run(_report, args)


def _report(args, status) -> int:
    from .page import report_statistics
    from .tables import comparison_tables, render, run_tables
    _refuse_lite_extras(args)
    if args.html:
        from .plots import pyplot
        pyplot()  # names the extra to install before any work
    runs = _load(args, status)
    check_lite_pairs(runs, status, "report")
    estimates, comparisons = report_statistics(runs, **_statistics_options(args, status))
    if args.html:
        from .html import build_report
        report = build_report(runs, estimates, comparisons, progress=status)
        status(f"writing {args.html}")
        written = report.save(args.html, args.figures_dir)
        status.done()
        print(f"wrote {args.html} and {len(written) - 1} figure files in "
              f"{args.figures_dir or os.path.splitext(args.html)[0] + '_figures'}")
        return 0
    status.done()
    if args.format == "json":
        from .lite_tables import lite_json
        text = _strict_json({"runs": [lite_json(r) or e.to_dict() for r, e in zip(runs, estimates)
                                      if e is not None or lite_json(r)],
                             "comparisons": [c.to_dict() for c in comparisons]})
    else:
        tables = [t for r, e in zip(runs, estimates) for t in run_tables(r, e)]
        tables += comparison_tables(runs, comparisons) if comparisons else []
        text = render(tables, args.format, None if args.ci == "none" else args.ci)
    _emit(text, args.output)
    return 0


def _refuse_lite_extras(args) -> None:
    """``--calibration`` or ``--agreement`` with a lite run: refused before any work (one line, exit 2).  A lite run's
    tables are estimates of the full run, and the metrics these flags add have none (outside the coverage study that
    decides what a lite run estimates); their values on the subset are what ``staicc compare`` of two lite runs on
    the same items compares (the subset's own values, said so)."""
    flags = [flag for flag, given in (("--calibration", args.calibration), ("--agreement", args.agreement)) if given]
    if not flags:
        return
    from .lite_tables import lite_section, share_text
    from .runs import load_run, run_labels
    for path, label in zip(args.runs, run_labels(args.runs)):
        section = lite_section(load_run(path, label, records=False))
        if section is not None:
            raise CommandError(f"{' and '.join(flags)}: {label} is a lite run ({share_text(section)}), whose tables "
                               "are estimates of the full run, and the metrics these add have no estimate (outside the "
                               "coverage study); report a full run with them, or compare two lite runs on the same "
                               f"items with staicc compare {' '.join(flags)} (the subset's own values)")


def build_parser() -> argparse.ArgumentParser:
    """A parser with the compare and report subcommands (the main CLI adds them to its own)."""
    parser = _OneLineErrors(prog=PROG)
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineErrors)
    add_compare_parser(subparsers)
    add_report_parser(subparsers)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # python -m StaICC.report.commands compare A B
    sys.exit(main())
