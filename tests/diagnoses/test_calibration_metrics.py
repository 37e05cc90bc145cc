"""The calibration metrics against independent NumPy / scikit-learn computations, to 1e-9 on random inputs.

The references below are written from the published definitions with array operations
(np.array_split, np.digitize, cumulative sums, a vectorised Newton fit checked against
scikit-learn's LogisticRegression), not by translating the package's loops.
"""
import math
import random

import numpy as np
import pytest

from StaICC.metrics import (CALIBRATION_METRICS, METRICS, brier_score, classwise_ece, coverage_accuracy_area,
                            ece_equal_mass_1, ece_equal_mass_10, ece_platt, selective_accuracy)
from StaICC.metrics.calibration_metrics import platt_fit

TOL = {"rel": 1e-9, "abs": 1e-9}


def random_case(seed, n=None, width=None, scale=None):
    rng = random.Random(seed)
    n = n or rng.randint(12, 300)
    width = width or rng.randint(2, 6)
    scale = scale or rng.uniform(0.3, 5)
    rows = [[rng.gauss(0, scale) for _ in range(width)] for _ in range(n)]
    truth = [rng.randrange(width) for _ in range(n)]
    return truth, rows


def np_probs(rows):
    z = np.asarray(rows, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def np_conf_correct(truth, rows):
    p = np_probs(rows)
    return p.max(axis=1), (p.argmax(axis=1) == np.asarray(truth)).astype(np.float64)


def np_ece_em(conf, correct, bins):
    order = np.sort(conf)
    chunks = np.array_split(order, min(bins, len(conf)))
    edges = np.unique(np.array([(a[-1] + b[0]) / 2 for a, b in zip(chunks[:-1], chunks[1:])] + [1.0]))
    idx = np.minimum(np.searchsorted(edges, conf, side="left"), len(edges) - 1)
    total = 0.0
    for j in np.unique(idx):
        m = idx == j
        total += m.mean() * abs(correct[m].mean() - conf[m].mean())
    return total


def np_selective(conf, correct):
    """Expected accuracy of the m most confident rows, tied confidences in random order."""
    values, inverse = np.unique(-conf, return_inverse=True)
    sizes = np.bincount(inverse)
    rights = np.bincount(inverse, weights=correct)
    group_of_rank = np.repeat(np.arange(len(values)), sizes)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    before = np.concatenate([[0], np.cumsum(rights)[:-1]])
    m = np.arange(1, len(conf) + 1)
    g = group_of_rank
    return (before[g] + rights[g] * (m - start[g]) / sizes[g]) / m


def np_platt(conf, correct):
    x = np.log(np.clip(conf, 1e-12, 1 - 1e-12) / (1 - np.clip(conf, 1e-12, 1 - 1e-12)))
    pos = correct.sum()
    t = np.where(correct == 1, (pos + 1) / (pos + 2), 1 / (len(correct) - pos + 2))
    X = np.stack([x, np.ones_like(x)], axis=1)
    w = np.zeros(2)
    for _ in range(200):
        p = 1 / (1 + np.exp(-(X @ w)))
        step = np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (p - t))
        w = w - step
        if np.abs(step).max() < 1e-14:
            break
    return w


@pytest.mark.parametrize("seed", range(25))
def test_brier_against_numpy(seed):
    truth, rows = random_case(seed)
    p = np_probs(rows)
    onehot = np.eye(p.shape[1])[truth]
    assert brier_score(truth, rows) == pytest.approx(float(((p - onehot) ** 2).sum(axis=1).mean()), **TOL)


@pytest.mark.parametrize("seed", range(25))
def test_equal_mass_ece_against_numpy(seed):
    truth, rows = random_case(100 + seed)
    conf, correct = np_conf_correct(truth, rows)
    assert ece_equal_mass_10(truth, rows) == pytest.approx(np_ece_em(conf, correct, 10), **TOL)
    assert ece_equal_mass_1(truth, rows) == pytest.approx(abs(correct.mean() - conf.mean()), **TOL)


def test_equal_mass_bins_hold_equal_counts_and_reduce_to_n_bins():
    truth, rows = random_case(7, n=5, width=3)
    conf, correct = np_conf_correct(truth, rows)
    # fewer rows than bins: one row per bin, so the ECE is the mean |y - c|
    assert ece_equal_mass_10(truth, rows) == pytest.approx(float(np.abs(correct - conf).mean()), **TOL)


@pytest.mark.parametrize("seed", range(25))
def test_classwise_ece_against_numpy(seed):
    truth, rows = random_case(200 + seed)
    p = np_probs(rows)
    y = np.eye(p.shape[1])[truth]
    per_label = []
    for j in range(p.shape[1]):
        idx = np.minimum(np.floor(p[:, j] * 10).astype(int), 9)
        per_label.append(sum((idx == b).mean() * abs(y[idx == b, j].mean() - p[idx == b, j].mean())
                             for b in np.unique(idx)))
    assert classwise_ece(truth, rows) == pytest.approx(float(np.mean(per_label)), **TOL)


