"""The HTML report as a reader sees it (headless Chromium at 1400 px, two runs), its figures, the notebook
display, and the frictions of the report command: progress lines, missing folders, label words, inf."""
import json
import os
import pty
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from run_fixtures import fixture_runs
from StaICC.report.commands import main
from StaICC.report.runs import load_run

ROOT = str(REPO_ROOT)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    pytest.importorskip("matplotlib")
    pytest.importorskip("numpy")
    paths = fixture_runs()
    out = tmp_path_factory.mktemp("page") / "new folder" / "report.html"  # the folder is created
    assert main(["report", paths["lexical"], paths["uniform"], "--html", str(out), "--resamples", "20"]) == 0
    return out


def _measure(path, width=1400):
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        from check_report_browser import measure
    finally:
        sys.path.pop(0)
    return measure(str(path), width)


def test_two_runs_at_1400_px_no_text_under_10_px_and_a_short_page(page):
    found = _measure(page)
    assert found["width"] == 1400
    assert found["smallest_text_px"] >= 10, found["smallest_text"]
    figures = found["figures"]
    assert len(figures) == 15 and all(shown == natural for _, shown, natural, _ in figures)  # drawn unscaled
    assert all(text >= 11 for *_, text in figures)  # 8 pt at 100 dpi
    # the page opens with the first section only; the others open on a click
    assert found["initial"] < found["sections"] / 2 and found["initial"] < 6000


def test_every_figure_keeps_its_legend_off_the_data_and_its_text_at_8_pt(page):
    """Draw each figure of the page again and check no legend box overlaps any panel."""
    from StaICC.report import diagnoses, forest, plot_data, plots
    from StaICC.stats import compare_runs
    paths = fixture_runs()
    runs = [load_run(paths["lexical"]), load_run(paths["uniform"])]
    comparison = compare_runs(*runs, resamples=10, seed=3)
    drawn = [
        plots.draw_reliability([(r.label, {d: plot_data.reliability_data(r.parts["Normal"], d)
                                           for d in r.parts["Normal"].datasets()}) for r in runs]),
        diagnoses.draw_coverage([(r.label, diagnoses.calibration_data(r.parts["Normal"])) for r in runs]),
        plots.draw_gler([(r.label, [plot_data.gler_data(r.parts["GLER"], d) for d in r.parts["GLER"].datasets()])
                         for r in runs]),
        plots.draw_demo_consistency([(r.label, plot_data.demo_consistency_data(r.parts["Demo_sens"])) for r in runs]),
        plots.draw_template_grid([(r.label, plot_data.template_grid_data(r.parts["Template_sens"])) for r in runs]),
        plots.draw_bias(plot_data.bias_data(runs[0]), runs[0].label),
        diagnoses.draw_agreement([(r.label, diagnoses.agreement_data(r)) for r in runs]),
        forest.draw_differences([r for r in plot_data.difference_data(comparison) if r["benchmark"] == "Normal"],
                                "Normal"),
    ]
    for fig in drawn:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        boxes = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible() and ax.axison]
        for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
            box = legend.get_window_extent(renderer)
            assert not any(box.overlaps(panel) for panel in boxes), fig
        assert plots.min_text_px(fig) >= 11  # 8 pt at 100 dpi is 11.1 px
        assert fig.get_figwidth() * fig.dpi <= 1280
        plots.close(fig)


def test_captions_name_every_colour_drawn(page):
    html = page.read_text(encoding="utf-8")
    forest_caption = html[html.index("Normal: uniform − lexical"):][:1200]
    for meaning in ("green: significantly better", "red: significantly worse", "black: significant where the "
                    "metric has no better direction", "grey: not significant"):
        assert meaning in forest_caption
    assert "blue: lexical" in html and "orange: uniform" in html  # the run colours, in every all-runs caption
    assert "grey: the test items' label frequencies" in html and "orange: the mean prediction for content-free" in html


def test_the_report_shows_inline_in_a_notebook_with_its_colours():
    pytest.importorskip("matplotlib")
    pytest.importorskip("numpy")
    from StaICC.report import html_report
    paths = fixture_runs()
    report = html_report(paths["k2"], paths["lexical"], resamples=5, paired=False)
    fragment = report._repr_html_()
    assert fragment.startswith('<div class="staicc-report"><style>') and "<body" not in fragment
    styles = fragment[fragment.index("<style>") + len("<style>"):fragment.index("</style>")]
    selectors = [rule.split("{")[-2].strip() for rule in styles.split("}") if "{" in rule]
    assert selectors and all(part.strip().startswith(".staicc-report")  # every rule scoped to the report
                             for selector in selectors for part in selector.split(","))
    assert report.page.count("<img") == fragment.count("<img") and len(report.figures) == 2 * fragment.count("<img")


def _stderr_on_a_terminal(argv):
    """Run ``python -m StaICC ARGV`` with stderr on a pseudo-terminal; (exit status, what stderr showed)."""
    controller, terminal = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "StaICC", *argv], stdout=subprocess.DEVNULL, stderr=terminal,
                          cwd=ROOT, timeout=300, env={**os.environ, "COLUMNS": "200"})
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    return done.returncode, shown.decode("utf-8", "replace")


