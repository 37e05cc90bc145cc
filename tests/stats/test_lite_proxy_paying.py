"""A proxy that does not pay for itself is not used (:func:`StaICC.stats.lite_proxy_weights.paying`): against the
interval widths computed here with NumPy, a proxy of noise whose fitted weight is small but not 0 (the rule
before widened the interval for it) gives the plain cell bit for bit, estimate and interval, its weight recorded
as 0; a close proxy keeps its weight and narrows; a vector metric is decided label by label; the package's
estimator, its ECE and the coverage study's fast path all follow the one rule."""
import math
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Design, Population, _resample_weights, estimate_statistic, finished, t_over_z
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_proxy import Proxy, TunedEstimator, power_tuned
from StaICC.stats.lite_proxy_weights import paying

np = pytest.importorskip("numpy")

LIKELIHOOD, LEVEL, N, TOTAL = "averaged_truelabel_likelihood", 0.95, 64, 512


def _draw(rho: float, seed: int, width: int = 0):
    """A subset of N of TOTAL items (one stratum), NumPy-drawn item values of a target and a proxy correlated
    ``rho``, 200 resamples of their means by the package's rescaling bootstrap; (target, proxy) as power_tuned
    takes them, the proxy's full-run mean and the design's degrees of freedom."""
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((TOTAL, max(width, 1)))
    t = rho * p + math.sqrt(1 - rho ** 2) * rng.standard_normal(p.shape)
    pick = rng.choice(TOTAL, N, replace=False)
    plan = Design([1.0] * N, [(list(range(N)), math.sqrt(1 - N / TOTAL))], N - 1)
    rows = np.asarray(_resample_weights(plan, 200, seed, ("paying",)))

    def values(x):
        point, resampled = x[pick].mean(axis=0), rows @ x[pick] / N
        return ((point.tolist(), resampled.tolist()) if width else (float(point[0]), resampled[:, 0].tolist()))
    (tp, tr), (pp, pr) = values(t), values(p)
    full = p.mean(axis=0).tolist() if width else float(p.mean())
    return ({LIKELIHOOD: tp}, {LIKELIHOOD: tr}), ({LIKELIHOOD: pp}, {LIKELIHOOD: pr}), {LIKELIHOOD: full}, N - 1


def _by_hand(target, proxy, freedom):
    """(lambda, the fitted element's expected half-width, the plain one's) with NumPy: the clipped ratio, the
    combined resamples' spread widened by sqrt(d / (d - 2)) at d - 1 degrees of freedom, the target's at d."""
    ts, ps = np.asarray(target[1][LIKELIHOOD]), np.asarray(proxy[1][LIKELIHOOD])
    dt, dp = ts - ts.mean(axis=0), ps - ps.mean(axis=0)
    weight = np.clip((dt * dp).sum(axis=0) / (dp * dp).sum(axis=0), 0.0, 1.0)
    fitted = math.sqrt(freedom / (freedom - 2)) * t_over_z(LEVEL, freedom - 1) * (ts - weight * ps).std(axis=0)
    return weight, fitted, t_over_z(LEVEL, freedom) * ts.std(axis=0)


def _before(target, proxy, truth, d, weight):
    """The cell the rule before printed (the weight kept whatever it pays): t + lambda (P - p), the combined
    resamples spread by sqrt(d / (d - 2)) about their mean (NumPy), the interval at d - 1 degrees of freedom."""
    ts, ps = np.asarray(target[1][LIKELIHOOD]), np.asarray(proxy[1][LIKELIHOOD])
    combined = ts - weight * ps + weight * truth[LIKELIHOOD]
    widened = combined.mean() + math.sqrt(d / (d - 2)) * (combined - combined.mean())
    point = target[0][LIKELIHOOD] + weight * (truth[LIKELIHOOD] - proxy[0][LIKELIHOOD])
    return finished("Normal", {LIKELIHOOD: float(point)}, {LIKELIHOOD: widened.tolist()}, d - 1, LEVEL)[LIKELIHOOD]


def test_a_noise_proxy_that_would_widen_gives_the_plain_cell_bit_for_bit():
    """Seeds whose proxy of (nearly) pure noise gets a weight above 0 that does not pay for itself, and whose
    interval the rule before printed wider than the plain one: now the plain cell, bits and resamples."""
    seen = 0
    for seed in range(60):
        target, proxy, truth, d = _draw(0.02, seed)
        weight, fitted, plain_width = _by_hand(target, proxy, d)
        plain = finished("Normal", *target, d, LEVEL)[LIKELIHOOD]
        before = _before(target, proxy, truth, d, weight)
        if not (0.02 < weight < 1 and fitted > plain_width and before[2] - before[1] > plain[2] - plain[1]):
            continue
        seen += 1
        found, details = power_tuned("Normal", target, [proxy], [truth], d, LEVEL)
        assert found[LIKELIHOOD][:3] == plain[:3] and found[LIKELIHOOD][3] == plain[3]
        assert details[LIKELIHOOD]["weight"] == 0.0
    assert seen >= 3


