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


def _probability_records(count, negative=False):
    """Three labels in equal shares, each item a probability row leaning towards its label."""
    rng = random.Random(5)
    records = []
    for t in range(count):
        label = t % 3
        raw = [rng.gauss(0, 1) + (0.8 if j == label else 0) for j in range(W)]
        row = [math.exp(v) / sum(math.exp(u) for u in raw) for v in raw]
        if negative and t == 0:
            row = [row[0] + 0.01, row[1], row[2] - 0.01 - row[2] * 2]  # one entry below zero: scores
        records.append({"pass": 0, "repeat": 0, "test_index": t, "label": label, "prediction": row,
                        "prompt_sha256": str(t), "query_index": t})
    return records


def test_the_kl_divergence_of_positive_rows_is_corrected_by_its_second_order_bias():
    table = ItemTable("Post_bias", "toy", _probability_records(n * 3 // 2))
    statistic = Statistic("Post_bias", table, ["DL div."])
    rows = np.asarray(table.rows[0][0])  # the raw rows: the standard averages them where every mean is positive
    labels = np.asarray(table.labels)
    mean, q = rows.mean(axis=0), np.bincount(labels, minlength=W) / len(labels)
    per_label, share = n // 2, 1 / 3  # the subset: 20 of each label's 200 items
    covariance = sum(share ** 2 * (1 / per_label - 1 / (N // 2)) * np.cov(rows[labels == s], rowvar=False, ddof=1)
                     for s in range(W))
    expected_bias = 0.5 * float(np.sum(np.diag(covariance) / mean))  # the Hessian of sum p log(p / q): diag(1 / p)
    plug_in = float(np.sum(mean * np.log(mean / q)))
    population = Population(tuple((s, N // 2) for s in range(W)))
    value, low, high, _ = estimate_statistic(statistic, population, resamples=4000, seed=3, level=0.95)["DL div."]
    assert plug_in - value == pytest.approx(expected_bias, rel=0.25)
    assert low < value < high


def test_the_kl_divergence_is_not_corrected_where_a_row_is_not_positive():
    table = ItemTable("Post_bias", "toy", _probability_records(n * 3 // 2, negative=True))
    statistic = Statistic("Post_bias", table, ["DL div."])
    population = Population(tuple((s, N // 2) for s in range(W)))
    value = estimate_statistic(statistic, population, resamples=400, seed=3, level=0.95)["DL div."][0]
    assert value == pytest.approx(statistic.point()["DL div."], abs=1e-12)
