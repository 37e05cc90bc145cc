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
    header, a dashed rule whose dashes give each column's width, then one row a line until a blank line; each row:
    family, method, cells)."""
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
        rows[cells[1]] = cells[2:]  # the family, then the method's name
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


def test_methods_all_runs_every_method_the_backend_serves_grouped_by_family(capsys):
    """``--methods all`` with the reference backend: every built-in method but the four that need a representation or attention
    (said in one note), rows grouped family by family with vanilla first."""
    pytest.importorskip("numpy", reason="the calibrations need numpy (pip install \"StaICC[methods]\")")
    from StaICC.methods.builtin import BUILT_IN, FAMILIES
    code = cli.main(["run", "--methods", "all", "--datasets", "TREC", "rotten_tomatoes", "--limit", "16",
                     "--method-args", "calibration_number=16", "--resamples", "20", "--no-progress"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert ("methods 'all' names that the reference backend cannot serve, left out: knn, knn_centroid, hidden, anchors"
            in out.err)
    order = [name for _family, names in FAMILIES for name in names if name not in ("knn", "knn_centroid", "hidden", "anchors")]
    assert list(_table_rows(out.out, "Normal: accuracy")) == order and len(order) == len(BUILT_IN) - 4
    families = {name: group for group, names in FAMILIES for name in names}
    lines = [line for line in out.out.splitlines() if line.startswith("│ ")]
    assert all(line.strip("│").split("│")[0].strip() == families[line.strip("│").split("│")[1].strip()]
               for line in lines)


@pytest.mark.parametrize("argv, message", [
    (["--methods", "vanilla,platt", "--method-args", "l2=-1"], "method 'platt': l2 in platt_scaling must be a number >= 0"),
    (["--methods", "all", "--method-args", "calibration_number=-4"], "calibration_number"),
    (["--methods", "vanilla,bcl", "--method-args", "gamma_steps=0"], "gamma_steps"),
    (["--methods", "vanilla,prototypical", "--method-args", "em_iterations=-1"], "em_iterations"),
    (["--methods", "vanilla,temperature", "--method-args", "knn_k=3"], "method parameter knn_k: no method named"),
    (["--methods", "vanilla,anchors"], "method 'anchors' needs attention on label-word anchors, which the reference "
                                       "backend does not give"),
    (["--methods", "vanilla,ucpa,pmi", "--model", "openai", "--model-args",
      "base_url=http://127.0.0.1:9/v1,model=tiny,scoring=generate"], "reads label probabilities"),
])
def test_the_new_methods_refuse_bad_arguments_in_one_line(argv, message, capsys):
    line = _fail(["run", "--datasets", "TREC", "--limit", "5", *argv], capsys)
    assert message in line


def test_methods_all_on_the_tiny_hf_model_runs_every_built_in_method_as_python_does(tmp_path, capsys):
    """Every built-in method (20 or more) in one command on a tiny random Llama on CPU; each method's results.json
    equals ``run_methods`` in Python on the same model, metric for metric, to the last bit."""
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    from backend_helpers import save_tiny
    from method_routes import backend

    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.builtin import BUILT_IN, table_order
    from StaICC.methods.files import resolve_methods
    from StaICC.methods.run import run_methods
    model = save_tiny(str(tmp_path / "tiny"))
    out = tmp_path / "run"
    text = run_cli(["run", "--model", "hf", "--model-args", f"pretrained={model},batch_size=1,packing=rows,threads=1",
                    "--methods", "all", "--method-args", "calibration_number=8", "--datasets", "TREC",
                    "rotten_tomatoes", "--limit", "5", "--resamples", "20", "--no-progress", "--output-dir", str(out)],
                   capsys)
    assert len(BUILT_IN) >= 20 and list(_table_rows(text, "Normal: accuracy")) == table_order(list(BUILT_IN))
    python = run_methods(backend(), resolve_methods(["all"], {"calibration_number": 8}), "Normal",
                         ["TREC", "rotten_tomatoes"], test_items=QuerySubset.first(5))
    for name in BUILT_IN:
        directory = out if name == "vanilla" else out / "methods" / name
        written = json.loads((directory / "results.json").read_text())["benchmarks"]["Normal"]["results"]
        for dataset in ("TREC", "rotten_tomatoes"):
            summary = python[name]["Normal"]["Divided results"][dataset]
            assert {key: written["Divided results"][dataset][key] for key in summary} == json.loads(
                json.dumps(summary)), (name, dataset)


def test_the_best_cell_is_marked_only_among_those_the_test_finds_better():
    """‡ goes to the best value among the cells whose paired test says "better" (by the metric's direction), never
    to a larger value the test does not support; a column with no better cell has none."""
    from StaICC.cli.methods import BEST_SIGN, _mark_best
    from StaICC.report.cells import Cell
    rows = [["standard", "vanilla", Cell(0.50), Cell(0.30)],
            ["batch", "batch", Cell(0.70), Cell(0.20, mark=True, direction="worse")],
            ["clusters", "prototypical", Cell(0.60, mark=True, direction="better"), Cell(0.29)],
            ["supervised", "platt", Cell(0.55, mark=True, direction="better"), Cell(0.31)]]
    _mark_best(rows)
    assert [row[2].suffix for row in rows] == ["", "", BEST_SIGN, ""]  # 0.70 is larger, but not significant
    assert [row[3].suffix for row in rows] == ["", "", "", ""]
    lower = [["standard", "vanilla", Cell(0.10)], ["a", "a", Cell(0.05, mark=True, direction="better")],
             ["b", "b", Cell(0.02, mark=True, direction="better")]]
    _mark_best(lower)  # a metric where lower is better (ECE): the smallest better value
    assert [row[2].suffix for row in lower] == ["", "", BEST_SIGN]
