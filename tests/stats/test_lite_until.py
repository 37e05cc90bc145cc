"""``--lite-until``: the fixed look schedule, alpha spent over it, and a run that stops where it says."""
import contextlib
import io
import json
import warnings

import pytest

from StaICC.backends.reference_model import uniform
from StaICC.cli import main
from StaICC.errors import TamperingWarning
from StaICC.runs.lite_until import run_lite_until
from StaICC.stats.lite_until import check_halfwidth, look_level, look_schedule, widest_half

pytest.importorskip("numpy")


def test_the_schedule_doubles_to_every_item_and_spends_alpha_evenly():
    assert look_schedule(0.0625) == (0.0625, 0.125, 0.25, 0.5, 1.0)
    assert look_schedule(0.3) == (0.3, 0.6, 1.0) and look_schedule(1.0) == (1.0,)
    assert look_level(0.95, 5) == pytest.approx(0.99) and look_level(0.95, 1) == 0.95
    for bad in (0, -1, float("nan"), float("inf"), True, "0.1"):
        with pytest.raises(ValueError, match="half-width"):
            check_halfwidth(bad)


def test_a_run_stops_at_the_first_look_whose_widest_half_width_is_at_most_the_target():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        # uniform answers label 0 everywhere: its ECE rows allow for right answers no look has seen (widest at 50 %:
        # 0.076), so the target that stops it before the full run is 0.08
        result = run_lite_until(uniform, 0.08, 0.0625, "Normal", datasets=["TREC"], progress=False)
    until = result.metadata["lite"]["until"]
    widths = [look["widest_halfwidth"] for look in until["looks"]]
    assert all(w > 0.08 for w in widths[:-1]) and widths[-1] <= 0.08 and until["reached"]
    assert until["stopped_at"] == result.lite.fraction == until["schedule"][len(widths) - 1] < 1
    assert result.lite.level == pytest.approx(0.99)  # five looks: each at 1 - 0.05 / 5
    assert widest_half(result.lite.estimates)[0] == widths[-1]


@pytest.mark.parametrize("arguments, words", [
    (["--lite", "0.125", "--lite-until", "0"], "--lite-until must be a half-width > 0"),
    (["--lite", "0.125", "--lite-until", "nan"], "--lite-until must be a half-width > 0"),
    (["--lite", "0.125", "--lite-until", "wide"], "--lite-until must be a half-width > 0"),
    (["--lite-items", "8", "--lite-until", "0.1"], "--lite-until needs --lite FRACTION"),
])
def test_bad_lite_until_values_are_one_line_before_inference(tmp_path, capsys, arguments, words):
    out = tmp_path / "run"
    assert main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", *arguments,
                 "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not out.exists()


def test_the_cli_records_and_prints_where_it_stopped(tmp_path):
    out = tmp_path / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", "--lite", "0.0625",
                     "--lite-until", "0.06", "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                     "--output-dir", str(out)]) == 0
    with open(out / "results.json", encoding="utf-8") as fh:
        section = json.load(fh)["provenance"]["lite"]
    assert section["until"]["reached"] and section["fraction"] == section["until"]["stopped_at"]
    assert f"--lite-until 0.06: reached after {len(section['until']['looks'])} of 5 looks" in printed.getvalue()


def test_a_metric_printed_only_at_a_larger_fraction_keeps_the_run_going():
    from StaICC.stats.lite import ESTIMABLE, LiteEstimate
    later = next(key for key in ESTIMABLE if key[2] == "dataset")
    never = ("Normal", "own_ece_nonstandard")
    assert (*never, "dataset") not in ESTIMABLE
    narrow = LiteEstimate(0.5, 0.49, 0.51)
    hidden = LiteEstimate(estimable=False, note="not estimable at this fraction")
    estimates = {later[0]: {"TREC": {later[1]: hidden}}, never[0]: {"TREC": {never[1]: hidden, "x": narrow}}}
    widest, where = widest_half(estimates)
    assert widest == float("inf") and where == f"{later[0]} / TREC / {later[1]} (not yet estimable)"
    del estimates[later[0]]
    assert widest_half(estimates)[0] == pytest.approx(0.01)  # a metric the study never prints does not count
