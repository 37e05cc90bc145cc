"""A newcomer's small frictions, each answered in one line: another tool's flags, a fraction for --limit,
``cache merge -o``, runs that cannot be paired, an export over an earlier one, an export without samples,
the NOT STANDARD notice once per HTML page."""
import pytest

from StaICC import cli
from StaICC.cli import main


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_device_points_to_the_model_argument(capsys):
    line = _error(["run", "--device", "cpu"], capsys)
    assert line.endswith("did you mean --model-args device=cpu (or device=cuda)?"), line


def test_a_fraction_for_limit_points_to_lite(capsys):
    line = _error(["run", "--limit", "0.1"], capsys)
    assert "invalid int value: '0.1'" in line and "a share of them is --lite FRACTION, e.g. --lite 0.1" in line


def test_a_misspelt_dataset_gets_a_did_you_mean(capsys):
    assert _error(["run", "--datasets", "sst2"], capsys).endswith("did you mean 'GLUE-SST2'?")


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("newcomer")
    for name, extra in [("full", ["--limit", "20"]), ("lite", ["--lite", "0.1"]), ("k2", ["--limit", "20", "--k", "2"]),
                        ("plain", ["--limit", "20"])]:
        log = [] if name == "plain" else ["--log-samples"]
        assert cli.main(["run", "--datasets", "TREC", "--benchmarks", "all", "--no-progress", "--output-dir",
                         str(root / name), "--cache", str(root / f"{name}.sqlite")] + extra + log) == 0
    return root


def test_cache_merge_takes_o_for_its_output(small_runs, capsys):
    out = small_runs / "merged.sqlite"
    assert main(["cache", "merge", "-o", str(out), str(small_runs / "full.sqlite"), str(small_runs / "k2.sqlite")]) == 0
    assert capsys.readouterr().out.startswith(f"merged 2 caches into {out}")
    assert out.exists()


def test_runs_that_cannot_be_paired_exit_with_one_status(small_runs, capsys):
    """Other prompts (k) and a lite run against a full one: the same refusal, the same exit status."""
    for other in ("k2", "lite"):
        assert main(["compare", str(small_runs / "full"), str(small_runs / other), "--resamples", "10",
                     "--no-progress"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("staicc compare: error: ") and "not" in err[0], err


def test_export_refuses_to_replace_an_earlier_export_without_overwrite(small_runs, tmp_path, capsys):
    argv = ["export", str(small_runs / "full"), "--format", "lm-eval", "-o", str(tmp_path / "x"), "--no-intervals"]
    assert main(argv) == 0
    first = (tmp_path / "x" / "results.json").read_bytes()
    capsys.readouterr()
    argv_k2 = argv[:1] + [str(small_runs / "k2")] + argv[2:]
    line = _error(argv_k2, capsys)
    assert "holds an earlier lm-eval export" in line and "--overwrite" in line
    assert (tmp_path / "x" / "results.json").read_bytes() == first
    assert main(argv_k2 + ["--overwrite"]) == 0
    assert (tmp_path / "x" / "results.json").read_bytes() != first


def test_an_eee_export_without_samples_says_what_is_missing(small_runs, tmp_path, capsys):
    assert main(["export", str(small_runs / "plain"), "--format", "eee", "-o", str(tmp_path / "eee")]) == 0
    out = capsys.readouterr().out
    assert "has no per-query records (samples.jsonl): the export holds no instance-level file and no confidence " \
           "intervals; run with --log-samples to have them" in out


def test_the_not_standard_notice_is_said_once_per_html_page(small_runs, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the HTML report needs matplotlib (pip install \"StaICC[plot]\")")
    page = tmp_path / "report.html"
    assert main(["report", str(small_runs / "full"), "--html", str(page), "--resamples", "10", "--no-progress"]) == 0
    text = page.read_text()
    assert text.count("NOT STANDARD") == 1, text.count("NOT STANDARD")
