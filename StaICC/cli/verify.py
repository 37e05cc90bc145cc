"""``staicc verify RUN_OR_EEE_FILE [--model NAME --model-args K=V,...] [--audit N]``: check a published run.

The checks and their statistical meaning are in :mod:`StaICC.stats.verify`: every aggregate
recomputed from the per-query records, then (with ``--model``) a seeded random audit of N
records asked again with the verifier's model and compared with the records.  The prompts are
written again from the run's configuration (recorded in its provenance, for a run made in Python
too; an older run's recorded command line otherwise) and each is matched to its record by the
record's prompt hash, so a record whose prompt the run did not write is found too.  Bad inputs (no records, records without prompt hashes, a truncated
file, an export of another model) are one line and exit status 2.  Exit status 0: passed;
1: a mismatch or a different answer.
"""
import argparse
from typing import Any, Dict, List, Tuple

from ..validation import check, Integer, Real
from .common import ArgumentError, as_argument_error, one_line

#: run options that do not change which prompts a run writes; verify leaves them out of the replanned run
_NOT_PLANNING = {"output_dir": None, "overwrite": False, "log_samples": None, "write_out": 0, "show_config": False,
                 "cache": None, "dry_run": False, "shard": None, "launcher": None, "progress": False,
                 "batch_size": None}


def add_verify_parser(sub: Any) -> None:
    from ..stats.verify import DEFAULT_TOLERANCE
    p = sub.add_parser("verify", description="Recompute every aggregate of a run from its per-query records, then re-score "
                                   "a seeded random audit of its prompts with --model and compare each answer. "
                                   "See docs/exchange.md.")
    p.add_argument("run", metavar="RUN_OR_EEE_FILE", help="a run directory, its results.json, or a `staicc export` "
                                                          "(EEE) file or folder")
    p.add_argument("--model", metavar="NAME", help="the backend to re-score the audit with (as `staicc run --model`); "
                                                   "without it only the aggregates are checked")
    p.add_argument("--model-args", default="", metavar="K=V,...", help="the backend's arguments")
    p.add_argument("--audit", type=int, metavar="N", help="records to re-score (default: the smallest N that catches "
                   "an alteration of >= 2%% of the records with probability >= 95%%: 149 for a large run)")
    p.add_argument("--seed", type=int, default=0, help="the audit sample's seed (default: 0)")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                   help=f"largest absolute difference of a probability still the same answer when not bit for bit "
                        f"(default: {DEFAULT_TOLERANCE:g})")
    p.set_defaults(func=verify_command)


def verify_command(args: argparse.Namespace) -> int:
    if args.audit is not None:
        as_argument_error(check, args.audit, Integer(0, text="a non-negative integer"), "--audit")
    as_argument_error(check, args.tolerance, Real(0, finite=False, text="a non-negative number"), "--tolerance")
    if args.audit and not args.model:
        raise ArgumentError("--audit re-scores prompts with your model: give --model (and --model-args)")
    from ..stats.verify import Findings, audit_size, prompt_hashes_present, recompute_aggregates, verdict
    run = _loaded(args.run)
    records = [r for part in run.parts.values() for rows in part.records.values() for r in rows]
    if not records:
        raise ArgumentError(f"verify: {args.run} holds no per-query records; verify needs a run made with "
                            "--log-samples (or its export)")
    missing = prompt_hashes_present(records)
    if missing is not None:
        raise ArgumentError(f"verify: record {missing} of {args.run} has no prompt hash (prompt_sha256); its prompt "
                            "cannot be matched, so the answers cannot be audited")
    findings = Findings()
    as_argument_error(recompute_aggregates, run, findings)
    if args.model:
        size = audit_size(len(records)) if args.audit is None else min(args.audit, len(records))
        _audit(args, run, records, size, findings)
    line, lines = verdict(findings, len(records))
    for text in lines:
        print(one_line(text))
    print(line)
    return 0 if findings.passed else 1


def _loaded(path: str) -> Any:
    import os
    from ..errors import RunFormatError
    from ..report.runs import load_run
    if not os.path.exists(path):
        raise ArgumentError(f"verify: no run directory, results file or export at {path!r}")
    try:
        return load_run(path)
    except (RunFormatError, OSError, ValueError, KeyError, TypeError) as exc:
        raise ArgumentError(f"verify: cannot read {path}: {exc}") from None


