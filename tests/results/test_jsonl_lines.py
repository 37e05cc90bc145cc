"""Every JSONL file the package writes has one record per line under ``str.splitlines()``.

rotten_tomatoes holds reviews with U+0085 (next line); ``str.splitlines()`` also breaks at U+2028 and
U+2029. Every Eval Ever's validator splits its ``_samples.jsonl`` files that way, so a raw one turns one record
into two lines that are not JSON. The run below logs full prompts for every dataset and exports them.
"""
import glob
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from StaICC.results.jsonl import jsonl_line

BREAKS = "\u0085\u2028\u2029"


def _records(path):
    text = open(path, encoding="utf-8").read()
    lines = text.splitlines()
    assert lines == text.split("\n")[:-1], f"{path}: a line break inside a record"
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def full_text_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("full_text")
    from StaICC import cli
    assert cli.main(["run", "--benchmarks", "Normal", "--log-samples", "full", "--no-progress",
                     "--output-dir", str(root / "run")]) == 0
    assert cli.main(["export", str(root / "run"), "--format", "eee", "-o", str(root / "eee")]) == 0
    return root


def test_every_jsonl_export_of_a_full_text_run_has_one_record_per_line(full_text_run):
    samples = _records(str(full_text_run / "run" / "samples.jsonl"))
    assert len({record["dataset"] for record in samples}) == 10
    # the run's prompts do hold U+0085 (rotten_tomatoes), decoded back from their escapes
    assert sum("\u0085" in record["prompt"] for record in samples) > 0
    exported = glob.glob(str(full_text_run / "eee" / "data" / "**" / "*_samples.jsonl"), recursive=True)
    assert len(exported) == 1
    instances = _records(exported[0])
    assert len(instances) == len(samples)
    assert "\\u0085" in open(exported[0], encoding="utf-8").read()


@pytest.mark.parametrize("value", [{"text": "a\u0085b\u2028c\u2029d"}, ["\u2028"], "plain \u00e9"])
def test_a_jsonl_line_escapes_the_three_line_breaks_and_reads_back_the_same(value):
    line = jsonl_line(value, ensure_ascii=False)
    assert len(line.splitlines()) == 1 and not any(c in line for c in BREAKS)
    assert json.loads(line) == value


def test_a_batch_api_line_is_one_line(capsys):
    from StaICC.scaleout.batch_api import _line
    line = _line("q-1", "/completions", {"prompt": "review\u0085text\u2028more"})
    assert len(line.splitlines()) == 1 and json.loads(line)["body"]["prompt"] == "review\u0085text\u2028more"


def _validator_python():
    """An interpreter with Every Eval Ever's package: ``STAICC_EEE_PYTHON`` (CI sets it; the package needs
    Python >= 3.12, so it often lives beside the test interpreter, not in it), else this one if it has it."""
    named = os.environ.get("STAICC_EEE_PYTHON")
    if named:
        return named
    return sys.executable if importlib.util.find_spec("every_eval_ever") is not None else None


def test_every_eval_evers_own_validator_accepts_the_full_text_export(full_text_run):
    python = _validator_python()
    if python is None:
        pytest.skip("every_eval_ever is not installed (pip install every-eval-ever==0.3.0, Python >= 3.12; "
                    "or set STAICC_EEE_PYTHON to an interpreter that has it)")
    files = sorted(glob.glob(str(full_text_run / "eee" / "data" / "**" / "*.json*"), recursive=True))
    assert len(files) == 2  # the aggregate log and its instance-level records
    # the validator takes files (or fixed-depth globs), not folders; --format json gives one verdict per file
    done = subprocess.run([python, "-m", "every_eval_ever", "validate", "--format", "json", *files],
                          capture_output=True, text=True, timeout=600, cwd=os.getcwd())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    assert [(v["file_type"], v["valid"], v["errors"]) for v in verdicts] == [("aggregate", True, []), ("instance", True, [])]
    assert verdicts[1]["line_count"] == len(_records(str(full_text_run / "run" / "samples.jsonl")))
