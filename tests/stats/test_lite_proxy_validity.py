"""A proxy never makes a lite interval less valid than the plain one: a proxy's full-run entropy is
taken on the exact-check branch its subset takes (a difference across the two branches measures their distance, not
the subset's error), each checked against the plain estimate and an entropy computed here with NumPy.  (Normal's
ECE takes a proxy on its signed bin gaps: test_lite_ece_proxy.py.)"""
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, estimate_statistic
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_branches import item_flags, on_branch, undecided
from StaICC.stats.lite_proxy import Proxy, TunedEstimator

np = pytest.importorskip("numpy")

ECE = "expected_calibration_error_1"


def _records(rows, labels):
    return [{"pass": 0, "repeat": 0, "test_index": t, "label": y, "query_index": t, "prediction": list(rows[t]),
             "prompt_sha256": f"0/0/{t}"} for t, y in enumerate(labels)]


def _statistic(benchmark, rows, labels, names):
    return Statistic(benchmark, ItemTable(benchmark, "toy", _records(rows, labels)), names)


def _tuned(proxy_full, subset, population, seed=1):
    estimator = TunedEstimator(Proxy("p", {}, _tables={(subset.table.benchmark, "toy"): proxy_full}))
    return estimator(subset, population, resamples=300, seed=seed, level=0.95), estimator


def _entropy(p):
    p = p[p != 0]
    return float(-(p * np.log(p)).sum())


@pytest.fixture(scope="module")
def domain():
    """A Domain_bias part of 400 items: a target answering scores (its branch decided: softmaxed) and a proxy
    answering probability rows whose sums are 1 up to rounding (its branch a last-bit accident), both driven by
    the same per-item lean."""
    rng = random.Random(8)
    target, proxy = [], []
    for _ in range(400):
        lean = [rng.random() ** 3 + (2.0 if j == 0 else 0.0) for j in range(4)]
        proxy.append([v / sum(lean) for v in lean])
        target.append([2.0 * v + rng.gauss(0, 0.2) - 1.0 for v in lean])
    labels = [0] * 400
    names = ["distribution", "entropy"]  # a proxy corrects the entropy through the mean row (lite_entropy)
    return (_statistic("Domain_bias", target, labels, names), _statistic("Domain_bias", proxy, labels, names),
            Population(((None, 400),)), np.asarray(target))


def test_the_proxys_full_run_entropy_is_taken_on_its_subsets_branch(domain):
    """Whichever branch the proxy's full run took, the estimate is the same: its full-run entropy on the branch
    its subset takes.  Without that, the proxy whose full run took the other branch moves the estimate by the
    branches' distance (here above 0.1), far outside its interval."""
    full, proxy, population, target_rows = domain
    assert undecided(item_flags(proxy), range(400)) and not undecided(item_flags(full), range(400))
    truth = _entropy(np.exp(target_rows.mean(axis=0)) / np.exp(target_rows.mean(axis=0)).sum())
    assert full.point()["entropy"] == pytest.approx(truth, abs=1e-12)  # the standard softmaxes the score mean
    mean = np.asarray(proxy.table.rows[0][0]).mean(axis=0)
    assert abs(_entropy(mean) - _entropy(np.exp(mean) / np.exp(mean).sum())) > 0.1  # the branches lie far apart
    covered = taken = 0
    for seed in range(12):
        positions = sorted(random.Random(seed).sample(range(400), 50))
        subset = Statistic("Domain_bias", full.table.restricted(positions), full.names())
        found = [_tuned(on_branch(proxy, branch), subset, population, seed) for branch in (True, False)]
        ends = [cells["entropy"][:3] for cells, _ in found]
        assert ends[0] == ends[1]
        taken += found[0][1].details[("Domain_bias", "toy", "entropy")]["weight"] > 0  # the proxy takes part
        value, low, high = ends[0]
        covered += low <= truth <= high
    assert covered >= 10 and taken >= 10  # (one subset's tuned row shows the non-linear regime: plain there)


def test_a_proxy_whose_subset_crosses_post_bias_branches_corrects_nothing():
    """A proxy of scores whose raw means are positive on the full run (the raw branch) but not on some of a
    subset's resamples (those take the softmaxed rows' means) gives the post-bias metrics no correction: the
    plain estimate and interval, bit for bit.  A proxy that stays on its full run's branch still corrects."""
    rng = random.Random(4)
    labels = [t % 3 for t in range(300)]
    lean = [[rng.gauss(0, 1) for _ in range(3)] for _ in labels]
    target = [[2.0 + v for v in row] for row in lean]  # positive scores: always the raw branch
    crossing = [[0.08 + v + rng.gauss(0, 0.3) for v in row] for row in lean]
    names = ["DL div.", "distribution"]
    full, population = _statistic("Post_bias", target, labels, names), Population.from_labels(labels)
    assert (np.asarray(crossing).mean(axis=0) > 0).all() and (np.asarray(crossing) < 0).any()  # full run: raw
    steady = _statistic("Post_bias", [[2.5 + v + rng.gauss(0, 0.3) for v in row] for row in lean], labels, names)
    positions = sorted(random.Random(2).sample(range(300), 40))
    subset = Statistic("Post_bias", full.table.restricted(positions), names)
    sub_means = np.asarray([crossing[t] for t in positions]).mean(axis=0)
    assert abs(sub_means).min() < 0.2  # a subset mean this near zero: resamples on both sides
    plain = estimate_statistic(subset, population, resamples=300, seed=1, level=0.95)
    crossing_full = _statistic("Post_bias", crossing, labels, names)
    tuned, estimator = _tuned(crossing_full, subset, population)
    for name in names:
        assert tuned[name][:3] == plain[name][:3]
        assert np.all(np.asarray(estimator.details[("Post_bias", "toy", name)]["weight"]) == 0.0)
    (fast_plain, (fast_tuned,)), = subset_estimates(full, population, [positions], resamples=300, seed=1, level=0.95,
                                                    proxies=[crossing_full])  # the study's path: the same rule
    assert all(fast_tuned[name][:3] == fast_plain[name][:3] for name in names)
    helped, estimator = _tuned(steady, subset, population)
    assert estimator.details[("Post_bias", "toy", "DL div.")]["weight"] > 0.3
    assert helped["DL div."][2] - helped["DL div."][1] < plain["DL div."][2] - plain["DL div."][1]