def test_a_close_proxy_keeps_its_weight_and_narrows():
    for seed in range(5):
        target, proxy, truth, d = _draw(0.8, seed)
        weight, fitted, plain = _by_hand(target, proxy, d)
        found, details = power_tuned("Normal", target, [proxy], [truth], d, LEVEL)
        cell, alone = found[LIKELIHOOD], finished("Normal", *target, d, LEVEL)[LIKELIHOOD]
        assert fitted < plain and weight > 0.5
        assert details[LIKELIHOOD]["weight"] == pytest.approx(float(weight), abs=1e-12)
        assert cell[0] == pytest.approx(target[0][LIKELIHOOD] + weight * (truth[LIKELIHOOD] - proxy[0][LIKELIHOOD]),
                                        abs=1e-12)
        assert cell[2] - cell[1] < 0.8 * (alone[2] - alone[1])


def test_the_rule_by_hand_and_a_vector_decided_label_by_label():
    """paying's choice is the widths computed here, element by element; a distribution with one label the proxy
    follows and one it does not: the first label fitted, the second the plain cell's bits."""
    outcomes = set()
    for seed in range(40):
        target, proxy, truth, d = _draw(0.15, seed)
        weight, fitted, plain = _by_hand(target, proxy, d)
        ts, ps = np.asarray(target[1][LIKELIHOOD]), np.asarray(proxy[1][LIKELIHOOD])
        kept = paying(weight[None], ts, [ps], d, LEVEL)[0]
        assert kept == (weight if fitted <= plain else 0.0)
        outcomes.add((bool(weight > 0), bool(kept > 0)))
    assert outcomes == {(True, True), (True, False), (False, False)}
    for seed in range(40):
        target, proxy, truth, d = _draw(0.0, seed, width=2)
        ts, ps = np.asarray(target[1][LIKELIHOOD]), np.asarray(proxy[1][LIKELIHOOD])
        ps[:, 0] = ts[:, 0] + 0.1 * (ps[:, 0] - ps[:, 0].mean())  # label 0: a close proxy
        proxy[1][LIKELIHOOD] = ps.tolist()
        weight, fitted, plain = _by_hand(target, proxy, d)
        if weight[1] > 0:  # label 1 would have been fitted, and widened
            break
    assert fitted[0] < plain[0] and fitted[1] > plain[1] and weight[1] > 0
    found, details = power_tuned("Normal", target, [proxy], [truth], d, LEVEL)
    alone = finished("Normal", *target, d, LEVEL)[LIKELIHOOD]
    assert details[LIKELIHOOD]["weight"] == [pytest.approx(float(weight[0]), abs=1e-12), 0.0]
    cell = found[LIKELIHOOD]
    assert [cell[k][1] for k in range(3)] == [alone[k][1] for k in range(3)]
    assert [row[1] for row in cell[3]] == [row[1] for row in alone[3]]
    assert cell[2][0] - cell[1][0] < alone[2][0] - alone[1][0]


def _part(rows, labels):
    records = [{"pass": 0, "repeat": 0, "test_index": t, "label": y, "query_index": t, "prediction": list(rows[t]),
                "prompt_sha256": f"0/0/{t}"} for t, y in enumerate(labels)]
    return Statistic("Normal", ItemTable("Normal", "toy", records),
                     ["accuracy", LIKELIHOOD, "expected_calibration_error_1", "macro_F1"])


def test_the_package_its_ece_and_the_fast_path_give_the_plain_cells_where_the_weights_are_0():
    """A proxy of pure noise on a 3-label Normal part: every cell whose weights are all 0 (the ECE's bins
    included) is the plain estimate's bits, on the package's path and on the study's fast path alike, and the two
    paths agree on every cell; some cells are 0 by the rule, not by the clipping."""
    rng = random.Random(11)
    labels = [t % 3 for t in range(240)]
    target = [[rng.gauss(0, 1) + (1.6 if j == y else 0.0) for j in range(3)] for y in labels]
    full, noise = _part(target, labels), _part([[rng.gauss(0, 1) for _ in range(3)] for _ in labels], labels)
    population = Population.from_labels(labels)
    subsets = [sorted(random.Random(s).sample(range(240), 60)) for s in range(6)]
    fast = subset_estimates(full, population, subsets, resamples=200, seed=list(range(6)), level=LEVEL,
                            proxies=[noise])
    zero, ece_zero = 0, 0
    for s, (positions, (fast_plain, (fast_tuned,))) in enumerate(zip(subsets, fast)):
        subset = Statistic("Normal", full.table.restricted(positions), full.names())
        estimator = TunedEstimator(Proxy("noise", {}, _tables={("Normal", "toy"): noise}))
        tuned = estimator(subset, population, resamples=200, seed=s, level=LEVEL)
        plain = estimate_statistic(subset, population, resamples=200, seed=s, level=LEVEL)
        for metric, cell in tuned.items():
            assert fast_tuned[metric][:3] == pytest.approx(cell[:3], abs=1e-12)
            detail = estimator.details[("Normal", "toy", metric)]
            if not np.any(detail["weight"]) and not np.any(detail.get("bin_weights", 0)):
                zero += 1
                ece_zero += "bin_weights" in detail
                assert cell[:3] == plain[metric][:3] and fast_tuned[metric][:3] == fast_plain[metric][:3]
    # most of the 24 cells, the ECE's among them (its bins that no item reaches move nothing and take 0)
    assert zero >= 12 and ece_zero >= 2
