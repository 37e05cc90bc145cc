"""Paper tables upright in a default article's \\textwidth wherever they can be: a full suite of ten datasets
(with the long own-distribution column names), a task file's comparison, and the model named by its folder."""
import pytest

from StaICC import cli
from StaICC.report.commands import main
from StaICC.report.latex import render_latex_document
from StaICC.report.cells import Cell, Table
from StaICC.report.notices import model_label
from test_paper_output import compile_latex, needs_pdflatex

TASK = """name = "my_reviews"

[data]
path = "{path}"
input_columns = ["text"]
label_column = "label"

[template]
input_text_prefixes = ["review: "]
label_prefix = "sentiment: "
"""


@pytest.fixture(scope="module")
def suite_runs(tmp_path_factory):
    """The lexical model and chance on every sub-benchmark and all ten datasets (a smoke --limit), as the CLI
    runs them (with the own-distribution columns), and on a task file's dataset."""
    from conftest import REPO_ROOT
    root = tmp_path_factory.mktemp("portrait")
    (root / "mine.toml").write_text(TASK.format(path=(REPO_ROOT / "examples" / "data" / "sentiment.csv").as_posix()))
    paths = {}
    for model in ("reference", "uniform"):
        for name, selection in (("suite", ["--benchmarks", "all", "--limit", "10"]),
                                ("task", ["--tasks", str(root / "mine.toml"), "--benchmarks", "Normal,GLER"])):
            paths[model, name] = str(root / f"{name}-{model}")
            assert cli.main(["run", "--model", model, *selection, "--no-progress", "--log-samples",
                             "--output-dir", paths[model, name]]) == 0
    return paths


def _latex(capsys, *runs) -> str:
    assert main(["report", *runs, "--format", "latex", "--resamples", "10", "--no-progress"]) == 0
    return capsys.readouterr().out


def test_a_full_suite_report_is_upright_and_needs_booktabs_only(suite_runs, tmp_path, capsys):
    body = _latex(capsys, suite_runs["reference", "suite"])
    assert body.splitlines()[0] == "% StaICC tables for a 10 pt article; they need \\usepackage{booktabs}"
    assert "sidewaystable" not in body and body.count("\\begin{table}") >= 7
    needs_pdflatex()
    log = compile_latex(body.replace("\\usepackage{rotating}", ""), tmp_path)
    assert "Overfull" not in log and "Float too large" not in log


def test_a_task_files_comparison_does_not_overflow(suite_runs, tmp_path, capsys):
    body = _latex(capsys, suite_runs["reference", "task"], suite_runs["uniform", "task"])
    assert "sidewaystable" not in body
    needs_pdflatex()
    log = compile_latex(body, tmp_path)
    assert "Overfull" not in log and "Float too large" not in log


def test_a_table_that_cannot_stand_upright_is_turned_and_the_header_says_so():
    wide = Table("Wide: one unit of twelve columns", ["dataset"] + [f"metric {i}" for i in range(12)],
                 [["TREC"] + [Cell(0.1234, 0.1, 0.2)] * 12], units=[list(range(1, 13))])
    body = render_latex_document([wide], "interval")
    assert body.splitlines()[:2] == [
        "% StaICC tables for a 10 pt article; they need \\usepackage{booktabs} and \\usepackage{rotating}",
        "% set sideways (sidewaystable), as no upright layout fits the text width: Wide: one unit of twelve columns"]


@pytest.mark.parametrize("pretrained, shown", [("/data/models/Qwen2.5-0.5B", "hf: Qwen2.5-0.5B"),
                                               ("/data/models/tiny-model/", "hf: tiny-model"),
                                               ("Qwen/Qwen2.5-0.5B", "hf: Qwen/Qwen2.5-0.5B")])
def test_headings_name_a_model_folder_by_its_name(pretrained, shown):
    provenance = {"model": {"backend": "hf", "identity": {"backend": "hf", "pretrained": pretrained}}}
    assert model_label(provenance, "run") == shown


def test_captions_html_and_compare_headings_carry_no_model_path(suite_runs, tmp_path, capsys):
    """A run whose model was a folder: every heading names the folder, never its absolute path."""
    import json
    import shutil
    run = tmp_path / "hf-run"
    shutil.copytree(suite_runs["reference", "task"], run)
    document = json.loads((run / "results.json").read_text())
    document["provenance"]["model"] = {"backend": "hf", "identity": {"backend": "hf",
                                                                     "pretrained": "/secret/place/tiny-model"}}
    (run / "results.json").write_text(json.dumps(document))
    for argv in (["report", str(run), "--format", "latex"], ["compare", str(run), str(run), "--format", "md"]):
        assert main(argv + ["--resamples", "10", "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "tiny-model" in out and "/secret/place" not in out
    pytest.importorskip("matplotlib")
    assert main(["report", str(run), "--html", str(tmp_path / "r.html"), "--resamples", "10", "--no-progress"]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "model hf: tiny-model" in page and "/secret/place" not in page