def test_report_and_compare_say_what_they_are_doing(tmp_path):
    paths = fixture_runs()
    status, shown = _stderr_on_a_terminal(["report", paths["k2"], paths["lexical"], "--unpaired", "--resamples", "5",
                                           "--format", "md"])
    assert status == 0
    for step in ("staicc report: reading run 1 of 2: k2", "staicc report: reading run 2 of 2: lexical",
                 "staicc report: resampling Normal: lexical against k2"):
        assert step in shown
    assert shown.endswith("\r\x1b[K")  # the line is cleared before the tables
    status, shown = _stderr_on_a_terminal(["compare", paths["lexical"], paths["uniform"], "--resamples", "5"])
    assert status == 0 and "staicc compare: resampling GLER: uniform against lexical" in shown
    logged = subprocess.run([sys.executable, "-m", "StaICC", "report", paths["k2"], "--resamples", "5", "--progress",
                             "--html", str(tmp_path / "r.html")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    lines = logged.stderr.splitlines()  # not a terminal: one line per step, when asked
    assert logged.returncode == 0 and "\r" not in logged.stderr and any(": drawing figure 1: " in l for l in lines)
    quiet = subprocess.run([sys.executable, "-m", "StaICC", "report", paths["k2"], "--resamples", "5"],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
    quiet_lines = quiet.stderr.splitlines()  # only steps still running after SLOW_STEP_S, one line each
    assert quiet.returncode == 0 and all(line.startswith("staicc report: ") for line in quiet_lines)


def test_output_into_a_missing_folder_is_created_and_a_bad_one_is_one_line(tmp_path, capsys):
    paths = fixture_runs()
    target = tmp_path / "a" / "b" / "tables.md"
    assert main(["report", paths["k2"], "--resamples", "5", "--format", "md", "-o", str(target)]) == 0
    assert target.read_text().startswith("**Normal: k2")
    blocked = tmp_path / "file"
    blocked.write_text("x")
    assert main(["report", paths["k2"], "--html", str(blocked / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("staicc report: error: cannot write") and "not a directory" in err


def test_the_bias_figure_shows_the_task_files_label_words(tmp_path):
    """A task file's labels reach the bias figure from the run itself, not from the bundled datasets."""
    from StaICC.report.plot_data import bias_data
    out = tmp_path / "nli"
    subprocess.run([sys.executable, "-m", "StaICC", "run", "--tasks", os.path.join(ROOT, "examples", "tasks",
                   "nli.yaml"), "--benchmarks", "Triplet_bias", "--output-dir", str(out), "--log-samples",
                    "--no-progress"], check=True, capture_output=True, cwd=ROOT, timeout=300)
    assert bias_data(load_run(str(out)))["toy_nli"]["labels"] == ["yes", "maybe", "no"]
    document = json.loads((out / "results.json").read_text())
    for metadata in document["benchmarks"]["Triplet_bias"]["metadata"].values():
        assert metadata["label_words"] == {"toy_nli": ["yes", "maybe", "no"]}
        del metadata["label_words"]  # a results file written before the words were recorded: the task's words
    (out / "results.json").write_text(json.dumps(document))
    assert bias_data(load_run(str(out)))["toy_nli"]["labels"] == ["yes", "maybe", "no"]


def test_an_infinite_number_says_why_where_it_is_shown(capsys):
    from StaICC.report import format_table
    from StaICC.results import ResultDict
    result = ResultDict({"Divided results": {"TREC": {"DL div.": float("inf"), "distribution": [0.1, -0.1]},
                                             "GLUE-SST2": {"DL div.": 0.0848, "distribution": [0.2, -0.2]}},
                         "Averaged results": {"DL div.": float("inf"), "distribution": 0.0}},
                        metadata={"benchmark": "Post_bias"})
    text = format_table(result, "Triplet_bias/post")
    assert "Averaged   inf" in text
    assert text.splitlines()[-1] == (
        "inf: KL to label frequencies (DL div.) is infinite for TREC, and so the average: the KL divergence of the "
        "mean prediction from the test items' label frequencies is infinite when the model gives probability to a "
        "label that no test item has (a --limit smoke run can leave a label out).")
    assert "is infinite for TREC, and so the average" in result._repr_markdown_()


def test_a_dollar_sign_in_a_run_or_dataset_name_is_text_not_a_formula():
    pytest.importorskip("matplotlib")
    from StaICC.report import plots
    data = {"$x_{2}$ data": {"confidence": [0.5], "accuracy": [0.5], "counts": [3], "ece": 0.1}}
    fig = plots.draw_reliability([("run $1 $2 $", data)])
    assert plots.figure_bytes(fig, "png")[:4] == b"\x89PNG"  # an unbalanced $ would fail to draw as mathtext
    assert fig.legends[0].get_texts()[0].get_text() == "run \\$1 \\$2 \\$"
    plots.close(fig)
