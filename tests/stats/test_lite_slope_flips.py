"""The widening of a GLER slope for a change over the passes that the subset has not seen, against
independent computations (the hypergeometric limit by math.comb, the slopes by NumPy's polyfit)."""
import itertools
import math

import pytest

from StaICC.stats.lite_unseen import flip_shift

np = pytest.importorskip("numpy")

X = [1.0, -1.0]  # two passes: coefficients +1/2 and -1/2
LABELS = [0, 0, 1, 1]
FULL = {0: 40, 1: 40}


def _limit(population, sample):
    """The largest D with C(N - D, n) / C(N, n) > 0.05, by math.comb."""
    return max(d for d in range(population - sample + 1)
               if math.comb(population - d, sample) / math.comb(population, sample) > 0.05)


def _macro_f1(matrix):
    m = np.asarray(matrix, dtype=float)
    scores = [2 * m[j, j] / (m[:, j].sum() + m[j].sum()) if m[j, j] else 0.0 for j in range(len(m))]
    return sum(scores) / len(scores)


def test_a_subset_right_in_every_pass_is_widened_by_the_items_that_may_change():
    # every asked item right in both passes: no item with a slope contribution of either sign was seen
    answers = [[[0], [0], [1], [1]]] * 2
    u = _limit(40, 2)
    down, up = flip_shift("accuracy", X, LABELS, answers, [1.0] * 4, 2, FULL, 0.95)
    # by hand: u items of each label wrong in pass 0 (c = +1/2) only lower the slope by 2u / 80 / 2; wrong in
    # pass 1 (c = -1/2) only, raise it as much; the full runs that reach those ends, by polyfit
    lowest = np.polyfit(X, [(80 - 2 * u) / 80, 1.0], 1)[0]
    highest = np.polyfit(X, [1.0, (80 - 2 * u) / 80], 1)[0]
    assert math.isclose(down, -lowest) and math.isclose(up, highest)
    assert math.isclose(down, u / 80)


def test_a_subset_that_saw_both_signs_is_not_widened():
    both = [[[0], [1], [0], [1]], [[1], [0], [1], [0]]]  # per label: one item right only in pass 0, one only in pass 1
    assert flip_shift("accuracy", X, LABELS, both, [1.0] * 4, 2, FULL, 0.95) == (0.0, 0.0)
    assert flip_shift("macro_F1", X, LABELS, both, [1.0] * 4, 2, FULL, 0.95) == (0.0, 0.0)


def _grid(limit):
    return sorted({0, limit, *range(0, limit + 1, max(1, limit // 4))})


def test_the_macro_f1_slope_bound_holds_every_full_run_the_unseen_change_allows():
    # the subset's pass matrices scaled to the full run's 80 items: label 0 right 30 of 40, label 1 right 20 of 40
    labels = [0] * 4 + [1] * 4
    answers = [[[a] for a in [0, 0, 0, 1, 1, 1, 0, 0]]] * 2
    u = _limit(40, 4)
    down, up = flip_shift("macro_F1", X, labels, answers, [1.0] * 8, 2, FULL, 0.95)
    right, rows = [30, 20], [40, 40]
    slopes = []
    for left, entered in itertools.product(itertools.product(_grid(u), repeat=2), repeat=2):
        # in one pass up to u items of each label leave the diagonal, in the other up to u enter it
        out = [min(k, r) for k, r in zip(left, right)]
        into = [min(k, n - r) for k, r, n in zip(entered, right, rows)]
        fewer = [[right[0] - out[0], rows[0] - right[0] + out[0]], [rows[1] - right[1] + out[1], right[1] - out[1]]]
        more = [[right[0] + into[0], rows[0] - right[0] - into[0]], [rows[1] - right[1] - into[1], right[1] + into[1]]]
        for passes in ([fewer, more], [more, fewer]):
            slopes.append(np.polyfit(X, [_macro_f1(m) for m in passes], 1)[0])
    assert -down <= min(slopes) + 1e-12 and max(slopes) <= up + 1e-12
    assert down > 0 and up > 0


def test_the_accuracy_slope_moves_each_unseen_item_once_to_its_end():
    # each label: one item right in both passes, one wrong in both; every d is 0
    answers = [[[0], [1], [1], [0]]] * 2
    u = _limit(40, 2)
    down, up = flip_shift("accuracy", X, LABELS, answers, [1.0] * 4, 2, FULL, 0.95)
    # the full run at the least: u items of each label reach d = -1/2 (a right one wrong in pass 0, or a wrong one
    # right in pass 1): per-pass accuracies from the 40 right of 80, by NumPy
    lowest = np.polyfit(X, [(40 - u) / 80, (40 + u) / 80], 1)[0]
    assert math.isclose(down, -lowest) and math.isclose(up, -lowest)


def _right(t, p):
    """Whether the toy model is right on item t in pass p: wrong on every fifth item in every pass, and on items
    0-2 in passes 0 and 1 (the largest abscissae: they lower the accuracy slope)."""
    return not (t % 5 == 4 or (t < 3 and p < 2))


def _gler_records(items):
    records = []
    for p in range(5):
        for t in items:
            label = t % 2
            row = [0.8, 0.2] if (label == 0) == _right(t, p) else [0.2, 0.8]
            records.append({"pass": p, "repeat": 0, "test_index": t, "label": label, "prediction": row,
                            "prompt_sha256": f"{p} {t}", "query_index": t})
    return records


def test_a_subset_without_the_items_that_change_still_holds_the_full_runs_gler_slope():
    from StaICC.stats import ItemTable, Statistic
    from StaICC.stats.lite import Population, estimate_statistic
    full = Statistic("GLER", ItemTable("GLER", "toy", _gler_records(range(40))), ["accuracy", "macro_F1"])
    truth = full.point()
    # independent: NumPy's slope of the per-pass accuracies over the table's abscissae
    accuracy = np.asarray([[_right(t, p) for t in range(40)] for p in range(5)], dtype=float).mean(axis=1)
    assert math.isclose(truth["accuracy"], np.polyfit(full.x_values, accuracy, 1)[0])
    # items 10-21: each label answers both labels in every pass (items 14, 19 always wrong), none changes
    subset = Statistic("GLER", ItemTable("GLER", "toy", _gler_records(range(10, 22))), ["accuracy", "macro_F1"])
    found = estimate_statistic(subset, Population(((0, 20), (1, 20))), resamples=200, seed=3, level=0.95)
    for metric in ("accuracy", "macro_F1"):
        value, low, high, scaled = found[metric]
        assert max(scaled) - min(scaled) < 1e-12 and abs(value) < 1e-12  # the bootstrap alone: slope 0, width 0
        assert truth[metric] < 0 and low <= truth[metric] <= high
