"""``staicc run --methods``: the methods table with significance, each method's run beside vanilla's, refusals.

The hf run uses a tiny random Llama saved to disk and computing each prompt alone, so its
results.json equals the hand-wired Python route (``tests/method_routes.py``) to the last bit.
"""
import hashlib
import json

import pytest

from StaICC import cli
from conftest import REPO_ROOT
from run_fixtures import run_cli

EXAMPLE = REPO_ROOT / "examples" / "methods" / "prior_matching.py"


def _fail(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    assert code == 2, out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("staicc: error: "), out.err
    return lines[0]


def _table_rows(text, title):
    """{method: [cells]} of the table titled ``title`` in the terminal output (the package's own layout:
    header, a dashed rule whose dashes give each column's width, then one row a line until a blank line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    spans, at = [], 0
    for dashes in lines[start + 2].split("  "):
        spans.append((at, at + len(dashes)))
        at += len(dashes) + 2
    rows = {}
    for line in lines[start + 3:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in spans]
        rows[cells[0]] = cells[1:]
    return rows


def test_hf_methods_table_equals_the_python_route(tmp_path, capsys):
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    from backend_helpers import save_tiny
    from method_routes import CALIBRATION_NUMBER, LIMIT, hand_wired
    model = save_tiny(str(tmp_path / "tiny"))
    out = tmp_path / "run"
    methods = ["vanilla", "contextual", "domain", "batch", "knn", "hidden"]
    argv = ["run", "--model", "hf", "--model-args", f"pretrained={model},batch_size=1,packing=rows,threads=1",
            "--methods", ",".join(methods), "--method-args", f"calibration_number={CALIBRATION_NUMBER}",
            "--benchmarks", "Normal", "--datasets", "TREC", "rotten_tomatoes", "--limit", str(LIMIT),
            "--resamples", "200", "--cache", str(tmp_path / "answers.sqlite"), "--no-progress"]
    text = run_cli(argv + ["--output-dir", str(out)], capsys)
    assert "Methods against vanilla (k=4, model=hf (pretrained=" in text
    heading = next(line for line in text.splitlines() if line.startswith("Methods against vanilla"))
    assert text.split(heading + "\n", 1)[1].startswith(f"!! NOT STANDARD: limited to the first {LIMIT} test items")
    assert "* differs from vanilla at 0.05 (per dataset: Holm-adjusted across datasets; McNemar's exact" in text
    expected = hand_wired("Normal")
    accuracy = _table_rows(text, "Normal: accuracy")
    assert list(accuracy) == methods
    for name in methods:
        directory = out if name == "vanilla" else out / "methods" / name
        document = json.loads((directory / "results.json").read_text())
        for dataset in ("TREC", "rotten_tomatoes"):
            summary = expected[name][dataset][0]
            written = document["benchmarks"]["Normal"]["results"]["Divided results"][dataset]
            # bit for bit; the command line adds the own-distribution metrics beside the standard's
            assert {key: written[key] for key in summary} == json.loads(json.dumps(summary))
        printed = [cell.rstrip("*") for cell in accuracy[name][:2]]
        assert printed == [f"{expected[name][d][0]['accuracy']:.4f}" for d in ("TREC", "rotten_tomatoes")]
        assert document["provenance"]["method"]["name"] == name
        assert document["benchmarks"]["Normal"]["metadata"]["standard"] is False  # --limit, and the method
    index = json.loads((out / "results.json").read_text())["provenance"]["methods"]
    assert [entry["name"] for entry in index] == methods
    assert index[1]["results"] == "methods/contextual/results.json" and "compared_with_vanilla" in index[1]
    # every request of a method goes through the cache: the same run again asks nothing and prints the same
    again = run_cli(argv, capsys)
    distinct = int(text.split(" distinct, ")[0].split(", ")[-1])
    assert f"{distinct} distinct, 0 asked, {distinct} from the cache" in again
    assert again.split("\n\n* differs")[0] == text.split("\n\n* differs")[0]


def test_an_http_backend_refuses_hidden_states_before_any_inference(capsys):
    line = _fail(["run", "--model", "openai", "--model-args", "base_url=http://127.0.0.1:9/v1,model=tiny",
                  "--methods", "vanilla,hidden", "--datasets", "TREC", "--limit", "5"], capsys)
    assert line == ("staicc: error: method 'hidden' needs hidden states, which the openai backend does not give "
                    "(it answers label scores); the hf backend gives them")


@pytest.mark.parametrize("argv, message", [
    (["--methods", "vanilla,contextual", "--noisy-channel"], "--noisy-channel with --methods"),
    (["--methods", "vanilla,contextual", "--dry-run"], "--dry-run with --methods: a methods run is one process"),
    (["--resamples", "100"], "--resamples sets the methods of a --methods run; it needs --methods"),
    (["--methods", "vanilla,contextal"], "unknown method 'contextal'"),
    (["--methods", "vanilla,knn", "--method-args", "knn_kk=2"], "method parameter knn_kk: no method named takes it"),
    (["--methods", "vanilla,noisy_channel", "--benchmarks", "Template_sens"],
     "method noisy_channel: Template_sens does not support noisy-channel prompts"),
    (["--methods", "vanilla,knn"], "method 'knn' needs full-vocabulary logits, which the reference backend"),
    (["--methods", "vanilla,missing.py"], "method file 'missing.py': no such file"),
])
def test_a_methods_run_refuses_what_it_cannot_do_in_one_line(argv, message, capsys):
    line = _fail(["run", "--datasets", "TREC", "--limit", "5", *argv], capsys)
    assert message in line


def test_a_method_file_runs_by_path_into_the_table_and_the_provenance(tmp_path, capsys):
    pytest.importorskip("numpy", reason="the calibrations need numpy (pip install \"StaICC[methods]\")")
    out = tmp_path / "run"
    argv = ["run", "--methods", f"vanilla,contextual,{EXAMPLE}", "--datasets", "TREC", "rotten_tomatoes",
            "--limit", "8", "--resamples", "100", "--output-dir", str(out), "--log-samples"]
    text = run_cli(argv, capsys)
    assert list(_table_rows(text, "Normal: macro_F1")) == ["vanilla", "contextual", "prior_matching"]
    digest = hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    index = json.loads((out / "results.json").read_text())["provenance"]["methods"]
    assert index[2]["name"] == "prior_matching" and index[2]["file"] == str(EXAMPLE) and index[2]["sha256"] == digest
    own = json.loads((out / "methods" / "prior_matching" / "results.json").read_text())
    assert own["provenance"]["method"]["sha256"] == digest
    assert own["benchmarks"]["Normal"]["metadata"]["non_standard_settings"]["TREC"] == [
        "limited to the first 8 test items", "method prior_matching"]
    compared = run_cli(["compare", str(out), str(out / "methods" / "prior_matching"), "--resamples", "100"], capsys)
    assert "prior_matching - run" in compared
    # a second run into the directory is refused without --overwrite; with it, the methods it leaves out go
    assert "already holds a run" in _fail(argv[:-1], capsys)
    run_cli(["run", "--methods", "vanilla,batch", "--datasets", "TREC", "--limit", "8", "--output-dir", str(out),
             "--overwrite"], capsys)
    assert sorted(p.name for p in (out / "methods").iterdir()) == ["batch"]
    assert not (out / "samples.jsonl").exists()
