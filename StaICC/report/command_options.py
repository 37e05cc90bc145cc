"""What ``staicc compare`` and ``staicc report`` share: their one-line errors, the statistics options, reading
the runs, writing the output.

Both commands (:mod:`.commands`, :mod:`.compare_command`) import these helpers from here, and this
module imports neither of them, so the two commands do not import each other.
"""
import argparse
import json
import os
import sys
from typing import Any, List, Optional

from ..errors import InvalidTypeError, StaICCError, error_name
from ..stats import DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from ..validation import argument_type, Integer, Real

PROG = "staicc"


class CommandError(StaICCError):
    """An error to print as one line (``staicc <command>: error: ...``) with exit status 2."""


class _OneLineErrors(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (exit status 2), without the usage block: the parsers of
    :func:`build_parser`.  Under ``staicc``, these commands' parsers are the CLI's own, whose errors go
    through its one-line argument error (with hints) like every other command's."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


_positive_int = argument_type(Integer(1, text="a positive integer"))
_int = argument_type(Integer(text="an integer"))
_fraction = argument_type(Real(0, 1, closed="neither", kind="a number between 0 and 1",
                               text="a number strictly between 0 and 1"))


def _add_statistics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=_int, default=DEFAULT_SEED,
                        help=f"seed of the bootstrap resamples (default: {DEFAULT_SEED}; recorded in the output)")
    parser.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES,
                        help=f"bootstrap resamples (default: {DEFAULT_RESAMPLES})")
    parser.add_argument("--level", type=_fraction, default=DEFAULT_LEVEL,
                        help=f"confidence level of the intervals (default: {DEFAULT_LEVEL})")
    parser.add_argument("--alpha", type=_fraction, default=DEFAULT_ALPHA,
                        help=f"significance level after Holm's correction (default: {DEFAULT_ALPHA})")
    parser.add_argument("--unpaired", action="store_true",
                        help="compare runs whose prompts differ (other k, data or demonstrations) as independent "
                             "samples; without it such runs are refused")
    parser.add_argument("--calibration", action="store_true",
                        help="also estimate and compare the calibration metrics outside the standard (Brier, "
                             "equal-mass and classwise ECE, selective accuracy, ECE after Platt scaling); staicc "
                             "report refuses it for a lite run, whose tables are estimates of the full run")
    parser.add_argument("--agreement", action="store_true",
                        help="also estimate and compare Cohen's and Fleiss' kappa across the templates of "
                             "Template_sens and the demonstration sets of Demo_sens (staicc report: not for a lite run)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="say each step (reading a run, each sub-benchmark's statistics, each figure) on stderr "
                            "even when it is not a terminal (default: only on a terminal)")
    shown.add_argument("--no-progress", dest="progress", action="store_false", help="say nothing while working")


def _extra_metrics(args) -> tuple:
    from ..metrics import CALIBRATION_METRICS
    extra = CALIBRATION_METRICS if getattr(args, "calibration", False) else ()
    return extra + (("cohen_kappa", "fleiss_kappa") if getattr(args, "agreement", False) else ())


def _check_paths(args) -> None:
    for path in args.runs:
        if not os.path.exists(path):
            raise CommandError(f"no run directory or results file at {path!r}")
        if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "results.json")) and not _exported(path):
            raise CommandError(f"{path!r} has no results.json (give a directory written by `staicc run "
                               "--output-dir`, a results.json file, or a `staicc export --format eee` folder)")
    from ..results.safe_files import check_directory
    for name in ("output", "html"):
        target = getattr(args, name, None)
        if target:
            if os.path.isdir(target):
                raise CommandError(f"cannot write {target!r}: it is a directory; give a file name")
            try:  # a missing folder is created when the file is written, as `staicc run` creates --output-dir
                check_directory(os.path.dirname(os.path.abspath(target)))
            except OSError as exc:
                raise CommandError(f"cannot write {target!r}: {exc.strerror or exc}") from None


def _exported(path: str) -> bool:
    from ..results.eee_import import find_export
    return find_export(path) is not None


def _load(args, status, records: bool = True) -> List[Any]:
    from .runs import load_run, run_labels
    labels = run_labels(args.runs)
    loaded = []
    for number, (path, label) in enumerate(zip(args.runs, labels), start=1):
        status(f"reading run {number} of {len(labels)}: {label}")
        loaded.append(load_run(path, label, records=records))
    return loaded


def _emit(text: str, output: Optional[str]) -> None:
    if output:
        from ..results.safe_files import write_text
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}")  # as `staicc run` and `report --html` say what they wrote
    else:
        print(text)


def _statistics_options(args, status) -> dict:
    """The statistics' options from the arguments; progress lines say which run and sub-benchmark is resampled."""
    return {"paired": not args.unpaired, "resamples": args.resamples, "seed": args.seed, "level": args.level,
            "alpha": args.alpha, "extra_metrics": _extra_metrics(args),
            "progress": status}


def _comparisons(runs, args, status) -> List[Any]:
    from .page import comparisons_with_first
    return comparisons_with_first(runs, **_statistics_options(args, status))


def _run(body, args) -> int:
    from .progress import StatusLine
    prog = f"{PROG} {args.command}" if getattr(args, "command", None) else PROG
    with StatusLine(prog, getattr(args, "progress", None)) as status:
        return _run_checked(body, args, status)


def _run_checked(body, args, status) -> int:
    prog = f"{PROG} {args.command}" if getattr(args, "command", None) else PROG
    try:
        _check_paths(args)
        return body(args, status)
    except CommandError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return 2
    except (ValueError, FileNotFoundError, ImportError) as exc:
        sys.stderr.write(f"{prog}: error: {one_line(exc)}\n")
        return 1
    except OSError as exc:  # a full disk, a folder where a file was asked for, a file that cannot be read
        where = f" {exc.filename!r}" if exc.filename else ""
        sys.stderr.write(f"{prog}: error: cannot use{where}: {one_line(exc.strerror or exc)}\n")
        return 1
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError, ArithmeticError) as exc:
        # what a hostile or damaged run file can still reach past the format checks
        sys.stderr.write(f"{prog}: error: a run file holds content StaICC cannot use "
                         f"({error_name(exc)}: {one_line(exc)}); check {', '.join(map(str, args.runs))}\n")
        return 1


def one_line(value: Any) -> str:
    """An error's text on one line, control characters escaped (it may quote a file's content)."""
    from .tables import terminal_escape
    return terminal_escape(str(value))[:2000]


def _strict_json(document: dict) -> str:
    """Strict JSON, as results.json is written: a non-finite number (Post_bias's KL with a zero
    probability is +inf) becomes null, and its place is listed under ``"non_finite"``."""
    from ..results.provenance import strict_json_value
    non_finite: List[str] = []
    body = strict_json_value(document, non_finite, "")
    body["non_finite"] = non_finite
    return json.dumps(body, indent=1, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    raise InvalidTypeError(f"not JSON serialisable: {type(value).__name__}")