@pytest.mark.parametrize("seed", range(25))
def test_selective_metrics_against_numpy(seed):
    truth, rows = random_case(300 + seed)
    conf, correct = np_conf_correct(truth, rows)
    # continuous random logits have no tied confidences: a plain descending sort is the reference
    order = np.argsort(-conf, kind="stable")
    curve = np.cumsum(correct[order]) / np.arange(1, len(conf) + 1)
    m = max(1, int(0.1 * len(conf)))
    assert selective_accuracy(truth, rows) == pytest.approx(float(curve[m - 1]), **TOL)
    assert coverage_accuracy_area(truth, rows) == pytest.approx(float(curve.mean()), **TOL)


def test_selective_metrics_average_over_tied_confidences():
    """Dyadic probability rows tie often: the result is the mean over every order of each tie."""
    rng = random.Random(5)
    rows = [[a / 8, 1 - a / 8] for a in (rng.randint(0, 8) for _ in range(40))]
    truth = [rng.randrange(2) for _ in rows]
    p = np.asarray(rows)
    conf, correct = p.max(axis=1), (p.argmax(axis=1) == np.asarray(truth)).astype(float)
    curve = np_selective(conf, correct)
    assert coverage_accuracy_area(truth, rows) == pytest.approx(float(curve.mean()), **TOL)
    assert selective_accuracy(truth, rows, 0.25) == pytest.approx(float(curve[9]), **TOL)
    # the mean over many random tie-breaking orders converges to the same curve
    draws = []
    for s in range(400):
        noise = np.random.default_rng(s).random(len(conf))
        order = np.lexsort((noise, -conf))
        draws.append(np.cumsum(correct[order]) / np.arange(1, len(conf) + 1))
    assert np.abs(np.mean(draws, axis=0) - curve).max() < 0.05


@pytest.mark.parametrize("seed", range(25))
def test_platt_ece_against_numpy(seed):
    truth, rows = random_case(400 + seed)
    conf, correct = np_conf_correct(truth, rows)
    if correct.min() == correct.max() or np.ptp(conf) == 0:
        pytest.skip("degenerate draw")
    a, b = np_platt(conf, correct)
    assert platt_fit(list(conf), list(correct.astype(int))) == pytest.approx((a, b), rel=1e-9, abs=1e-9)
    x = np.log(np.clip(conf, 1e-12, 1 - 1e-12) / (1 - np.clip(conf, 1e-12, 1 - 1e-12)))
    scaled = 1 / (1 + np.exp(-(a * x + b)))
    assert ece_platt(truth, rows) == pytest.approx(np_ece_em(scaled, correct, 10), **TOL)


def test_platt_fit_matches_scikit_learn_weighted_logistic_regression():
    """Soft targets are the same loss as each row twice, labelled 1 and 0, weighted t and 1 - t."""
    sklearn_linear = pytest.importorskip("sklearn.linear_model")
    truth, rows = random_case(17, n=200, width=3, scale=2)
    conf, correct = np_conf_correct(truth, rows)
    x = np.log(conf / (1 - conf))
    pos = correct.sum()
    t = np.where(correct == 1, (pos + 1) / (pos + 2), 1 / (len(correct) - pos + 2))
    clf = sklearn_linear.LogisticRegression(C=1e12, solver="newton-cg", tol=1e-12, max_iter=1000)
    clf.fit(np.concatenate([x, x])[:, None], np.concatenate([np.ones_like(x), np.zeros_like(x)]),
            sample_weight=np.concatenate([t, 1 - t]))
    a, b = platt_fit(list(conf), list(correct.astype(int)))
    assert a == pytest.approx(clf.coef_[0][0], rel=1e-5) and b == pytest.approx(clf.intercept_[0], rel=1e-5, abs=1e-6)


def test_platt_on_separable_or_constant_rows_stays_finite():
    truth = [0] * 10 + [1] * 10
    separable = [[0.9 + i / 1000, 0.1 - i / 1000] for i in range(10)] + [[0.6 + i / 1000, 0.4 - i / 1000] for i in range(10)]
    assert math.isfinite(ece_platt(truth, separable))
    constant = [[0.7, 0.3]] * 20
    # one log-odds for every row: the intercept alone reproduces Platt's mean target
    # (mean target (10 * 11/12 + 10 * 1/12) / 20 = 0.5 = the accuracy, so nothing is left to measure)
    assert ece_platt(truth, constant) == pytest.approx(0, abs=1e-12)


def test_calibration_metrics_are_registered_outside_the_standard():
    from StaICC.metrics import BENCHMARK_METRICS
    assert set(CALIBRATION_METRICS) <= set(METRICS)
    for name in CALIBRATION_METRICS:
        assert METRICS[name].higher_is_better is (name in ("selective_accuracy", "coverage_accuracy_area"))
        assert all(name not in names for names in BENCHMARK_METRICS.values())


def test_perfect_predictions():
    truth = [0, 1, 2, 0, 1, 2]
    rows = [[1.0 if c == g else 0.0 for c in range(3)] for g in truth]
    assert brier_score(truth, rows) == 0
    assert ece_equal_mass_10(truth, rows) == ece_equal_mass_1(truth, rows) == classwise_ece(truth, rows) == 0
    assert selective_accuracy(truth, rows) == coverage_accuracy_area(truth, rows) == 1
