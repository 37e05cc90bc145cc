"""Normal's ECE with a proxy: the difference estimator on each signed bin gap (StaICC.stats.lite_ece), checked
against the gaps, weights and estimate computed here with NumPy from the tables' row summaries; a proxy equal to
the target gives the full run's ECE with no width but the unseen answers'; a proxy of noise is not wider than the
plain interval beyond the lost degree of freedom; a subset that is the whole test set is the full run bit for bit;
the coverage study's fast path gives what the package gives."""
import random

import pytest

from StaICC.standard import ECE_BINS
from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, _resample_weights, design, estimate_statistic, t_over_z
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_ece import ece_interval, ece_widened
from StaICC.stats.lite_proxy import Proxy, TunedEstimator
from StaICC.stats.lite_unseen import interval_rules

np = pytest.importorskip("numpy")

ECE = "expected_calibration_error_1"
NAMES = ["accuracy", "averaged_truelabel_likelihood", ECE, "macro_F1"]
LEVEL, RESAMPLES = 0.95, 300


def _statistic(rows, labels):
    records = [{"pass": 0, "repeat": 0, "test_index": t, "label": y, "query_index": t, "prediction": list(rows[t]),
                "prompt_sha256": f"0/0/{t}"} for t, y in enumerate(labels)]
    return Statistic("Normal", ItemTable("Normal", "toy", records), NAMES)


@pytest.fixture(scope="module")
def toy():
    """A 3-label Normal part of 240 items: a target right about 70 % of the time, a proxy whose scores follow the
    target's with noise, and a proxy of pure noise."""
    rng = random.Random(5)
    labels = [t % 3 for t in range(240)]
    target, related, noise = [], [], []
    for y in labels:
        row = [rng.gauss(0, 1) + (1.6 if j == y else 0.0) for j in range(3)]
        target.append(row)
        related.append([v + rng.gauss(0, 0.3) for v in row])
        noise.append([rng.gauss(0, 1) for _ in range(3)])
    return (_statistic(target, labels), _statistic(related, labels), _statistic(noise, labels),
            Population.from_labels(labels))


def _subset(full, seed, size=36):
    positions = sorted(random.Random(seed).sample(range(len(full.table)), size))
    return positions, Statistic("Normal", full.table.restricted(positions), full.names())


def _tuned(proxies, subset, population, seed):
    estimator = TunedEstimator([Proxy(f"p{i}", {}, _tables={("Normal", "toy"): p}) for i, p in enumerate(proxies)])
    return estimator(subset, population, resamples=RESAMPLES, seed=seed, level=LEVEL)[ECE], estimator


def _numpy_gaps(table, positions, weights):
    """Signed bin gaps of the items at ``positions`` for each weight row, summed here row by row from the
    table's (predicted, confidence, true label, bin) summaries of pass 0."""
    gaps = np.zeros((len(weights), ECE_BINS))
    for rep in table.summaries[0]:
        for column, i in enumerate(positions):
            predicted, confidence, _, b = rep[i]
            gaps[:, int(b)] += weights[:, column] * ((predicted == table.labels[i]) - confidence)
    return gaps / (table.repeats * weights.sum(axis=1, keepdims=True))


def _clipped_ratio(t, p):
    dt, dp = t - t.mean(axis=0), p - p.mean(axis=0)
    var = (dp * dp).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(var > 0, (dt * dp).sum(axis=0) / var, 0.0), 0, 1), dt, dp


def test_the_estimate_and_interval_are_the_gaps_difference_estimator_computed_here(toy):
    full, related, _, population = toy
    for seed in range(3):
        positions, subset = _subset(full, seed)
        cell, estimator = _tuned([related], subset, population, seed)
        plan = design(subset.table, population)
        rows = np.asarray(_resample_weights(plan, RESAMPLES, seed, ("lite", "Normal", "toy")))
        point_w = np.asarray([plan.weights])
        everything = np.arange(len(subset.table))
        t, ts = _numpy_gaps(subset.table, everything, point_w)[0], _numpy_gaps(subset.table, everything, rows)
        p, ps = _numpy_gaps(related.table, positions, point_w)[0], _numpy_gaps(related.table, positions, rows)
        whole = _numpy_gaps(related.table, range(240), np.ones((1, 240)))[0]
        weight, dt, dp = _clipped_ratio(ts, ps)
        quiet = ps.std(axis=0) == 0  # a bin the proxy's subset never reached: one slope over all bins
        pooled = min(max(float((dt * dp).sum() / (dp * dp).sum()), 0.0), 1.0)
        weight = np.where(quiet, pooled, weight)
        weight = np.where(quiet & (whole == p), 0.0, weight)  # a bin no item reaches: its weight moves nothing
        d = plan.freedom  # the fitted weight's own variability widens the spread by sqrt(d / (d - 2))
        # a bin's weight pays for itself where its widened spread at d - 1 degrees of freedom is not above the plain one
        pays = np.sqrt(d / (d - 2)) * t_over_z(LEVEL, d - 1) * (ts - weight * ps).std(axis=0) <= \
            t_over_z(LEVEL, d) * ts.std(axis=0)
        weight = np.where(pays, weight, 0.0)
        assert pays.any() and not pays.all()  # both kinds of bin are seen
        point, combined = t + weight * (whole - p), ts + weight * (whole - ps)
        factor = np.where(weight != 0, np.sqrt(d / (d - 2)), 1.0)  # a bin of weight 0 is the plain gap
        combined = combined.mean(axis=0) + factor * (combined - combined.mean(axis=0))
        assert cell[0] == pytest.approx(2 * np.abs(point).sum() - np.abs(combined).sum(axis=1).mean(), abs=1e-12)
        found = ece_widened(ece_interval(point, combined, t_over_z(LEVEL, plan.freedom - 1), LEVEL),
                            interval_rules(subset, population, plan, LEVEL).unseen)
        assert cell[1:3] == pytest.approx(found[1:3], abs=1e-12)
        detail = estimator.details[("Normal", "toy", ECE)]
        assert detail["bin_weights"] == pytest.approx(weight.tolist(), abs=1e-12)
        assert detail["weight"] == pytest.approx(float(weight.mean()), abs=1e-12)


