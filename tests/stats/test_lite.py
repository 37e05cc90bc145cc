"""Lite-run estimates: the weighted estimator and its interval against an independent computation."""
import math
import random

import pytest

from run_fixtures import fixture_runs
from StaICC.report.runs import load_run
from StaICC.sampling.subsets import pick_test_items
from StaICC.stats import ItemTable, Statistic, draw_resamples
from StaICC.stats.lite import (ESTIMABLE, Population, design, estimate_statistic, lite_estimates, t_over_z)

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")

LABELS = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2]  # the subset: 5, 4 and 3 items of labels 0, 1, 2
POPULATION = Population(((0, 20), (1, 16), (2, 12)))  # the full test set: 48 items
R, W = 2, 3


def _records():
    rng = random.Random(7)
    records = []
    for k in range(R):
        for t, label in enumerate(LABELS):
            row = [rng.uniform(-2, 2) for _ in range(W)]  # scores: the standard softmaxes them
            records.append({"pass": 0, "repeat": k, "test_index": t, "label": label, "prediction": row,
                            "prompt_sha256": f"{k}-{t}", "query_index": k * len(LABELS) + t})
    return records


def _metrics(rows, weights):
    """accuracy, likelihood, macro-F1 and ECE of softmaxed rows (R x T x W) with item weights, in NumPy."""
    p = np.exp(rows - rows.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    labels = np.asarray(LABELS)
    predicted, confidence = p.argmax(axis=2), p.max(axis=2)
    correct = predicted == labels
    w = np.broadcast_to(weights, predicted.shape)
    total = w.sum()
    accuracy = (w * correct).sum() / total
    likelihood = (w * p[:, np.arange(len(LABELS)), labels]).sum() / total
    f1 = []
    for c in range(W):
        tp = (w * (correct & (predicted == c))).sum()
        precision = tp / (w * (predicted == c)).sum() if (w * (predicted == c)).sum() > 0 else 0.0
        recall = tp / (w * (labels == c)).sum()
        f1.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    bins = np.floor(confidence * 10).astype(int)
    ece = sum((w * (bins == j)).sum() / total * abs((w * correct * (bins == j)).sum() / (w * (bins == j)).sum()
                                                     - (w * confidence * (bins == j)).sum() / (w * (bins == j)).sum())
              for j in range(10) if (w * (bins == j)).sum() > 0)
    return {"accuracy": accuracy, "averaged_truelabel_likelihood": likelihood, "macro_F1": float(np.mean(f1)),
            "expected_calibration_error_1": ece}


def _gaps(rows, weights):
    """The ECE's signed bin gaps sum_(rows in bin) w (correct - confidence) / sum w (their |.| sum: the ECE)."""
    p = np.exp(rows - rows.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    predicted, confidence = p.argmax(axis=2), p.max(axis=2)
    signed = (predicted == np.asarray(LABELS)) - confidence
    w = np.broadcast_to(weights, predicted.shape)
    bins = np.floor(confidence * 10).astype(int)
    return np.array([(w * signed * (bins == j)).sum() / w.sum() for j in range(10)])


def test_weighted_estimate_and_interval_match_an_independent_computation():
    table = ItemTable("Normal", "toy", _records())
    statistic = Statistic("Normal", table, ["accuracy", "averaged_truelabel_likelihood", "macro_F1",
                                            "expected_calibration_error_1"])
    rows = np.asarray(table.rows[0])
    counts = {0: 20, 1: 16, 2: 12}
    sizes = {c: LABELS.count(c) for c in counts}
    weights = np.asarray([counts[c] / sizes[c] for c in LABELS])
    weights *= len(LABELS) / weights.sum()
    expected = _metrics(rows, weights)
    got = estimate_statistic(statistic, POPULATION, resamples=300, seed=4, level=0.95)
    # the interval: Rao and Wu's rescaling bootstrap within labels (n_s - 1 draws with the package's draws,
    # weights rescaled by sqrt(1 - n_s / N_s)), deviations widened by Student's t over the normal quantile
    groups = [[i for i, c in enumerate(LABELS) if c == label] for label in (0, 1, 2)]
    draws = [draw_resamples(len(g), 300, 4, "lite", "Normal", "toy", f"group {n}") for n, g in enumerate(groups)]
    n = len(LABELS)
    widen = scipy_stats.t.ppf(0.975, n - len(groups)) / scipy_stats.norm.ppf(0.975)
    resampled = {name: [] for name in expected}
    gaps = []
    for b in range(300):
        w = weights.copy()
        for g, group in enumerate(groups):
            size, lam = len(group), math.sqrt(1 - len(group) / counts[LABELS[group[0]]])
            drawn = np.bincount(np.asarray(draws[g][b][:size - 1]), minlength=size)
            for position, item in enumerate(group):
                w[item] = weights[item] * (1 - lam + lam * size / (size - 1) * drawn[position])
        assert w.sum() == pytest.approx(n)
        for name, value in _metrics(rows, w).items():
            resampled[name].append(expected[name] + widen * (value - expected[name]))
        gaps.append(_gaps(rows, w))
    for name, values in resampled.items():  # the means: the weighted plug-in and the percentile interval
        if name == "expected_calibration_error_1":
            continue
        assert got[name][0] == pytest.approx(expected[name], abs=1e-12), name
        if name == "accuracy":  # labels of 5, 4 and 3 items: the exact interval (tests/stats/test_lite_exact.py)
            continue
        low, high = np.percentile(values, [2.5, 97.5])
        assert got[name][1] == pytest.approx(low, abs=1e-5) and got[name][2] == pytest.approx(high, abs=1e-5), name
    # the ECE from its signed bin gaps g: the plug-in sum |g| minus the bootstrap's bias, and the interval
    # ECE - q97.5(D + A), ECE - q2.5(D - A) (D: the far bins' signed deviations, A: the near bins' absolute ones)
    point, gaps = _gaps(rows, weights), np.asarray(gaps)
    assert np.abs(point).sum() == pytest.approx(expected["expected_calibration_error_1"], abs=1e-12)
    debiased = 2 * np.abs(point).sum() - np.abs(gaps).sum(axis=1).mean()
    assert debiased < expected["expected_calibration_error_1"]  # the plug-in ECE of a small sample is too large
    deviations = widen * (gaps - point)
    far = np.abs(point) > 2.5 * gaps.std(axis=0)
    linear, near = deviations[:, far] @ np.sign(point[far]), np.abs(deviations[:, ~far]).sum(axis=1)
    low = np.abs(point).sum() - np.percentile(linear + near, 97.5)
    high = np.abs(point).sum() - np.percentile(linear - near, 2.5)
    ece = got["expected_calibration_error_1"]
    assert ece[0] == pytest.approx(debiased, abs=1e-12)
    assert ece[1] == pytest.approx(max(min(low, debiased), 0), abs=1e-5) and ece[2] == pytest.approx(high, abs=1e-5)


def test_t_widening_follows_students_t():
    for freedom in (3, 5, 9, 30, 200):
        exact = scipy_stats.t.ppf(0.975, freedom) / scipy_stats.norm.ppf(0.975)
        assert t_over_z(0.95, freedom) == pytest.approx(exact, rel=3e-3)


def test_design_weights_stand_for_the_full_test_set():
    table = ItemTable("Normal", "toy", _records())
    plan = design(table, POPULATION)
    assert math.fsum(plan.weights) == pytest.approx(len(LABELS))
    assert plan.weights[0] / plan.weights[-1] == pytest.approx((20 / 5) / (12 / 3))
    missing = design(table, Population(((0, 20), (1, 16), (2, 12), (3, 4))))  # label 3 not in the subset
    assert missing.weights == pytest.approx(plan.weights)  # its share goes to the others
    with pytest.raises(ValueError, match="label 2 of the subset is not among"):
        design(table, Population(((0, 20), (1, 16))))


def test_the_whole_population_is_estimated_exactly():
    table = ItemTable("Normal", "toy", _records())
    statistic = Statistic("Normal", table, ["accuracy", "macro_F1"])
    got = estimate_statistic(statistic, Population.from_labels(LABELS), resamples=50, seed=1, level=0.95)
    point = statistic.point()
    for name in ("accuracy", "macro_F1"):
        assert got[name][0] == pytest.approx(point[name], abs=1e-12)
        assert got[name][1] == pytest.approx(point[name], abs=1e-12) == got[name][2]


@pytest.fixture(scope="module")
def lexical():
    return load_run(fixture_runs()["lexical"])


def test_restricted_table_is_the_table_of_the_restricted_records(lexical):
    records = lexical.parts["GLER"].records["TREC"]
    full = ItemTable("GLER", "TREC", records)
    chosen = pick_test_items(full.labels, ("GLER", "TREC"), fraction=0.125)
    kept = {full.items[i] for i in chosen}
    direct = ItemTable("GLER", "TREC", [r for r in records if r["test_index"] in kept])
    restricted = full.restricted(chosen)
    for name in ("items", "labels", "rows", "normalized", "summaries", "passes", "repeats"):
        assert getattr(restricted, name) == getattr(direct, name), name


def test_lite_estimates_of_a_subset_run(lexical):
    fraction = 0.25
    records, populations = [], {}
    for name, part in lexical.parts.items():
        for dataset, recs in part.records.items():
            table = ItemTable(name, dataset, recs)
            populations[(name, dataset)] = table.labels
            kept = {table.items[i] for i in pick_test_items(table.labels, (name, dataset), fraction=fraction)}
            records += [r for r in recs if r["test_index"] in kept]
    result = lite_estimates(records, fraction, populations, resamples=100)
    document = result.to_dict()
    assert document["standard"] is False and document["fraction"] == fraction
    for (benchmark, metric, row), start in ESTIMABLE.items():
        if benchmark in result.estimates and fraction >= start:
            estimate = result.estimates[benchmark]["Averaged" if row == "averaged" else "TREC"][metric]
            values = zip(*(x if isinstance(x, list) else [x] for x in (estimate.low, estimate.value, estimate.high)))
            assert estimate.estimable and all(low <= value <= high for low, value, high in values), (benchmark, metric)
    # below the least fraction the study admits anything at, a metric is reported as not estimable, with a note
    ece = lite_estimates(records, 0.0625, populations, resamples=10).estimates["Normal"]["TREC"]["expected_calibration_error_1"]
    assert not ece.estimable and ece.value is None and "not estimable at this fraction (0.0625)" in ece.note
    with pytest.raises(ValueError, match="no population"):
        lite_estimates(records, fraction, {}, resamples=10)
