"""The averaged row of a lite run and Normal's debiased ECE, against computations by hand and in NumPy."""
import math
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, design, estimate_statistic
from StaICC.stats.lite_averaged import Resamples, averaged, reach, stretched
from StaICC.stats.lite_branches import both_branches
from StaICC.stats.lite_debiased import one_branch
from StaICC.stats.lite_ece import debiased, ece_interval, row_gaps

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")


def _percentile(values, q):
    return float(np.percentile(values, q))


def test_the_averaged_row_is_the_percentile_interval_of_the_mean_resample_plus_the_mean_reach():
    rng = random.Random(3)
    per_dataset = [(rng.random(), [rng.gauss(0, 1) for _ in range(400)], (0.1 * d, 0.2 * d)) for d in range(4)]
    value, low, high = averaged(per_dataset, 0.95, False)
    columns = np.mean([entry[1] for entry in per_dataset], axis=0)
    assert value == pytest.approx(np.mean([entry[0] for entry in per_dataset]), abs=1e-15)
    assert low == pytest.approx(_percentile(columns, 2.5) - 0.1 * 6 / 4, abs=1e-12)
    assert high == pytest.approx(_percentile(columns, 97.5) + 0.2 * 6 / 4, abs=1e-12)


def test_resamples_with_bounds_average_each_side_resample_by_resample():
    """Each dataset's resample moved by its own bound, then averaged, then the quantile: the bound of the mean is
    the mean of the bounds on each resample, narrower than the mean of each dataset's quantile of its bound."""
    rng = np.random.default_rng(5)
    near = [np.abs(rng.normal(0, 1, 1000)) for _ in range(10)]
    entries = [(0.0, Resamples([0.0] * 1000, n, n)) for n in near]
    _, low, high = averaged(entries, 0.95, False)
    mean_bound = np.mean(near, axis=0)
    assert high == pytest.approx(_percentile(mean_bound, 97.5), abs=1e-12)
    assert low == pytest.approx(-_percentile(mean_bound, 97.5), abs=1e-12)
    assert high < np.mean([_percentile(n, 97.5) for n in near]) * 0.7
    assert reach(low, high, entries[0][1], 0.95) == (0.0, 0.0)  # a bound travels in the resamples, not as a reach


def test_a_reach_is_how_far_the_interval_lies_beyond_the_resamples():
    scaled = [float(v) for v in range(101)]
    assert reach(-3.0, 110.0, scaled, 0.9) == pytest.approx((3.0 + 5.0, 110.0 - 95.0))
    assert reach(10.0, 50.0, scaled, 0.9) == (0.0, 0.0)
    assert reach([0.0], [1.0], scaled, 0.9) == (0.0, 0.0)


def test_stretched_resamples_have_the_exact_interval_as_their_percentile_interval():
    rng = random.Random(2)
    scaled = [0.5 + rng.gauss(0, 0.05) for _ in range(999)]
    bootstrap = (_percentile(scaled, 2.5), _percentile(scaled, 97.5))
    out = stretched(0.5, scaled, bootstrap, (0.3, 0.62))
    assert _percentile(out, 2.5) == pytest.approx(0.3, abs=1e-12)
    assert _percentile(out, 97.5) == pytest.approx(0.62, abs=1e-12)
    assert stretched(0.5, [0.5] * 10, (0.5, 0.5), (0.3, 0.6)) == [0.5] * 10  # no spread: nothing to stretch


def test_both_branches_bound_each_resample_by_the_other_branch():
    out = both_branches([1.0, 2.0, math.nan], [1.5, 1.0, 3.0])
    assert list(out)[:2] == [1.0, 2.0]
    assert out.down[:2] == [0.0, 1.0] and out.up[:2] == [0.5, 0.0]
    assert out.down[2] == out.up[2] == 0.0
    several = both_branches([1.0, 2.0], [1.5, 1.0], [0.5, 2.5])  # each resample: the lowest and highest other
    assert several.down == [0.5, 1.0] and several.up == [0.5, 0.5]


def test_the_kl_correction_applies_where_every_resample_takes_one_branch():
    def table(rows):
        return ItemTable("Post_bias", "toy", [{"pass": 0, "repeat": 0, "test_index": t, "label": 0, "prediction": r,
                                               "prompt_sha256": str(t), "query_index": t} for t, r in enumerate(rows)])
    assert one_branch(table([[0.2, 0.8], [0.5, 0.5]]), [0, 1]) == {"DL div."}  # positive: the raw branch
    assert one_branch(table([[-1.0, 0.3], [-2.0, 0.5]]), [0, 1]) == {"DL div."}  # label 0 never positive
    assert one_branch(table([[-1.0, 0.3], [2.0, -0.5]]), [0, 1]) == frozenset()  # the resamples may cross


