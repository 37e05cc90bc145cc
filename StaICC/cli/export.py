"""``staicc export RUN --format eee|hf|lm-eval -o OUT``: a run in the formats the field exchanges results in.

* ``eee``: Every Eval Ever aggregate and instance-level files (:mod:`StaICC.results.eee_export`),
  which ``staicc compare`` and ``staicc report`` read back as the run;
* ``hf``: the ``.eval_results/staicc.yaml`` a Hugging Face model repository shows
  (:mod:`StaICC.results.hf_export`); ``--hf-dataset`` names the Hub benchmark dataset;
* ``lm-eval``: an lm-evaluation-harness results JSON (:mod:`StaICC.results.lm_eval_export`).

Where the run logged its records (``--log-samples``), each number StaICC can bootstrap gets
its interval and standard error over test items (``--resamples``, ``--seed``, ``--level``, as
``staicc report``; ``--no-intervals`` leaves them out).  Every argument is checked before the
run is read: a bad one is one line and exit status 2.
"""
import argparse
import math
import os
import statistics
from typing import Any, Dict, Optional

from ..errors import InvalidValueError
from ..validation import check, Integer, Real
from .common import ArgumentError, as_argument_error, one_line, or_list

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
#: the most bootstrap resamples an export computes (each is a full pass over the records)
MAX_RESAMPLES = 1_000_000
#: what reading a hostile run or writing to a full disk can raise, each said in one line with its kind: a
#: run directory is another person's file (a malformed provenance, a 10^400 value), and a disk can fill
EXPORT_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OSError, OverflowError,
                 RecursionError, MemoryError, UnicodeError)


