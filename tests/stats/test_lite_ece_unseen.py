"""The ECE's widening for answers a lite subset has not seen (a label whose asked rows were all right or all wrong),
against independent computations: the hypergeometric limit by SciPy, the ECE by NumPy, the bound by moving items."""
import math

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, estimate_statistic
from StaICC.stats.lite_averaged import Resamples, averaged
from StaICC.stats.lite_ece import ece_widened
from StaICC.stats.lite_unseen import ece_shift
from StaICC.stats.significance import percentile_interval

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")


def _limit(population, sample):
    """The exact 95 % upper limit on unseen items, by SciPy: the largest D with P(none of them drawn) > 0.05."""
    return max(d for d in range(population - sample + 1) if stats.hypergeom(population, d, sample).pmf(0) > 0.05)


def _ece(correct, confidence, bins=10):
    """The textbook ECE: equal-width confidence bins, sum of |accuracy - mean confidence| weighted by the bin's share."""
    correct, confidence = np.asarray(correct, dtype=float), np.asarray(confidence, dtype=float)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    return sum(abs(correct[which == b].sum() - confidence[which == b].sum()) for b in range(bins)) / len(correct)


def test_the_shift_by_hand():
    labels = [0] * 4 + [1] * 4
    answers = [[0]] * 4 + [[1], [0], [1], [1]]  # label 0: every row right (wrong unseen); label 1: both seen
    gaps = [0.1, 0.3, 0.2, 0.25, 0.9, 0.8, 0.1, 0.2]
    down, up = ece_shift(labels, answers, gaps, 2, {0: 40, 1: 40}, 0.95)
    assert down == up == pytest.approx(_limit(40, 4) * (1 + 0.3) / 80)
    assert ece_shift(labels[4:], answers[4:], gaps[4:], 2, {0: 40, 1: 40}, 0.95) == (0.0, 0.0)


