"""The widening for answers a lite subset has not seen, against independent computations on small cases."""
import itertools
import math

import pytest

from StaICC.stats.lite_unseen import IntervalRules, _slope_shift, metric_range, pass_shift, unseen_limit

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("population, sample", [(100, 12), (512, 64), (13, 13), (40, 1), (7, 3)])
def test_unseen_limit_is_the_hypergeometric_upper_limit(population, sample):
    found = unseen_limit(population, sample, 0.95)
    chance = [stats.hypergeom(population, d, sample).pmf(0) for d in range(population + 1)]
    assert chance[found] > 0.05 or found == 0
    assert found == population - sample or chance[found + 1] <= 0.05 + 1e-12


def test_unseen_limit_is_near_the_rule_of_three():
    assert abs(unseen_limit(10_000, 100, 0.95) - 3 * 10_000 / 100) < 10


def _macro_f1(matrix):
    """Macro-F1 of a confusion matrix by the textbook formula (precision, recall, harmonic mean)."""
    m = np.asarray(matrix, dtype=float)
    scores = []
    for j in range(len(m)):
        tp, predicted, true = m[j, j], m[:, j].sum(), m[j].sum()
        p = tp / predicted if predicted else 0.0
        r = tp / true if true else 0.0
        scores.append(2 * p * r / (p + r) if p + r else 0.0)
    return sum(scores) / len(scores)


def _moves(row, seen, limit):
    """Every integer row reachable by moving up to ``limit`` items from its seen cells into its unseen ones."""
    unseen = [j for j, s in enumerate(seen) if not s]
    out = {tuple(row)}
    frontier = {tuple(row)}
    for _ in range(limit):
        step = set()
        for r in frontier:
            for i, j in itertools.product([k for k, s in enumerate(seen) if s and r[k] > 0], unseen):
                moved = list(r)
                moved[i] -= 1
                moved[j] += 1
                step.add(tuple(moved))
        out |= step
        frontier = step
    return out


CASES = [
    # a model that answers label 0 almost always: the subset saw no other answer in rows 0 and 2
    ([[40, 0, 0], [30, 5, 0], [25, 0, 0]], [[True, False, False], [True, True, False], [True, False, False]], [3, 2, 4]),
    ([[8, 2], [3, 7]], [[True, True], [True, False]], [0, 3]),
    ([[6, 0, 1], [0, 5, 0], [2, 0, 4]], [[True, False, True], [False, True, False], [True, False, True]], [2, 2, 2]),
]


@pytest.mark.parametrize("matrix, seen, limit", CASES)
def test_the_range_holds_every_matrix_the_unseen_answers_allow(matrix, seen, limit):
    rows = [_moves(row, s, u) for row, s, u in zip(matrix, seen, limit)]
    values = [_macro_f1(list(m)) for m in itertools.product(*rows)]
    least, at, largest = metric_range("macro_F1", [list(map(float, r)) for r in matrix], seen, [float(u) for u in limit])
    assert math.isclose(at, _macro_f1(matrix))
    assert least <= min(values) + 1e-12 and max(values) <= largest + 1e-12
    accuracies = [np.trace(np.asarray(m)) / np.sum(m) for m in itertools.product(*rows)]
    low, _, high = metric_range("accuracy", [list(map(float, r)) for r in matrix], seen, [float(u) for u in limit])
    assert math.isclose(low, min(accuracies)) and math.isclose(high, max(accuracies))  # accuracy: the exact range


def test_nothing_unseen_means_no_widening():
    labels, answers = [0, 0, 1, 1], [[0], [1], [1], [0]]
    assert pass_shift("macro_F1", labels, answers, [1.0] * 4, 2, {0: 40, 1: 40}, 0.95) == (0.0, 0.0)


def test_a_subset_that_saw_one_answer_is_widened_both_ways():
    labels, answers = [0] * 6 + [1] * 6, [[0]] * 12  # every answer 0: the rare class's F1 is unseen
    down, up = pass_shift("macro_F1", labels, answers, [1.0] * 12, 2, {0: 50, 1: 50}, 0.95)
    assert up > 0.1 and down >= 0.0
    rule = IntervalRules(None, lambda name: (down, up))
    assert rule.widened("macro_F1", 0.33, 0.34) == (max(0.33 - down, 0.0), min(0.34 + up, 1.0))


def test_a_slope_moves_each_pass_by_its_coefficients_sign():
    x = [0.0, 0.5, 1.0]
    per_pass = [(0.1, 0.2), (0.0, 0.0), (0.3, 0.4)]
    down, up = _slope_shift(x, per_pass)
    # independent: the extreme slopes over the passes' corners
    corners = [np.polyfit(x, [d * s for d, s in zip(signs, [1, 1, 1])], 1)[0]
               for signs in itertools.product(*[(-a, b) for a, b in per_pass])]
    assert math.isclose(up, max(corners)) and math.isclose(down, -min(corners))


def _one_label_records(rare):
    """A model that answers label 0 on every item but the positions in ``rare`` (there: label 1)."""
    labels = [0] * 20 + [1] * 16 + [2] * 12
    records = []
    for t, label in enumerate(labels):
        row = [0.2, 0.9, 0.1] if t in rare else [0.9, 0.2, 0.1]
        records.append({"pass": 0, "repeat": 0, "test_index": t, "label": label, "prediction": row,
                        "prompt_sha256": f"{t}", "query_index": t})
    return records


def test_a_subset_without_the_rare_answers_still_holds_the_full_runs_macro_f1():
    from StaICC.stats import ItemTable, Statistic
    from StaICC.stats.lite import Population, estimate_statistic
    full = Statistic("Normal", ItemTable("Normal", "toy", _one_label_records({20, 21, 22})), ["macro_F1"])
    truth = full.point()["macro_F1"]
    chosen = list(range(0, 5)) + list(range(28, 32)) + list(range(36, 39))  # none of the rare answers
    subset = Statistic("Normal", ItemTable("Normal", "toy", [r for r in _one_label_records({20, 21, 22})
                                                             if r["test_index"] in chosen]), ["macro_F1"])
    value, low, high, scaled = estimate_statistic(subset, Population(((0, 20), (1, 16), (2, 12))), resamples=200,
                                                  seed=3, level=0.95)["macro_F1"]
    assert max(scaled) - min(scaled) < 1e-12  # the bootstrap alone: an interval of width zero
    assert low <= truth <= high and value < truth
    # the widening is the hypergeometric limit of rows 1 and 2 (4 and 3 of 16 and 12 items asked), moved
    # into the rare class: F1 of class 1 at most 2 U_1 / (U_1 + 16)
    u1 = unseen_limit(16, 4, 0.95)
    assert high >= value + (2 * u1 / (u1 + 16)) / 3 - 1e-12
