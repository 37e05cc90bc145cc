"""How often ``staicc verify`` catches altered results, against its statement.

A CPU run of the built-in reference model (every dataset, ``--limit``) is re-scored once for
real (``staicc verify --model reference``: every audited answer must match bit for bit).  Then
exports with 0 %, 1 %, 2 % and 5 % of their records altered (each altered answer's largest
probability moved to another label) are checked, ``--trials`` times per cell, two ways:

* ``left``: the aggregates are left as published (the records no longer give them);
* ``recomputed``: the aggregates are recomputed from the altered records, so only the audit can
  see the alteration.

Each trial draws its own alteration and its own audit seed.  Since the reference model's
answers were shown to match the records bit for bit, an audit detects an alteration exactly when
its sample holds an altered record; the simulation reads that off the sample, and one trial per
cell runs the whole ``staicc verify`` command on the altered files to show the two agree.

    python benchmarks/bench_verify.py [--limit 40] [--trials 200]
"""
import argparse
import contextlib
import copy
import dataclasses
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from StaICC.cli import main as staicc  # noqa: E402
from StaICC.report.runs import load_run  # noqa: E402
from StaICC.stats.verify import (Findings, audit_sample, audit_size, miss_probability,  # noqa: E402
                                 recompute_aggregates, statement)

SHARES = (0.0, 0.01, 0.02, 0.05)


def altered_answer(record: dict) -> dict:
    """The record with its largest and smallest probabilities swapped: another answer (records whose row is
    constant, which no swap changes, are never chosen)."""
    row = list(record["prediction"])
    top = max(range(len(row)), key=row.__getitem__)
    low = min(range(len(row)), key=row.__getitem__)
    row[top], row[low] = row[low], row[top]
    return dict(record, prediction=row, predicted=low)


def recompute(run, touched) -> None:
    """Write the aggregates the (altered) records give over the published ones: a consistent forgery (only the
    ``touched`` (part, dataset) pairs can change)."""
    from StaICC.spec import SPECS
    from StaICC.stats.bootstrap import dataset_statistic
    from StaICC.subbenchmarks.averaging import AVERAGING
    for part in run.parts.values():
        for dataset in part.datasets():
            if (part.name, dataset) not in touched:
                continue
            point = dataset_statistic(part, dataset, check=False).point()
            divided = part.results["Divided results"][dataset]
            for name, value in point.items():
                if name in divided:
                    divided[name] = value
        spec = SPECS[part.name]
        part.results["Averaged results"] = AVERAGING[spec.averaging](part.divided, len(part.divided))


def altered_run(base, share: float, rng: random.Random, recomputed: bool):
    """A copy of ``base`` with ``share`` of its records altered (at least one when share > 0), the altered keys
    and the (part, dataset) pairs they touch; untouched datasets share the base's records."""
    total = sum(len(rows) for p in base.parts.values() for rows in p.records.values())
    eligible = [(p.name, d, i) for p in base.parts.values() for d, rows in p.records.items()
                for i, r in enumerate(rows) if len(set(r["prediction"])) > 1]
    chosen = rng.sample(eligible, 0 if share == 0 else max(1, round(share * total)))
    touched = {(n, d) for n, d, _ in chosen}
    run = dataclasses.replace(base, parts={  # the run and its parts are frozen values: copies with other fields
        name: dataclasses.replace(part, results=copy.deepcopy(part.results), records={
            d: (list(rows) if (name, d) in touched else rows) for d, rows in part.records.items()})
        for name, part in base.parts.items()})
    for name, dataset, i in chosen:
        records = run.parts[name].records[dataset]
        records[i] = altered_answer(records[i])
    if recomputed:
        recompute(run, touched)
    return run, {(n, d, run.parts[n].records[d][i]["query_index"]) for n, d, i in chosen}, touched


