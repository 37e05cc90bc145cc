"""What a newcomer reads in a lite run's tables: a slope of float noise printed with the table's decimals (the
recorded numbers untouched), ``report --calibration`` of a lite run refused in one line, a lite run of every item
said to be the full run's own whichever flag chose it, and a proxy run named with the model it asked (redacted)."""
import contextlib
import io
import json

import pytest

from StaICC.cli import main

pytest.importorskip("numpy")

GLER = ["--model", "uniform", "--benchmarks", "GLER", "--datasets", "TREC", "SST5", "--no-progress"]
NORMAL = ["--benchmarks", "Normal", "--datasets", "TREC", "--no-progress"]
LIKELIHOOD = "averaged_truelabel_likelihood"


def _run(*argv: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", *argv]) == 0
    return printed.getvalue()


def _recorded(directory) -> dict:
    with open(f"{directory}/results.json", encoding="utf-8") as fh:
        return json.load(fh)


def _column(text: str, header: str) -> list:
    """The cells of the column headed ``header`` in each row of the first table of ``text`` (fixed widths)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("dataset "))
    start = lines[at].index(header)
    end = lines[at + 1].index("  ", start) if "  " in lines[at + 1][start:] else None
    rows = [line for line in lines[at + 2:] if line and not line.startswith("-")]
    rows = rows[:next((i for i, r in enumerate(rows) if r.startswith("Averaged")), len(rows)) + 1]
    return [row[start:end].strip() for row in rows]


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    """A chance model's GLER: its likelihood is the same in every pass up to the last bits, so its slopes are noise."""
    root = tmp_path_factory.mktemp("noise")
    lite, full = root / "lite", root / "full"
    return {"lite": str(lite), "full": str(full),
            "lite_text": _run(*GLER, "--lite", "0.125", "--log-samples", "--output-dir", str(lite)),
            "full_text": _run(*GLER, "--output-dir", str(full))}


def test_a_noise_slope_prints_with_the_tables_decimals_and_is_recorded_as_it_was(uniform):
    estimates = _recorded(uniform["lite"])["provenance"]["lite"]["estimates"]["benchmarks"]["GLER"]
    noise = [estimates[row][LIKELIHOOD][key] for row in ("TREC", "SST5", "Averaged") for key in ("value", "low", "high")]
    assert all(v != 0 and abs(v) < 1e-7 for v in noise)  # what the lite run recorded: noise, kept as it was
    assert _column(uniform["lite_text"], f"{LIKELIHOOD} slope") == ["0.0000 [0.0000, 0.0000]"] * 3
    full = _recorded(uniform["full"])["benchmarks"]["GLER"]["results"]
    slopes = [full["Divided results"][d]["sensitivity"][LIKELIHOOD][0] for d in ("TREC", "SST5")]
    assert any(s < 0 for s in slopes) and all(abs(s) < 1e-7 for s in slopes)  # a negative one printed -0.0000
    assert [cell.split(" ± ")[0] for cell in _column(uniform["full_text"], f"{LIKELIHOOD} slope")] == ["0.0000"] * 3
    for text in (uniform["lite_text"], uniform["full_text"]):
        assert "e-0" not in text and "e-1" not in text and "e-2" not in text


def test_a_lite_reports_tables_and_its_pages_glance_print_the_noise_slope_as_zero(uniform, capsys):
    assert main(["report", uniform["lite"], "--format", "md", "--no-progress", "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert "e-0" not in printed and "e-1" not in printed and "| 0.0000 [0.0000, 0.0000] |" in printed
    from StaICC.report.lite_tables import lite_averaged_text
    from StaICC.report.runs import load_run
    assert lite_averaged_text(load_run(uniform["lite"], "lite"), "GLER", LIKELIHOOD) == \
        "0.0000 [0.0000, 0.0000] (estimate)"


@pytest.mark.parametrize("flags", [["--calibration"], ["--agreement"], ["--calibration", "--html", "{page}"]])
def test_report_refuses_the_extra_metrics_of_a_lite_run_in_one_line_before_any_work(uniform, tmp_path, capsys, flags):
    """A lite run's tables are estimates of the full run; the calibration metrics outside the standard have none, and
    the report added nothing without a word."""
    page = tmp_path / "page.html"
    argv = ["report", uniform["lite"], "--no-progress", *[f.format(page=page) for f in flags]]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"staicc report: error: {flags[0]}: lite is a lite run (12.5 % of "
                                                   "the test items), whose tables are estimates of the full run")
    assert f"staicc compare {flags[0]}" in lines[0] and not page.exists()


def test_report_calibration_of_a_full_run_adds_its_metrics_to_the_tables_as_to_the_json(tmp_path, capsys):
    """What --calibration does for a full run: the calibration metrics, each with its interval, in every format (the
    text tables left them out, the JSON had them)."""
    full = tmp_path / "full"
    _run(*NORMAL, "--log-samples", "--output-dir", str(full))
    common = ["report", str(full), "--calibration", "--no-progress", "--resamples", "20"]
    assert main([*common, "--format", "json"]) == 0
    brier = json.loads(capsys.readouterr().out)["runs"][0]["benchmarks"]["Normal"]["datasets"]["TREC"]["brier_score"]
    assert main(common) == 0
    cell = f"{brier['value']:.4f} [{brier['low']:.4f}, {brier['high']:.4f}]"
    assert _column(capsys.readouterr().out, "brier_score") == [cell, cell]  # one dataset: its average is itself


def test_every_item_asked_by_lite_items_reads_as_lite_one(tmp_path):
    """``--lite-items N`` with N above every dataset's items asks what ``--lite 1.0`` asks: the same tables, banner
    and notes, which say the numbers are the full run's own, not estimates."""
    whole = _run(*NORMAL, "--lite", "1.0", "--output-dir", str(tmp_path / "one"))
    items = _run(*NORMAL, "--lite-items", "100000", "--output-dir", str(tmp_path / "items"))
    assert "every item was asked, so every number is the full run's own" in items
    assert "not a full run's number" not in items and "Estimates of the full run: each metric" not in items
    assert "Every test item was asked: each number is the full run's own" in items
    shared = [line.replace("100000 test items of each sub-benchmark and dataset", "100 % of the test items")
              for line in items.splitlines()[:-2]]  # the counts line says the time it took
    assert shared == whole.splitlines()[:-2]


def test_a_proxy_run_is_named_with_the_model_it_asked_never_a_secret(tmp_path):
    proxy = tmp_path / "proxy"
    _run(*NORMAL, "--model", "uniform", "--log-samples", "--output-dir", str(proxy))
    recorded = _recorded(proxy)
    recorded["provenance"]["model"]["arguments"] = {  # as a hand-edited or foreign results file may hold them
        "api_key": "sk-NOT-TO-BE-SEEN", "base_url": "https://someone:hunter2@example.org/v1?token=abc123",
        "temperature": 0}
    (proxy / "results.json").write_text(json.dumps(recorded), encoding="utf-8")
    printed = " ".join(_run(*NORMAL, "--lite", "0.125", "--lite-proxy", str(proxy),
                            "--output-dir", str(tmp_path / "lite")).split())
    said = f"{proxy} is a run of reference: uniform (api_key=<redacted>, base_url=https://***@example.org/v1?token=***"
    assert said in printed and "temperature=0)." in printed
    written = json.dumps(_recorded(tmp_path / "lite")["provenance"]["lite"])
    for secret in ("NOT-TO-BE-SEEN", "hunter2", "abc123"):
        assert secret not in printed and secret not in written
    models = _recorded(tmp_path / "lite")["provenance"]["lite"]["estimates"]["proxy_models"]
    assert list(models) == [str(proxy)] and models[str(proxy)].startswith("reference: uniform (api_key=<redacted>")