def test_the_shift_bounds_every_move_of_the_unseen_kind():
    """A population that is the subset's items copied (what its weighted plug-in stands for): moving up to U_s items
    of each label s to the unseen kind, with any confidences, moves the textbook ECE by at most the shift."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n_s, copies = int(rng.integers(2, 6)), int(rng.integers(3, 8))
        labels = [0] * n_s + [1] * n_s
        right = [True] * n_s + list(rng.random(n_s) < 0.5)  # label 0 all right: its wrong answers unseen
        confidence = rng.uniform(0.5, 1.0, 2 * n_s)
        answers = [[label if r else 1 - label] for label, r in zip(labels, right)]
        gaps = [abs(r - c) for r, c in zip(right, confidence)]
        full = {0: n_s * copies, 1: n_s * copies}
        shift = ece_shift(labels, answers, gaps, 2, full, 0.95)[0]
        base_right, base_conf = np.repeat(right, copies).astype(float), np.repeat(confidence, copies)
        before = _ece(base_right, base_conf)
        moved_right, moved_conf = base_right.copy(), base_conf.copy()
        for label in (0, 1):
            seen = set(right[label * n_s:(label + 1) * n_s])
            if len(seen) == 2:
                continue
            at = label * n_s * copies + rng.permutation(n_s * copies)[:_limit(n_s * copies, n_s)]
            moved_right[at] = 1.0 - moved_right[at]
            moved_conf[at] = rng.uniform(0.0, 1.0, len(at))
        assert abs(_ece(moved_right, moved_conf) - before) <= shift + 1e-12


def _records(rare, passes=1):
    """Labels 0 and 1 (20 items each): every answer is label 1 (label 0 always wrong) but the items in ``rare``,
    which answer 0 (right), in every pass."""
    records = []
    for p in range(passes):
        for t in range(40):
            confidence = 0.5625 + 0.0625 * ((t + p) % 4)  # dyadic: every row sums to exactly 1 (kept raw)
            row = [0.75, 0.25] if t in rare else [1 - confidence, confidence]
            records.append({"pass": p, "repeat": 0, "test_index": t, "label": 0 if t < 20 else 1, "prediction": row,
                            "prompt_sha256": f"{p} {t}", "query_index": t})
    return records


CHOSEN = [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]  # none of the rare right answers 15-19


def test_a_subset_without_the_rare_right_answers_still_holds_the_full_runs_ece():
    name = "expected_calibration_error_1"
    rows = _records(range(15, 20))
    full = Statistic("Normal", ItemTable("Normal", "toy", rows), [name])
    truth = full.point()[name]
    correct = [(r["prediction"][0] > r["prediction"][1]) == (r["label"] == 0) for r in rows]
    assert truth == pytest.approx(_ece(correct, [max(r["prediction"]) for r in rows]))
    subset = Statistic("Normal", ItemTable("Normal", "toy", [r for r in rows if r["test_index"] in CHOSEN]), [name])
    value, low, high, scaled = estimate_statistic(subset, Population(((0, 20), (1, 20))), resamples=200, seed=3,
                                                  level=0.95)[name]
    assert truth < min(scaled)  # every resample of the bootstrap alone lies above the full run's ECE
    assert low <= truth <= high and value > truth
    # label 0: five asked, all wrong (largest |correct - confidence| 0.75); label 1: five asked, all right (0.4375)
    shift = _limit(20, 5) * ((1 + 0.75) + (1 + 0.4375)) / 40
    assert min(scaled.down) >= shift - 1e-12 and high - low >= shift


def test_a_gler_slope_without_the_rare_right_answers_still_holds_the_full_runs():
    name = "expected_calibration_error_1"
    rare = {p: range(19 - p, 20) for p in range(5)}  # more rare right answers the noisier the labels: a slope
    records = [r for p in range(5) for r in _records(rare[p], 5) if r["pass"] == p]
    full = Statistic("GLER", ItemTable("GLER", "toy", records), [name])
    truth = full.point()[name]
    x = full.x_values
    per_pass = []
    for p in range(5):
        rows = [r for r in records if r["pass"] == p]
        per_pass.append(_ece([(r["prediction"][0] > r["prediction"][1]) == (r["label"] == 0) for r in rows],
                             [max(r["prediction"]) for r in rows]))
    assert truth == pytest.approx(np.polyfit(x, per_pass, 1)[0])
    subset = Statistic("GLER", ItemTable("GLER", "toy", [r for r in records if r["test_index"] in CHOSEN]), [name])
    value, low, high, scaled = estimate_statistic(subset, Population(((0, 20), (1, 20))), resamples=200, seed=3,
                                                  level=0.95)[name]
    alone = percentile_interval(scaled, 0.95)
    assert not alone[0] <= truth <= alone[1]  # the bootstrap alone misses the rare right answers' slope
    assert low <= truth <= high


def test_the_widening_reaches_the_interval_and_every_resamples_bound():
    found = (0.2, 0.15, 0.26, Resamples([0.19, 0.21], [0.01, 0.02], [0.01, 0.02]))
    assert ece_widened(found, None) is found and ece_widened(found, lambda name: (0.0, 0.0)) is found
    value, low, high, scaled = ece_widened(found, lambda name: (0.2, 0.3))
    assert (value, low, high) == (0.2, 0.0, pytest.approx(0.56)) and list(scaled) == [0.19, 0.21]
    assert scaled.down == pytest.approx([0.21, 0.22]) and scaled.up == pytest.approx([0.31, 0.32])
    # the averaged row of two such datasets reaches as far as their mean widening
    _, a_low, a_high = averaged([(0.2, scaled), (0.2, scaled)], 0.95, False)
    assert a_high >= 0.19 + 0.31 - 1e-12 and a_low <= 0.21 - 0.22 + 1e-12  # (two resamples: v + up, v - down)
    assert math.isfinite(a_low)


@pytest.mark.parametrize("benchmark, passes", [("Normal", 1), ("GLER", 5)])
def test_the_study_path_widens_as_the_packages_estimator_does(benchmark, passes):
    """The coverage study's batched estimates (lite_batch) equal estimate_statistic's on each subset's own table,
    on subsets with and without the rare right answers (so with and without the widening)."""
    from StaICC.stats.lite_batch import subset_estimates
    name = "expected_calibration_error_1"
    records = [r for p in range(passes) for r in _records(range(19 - p, 20), passes) if r["pass"] == p]
    full = Statistic(benchmark, ItemTable(benchmark, "toy", records), [name])
    population = Population(((0, 20), (1, 20)))
    subsets = [CHOSEN, [0, 5, 10, 15, 19, 20, 25, 30, 35, 39], [1, 2, 17, 18, 19, 21, 22, 23, 24, 25]]
    found = subset_estimates(full, population, subsets, resamples=60, seed=[0, 1, 2], level=0.95)
    widths = []
    for j, (subset, (plain, _)) in enumerate(zip(subsets, found)):
        own = Statistic(benchmark, full.table.restricted(subset), [name])
        own.x_values = full.x_values
        slow = estimate_statistic(own, population, resamples=60, seed=j, level=0.95)[name]
        assert plain[name][:3] == pytest.approx(slow[:3], rel=1e-12, abs=1e-12)
        assert list(plain[name][3]) == pytest.approx(list(slow[3]), rel=1e-12, abs=1e-12)
        for bound in ("down", "up"):  # Normal's resamples carry their bounds to the averaged row
            assert getattr(plain[name][3], bound, None) == pytest.approx(getattr(slow[3], bound, None), abs=1e-12)
        widths.append(slow[2] - slow[1])
    assert widths[0] > widths[2]  # the subset without a rare right answer is widened most
