"""Tables, the compare/report commands, the plot data, the HTML page (and a real browser when present)."""
import json
import math
import re
import os
import shutil
import subprocess
import sys

import pytest

from run_fixtures import FIXTURE_DATASETS, fixture_runs
from StaICC.report import ResultDict, format_table
from StaICC.report import plots
from StaICC.report.commands import main
from StaICC.report.runs import load_run
from StaICC.report.tables import comparison_tables, render, run_tables
from StaICC.stats import bootstrap_run, compare_runs
from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)


@pytest.fixture(scope="module")
def paths():
    return fixture_runs()


@pytest.fixture(scope="module")
def runs(paths):
    return {name: load_run(path) for name, path in paths.items()}


def test_original_import_path_still_works():
    from StaICC.results import ResultDict as Original
    assert ResultDict is Original
    assert format_table({"Divided results": {"a": {"accuracy": 0.5}}, "Averaged results": {"accuracy": 0.5}}) \
        .splitlines()[0].split() == ["dataset", "accuracy"]


# -- tables ------------------------------------------------------------------------------
def test_run_tables_all_formats(runs):
    run = runs["lexical"]
    estimates = bootstrap_run(run, resamples=20, seed=1, benchmarks=["Normal", "GLER"])
    tables = run_tables(run, estimates)
    names = [t.title for t in tables]
    model = " (model function: lexical)"
    assert names[0] == "Normal: lexical" + model and "GLER: lexical" + model in names
    gler = tables[names.index("GLER: lexical" + model)]
    assert gler.columns[1:] == ["accuracy slope", "averaged_truelabel_likelihood slope", "macro_F1 slope",
                                "expected_calibration_error_1 slope"]
    normal = tables[0]
    e = estimates.parts["Normal"].datasets["TREC"]["accuracy"]
    md = render([normal], "md")
    assert f"| TREC | {e.value:.4f} [{e.low:.4f}, {e.high:.4f}] |" in md
    latex = render([normal], "latex", "pm")
    assert r"\toprule" in latex and r"\bottomrule" in latex and r"rotten\_tomatoes" in latex
    up, down = e.high - e.value, e.value - e.low  # an asymmetric interval keeps both sides: no half-width
    assert (f"{e.value:.4f} $\\pm$ {up:.4f}" if f"{up:.4f}" == f"{down:.4f}"
            else f"{e.value:.4f}$^{{+{up:.4f}}}_{{-{down:.4f}}}$") in latex
    text = render([normal], "table", None)
    assert "TREC" in text and "[" not in text.split("\n", 3)[3]
    rows = list(__import__("csv").reader(render([normal], "csv").splitlines()))
    header, trec = rows[0], next(r for r in rows if r[1] == "TREC")
    assert header[:5] == ["table", "dataset", "accuracy", "accuracy low", "accuracy high"]
    assert [float(v) for v in trec[2:5]] == [e.value, e.low, e.high]


_TERMINAL_TABLE = ("from StaICC.report.tables import Table, Cell, render\n"
                   "print(render([Table('T', ['dataset', 'accuracy'], [['a', Cell(0.5, 0.4, 0.6)]])], 'table'))")