def _audit(args: argparse.Namespace, run: Any, records: List[Dict[str, Any]], size: int, findings: Any) -> None:
    """Re-score ``size`` sampled records with the verifier's model and compare each with its record."""
    from ..engine.scoring import score_requests
    from ..requests import prompt_sha256
    from ..stats.verify import audit_sample, compare_answer
    backend, works = _replanned(args, run)
    sample = audit_sample(records, size, args.seed)
    wanted = {(r["benchmark"], r["dataset"], int(r["query_index"])): r for r in sample}
    asked: List[Tuple[Dict[str, Any], Any]] = []
    for part_name, part_works in works.items():
        for work in part_works:
            if not any(key[0] == part_name and key[1] == work.dataset for key in wanted):
                continue
            for request in work.requests():
                record = wanted.pop((part_name, request.dataset, request.query_index), None)
                if record is not None:
                    asked.append((record, request))
    for key in wanted:  # sampled records the run's plan has no prompt for
        findings.audited += 1
        findings.different.append(f"{key[0]} / {key[1]} / query {key[2]}: the run's plan writes no such prompt")
    matched = []
    for record, request in asked:
        if prompt_sha256(request.prompt) != record["prompt_sha256"]:
            findings.audited += 1
            findings.different.append(f"{record['benchmark']} / {record['dataset']} / query {record['query_index']}: "
                                      "the record's prompt hash is not the prompt the run writes there")
        else:
            matched.append((record, request))
    try:
        answers = score_requests(backend, [request for _, request in matched])
    finally:
        backend.close()
    for (record, _), answer in zip(matched, answers):
        compare_answer(record, _row(answer.prediction, len(record["prediction"])), args.tolerance, findings)


def _row(prediction: Any, width: int) -> List[float]:
    """A prediction as its record's row (a label index is one-hot, as the records write it)."""
    if isinstance(prediction, int):
        return [1.0 if c == prediction else 0.0 for c in range(width)]
    return [float(v) for v in prediction]


def _replanned(args: argparse.Namespace, run: Any) -> Tuple[Any, Dict[str, Any]]:
    """The verifier's backend and the run's works, planned again from the run's recorded configuration (any
    run, a notebook's too), else (a run recorded before the configuration was) from its command line."""
    from ..backends.registry import planned_backend
    from ..subbenchmarks.suite import plan_suite
    from .run_config import build_suite_of
    import warnings
    from ..errors import TamperingWarning
    config = _recorded_config(args, run)
    backend = as_argument_error(planned_backend, config.model, **config.arguments)
    _check_model(run, backend)
    with warnings.catch_warnings():  # the run's departures were reported when it ran
        warnings.simplefilter("ignore", TamperingWarning)
        return backend, as_argument_error(plan_suite, backend, as_argument_error(build_suite_of, config))


def _recorded_config(args: argparse.Namespace, run: Any) -> Any:
    """The run's configuration with the verifier's model: from provenance's ``run_config``, else from the
    recorded ``staicc run`` command line (one line, exit 2, when neither can write the prompts again)."""
    recorded = run.provenance.get("run_config")
    command = run.provenance.get("command")
    from_command = isinstance(command, list) and "run" in command  # a `staicc run` command line writes them too
    if isinstance(recorded, dict) and not (recorded.get("not_replayable") and from_command):
        if recorded.get("methods"):
            raise ArgumentError("verify: the run is a --methods run; verify the run of one method (DIR/methods/NAME)")
        from ..backends.registry import parse_model_args
        from ..runs.config_record import config_from_record
        try:
            return config_from_record(recorded, args.model, as_argument_error(parse_model_args, args.model_args))
        except (ValueError, KeyError, TypeError) as exc:
            raise ArgumentError(f"verify: {exc}") from None
    from .run_config import resolve_config
    parsed = _recorded_args(run)
    for name, value in _NOT_PLANNING.items():
        setattr(parsed, name, value)
    parsed.model, parsed.model_args = args.model, args.model_args
    if getattr(parsed, "methods", None):
        raise ArgumentError("verify: the run is a --methods run; verify the run of one method (DIR/methods/NAME)")
    return resolve_config(parsed)


def _recorded_args(run: Any) -> argparse.Namespace:
    """The run's own ``staicc run`` arguments, parsed again (one line, exit 2, when they cannot be)."""
    from .common import OneLineParser
    from .run import add_run_parser
    command = run.provenance.get("command")
    if not isinstance(command, list) or "run" not in command:
        raise ArgumentError("verify: the run's provenance records no `staicc run` command line, so its prompts "
                            "cannot be written again for the audit; verify its aggregates without --model")
    parser = OneLineParser(prog="staicc")
    add_run_parser(parser.add_subparsers(dest="command", parser_class=OneLineParser))
    tail = [str(a) for a in command[command.index("run"):]]
    try:
        return parser.parse_args(tail)
    except ArgumentError as exc:
        raise ArgumentError(f"verify: the run's recorded command line does not parse here ({exc})") from None


def _check_model(run: Any, backend: Any) -> None:
    """Refuse a verifier's model other than the run's (by the fingerprint provenance records)."""
    model = run.provenance.get("model") if isinstance(run.provenance.get("model"), dict) else {}
    recorded = model.get("fingerprint")
    if recorded and recorded != backend.fingerprint():
        raise ArgumentError(f"verify: the run was made with another model ({one_line(str(model.get('identity')))[:200]}, "
                            f"fingerprint {str(recorded)[:12]}); --model gives fingerprint "
                            f"{backend.fingerprint()[:12]}: audit it with the run's model")

