"""``staicc compare``: differences with intervals and p-values, the flipped queries, and a gate for CI.

Exit status: 0 when the comparison was written and no ``--fail-if`` condition holds;
1 on an error (a run that cannot be read, records that do not match their results);
2 on an argument error (one line, before any run is read);
:data:`~StaICC.stats.gate.GATE_EXIT_STATUS` (3) when a ``--fail-if`` condition holds: the
output is still written, and one line per place where a condition holds goes to stderr.
"""
import argparse
import sys
from typing import Any, Dict, List, Optional

from ..validation import argument_type, Integer
from .command_options import (PROG, CommandError, _add_statistics_options, _comparisons, _emit, _load,
                              _run, _strict_json)

#: rows of each dataset's list of flips in the text formats (table, md, latex) unless --flips-limit says otherwise
DEFAULT_FLIPS_LIMIT = 20
#: characters of a prompt shown in a text table (the JSON and CSV outputs hold the whole prompt)
PROMPT_CHARS = 80


def _condition(text: str):
    from ..stats.gate import parse_condition
    try:
        return parse_condition(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--fail-if ", "", 1)) from None


_limit = argument_type(Integer(0, text="a number of rows (0: all)"))


def add_compare_parser(subparsers) -> argparse.ArgumentParser:
    """``staicc compare RUN_A RUN_B [RUN_C ...]``: differences against RUN_A with CIs and p-values."""
    parser = subparsers.add_parser(
        "compare", description="Compare runs (run directories or results.json files) with the first one: per dataset and "
                    "averaged, each metric of each run, the difference with its bootstrap confidence interval over "
                    "test items, and p-values (McNemar's exact test for accuracy, paired bootstrap otherwise), "
                    "Holm-corrected across datasets. Exit status: 0 done, 1 error, 2 argument error, 3 a --fail-if "
                    "condition holds.")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories or results.json files; the first "
                                                               "is the baseline")
    parser.add_argument("--format", default="table", choices=["table", "md", "latex", "csv", "json"],
                        help="output format (default: table)")
    parser.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    parser.add_argument("--flips", action="store_true",
                        help="also list, per sub-benchmark and dataset, the queries whose prediction changed (with "
                             "the prompt when the runs were logged with --log-samples=full) and count those fixed "
                             "and broken")
    parser.add_argument("--flips-limit", type=_limit, default=None, metavar="N",
                        help=f"flips listed per dataset in table, md and latex output (default: "
                             f"{DEFAULT_FLIPS_LIMIT}; 0: all); csv and json list every flip")
    parser.add_argument("--fail-if", type=_condition, action="append", default=[], metavar="CONDITION",
                        dest="fail_if",
                        help="exit with status 3 when a difference meets CONDITION = METRIC:THRESHOLD[:WHERE]"
                             "[:significant], e.g. accuracy:-0.01 (the averaged accuracy drops by more than 0.01), "
                             "Normal/expected_calibration_error_1:+0.02:any (it rises by more than 0.02 on the "
                             "averaged row or any dataset), accuracy:-0:TREC:significant; repeatable")
    _add_statistics_options(parser)
    parser.set_defaults(func=compare_command)
    return parser


def compare_command(args) -> int:
    """Print (or write) the comparison of ``args.runs`` with the first run; the gate's status."""
    if len(args.runs) < 2:
        sys.stderr.write(f"{PROG} compare: error: compare needs at least two runs, got {len(args.runs)}\n")
        return 2
    if getattr(args, "flips", False) and args.unpaired:
        sys.stderr.write(f"{PROG} compare: error: --flips needs runs on the same prompts; it cannot be "
                         "combined with --unpaired\n")
        return 2
    if getattr(args, "flips_limit", None) is not None and not getattr(args, "flips", False):
        sys.stderr.write(f"{PROG} compare: error: --flips-limit is for --flips\n")
        return 2
    return _run(_compare, args)


