"""``staicc verify``: an untouched run and its export pass; an edited aggregate, an altered answer with its
aggregates recomputed to match, and bad inputs are each found, with the exit status the command documents."""
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from StaICC.cli import main
from StaICC.stats.verify import audit_size, miss_probability

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A reference-model run with records, made by the command line (its provenance records the command)."""
    path = str(tmp_path_factory.mktemp("verify") / "run")
    subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "reference", "--datasets", "GLUE-SST2", "TREC",
                    "--limit", "12", "--log-samples", "--output-dir", path, "--no-progress"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def copied(run_dir, tmp_path, name="copy"):
    target = str(tmp_path / name)
    shutil.copytree(run_dir, target)
    return target


def rewrite_records(directory, edit):
    """Apply ``edit(records)`` to the samples file (the compact columns file dropped, as an editor would)."""
    path = os.path.join(directory, "samples.jsonl")
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    edit(records)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    os.remove(os.path.join(directory, "samples.columns.json"))


def edit_results(directory, edit):
    path = os.path.join(directory, "results.json")
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    edit(document)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document, fh)


def test_an_untouched_run_and_its_export_pass(run_dir, tmp_path, capsys):
    assert main(["verify", run_dir, "--model", "reference"]) == 0
    out = capsys.readouterr().out
    assert "0 mismatches" in out and "0 different" in out and out.strip().splitlines()[-1].startswith("PASSED")
    assert main(["export", run_dir, "--format", "eee", "-o", str(tmp_path / "eee"), "--no-intervals"]) == 0
    assert main(["verify", str(tmp_path / "eee"), "--model", "reference", "--audit", "10"]) == 0
    assert "10 bit for bit" in capsys.readouterr().out


def test_every_edited_aggregate_is_named(run_dir, tmp_path, capsys):
    target = copied(run_dir, tmp_path)

    def edit(document):
        divided = document["benchmarks"]["Normal"]["results"]["Divided results"]
        divided["TREC"]["macro_F1"] += 0.01
        document["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"] = 0.99
    edit_results(target, edit)
    assert main(["verify", target]) == 1
    out = capsys.readouterr().out
    assert "mismatch: Normal / TREC: macro_F1" in out
    assert "mismatch: Normal / Averaged: accuracy" in out
    assert "mismatch: Normal / Averaged: macro_F1" in out  # the published average no longer follows either
    assert "3 mismatches" in out and "FAILED" in out


def test_an_altered_answer_with_matching_aggregates_is_found_by_the_audit(run_dir, tmp_path, capsys):
    from StaICC.report.runs import load_run
    from StaICC.stats.bootstrap import dataset_statistic
    target = copied(run_dir, tmp_path)

    altered = []

    def swap(records):
        record = next(r for r in records if r["dataset"] == "GLUE-SST2" and r["prediction"][0] != r["prediction"][1])
        record["prediction"] = record["prediction"][::-1]
        altered.append(record["query_index"])
    rewrite_records(target, swap)
    run = load_run(target)  # the aggregates the altered records give, written over the published ones
    point = dataset_statistic(run.parts["Normal"], "GLUE-SST2", check=False).point()

    def edit(document):
        document["samples_columns"] = None
        document["benchmarks"]["Normal"]["results"]["Divided results"]["GLUE-SST2"].update(point)
        averaged = document["benchmarks"]["Normal"]["results"]["Averaged results"]
        divided = document["benchmarks"]["Normal"]["results"]["Divided results"]
        for name in averaged:
            averaged[name] = (0 + divided["GLUE-SST2"][name] + divided["TREC"][name]) / 2
    edit_results(target, edit)
    assert main(["verify", target]) == 0  # the aggregates alone cannot see it
    capsys.readouterr()
    records = sum(1 for _ in open(os.path.join(target, "samples.jsonl")))
    assert main(["verify", target, "--model", "reference", "--audit", str(records)]) == 1
    out = capsys.readouterr().out
    assert "0 mismatches" in out and "1 different" in out and f"Normal / GLUE-SST2 / query {altered[0]}:" in out


@pytest.mark.parametrize("damage, expected", [
    ("truncated", "not valid JSON"), ("short", "holds 12 records, the run answered 24"),
    ("no_hash", "prompt_sha256"), ("other_model", "another model"), ("no_records", "no per-query records"),
])
def test_bad_inputs_are_one_line_and_exit_2(run_dir, tmp_path, capsys, damage, expected):
    target = copied(run_dir, tmp_path)
    samples = os.path.join(target, "samples.jsonl")
    if damage == "truncated":
        with open(samples, "rb") as fh:
            data = fh.read()
        with open(samples, "wb") as fh:
            fh.write(data[:len(data) // 2])
        os.remove(os.path.join(target, "samples.columns.json"))
    elif damage == "short":
        rewrite_records(target, lambda records: records.__delitem__(slice(12, 24)))
    elif damage == "no_hash":
        rewrite_records(target, lambda records: [r.pop("prompt_sha256") for r in records])
    elif damage == "no_records":
        edit_results(target, lambda document: document.update(samples=None, samples_columns=None))
    model = "uniform" if damage == "other_model" else "reference"
    assert main(["verify", target, "--model", model]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and expected in captured.err, captured.err


def test_the_audit_size_meets_the_statement():
    assert audit_size(10 ** 9) == math.ceil(math.log(0.05) / math.log(0.98)) == 149
    scipy_stats = pytest.importorskip("scipy.stats")
    for population in (50, 300, 800, 5000):
        n = audit_size(population)
        altered = math.ceil(0.02 * population)
        miss = scipy_stats.hypergeom.pmf(0, population, altered, n)
        assert miss <= 0.05 < scipy_stats.hypergeom.pmf(0, population, altered, n - 1)
        assert miss_probability(population, altered, n) == pytest.approx(miss, rel=1e-9)
