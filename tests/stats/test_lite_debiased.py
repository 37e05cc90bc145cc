"""The bias-corrected bias entropy against the second-order (Miller-Madow) bias computed independently: the
Hessian of the entropy of the mean row by finite differences in NumPy, times the finite-population covariance of a
subset's mean row."""
import math
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, estimate_statistic
from StaICC.stats.lite_debiased import DEBIASED, bias_of

np = pytest.importorskip("numpy")

N, n, W = 400, 40, 3  # the full set of pseudo queries, the subset


def _records(count):
    rng = random.Random(11)
    records = []
    for t in range(count):
        row = [rng.gauss(0, 1.5) for _ in range(W)]
        row[0] += 1.0  # a biased model: label 0 favoured
        records.append({"pass": 0, "repeat": 0, "test_index": t, "label": 0, "prediction": row,
                        "prompt_sha256": str(t), "query_index": t})
    return records


def _entropy_of_softmaxed(mean):
    p = np.exp(mean - mean.max())
    p /= p.sum()
    return float(-(p * np.log(p)).sum())


def test_the_bootstrap_bias_of_the_entropy_is_the_second_order_bias():
    table = ItemTable("Contextual_bias", "toy", _records(n))
    statistic = Statistic("Contextual_bias", table, ["entropy"])
    assert statistic.entropy_branch is False  # raw scores: the mean row is softmaxed
    rows = np.asarray(table.rows[0][0])  # pass 0, repeat 0: one row per item
    mean = rows.mean(axis=0)
    # second-order bias: (1/2) tr(H Cov), Cov of a without-replacement mean = (1/n - 1/N) S^2
    h = 1e-4
    hessian = np.zeros((W, W))
    for a in range(W):
        for b in range(W):
            ea, eb = np.eye(W)[a] * h, np.eye(W)[b] * h
            hessian[a, b] = (_entropy_of_softmaxed(mean + ea + eb) - _entropy_of_softmaxed(mean + ea - eb)
                             - _entropy_of_softmaxed(mean - ea + eb) + _entropy_of_softmaxed(mean - ea - eb)) / (4 * h * h)
    covariance = (1 / n - 1 / N) * np.cov(rows, rowvar=False, ddof=1)
    expected_bias = 0.5 * float(np.trace(hessian @ covariance))
    assert expected_bias < 0  # the plug-in entropy of a subset is too small
    value, low, high, _ = estimate_statistic(statistic, Population(((None, N),)), resamples=4000, seed=3,
                                             level=0.95)["entropy"]
    plug_in = _entropy_of_softmaxed(mean)
    assert plug_in - value == pytest.approx(expected_bias, rel=0.25)  # the estimate is the plug-in minus its bias
    assert low < value < high


def test_only_the_metrics_that_are_not_means_are_corrected():
    assert bias_of("Normal", "accuracy", 0.5, [0.6, 0.7]) == 0.0
    assert bias_of("Normal", "expected_calibration_error_1", 0.1, [0.2, 0.3]) == pytest.approx(0.15)
    assert bias_of("Contextual_bias", "entropy", 1.0, [math.nan, 0.9]) == pytest.approx(-0.1)
    assert ("Domain_bias", "entropy") in DEBIASED and ("Normal", "macro_F1") not in DEBIASED
