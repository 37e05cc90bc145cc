"""Exact lite intervals for accuracy with small label groups, against SciPy's Beta quantiles and the Korn-Graubard
interval computed by hand."""
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, estimate_statistic
from StaICC.stats.lite_exact import SMALL_STRATUM, beta_quantile, korn_graubard, regularized_beta

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("a, b", [(0.5, 0.5), (1, 1), (2.5, 7), (30, 4), (0.3, 80), (120.5, 130)])
def test_the_beta_distribution_and_its_quantiles_are_scipys(a, b):
    for x in (1e-6, 0.01, 0.2, 0.5, 0.77, 0.999):
        assert regularized_beta(x, a, b) == pytest.approx(scipy_stats.beta.cdf(x, a, b), abs=1e-12)
    for q in (0.0125, 0.025, 0.5, 0.975):
        assert beta_quantile(q, a, b) == pytest.approx(scipy_stats.beta.ppf(q, a, b), abs=1e-10)


def test_clopper_pearson_where_the_variance_is_binomial():
    # a simple random sample of 0/1 values, no finite-population correction: Clopper-Pearson itself
    low, high = korn_graubard(3 / 20, (3 / 20) * (17 / 20) / 20, 20, 0.95)
    assert low == pytest.approx(scipy_stats.beta.ppf(0.025, 3, 18), abs=1e-9)
    assert high == pytest.approx(scipy_stats.beta.ppf(0.975, 4, 17), abs=1e-9)
    assert korn_graubard(0.0, 0.0, 12, 0.95) == pytest.approx((0.0, 1 - 0.025 ** (1 / 12)), abs=1e-9)


def test_a_small_label_gives_normals_accuracy_the_korn_graubard_interval():
    rng = random.Random(5)
    labels = [0] * 12 + [1] * 6 + [2] * 4  # label 2 has fewer than SMALL_STRATUM items in the subset
    assert min(labels.count(c) for c in (0, 1, 2)) < SMALL_STRATUM
    full = {0: 120, 1: 50, 2: 30}
    records = [{"pass": 0, "repeat": k, "test_index": t, "label": y, "query_index": k * 22 + t,
                "prediction": [rng.random() for _ in range(3)], "prompt_sha256": f"{k}/{t}"}
               for k in range(2) for t, y in enumerate(labels)]
    table = ItemTable("Normal", "toy", records)
    statistic = Statistic("Normal", table, ["accuracy"])
    # by hand: each item's share of right answers over its two repeats, stratified mean and variance
    rows = np.asarray(table.rows[0])  # repeat x item x label
    right = (rows.argmax(axis=2) == np.asarray(labels)).mean(axis=0)
    p, v = 0.0, 0.0
    for c, N in full.items():
        x = right[np.asarray(labels) == c]
        W = N / 200
        p += W * x.mean()
        v += W ** 2 * (1 - len(x) / N) * x.var(ddof=1) / len(x)
    n_eff = min(len(labels), p * (1 - p) / v)
    expected = (scipy_stats.beta.ppf(0.025, p * n_eff, n_eff - p * n_eff + 1),
                scipy_stats.beta.ppf(0.975, p * n_eff + 1, n_eff - p * n_eff))
    value, low, high, _ = estimate_statistic(statistic, Population(tuple(full.items())), resamples=200, seed=1,
                                             level=0.95)["accuracy"]
    assert value == pytest.approx(p, abs=1e-12)
    assert (low, high) == pytest.approx(expected, abs=1e-7)