def _compare(args, status) -> int:
    from ..backends.numerics import comparison_notes
    runs = _load(args, status)
    check_lite_pairs(runs, status, "compare")
    routes = []  # runs of the first run's model by another route: measured, never starred
    for run in runs[1:]:  # what the runs' arithmetic makes of their differences, before any number
        notes = comparison_notes(runs[0].provenance, run.provenance, f"{runs[0].label} vs {run.label}",
                                 _measured(runs[0], run))
        routes.append(any("the same model computed under different settings" in line for line in notes))
        for line in notes:
            status.done()
            sys.stderr.write(f"{PROG} compare: warning: {line}\n")
    comparisons = _comparisons(runs, args, status)
    from ..stats.route_difference import unstarred
    comparisons = [unstarred(c) if route else c for c, route in zip(comparisons, routes)]
    flips = _all_flips(runs, status) if args.flips else []
    failures = _gate(args, comparisons)
    status.done()
    _emit(_document(args, runs, comparisons, flips, failures), args.output)
    if failures:
        from ..stats.gate import GATE_EXIT_STATUS
        for failure in failures:
            sys.stderr.write(f"{PROG} compare: {failure.line()}\n")
        return GATE_EXIT_STATUS
    return 0


def check_lite_pairs(runs, status, command: str) -> None:
    """Runs that a difference cannot pair refused before any number (``staicc compare`` and ``staicc report``
    of several runs, paired or not): a lite run pairs with a lite run on the same items only; a note where the
    values compared are the subset's own."""
    from ..stats.compare import UnpairedRunsError
    from ..stats.lite_run import lite_pairing
    for run in runs[1:]:
        refusal, note = lite_pairing(runs[0], run)
        if refusal is not None:  # runs that cannot be paired: one exit status whatever the reason (1)
            raise UnpairedRunsError(refusal)
        if note is not None:
            status.done()
            sys.stderr.write(f"{PROG} {command}: note: {note}\n")


def _measured(a, b):
    """What two runs of one model differ by, when their numerics records differ (else nothing is read)."""
    from ..backends.numerics import numerics_conflicts, same_model
    if not same_model(a.provenance, b.provenance) or not numerics_conflicts(
            a.provenance.get("numerics"), b.provenance.get("numerics")):
        return None
    from ..stats.route_difference import measured_difference
    return measured_difference(a, b)


def _all_flips(runs, say) -> List[Dict[str, Any]]:
    """Per run after the first: its flips against the first run, prompts attached when logged."""
    from ..stats.flips import attach_prompts, find_flips
    out = []
    for other in runs[1:]:
        found = find_flips(runs[0], other, progress=say)
        if any(d.flips for d in found):
            say("reading the prompts of the flipped queries")
            if not attach_prompts(other.samples_path, found):
                attach_prompts(runs[0].samples_path, found)
        out.append({"a": runs[0].label, "b": other.label, "datasets": found,
                    "words": {(d.benchmark, d.dataset): _label_words(runs[0], d.benchmark, d.dataset) for d in found}})
    return out


def _gate(args, comparisons) -> List[Any]:
    if not args.fail_if:
        return []
    from ..stats.gate import evaluate
    try:
        return evaluate(args.fail_if, comparisons)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _document(args, runs, comparisons, flips, failures) -> str:
    from .tables import comparison_tables, render
    if args.format == "json":
        document: Dict[str, Any] = {"comparisons": [c.to_dict() for c in comparisons]}
        if args.flips:
            document["flips"] = [{"a": f["a"], "b": f["b"], "datasets": [d.to_dict() for d in f["datasets"]]}
                                 for f in flips]
        if args.fail_if:
            document["gate"] = _gate_dict(args, failures)
        return _strict_json(document)
    tables = comparison_tables(runs, comparisons)
    limit = None if args.format == "csv" else (DEFAULT_FLIPS_LIMIT if args.flips_limit is None else args.flips_limit)
    for entry in flips:
        tables += flips_tables(entry["a"], entry["b"], entry["datasets"], limit or None, args.format == "csv",
                               entry.get("words"))
    return render(tables, args.format)


