"""A lite run as a newcomer meets it: what a proxy must be, what the tables and the HTML page say, what report's
JSON, compare and export make of a lite run (never a standard result), and the argument errors of the lite flags."""
import contextlib
import io
import json

import pytest

from StaICC.cli import main

pytest.importorskip("numpy")

COMMON = ["--benchmarks", "Normal", "--datasets", "TREC", "--no-progress"]


def _run(*argv: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", *COMMON, *argv]) == 0  # a later --benchmarks wins
    return printed.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lite-outputs")
    made = {name: str(root / name) for name in ("lite", "full", "uniform")}
    _run("--lite", "0.125", "--log-samples", "--output-dir", made["lite"])
    _run("--log-samples", "--output-dir", made["full"])
    _run("--model", "uniform", "--log-samples", "--output-dir", made["uniform"])
    return made


def _error(argv, capsys, status: int = 2) -> str:
    assert main(argv) == status
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_lite_run_is_refused_as_a_proxy_for_it_is_not_known_on_every_item(runs, tmp_path, capsys):
    """A lite run has the lite items' prompts, so the prompt check passes; its "full-run value" would be its
    subset's, and the estimate a zero-width interval around the subset's number."""
    out = tmp_path / "run"
    line = _error(["run", "--lite", "0.125", "--lite-proxy", runs["lite"], *COMMON, "--output-dir", str(out)], capsys)
    assert f"the proxy {runs['lite']} has records of 64 of the 512 test items of Normal / TREC" in line
    assert "a proxy must be scored on every test item" in line and not out.exists()
    several = _error(["run", "--lite", "0.125", "--lite-proxy", f"{runs['full']},{runs['lite']}", *COMMON], capsys)
    assert f"the proxy {runs['lite']} has records of 64 of the 512" in several


@pytest.mark.parametrize("form", [["eee"], ["lm-eval"], ["hf", "--hf-dataset", "org/bench"]])
def test_a_lite_run_is_not_exported_in_any_format(runs, tmp_path, capsys, form):
    """Every format puts the run's results where a reader takes a result; a lite run's are its subset's."""
    out = tmp_path / "export"
    line = _error(["export", runs["lite"], "--format", *form, "-o", str(out)], capsys, status=1)
    assert f"{runs['lite']} is a lite run (12.5 % of the test items)" in line and "export a full run" in line
    assert not out.exists() or not any(out.rglob("*.*"))
    assert main(["export", runs["full"], "--format", *form, "-o", str(tmp_path / "full"), "--no-intervals"]) == 0


def test_reports_json_of_a_lite_run_holds_its_estimates_marked_not_standard(runs, capsys):
    assert main(["report", runs["lite"], "--format", "json", "--no-progress", "--resamples", "20"]) == 0
    entry = json.loads(capsys.readouterr().out)["runs"][0]
    with open(f"{runs['lite']}/results.json", encoding="utf-8") as fh:
        recorded = json.load(fh)
    estimates = recorded["provenance"]["lite"]["estimates"]["benchmarks"]["Normal"]
    assert entry["standard"] is False and entry["lite"].startswith("LITE RUN (12.5 % of the test items)")
    assert entry["benchmarks"]["Normal"]["datasets"]["TREC"] == estimates["TREC"]
    assert entry["benchmarks"]["Normal"]["averaged"] == estimates["Averaged"]
    own = recorded["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"]
    assert entry["benchmarks"]["Normal"]["averaged"]["accuracy"]["value"] != own  # the estimate, not the subset's


@pytest.mark.parametrize("extra", [[], ["--unpaired"], ["--format", "json"]])
def test_report_refuses_a_lite_run_beside_a_full_run_as_compare_does(runs, capsys, extra):
    """The report's differences would set the subset's own numbers against the full run's."""
    for pair in ((runs["lite"], runs["full"]), (runs["full"], runs["lite"])):
        line = _error(["report", *pair, "--no-progress", "--resamples", "20", *extra], capsys, status=1)
        assert line.startswith("staicc report: error: ")
        assert "lite" in line and "a full run: their test items differ, so they are not paired" in line


def test_the_html_page_of_a_lite_run_shows_its_estimates_and_says_what_its_figures_draw(runs, tmp_path):
    """A closed section's number is the estimate in the table, not the subset's own; the figures and the
    calibration table below it are the subset's, and the page says so."""
    pytest.importorskip("matplotlib")
    import html
    import re
    page = tmp_path / "lite.html"
    assert main(["report", runs["lite"], "--html", str(page), "--no-progress", "--resamples", "20"]) == 0
    text = html.unescape(page.read_text(encoding="utf-8"))
    with open(f"{runs['lite']}/results.json", encoding="utf-8") as fh:
        recorded = json.load(fh)
    cell = recorded["provenance"]["lite"]["estimates"]["benchmarks"]["Normal"]["Averaged"]["accuracy"]
    glance = re.search(r'id="normal".*?<span class="what">(.*?)</span>', text, re.S).group(1)
    assert glance == f"Accuracy, averaged: lite {cell['value']:.4f} [{cell['low']:.4f}, {cell['high']:.4f}] (estimate)"
    own = recorded["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"]
    assert f"{own:.4f}" != f"{cell['value']:.4f}"  # the two differ, so the glance above is the estimate's
    assert "lite is a lite run: the tables and figures below its estimates draw the items it asked (12.5 % of the " \
           "test items), with the subset's own values, not estimates of the full run." in text


def _words(text: str) -> str:
    return " ".join(text.split())  # a long note is wrapped


def test_several_proxies_each_have_their_median_weight_in_the_note(runs):
    """A constant model and the target's own full run: the weight goes to the second, the note says so (one
    median over both proxies' weights read 0.00 and hid it)."""
    printed = _words(_run("--lite", "0.125", "--lite-proxy", f"{runs['uniform']},{runs['full']}"))
    assert f"Proxies: {runs['uniform']} + {runs['full']}, each scored on every test item." in printed
    assert f"(median weights {runs['uniform']} 0.00, {runs['full']} 1.00 over the 4 dataset cells, the averaged " \
           "row their mean; the median correlation of the weighted sum's resampled values with the target's" in printed


def test_a_consistencys_table_says_the_proxy_takes_no_part_in_it():
    printed = _words(_run("--lite", "0.125", "--lite-proxy", "--benchmarks", "Template_sens"))
    assert "Proxy: the reference model: not used in this table; the consistency's interval is exact, from the " \
           "design alone, and takes no proxy" in printed
    assert "Each cell is the power-tuned difference estimate" not in printed


@pytest.mark.parametrize("arguments, expected", [
    (["--lite-items", "abc"], "staicc: error: --lite-items must be a positive integer, got 'abc'"),
    (["--lite-items", "2.5"], "staicc: error: --lite-items must be a positive integer, got '2.5'"),
    (["--lite-items", "-3"], "staicc: error: --lite-items must be a positive integer, got -3"),
    (["--lite", "0.125", "--lite-until", "2"], "staicc: error: --lite-until must be a half-width below 1, on the "
                                               "metrics' own scale (0.02: two points of accuracy); got 2"),
    (["--lite", "0.125", "--lite-until", "inf"], "staicc: error: --lite-until must be a half-width below 1"),
    (["--lite", "0.125", "--lite-proxy", ""], "staicc: error: --lite-proxy got an empty name; give a run directory"),
])
def test_lite_arguments_say_what_was_expected_in_one_line_before_inference(tmp_path, capsys, arguments, expected):
    """A half-width of 2 (two points meant) held at the first look, whose 99 % intervals are wider than a plain
    lite run's: the run asked for narrow intervals and stopped at once."""
    out = tmp_path / "run"
    line = _error(["run", "--model", "hf", "--model-args", f"pretrained={tmp_path / 'no-model'}", *arguments,
                   *COMMON, "--output-dir", str(out)], capsys)
    assert line.startswith(expected) and not out.exists()


def test_lite_until_prints_each_looks_widest_half_width_and_where(tmp_path):
    printed = _run("--lite", "0.0625", "--lite-until", "0.15", "--cache", str(tmp_path / "c.sqlite"),
                   "--output-dir", str(tmp_path / "run"))
    with open(tmp_path / "run" / "results.json", encoding="utf-8") as fh:
        looks = json.load(fh)["provenance"]["lite"]["until"]["looks"]
    assert looks[0]["widest_halfwidth"] is None and len(looks) >= 2  # nothing is printed at 6.25 %
    said = [f"6.25 %: {looks[0]['where']}"] + [f"{f * 100:g} %: {w:.4g} at {where}" for f, w, where in
                                               ((k["fraction"], k["widest_halfwidth"], k["where"]) for k in looks[1:])]
    assert "looks (widest half-width): " + "; ".join(said) + "\n" in printed


def test_a_report_of_two_lite_runs_names_the_run_in_each_tables_title(runs, tmp_path, capsys):
    other = str(tmp_path / "other")
    _run("--model", "uniform", "--lite", "0.125", "--log-samples", "--output-dir", other)
    assert main(["report", runs["lite"], other, "--format", "md", "--no-progress", "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    for label, model in (("lite", "reference: lexical"), ("other", "reference: uniform")):
        assert f"**Normal: lite run (12.5 % of the test items): estimates of the full run ({label}, model {model}" in out


def test_at_fraction_one_the_banner_says_the_numbers_are_the_full_runs_own(runs):
    printed = _run("--lite", "1.0")
    assert "!! LITE RUN (100 % of the test items): every item was asked, so every number is the full run's own, " \
           "with an interval of width zero; the run is recorded as a lite run, not a standard one" in printed
    assert "not a full run's number" not in printed
    with open(f"{runs['full']}/results.json", encoding="utf-8") as fh:
        accuracy = json.load(fh)["benchmarks"]["Normal"]["results"]["Divided results"]["TREC"]["accuracy"]
    assert f"TREC      {accuracy:.4f} [{accuracy:.4f}, {accuracy:.4f}]" in printed


def test_a_proxy_run_whose_records_were_edited_is_refused_as_report_refuses_it(runs, tmp_path, capsys):
    import shutil
    edited = tmp_path / "edited"
    shutil.copytree(runs["full"], edited)
    lines = (edited / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[3])
    record["prediction"] = [1.0] + [0.0] * (len(record["prediction"]) - 1)
    lines[3] = json.dumps(record)
    (edited / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    line = _error(["run", "--lite", "0.125", "--lite-proxy", str(edited), *COMMON, "--output-dir",
                   str(tmp_path / "run")], capsys)
    assert line.startswith(f"staicc: error: --lite-proxy {edited}: Normal / TREC: ")
    assert line.endswith("the records do not belong to these results") and not (tmp_path / "run").exists()


def test_every_printed_estimate_and_interval_lies_in_its_metrics_range(tmp_path):
    """Bias-corrected estimates could leave the range where the full run's value sits at its edge (the reference
    model's Domain_bias entropy on rotten_tomatoes printed 0.6932 > ln 2, its Post_bias KL divergence's interval
    started below 0): every estimate and interval end is cut to its range, and the full run's value stays inside."""
    import math
    out, full = tmp_path / "run", tmp_path / "full"
    common = ("--benchmarks", "Triplet_bias", "--datasets", "rotten_tomatoes", "GLUE-SST2")
    _run("--lite", "0.125", *common, "--output-dir", str(out))
    _run(*common, "--output-dir", str(full))
    with open(out / "results.json", encoding="utf-8") as fh:
        found = json.load(fh)["provenance"]["lite"]["estimates"]["benchmarks"]
    with open(full / "results.json", encoding="utf-8") as fh:
        truth = json.load(fh)["benchmarks"]["Triplet_bias"]["results"]
    kinds = {"Contextual_bias": "contextual", "Domain_bias": "domain", "Post_bias": "post"}
    entropy = found["Domain_bias"]["rotten_tomatoes"]["entropy"]
    assert entropy["high"] == math.log(2)  # what the test rests on: the cut bites here
    checked = 0
    for part, metric, low, high in (("Domain_bias", "entropy", 0.0, math.log(2)),
                                    ("Contextual_bias", "entropy", 0.0, math.log(2)),
                                    ("Post_bias", "DL div.", 0.0, math.inf)):
        for row, cells in found[part].items():
            cell = cells[metric]
            assert low <= cell["low"] <= cell["value"] <= cell["high"] <= high, (part, row, cell)
            mine = truth[kinds[part]]
            value = (mine["Averaged results"] if row == "Averaged" else mine["Divided results"][row])[metric]
            assert cell["low"] - 1e-12 <= value <= cell["high"] + 1e-12, (part, row, cell, value)  # a last bit
            checked += 1
    assert checked == 9


def test_a_comparison_of_lite_runs_says_its_values_are_the_subsets_own_in_the_file_too(runs, tmp_path, capsys):
    other, out = str(tmp_path / "other"), tmp_path / "compare.md"
    _run("--model", "uniform", "--lite", "0.125", "--log-samples", "--output-dir", other)
    assert main(["compare", runs["lite"], other, "--format", "md", "-o", str(out), "--no-progress",
                 "--resamples", "20"]) == 0
    capsys.readouterr()
    written = out.read_text(encoding="utf-8")
    assert "lite, other: lite runs on the same test items; each value here is the subset's own (the items asked, " \
           "unweighted), not the estimate of the full run in each run's table" in written


def test_a_dry_run_says_which_proxies_it_accepted(runs, capsys):
    """Each proxy run named by its folder and the model it asked, as its provenance recorded it."""
    assert main(["run", *COMMON, "--lite", "0.125", "--lite-proxy", f"{runs['full']},reference", "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2:] == [f"proxy {runs['full']} (reference: lexical): accepted (its records hold every test item, "
                          "and every planned prompt's SHA-256)",
                          "proxy: the reference model, scored on every test item in the run"]


def test_a_table_with_no_estimate_does_not_describe_intervals_it_does_not_show():
    printed = _words(_run("--lite-items", "20"))
    assert "TREC not estimable not estimable not estimable not estimable" in printed
    assert "not estimable at this share: accuracy (TREC, the averaged row)" in printed
    assert "Estimates of the full run: each metric on the stratified subset" not in printed
    assert "the full run: 1024 prompts, 1024 distinct: every prompt of the full run" in _run("--lite", "1")