# ----------------------------------------------------------------------------
# Normal's ECE from its signed bin gaps
# ----------------------------------------------------------------------------
def test_the_estimate_is_the_plug_in_corrected_by_the_bootstrap_bias():
    rng = np.random.default_rng(8)
    point = np.array([0.0, 0.05, -0.2])
    resampled = point + rng.normal(0, 0.03, (4000, 3))
    plug_in = 0.25
    assert debiased(point, resampled) == pytest.approx(plug_in - (np.abs(resampled).sum(axis=1).mean() - plug_in),
                                                       abs=1e-12)
    assert debiased(point, resampled) < plug_in  # |g + noise| is too large on average


def test_the_ece_interval_of_one_bin_near_zero_holds_whatever_its_sign():
    """One bin with gap estimate 0.01 and noise sigma 0.04: near zero, so its whole deviation bounds the ECE both
    ways: [|g| - q97.5(|e|), |g| + q97.5(|e|)], clipped at zero."""
    rng = np.random.default_rng(1)
    point = np.array([0.01] + [0.0] * 9)
    resampled = point + np.concatenate([rng.normal(0, 0.04, (2000, 1)), np.zeros((2000, 9))], axis=1)
    estimate, low, high, scaled = ece_interval(point, resampled, 1.0, 0.95)
    bound = _percentile(np.abs(resampled[:, 0] - 0.01), 97.5)
    assert high == pytest.approx(0.01 + bound, abs=1e-12) and low == 0.0
    assert list(scaled) == pytest.approx([0.01] * 2000) and scaled.up == pytest.approx(list(np.abs(resampled[:, 0] - 0.01)))
    assert estimate < 0.01


def test_a_far_bin_gives_the_linear_interval():
    rng = np.random.default_rng(4)
    point = np.array([-0.3, 0.2] + [0.0] * 8)
    noise = rng.normal(0, 0.02, (3000, 2))
    resampled = point + np.concatenate([noise, np.zeros((3000, 8))], axis=1)
    _, low, high, _ = ece_interval(point, resampled, 1.1, 0.95)
    linear = 1.1 * (noise @ np.array([-1.0, 1.0]))  # each far bin moves the ECE by its sign times its deviation
    assert low == pytest.approx(0.5 - _percentile(linear, 97.5), abs=1e-12)
    assert high == pytest.approx(0.5 - _percentile(linear, 2.5), abs=1e-12)


def _normal_table(rng, items):
    records = []
    for t in range(items):
        label = t % 3
        row = [rng.uniform(-2, 2) for _ in range(3)]
        records.append({"pass": 0, "repeat": 0, "test_index": t, "label": label, "prediction": row,
                        "prompt_sha256": str(t), "query_index": t})
    return ItemTable("Normal", "toy", records)


def test_the_gaps_sum_to_the_standards_ece_and_the_lite_estimate_uses_them():
    table = _normal_table(random.Random(6), 60)
    statistic = Statistic("Normal", table, ["expected_calibration_error_1"])
    gaps = row_gaps(statistic, [[1.0] * len(table)])
    assert float(np.abs(gaps[0]).sum()) == pytest.approx(statistic.point()["expected_calibration_error_1"], abs=1e-12)
    population = Population(((0, 200), (1, 200), (2, 200)))
    found = estimate_statistic(statistic, population, resamples=300, seed=2, level=0.95)["expected_calibration_error_1"]
    assert found[1] <= found[0] <= found[2]
    assert found[0] < statistic.point()["expected_calibration_error_1"]  # the debiased estimate lies below the plug-in
    assert isinstance(found[3], Resamples) and len(found[3]) == 300
    assert design(table, population).freedom == 57


def test_the_debiased_ece_covers_the_full_runs_ece_in_a_simulation():
    """Stratified subsets of 60 of a 600-item population: the interval holds the population's own ECE at least
    95 % of the time, and the debiased estimate's mean error is smaller than the plug-in's (which is too large)."""
    rng = random.Random(9)
    full = _normal_table(rng, 600)
    truth = Statistic("Normal", full, ["expected_calibration_error_1"]).point()["expected_calibration_error_1"]
    population = Population.from_labels(full.labels)
    covered, errors, plug_in_errors = 0, [], []
    trials = 60
    for trial in range(trials):
        chosen = sorted(sum((random.Random(trial * 3 + s).sample(range(s, 600, 3), 20) for s in range(3)), []))
        sub = Statistic("Normal", full.restricted(chosen), ["expected_calibration_error_1"])
        value, low, high, _ = estimate_statistic(sub, population, resamples=200, seed=trial,
                                                 level=0.95)["expected_calibration_error_1"]
        covered += low <= truth <= high
        errors.append(value - truth)
        plug_in_errors.append(sub.point()["expected_calibration_error_1"] - truth)
    assert covered / trials >= 0.95
    assert np.mean(plug_in_errors) > 0 and abs(np.mean(errors)) < np.mean(plug_in_errors) / 2