def _gate_dict(args, failures) -> Dict[str, Any]:
    from ..stats.gate import GATE_EXIT_STATUS
    return {"conditions": [c.to_dict() for c in args.fail_if], "failures": [f.to_dict() for f in failures],
            "exit_status": GATE_EXIT_STATUS if failures else 0}


def _label_words(run: Any, benchmark: str, dataset: str) -> Optional[List[str]]:
    """The label words a run recorded for (sub-benchmark, dataset), or None."""
    part = run.parts.get(benchmark)
    recorded = (getattr(part, "metadata", None) or {}).get("label_words")
    words = recorded.get(dataset) if isinstance(recorded, dict) else None
    return list(words) if isinstance(words, list) and all(isinstance(w, str) for w in words) else None


def _label(index: Optional[int], words: Optional[List[str]]) -> str:
    """A label as the reader wrote it: its word (the run's label words), else its index."""
    if index is None:
        return "n/a"
    return words[index] if words is not None and 0 <= index < len(words) else str(index)


def flips_tables(a: str, b: str, found, limit: Optional[int], whole_prompts: bool = False,
                 words: Optional[Dict[Any, Optional[List[str]]]] = None) -> List[Any]:
    """A summary table of the flips of ``b`` against ``a``, then one list per dataset with flips.

    ``limit``: rows per list (None: all); ``whole_prompts``: prompts uncut (CSV), else the end of
    each prompt, :data:`PROMPT_CHARS` characters: the flipped query (the demonstrations come first);
    ``words``: label words by (sub-benchmark, dataset), shown instead of label indexes.
    """
    from .tables import Table
    summary = [[d.benchmark, d.dataset, d.prompts, len(d.flips), d.count("fixed"), d.count("broken"),
                d.count("changed")] for d in found]
    tables = [Table(f"Flips: {b} against {a}", ["sub-benchmark", "dataset", "prompts", "flipped", "fixed",
                                                 "broken", "changed"], summary,
                    ["fixed: wrong in the first run, right in the second; broken: the reverse; changed: another "
                     "wrong label, or a pseudo query without ground truth (Contextual_bias, Domain_bias)."])]
    for d in found:
        if not d.flips:
            continue
        shown = d.flips if limit is None else d.flips[:limit]
        with_prompts = any(f.prompt is not None for f in d.flips)
        item = "row id" if d.row_ids else "test split index"
        columns = ["query", "pass", "repeat", item, "label", a, b, "kind"] + (["prompt"] if with_prompts else [])
        named = (words or {}).get((d.benchmark, d.dataset))
        rows = [[f.query_index, f.pass_index, f.repeat, _item(f, d.row_ids), _label(f.label, named),
                 _label(f.predicted_a, named), _label(f.predicted_b, named), f.kind]
                + ([_prompt_text(f.prompt, whole_prompts)] if with_prompts else []) for f in shown]
        notes = [f"... and {len(d.flips) - len(shown)} more (--flips-limit 0 lists all)"] \
            if len(shown) < len(d.flips) else []
        if not d.row_ids:
            notes.append(f"{a}'s records carry no row ids (written by an earlier StaICC): items are named by "
                         "their index in the test split")
        tables.append(Table(f"Flips: {d.benchmark} / {d.dataset}: {b} against {a}", columns, rows, notes))
    return tables


def _item(flip: Any, row_ids: bool) -> Any:
    """A flipped query's test item: its own row id, else (an earlier run) its index in the test split."""
    if not row_ids:
        return flip.test_index
    return "" if flip.row_id is None else flip.row_id


def _prompt_text(prompt: Any, whole: bool) -> str:
    if prompt is None:
        return ""
    text = prompt if isinstance(prompt, str) else " | ".join(str(p) for p in prompt)
    text = " ".join(text.split()) if not whole else text
    return text if whole or len(text) <= PROMPT_CHARS else "..." + text[-(PROMPT_CHARS - 3):]