def test_a_proxy_equal_to_the_target_gives_the_full_runs_ece_widened_only_for_unseen_answers(toy):
    full, _, _, population = toy
    truth, collapsed = full.point()[ECE], 0
    for seed in range(6):
        _, subset = _subset(full, seed)
        cell, estimator = _tuned([full], subset, population, seed)
        assert cell[0] == pytest.approx(truth, abs=1e-12)
        # weight 1 in every bin the full run reaches, those the subset misses too; 0 in a bin no item reaches
        reached = _numpy_gaps(full.table, range(240), np.ones((1, 240)))[0] != 0
        assert estimator.details[("Normal", "toy", ECE)]["bin_weights"] == np.where(reached, 1.0, 0.0).tolist()
        assert 0 < reached.sum() < ECE_BINS
        shift = interval_rules(subset, population, design(subset.table, population), LEVEL).unseen(ECE)
        down, up = shift if shift else (0.0, 0.0)
        assert cell[1] == pytest.approx(max(cell[0] - down, 0.0), abs=1e-12)
        assert cell[2] == pytest.approx(min(cell[0] + up, 1.0), abs=1e-12)
        collapsed += (down, up) == (0.0, 0.0)
    assert collapsed >= 2  # the collapse itself is seen, not only the widening


def test_a_proxy_of_noise_is_not_wider_than_plain_beyond_the_lost_degree_of_freedom(toy):
    full, _, noise, population = toy
    ratios = []
    for seed in range(8):
        _, subset = _subset(full, seed)
        cell, _ = _tuned([noise], subset, population, seed)
        plain = estimate_statistic(subset, population, resamples=RESAMPLES, seed=seed, level=LEVEL)[ECE]
        ratios.append((cell[2] - cell[1]) / (plain[2] - plain[1]))
    assert max(ratios) < 1.1 and sum(ratios) / len(ratios) < 1.04


def test_the_whole_test_set_is_the_full_runs_ece_bit_for_bit(toy):
    full, related, _, population = toy
    truth = full.point()[ECE]
    cell, _ = _tuned([related], full, population, 0)
    assert cell[0] == cell[1] == cell[2] == truth
    (plain, (tuned,)), = subset_estimates(full, population, [list(range(240))], resamples=50, seed=0, level=LEVEL,
                                          proxies=[related])
    assert tuned[ECE][:3] == plain[ECE][:3] == (truth, truth, truth)


def test_the_fast_path_gives_the_packages_ece_with_one_proxy_and_two(toy):
    full, related, noise, population = toy
    subsets = [_subset(full, 20 + s)[0] for s in range(4)]
    found = subset_estimates(full, population, subsets, resamples=200, seed=list(range(4)), level=LEVEL,
                             proxies=[related, noise], groups=[(0,), (0, 1)])
    for s, (positions, (_, tuned)) in enumerate(zip(subsets, found)):
        subset = Statistic("Normal", full.table.restricted(positions), full.names())
        for group, cell in zip([[related], [related, noise]], tuned):
            estimator = TunedEstimator([Proxy(f"p{i}", {}, _tables={("Normal", "toy"): p}) for i, p in enumerate(group)])
            alone = estimator(subset, population, resamples=200, seed=s, level=LEVEL)[ECE]
            assert cell[ECE][:3] == pytest.approx(alone[:3], abs=1e-12)
            assert list(cell[ECE][3].down) == pytest.approx(list(alone[3].down), abs=1e-12)


def test_a_lite_run_with_its_own_full_run_as_proxy_gives_the_full_runs_ece_and_averaged_row():
    """End to end (``run_lite`` with ``proxy``): each dataset's ECE and the averaged row's are the full run's, each
    interval no wider than the widening for unseen answers, the averaged one no wider than its datasets' mean."""
    import warnings

    from StaICC.backends.reference_model import lexical_icl
    from StaICC.errors import TamperingWarning
    from StaICC.runs.lite import run_lite
    from StaICC.stats.lite_proxy import proxy_of_run
    from StaICC.subbenchmarks.suite import build_suite, run_suite
    datasets = ["financial_phrasebank", "TREC"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        full = run_suite(lexical_icl, suite=build_suite("Normal", datasets, 4), progress=False)
        lite = run_lite(lexical_icl, 0.25, "Normal", datasets=datasets, progress=False,
                        proxy=proxy_of_run(full, "itself"))
    cells = lite.lite.estimates["Normal"]
    widths = []
    for dataset in datasets:
        cell = cells[dataset][ECE]
        assert cell.value == pytest.approx(full["Normal"]["Divided results"][dataset][ECE], abs=1e-12)
        widths.append(cell.high - cell.low)
    averaged = cells["Averaged"][ECE]
    assert averaged.value == pytest.approx(full["Normal"]["Averaged results"][ECE], abs=1e-12)
    assert averaged.low <= averaged.value <= averaged.high
    assert averaged.high - averaged.low <= sum(widths) / len(widths) + 1e-12