def caught(run, altered: set, touched: set, audit: int, seed: int) -> bool:
    """Whether verify flags the run: an aggregate mismatch (only touched datasets can have one: the others
    are the untouched run's, which passed), or an audited record among the altered."""
    findings = Findings()
    shown = dataclasses.replace(run, parts={
        name: _touched_only(part, touched) for name, part in run.parts.items() if any(name == t[0] for t in touched)})
    recompute_aggregates(shown, findings)
    if findings.mismatches:
        return True
    records = [r for p in run.parts.values() for rows in p.records.values() for r in rows]
    return any((r["benchmark"], r["dataset"], r["query_index"]) in altered for r in audit_sample(records, audit, seed))


def _touched_only(part, touched: set):
    """The part with only its touched datasets' records and numbers, and no average (verify recomputes it)."""
    results = dict(part.results, **{"Divided results": {d: v for d, v in part.divided.items()
                                                        if (part.name, d) in touched}})
    results.pop("Averaged results", None)
    return dataclasses.replace(part, results=results, records={d: rows for d, rows in part.records.items()
                                                               if (part.name, d) in touched})


def write_altered(base_dir: str, run, target: str) -> str:
    """The run's directory with the altered records and aggregates (the compact columns file dropped)."""
    shutil.copytree(base_dir, target)
    os.remove(os.path.join(target, "samples.columns.json"))
    with open(os.path.join(target, "results.json"), encoding="utf-8") as fh:
        document = json.load(fh)
    document["samples_columns"] = None
    for name, part in run.parts.items():
        document["benchmarks"][name]["results"] = part.results
    with open(os.path.join(target, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    with open(os.path.join(target, "samples.jsonl"), "w", encoding="utf-8") as fh:
        for part in run.parts.values():
            for rows in part.records.values():
                for record in rows:
                    fh.write(json.dumps(record) + "\n")
    return target


def plain_records(run) -> None:
    for part in run.parts.values():
        part.records.update({d: [dict(r) for r in rows] for d, rows in part.records.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-verify-")
    base_dir = os.path.join(work, "base")
    # its own process: the run's provenance records the command line the audit writes the prompts from
    subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "reference", "--limit", str(args.limit),
                    "--log-samples", "--output-dir", base_dir, "--no-progress"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=ROOT)
    started = time.perf_counter()
    code = staicc(["verify", base_dir, "--model", "reference"])
    print(f"real re-score of the untouched run: exit {code} in {time.perf_counter() - started:.1f} s\n")
    base = load_run(base_dir)
    plain_records(base)
    population = sum(len(rows) for p in base.parts.values() for rows in p.records.values())
    audit = audit_size(population)
    print(f"{population} records; default audit N = {audit}; statement: {statement(population, audit)}")
    print(f"{'altered':>8} {'aggregates':>11} {'detected':>9} {'audit alone (theory)':>21} {'trials':>7}  "
          "end-to-end check")
    for share in SHARES:
        for recomputed in (False, True):
            rng = random.Random(f"{share}:{recomputed}")
            hits = 0
            for trial in range(args.trials):
                run, altered, touched = altered_run(base, share, rng, recomputed)
                hits += caught(run, altered, touched, audit, seed=trial)
            run, altered, touched = altered_run(base, share, random.Random("cli"), recomputed)
            target = write_altered(base_dir, run, os.path.join(work, f"altered-{share}-{recomputed}"))
            predicted = caught(run, altered, touched, audit, seed=0)
            with contextlib.redirect_stdout(io.StringIO()):
                code = staicc(["verify", target, "--model", "reference", "--seed", "0"])
            mode = "recomputed" if recomputed else "left"
            altered_count = 0 if share == 0 else max(1, round(share * population))
            theory = 1 - miss_probability(population, altered_count, audit)
            print(f"{share:8.0%} {mode:>11} {hits / args.trials:9.3f} {theory:21.3f} {args.trials:7d}  simulated "
                  f"{'caught' if predicted else 'passed'}, staicc verify exit {code}", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