def add_export_parser(sub: Any) -> None:
    from ..results.exchange import EXPORT_FORMATS
    from ..stats import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
    p = sub.add_parser("export", description="Write a run (a run directory, its results.json, or an EEE export) in a format "
                                   "other tools read. See docs/exchange.md for what goes where.")
    p.add_argument("run", metavar="RUN", help="a run directory written by `staicc run --output-dir`")
    p.add_argument("--format", required=True, choices=EXPORT_FORMATS.names(), help=or_list(EXPORT_FORMATS.names()))
    p.add_argument("--output", "-o", required=True, metavar="DIR", help="folder to write into (created if missing)")
    p.add_argument("--model-id", metavar="ORG/NAME", help="the model's id in the Hub's org/name form (default: "
                                                          "from the run's model identity)")
    p.add_argument("--organization", default="unknown", metavar="NAME",
                   help="eee: who ran the evaluation (source_organization_name; default: unknown)")
    p.add_argument("--evaluator-relationship", default="other", choices=RELATIONSHIPS,
                   help="eee: the evaluator's relationship to the model's developer (default: other)")
    p.add_argument("--hf-dataset", metavar="ID", help="hf: the Hub benchmark dataset the results are for (required "
                                                      "with --format hf)")
    p.add_argument("--hf-revision", metavar="SHA", help="hf: that dataset's revision")
    p.add_argument("--hf-source-url", metavar="URL", help="hf: a link to the run's files or paper")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, help=f"bootstrap resamples for the "
                                                                            f"intervals (default: {DEFAULT_RESAMPLES})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default: {DEFAULT_SEED})")
    p.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"interval level (default: {DEFAULT_LEVEL})")
    p.add_argument("--no-intervals", action="store_true", help="write no bootstrap intervals")
    p.add_argument("--overwrite", "--force", action="store_true",
                   help="replace an earlier export of this format in --output (without it, refused)")
    p.set_defaults(func=export_command)


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument, before the run is read (one-line errors)."""
    from ..results.safe_files import check_directory
    if not os.path.exists(args.run):
        raise ArgumentError(f"export: no run directory or results file at {args.run!r}")
    if args.format == "hf" and not args.hf_dataset:
        raise ArgumentError("export --format hf needs --hf-dataset ID: the Hub dataset registered as the benchmark "
                            "the results are for (StaICC has none of its own on the Hub)")
    as_argument_error(check, args.resamples, Integer(1, MAX_RESAMPLES, text=f"between 1 and {MAX_RESAMPLES}"),
                      "export: --resamples")
    as_argument_error(check, args.level, Real(0, 1, closed="neither", text="strictly between 0 and 1"), "export: --level")
    if args.model_id is not None and (args.model_id.count("/") < 1 or any(not p for p in args.model_id.split("/"))):
        raise ArgumentError(f"export: --model-id must have the form ORG/NAME, got {args.model_id!r}")
    try:
        check_directory(args.output)
    except OSError as exc:
        raise ArgumentError(f"export: cannot write to {args.output!r}: {exc.strerror or exc}") from None
    earlier = _earlier_export(args.format, args.output)
    if earlier is not None and not args.overwrite:
        raise ArgumentError(f"export: {earlier} holds an earlier {args.format} export; give another --output, or "
                            "--overwrite to replace it")


def _earlier_export(format_name: str, output: str) -> Optional[str]:
    """The file an export of ``format_name`` into ``output`` would replace, when there is one: its row's one
    file (the hf and lm-eval files have one name per folder); an EEE export's names are derived from the run
    and its options, so the same run writes the same bytes again and another run never the same name (nothing
    to refuse)."""
    from ..results.exchange import EXPORT_FORMATS
    file = EXPORT_FORMATS.info(format_name).file
    if file is None:
        return None
    path = os.path.join(output, *file.split("/"))
    return path if os.path.lexists(path) else None


def export_command(args: argparse.Namespace) -> int:
    import sys
    check_arguments(args)
    from ..errors import RunFormatError
    try:
        written = export(args)
    except (RunFormatError, ValueError, FileNotFoundError) as exc:
        print(f"staicc export: error: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except EXPORT_ERRORS as exc:
        print(f"staicc export: error: {_described(exc)}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    if args.format == "eee" and not any(str(p).endswith("_samples.jsonl") for p in written):
        print(f"note: {one_line(args.run)} has no per-query records (samples.jsonl): the export holds no "
              "instance-level file and no confidence intervals; run with --log-samples to have them")
    return 0


def _described(exc: BaseException) -> str:
    """An error from reading the run or writing the files as one line: what failed and why (a full disk's
    "No space left on device", a file-size limit's "File too large", a malformed run's missing field)."""
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return one_line(f"cannot write the export{where}: {exc.strerror or exc}")
    return one_line(f"the run cannot be exported ({type(exc).__name__}: {str(exc)[:300]}); is it a run "
                    "directory written by `staicc run`?")


def export(args: argparse.Namespace) -> list:
    """Read the run, bootstrap its intervals, write the format; returns the paths written."""
    from ..results.eee_import import find_export
    from ..results.exchange import EXPORT_FORMATS
    from ..results.run import Run
    if not EXPORT_FORMATS.info(args.format).from_exports and find_export(args.run) is not None:
        raise InvalidValueError(f"{args.run} is already an Every Eval Ever export")
    run = Run.load(args.run)  # with its records: the instance-level file and the intervals read them
    _refuse_lite(run, args)
    intervals = interval_table(run, args) if not args.no_intervals and run.has_records() else None
    return list(EXPORT_FORMATS.get(args.format)(run, args.output, intervals, vars(args)))


def _refuse_lite(run: Any, args: argparse.Namespace) -> None:
    """A lite run is not exported: its results are a subset's own numbers (not even estimates of the full run's,
    which live in provenance.lite), and every format puts them where a reader takes a result."""
    from ..report.lite_tables import lite_section, share_text
    lite = lite_section(run)
    if lite is not None:
        raise InvalidValueError(f"{args.run} is a lite run ({share_text(lite)}): its numbers are the subset's, not "
                                f"results to publish as {args.format}; export a full run of the model (with the lite "
                                "run's --cache it asks only the other items)")


def interval_table(run: Any, args: argparse.Namespace) -> Dict[str, Any]:
    """Bootstrap intervals over test items as plain values: part -> dataset ("" for the average) -> metric ->
    low, high, standard error, resamples, level, left-out resamples, test items."""
    from ..report.progress import StatusLine
    from ..stats import bootstrap_run
    with StatusLine("staicc export") as status:  # a step over a few seconds is announced on stderr
        estimates = bootstrap_run(run, resamples=args.resamples, seed=args.seed, level=args.level, progress=status)
    table: Dict[str, Any] = {"_settings": {"method": "percentile bootstrap over test items", "seed": args.seed,
                                           "resamples": args.resamples, "level": args.level}}
    for name, part in estimates.parts.items():
        rows: Dict[str, Any] = table.setdefault(name, {})
        for dataset, cells in part.datasets.items():
            items = _items(run.parts[name].records.get(dataset, ()))
            rows[dataset] = {metric: _cell(estimate, part.distributions[dataset][metric], items, args)
                             for metric, estimate in cells.items()}
        rows[""] = {metric: _cell(estimate, part.distributions.get("Averaged", {}).get(metric), None, args)
                    for metric, estimate in part.averaged.items()}
    return table


def _cell(estimate: Any, values: Optional[list], items: Optional[int], args: argparse.Namespace) -> Dict[str, Any]:
    return {"low": estimate.low, "high": estimate.high, "unbounded": estimate.unbounded, "items": items,
            "resamples": args.resamples, "level": args.level, "stderr": _stderr(values)}


def _stderr(values: Optional[list]) -> Any:
    """The bootstrap standard error: the standard deviation of the finite resampled values (per component)."""
    if not values:
        return None
    if isinstance(values[0], list):
        return [_stderr([v[c] for v in values]) for c in range(len(values[0]))]
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.stdev(finite) if len(finite) > 1 else None


def _items(records: Any) -> Optional[int]:
    columns = getattr(records, "columns", None)
    indexes = columns["test_index"] if columns is not None else [r["test_index"] for r in records]
    return len(set(indexes)) or None
