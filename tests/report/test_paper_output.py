"""Tables a paper can use: LaTeX that compiles in a default article with no overfull box, display names,
intervals as asymmetric as they are; Markdown likewise."""
import os
import re
import shutil
import subprocess

import pytest

from StaICC.report.cells import Cell, Table, _cell_text
from StaICC.report.commands import main
from StaICC.report.latex import render_latex_document
from StaICC.report.latex_layout import TEXT_WIDTH, choose_layout, column_width
from StaICC.datasets.loaders import standard_dataset_names

PREAMBLE = "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{rotating}\n\\begin{document}\n"


@pytest.fixture(scope="module")
def ten_datasets(tmp_path_factory):
    """Normal on all ten standard datasets (the widest dataset names), the lexical model and chance."""
    from run_fixtures import write_run
    from StaICC import Normal
    from StaICC.backends.reference_model import lexical_icl, uniform
    root = tmp_path_factory.mktemp("ten")
    return [write_run(str(root / name), name, model, {"Normal": Normal()})
            for name, model in (("lexical", lexical_icl), ("chance", uniform))]


def compile_latex(body: str, folder) -> str:
    """pdflatex on ``body`` in a default article; the log (the test fails on an error)."""
    (folder / "t.tex").write_text(PREAMBLE + body + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=folder,
                          capture_output=True, text=True, timeout=180)
    log = (folder / "t.log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    return log


def needs_pdflatex():
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (apt-get install -y texlive-latex-base texlive-latex-recommended)")


@pytest.mark.parametrize("ci", ["interval", "pm"])
def test_report_latex_compiles_in_a_default_article_without_overfull_boxes(ten_datasets, tmp_path, capsys, ci):
    needs_pdflatex()
    assert main(["report", *ten_datasets, "--format", "latex", "--ci", ci, "--resamples", "20"]) == 0
    body = capsys.readouterr().out
    assert body.startswith("% StaICC tables for a 10 pt article; they need \\usepackage{booktabs}")
    assert "\\resizebox" not in body and "\\scriptsize" not in body and "\\tiny" not in body  # nothing under 8 pt
    assert "dataset & Accuracy & True-label likelihood" in body and "averaged\\_truelabel" not in body
    log = compile_latex(body, tmp_path)
    assert "Overfull" not in log and "Float too large" not in log
    assert re.search(r"Output written on t\.pdf \((\d+) pages", log)


def test_wide_tables_split_into_panels_then_turn_and_still_fit(tmp_path):
    """Every standard dataset name, four slope metrics with e-notation intervals, a comparison of three runs."""
    needs_pdflatex()
    metrics = ["accuracy slope", "averaged_truelabel_likelihood slope", "macro_F1 slope", "ECE slope"]
    wide = Cell(-2.6e-09, -1.7e-08, 1.4e-08)
    rows = [[d] + [wide] * 4 for d in standard_dataset_names()] + [["Averaged"] + [Cell(-0.0471, -0.0546, -0.0397)] * 4]
    run_table = Table("GLER: chance (model uniform)", ["dataset"] + metrics, rows, ["a note " * 40])
    columns = ["metric", "dataset", "A", "B", "C"]
    for other in ("B", "C"):
        columns += [f"{other} - A", "p", "p (Holm)", "test"]
    diff = [Cell(-0.2485, -0.2737, -0.2239, mark=True, direction="worse"), Cell(0.0005, kind="p"),
            Cell(0.0123, kind="p"), "McNemar exact"]
    compare_rows = [[m, d, Cell(0.2315), Cell(-0.0169), Cell(0.1)] + diff + diff for m in metrics
                    for d in standard_dataset_names() + ["Averaged"]]
    comparison = Table("GLER: A, B, C", columns, compare_rows, keys=[1], group_column=0,
                       units=[[2, 3, 5, 6, 7, 8], [4, 9, 10, 11, 12]], stated_once=[8, 12])
    layout = choose_layout(run_table, "interval")
    assert len(layout.panels) > 1 and not layout.sideways  # split, upright
    body = render_latex_document([run_table, comparison], "interval")
    assert "test: McNemar exact" in body and "McNemar exact &" not in body  # the test stated once per metric
    assert "Table~\\thetable{} (continued)" in body  # a table taller than the page goes on
    log = compile_latex(body, tmp_path)
    assert "Overfull" not in log and "Float too large" not in log


def test_width_estimates_are_close_to_what_latex_sets(tmp_path):
    """The layout's estimate of a column against the width pdflatex gives it (never under, within 12 %)."""
    needs_pdflatex()
    table = Table("t", ["dataset", "ECE (10 bins)"], [["financial_phrasebank", Cell(0.1284, 0.0948, 0.1581)]])
    estimates = [column_width(table, i, "interval", False) for i in (0, 1)]
    probes = "".join(f"\\setbox0\\hbox{{\\small {text}}}\\typeout{{WIDTH \\the\\wd0}}"
                     for text in ("financial\\_phrasebank", "0.1284 [0.0948, 0.1581]"))
    widths = [float(w) for w in re.findall(r"WIDTH ([\d.]+)pt", compile_latex(probes, tmp_path))]
    for estimate, width in zip(estimates, widths):
        assert width <= estimate <= width * 1.12
    assert TEXT_WIDTH == 345.0


def test_a_symmetric_interval_is_plus_minus_an_asymmetric_one_keeps_both_sides():
    asymmetric = Cell(0.0731, 0.0491, 0.1032)
    assert _cell_text(asymmetric, "interval", "md") == "0.0731 [0.0491, 0.1032]"
    assert _cell_text(asymmetric, "pm", "md") == "0.0731 +0.0301/-0.0240"
    assert _cell_text(asymmetric, "pm", "latex") == "0.0731$^{+0.0301}_{-0.0240}$"
    assert _cell_text(Cell(0.5, 0.4, 0.6), "pm", "latex") == "0.5000 $\\pm$ 0.1000"
    assert _cell_text(Cell(0.0, 1e-6, 0.01), "pm", "md") == "0.0000 [1.0e-06, 0.0100]"  # outside its interval
    assert _cell_text(Cell(-0.0152, -0.0177, -0.0125, mark=True), "interval", "latex") == \
        "$-$0.0152 [$-$0.0177, $-$0.0125]$^{*}$"


def test_markdown_and_latex_name_metrics_by_display_name_the_terminal_and_csv_by_key(ten_datasets, capsys):
    assert main(["report", ten_datasets[0], "--format", "md", "--resamples", "5"]) == 0
    assert "| dataset | Accuracy | True-label likelihood | Macro-F1 | ECE (10 bins) |" in capsys.readouterr().out
    assert main(["report", ten_datasets[0], "--format", "csv", "--resamples", "5"]) == 0
    assert "averaged_truelabel_likelihood low" in capsys.readouterr().out
    assert main(["compare", *ten_datasets, "--format", "md", "--resamples", "5"]) == 0
    out = capsys.readouterr().out
    assert "| metric | dataset | lexical | chance | chance − lexical |" in out and "| ECE (10 bins) | SST5 |" in out
    assert os.path.basename(ten_datasets[1]) == "chance"