@pytest.mark.parametrize("blocked", ["", "import sys; sys.modules['rich'] = None; sys.modules['tabulate'] = None\n"])
def test_the_terminal_table_is_the_packages_own_whatever_is_installed(runs, blocked):
    """One layout with rich and tabulate installed or not (the venv has rich; [test] does not install it)."""
    out = subprocess.run([sys.executable, "-c", blocked + _TERMINAL_TABLE], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.splitlines() == ["T", "dataset  accuracy", "-------  -----------------------",
                                "a        0.5000 [0.4000, 0.6000]"]


def test_latex_table_compiles(runs, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (apt-get install -y texlive-latex-base texlive-latex-recommended)")
    run = runs["lexical"]
    comparison = compare_runs(run, runs["uniform"], resamples=10, seed=1)
    body = render(run_tables(run) + comparison_tables([run, runs["uniform"]], [comparison]), "latex", "pm")
    (tmp_path / "t.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage[margin=1cm,"
                                    "landscape]{geometry}\n\\begin{document}\n" + body + "\n\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


# -- commands ----------------------------------------------------------------------------
def test_compare_command_json(paths, capsys):
    assert main(["compare", paths["lexical"], paths["uniform"], "--format", "json", "--resamples", "20",
                 "--seed", "5"]) == 0
    data = json.loads(capsys.readouterr().out)
    (c,) = data["comparisons"]
    assert (c["a"], c["b"], c["paired"], c["seed"], c["resamples"]) == ("lexical", "uniform", True, 5, 20)
    d = c["benchmarks"]["Normal"]["datasets"]["TREC"]["accuracy"]
    assert d["test"] == "McNemar exact" and d["significant"] is True
    assert "accuracy" in c["benchmarks"]["Normal"]["averaged"]


def test_compare_command_refuses_other_prompts_then_allows_unpaired(paths, capsys):
    assert main(["compare", paths["lexical"], paths["bm25"], "--resamples", "10"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("staicc compare: error: runs 'lexical' and 'bm25' were not run on "
                                                   "the same prompts")
    assert main(["compare", paths["lexical"], paths["bm25"], "--unpaired", "--resamples", "10", "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "**Normal: lexical (model function: lexical), bm25 (model function: lexical)**" in out and "Unpaired comparison" in out


@pytest.mark.parametrize("argv, message", [
    (["compare", "A"], "compare needs at least two runs"),
    (["compare", "A", "B", "--resamples", "0"], "argument --resamples: expected a positive integer, got 0"),
    (["compare", "A", "B", "--format", "xls"], "argument --format: invalid choice: 'xls'"),
    (["compare", "/no/such/run", "/no/other"], "no run directory or results file at '/no/such/run'"),
    (["report", "A", "--level", "2"], "argument --level: expected a number strictly between 0 and 1, got 2.0"),
])
def test_argument_errors_are_one_line_exit_2(argv, message, capsys):
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err


def test_report_command_tables(paths, capsys):
    assert main(["report", paths["k2"], "--format", "md", "--resamples", "10", "--ci", "pm"]) == 0
    out = capsys.readouterr().out
    assert "**Normal: k2 (model function: lexical)**" in out
    assert re.search(r"\| 0\.\d{4} \+0\.\d{4}/-0\.\d{4} \|", out)  # ± only where the interval is symmetric


def test_report_without_matplotlib_names_the_extra(paths, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from StaICC.report.commands import main\n"
            f"sys.exit(main(['report', {paths['k2']!r}, '--html', {str(tmp_path / 'r.html')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and 'pip install "StaICC[plot]"' in done.stderr
    assert not (tmp_path / "r.html").exists()


# -- plot data ---------------------------------------------------------------------------
def test_reliability_data_uses_the_metric_bins(runs):
    for run in (runs["lexical"], runs["uniform"]):
        part = run.parts["Normal"]
        for dataset in FIXTURE_DATASETS:
            d = plots.reliability_data(part, dataset)
            assert d["bounds"] == [j / 10 for j in range(11)]
            assert sum(d["counts"]) + d["outside"] == d["total"] == 1024
            assert d["ece"] == part.divided[dataset]["expected_calibration_error_1"]
            for j, count in enumerate(d["counts"]):
                if count:
                    assert d["bounds"][j] <= d["confidence"][j] < d["bounds"][j + 1]
                    assert 0 <= d["accuracy"][j] <= 1
                else:
                    assert d["accuracy"][j] is None


def test_gler_data(runs):
    part = runs["lexical"].parts["GLER"]
    d = plots.gler_data(part, "TREC")
    assert d["rates"] == [0, 0.25, 0.5, 0.75, 1.0] and d["x"] == [1, 0.75, 0.25, -0.5, -1.5]
    curve = d["metrics"]["accuracy"]
    assert curve["y"] == [part.divided["TREC"][str(i)]["accuracy"] for i in range(5)]
    assert [curve["slope"], curve["intercept"]] == part.divided["TREC"]["sensitivity"]["accuracy"]


def test_template_grid_data(runs):
    part = runs["lexical"].parts["Template_sens"]
    d = plots.template_grid_data(part)
    assert d["datasets"] == FIXTURE_DATASETS and d["templates"] == list(range(9))
    for i, dataset in enumerate(FIXTURE_DATASETS):
        recorded = part.divided[dataset]["sensitivity"]["consistency"]
        assert math.isclose(d["consistency"][i], recorded, rel_tol=1e-12)
        right = [[r["predicted"] == r["label"] for r in part.records[dataset] if r["pass"] == t] for t in range(9)]
        assert d["accuracy"][i] == [sum(x) / 100 for x in right]
    uniform = plots.template_grid_data(runs["uniform"].parts["Template_sens"])
    assert all(v == 1.0 for row in uniform["agreement"] for v in row)  # chance always says label 0


def test_demo_consistency_data(runs):
    part = runs["lexical"].parts["Demo_sens"]
    d = plots.demo_consistency_data(part)
    for dataset, entry in d.items():
        assert sum(entry["histogram"]) == 128 and entry["levels"] == [c / 8 for c in range(1, 9)]
        assert math.isclose(entry["mean"], part.divided[dataset]["sensitivity"]["consistency"], rel_tol=1e-12)


def test_bias_data(runs):
    run = runs["lexical"]
    d = plots.bias_data(run)
    assert list(d) == FIXTURE_DATASETS
    for dataset, entry in d.items():
        assert math.isclose(sum(entry["frequencies"]), 1.0)
        assert entry["means"]["Contextual_bias"] == run.parts["Contextual_bias"].divided[dataset]["distribution"]
        assert entry["means"]["Domain_bias"] == run.parts["Domain_bias"].divided[dataset]["distribution"]
        post = [m - f for m, f in zip(entry["means"]["Post_bias"], entry["frequencies"])]
        assert post == run.parts["Post_bias"].divided[dataset]["distribution"]
    assert d["TREC"]["labels"][1] == "entity" and len(d["TREC"]["labels"]) == 6


def test_difference_data(runs):
    comparison = compare_runs(runs["k2"], runs["k2"], resamples=5)
    rows = plots.difference_data(comparison)
    assert len(rows) == 4 * (len(FIXTURE_DATASETS) + 1)
    assert all(r["delta"] == 0 and not r["significant"] for r in rows)


# -- the HTML page -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def html_report(paths, tmp_path_factory):
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("html")
    page = out / "report.html"
    assert main(["report", paths["lexical"], paths["uniform"], "--html", str(page), "--resamples", "5"]) == 0
    return page


def test_html_report_is_self_contained(html_report):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        from check_report_browser import external_resources
    finally:
        sys.path.pop(0)
    page = html_report.read_text()
    assert external_resources(page) == []
    # a forest plot per sub-benchmark (7); one figure for all runs of reliability, coverage, GLER, templates,
    # demonstrations and agreement (6); the bias bars, one figure per run (2)
    assert page.count('src="data:image/png;base64,') == 7 + 6 + 2 and page.count('<details class="section"') == 6
    for title in ("Reliability: one panel per dataset", "GLER: one panel per metric and run", "Template_sens: one row",
                  "Demo_sens: one panel per dataset", "Bias of lexical", "Table of the differences from lexical",
                  "Accuracy slope", "Agreement across templates"):
        assert title in page
    figures = sorted(os.listdir(str(html_report).replace(".html", "_figures")))
    assert "normal_reliability.png" in figures and "normal_reliability.svg" in figures and len(figures) == 30
    assert external_resources('<img src="https://cdn.example/x.png"><link href="//fonts.x/y.css">') != []


def test_html_report_in_a_real_browser(html_report, tmp_path):
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    shot = tmp_path / "shot.png"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_report_browser.py"), str(html_report),
                           "--screenshot", str(shot)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10000


def test_the_bias_figures_key_names_only_the_series_the_run_drew():
    """A run of Normal alone draws its mean prediction as the purple bars: the key names no orange or green bars
    (it listed every colour, Contextual_bias's and Domain_bias's too, under a figure without them)."""
    from StaICC.report.figures import _bias_key
    normal_only = _bias_key({"TREC": {"means": {"Normal": [0.5, 0.5]}}})
    assert "grey: the test items' label frequencies" in normal_only
    assert "purple: Normal's mean prediction on the test items" in normal_only
    assert "orange" not in normal_only and "green" not in normal_only and "Post_bias" not in normal_only
    every = _bias_key({"TREC": {"means": {"Contextual_bias": [], "Domain_bias": [], "Post_bias": []}}})
    assert all(word in every for word in ("grey", "orange", "green", "purple: for the test items themselves"))
    assert "Normal's" not in every
