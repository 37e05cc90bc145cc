"""Work shared between the metrics of a pass gives the bits the straightforward rule gives.

The reference functions below are the metrics as first written: every metric checks the
matrix, softmaxes it when a row fails, and scans every row itself.  The package's
metrics share the checked rows, their argmax labels and column means through
PredictionRows, take known facts about one-hot rows of int answers, and bin ECE
confidences by bisection; on random vectors, logits, probabilities, ties and one-hot
rows they must return the same values of the same types, and raise the same errors.
"""
import functools
import math
import random

import pytest

from StaICC.metrics import (PredictionRows, accuracy, accuracy_from_labels, argmax, averaged_truelabel_likelihood,
                            bias_distribution, bias_entropy, consistency, ece_bin, expected_calibration_error_1,
                            macro_F1, make_consistency, post_bias_distribution, post_bias_dl_div, softmax)
from StaICC.numeric import all_read_rows_only, column_means, joined_rows, normalized_labels
from StaICC.metrics.scores import _bin_among, _ece_bounds


# ----------------------------------------------------------------------------
# the straightforward rule
# ----------------------------------------------------------------------------
def ref_sum(values):
    total = 0
    for v in values:
        total += v
    return total


def ref_argmax(vector):
    best = 0
    for i in range(1, len(vector)):
        if vector[i] > vector[best]:
            best = i
    return best


def ref_rows(matrix):
    passes = all(all(0 <= v <= 1 for v in row) and ref_sum(row) == 1 for row in matrix)
    return matrix if passes else [softmax(row) for row in matrix]


def ref_check(truth, matrix):
    if len(truth) != len(matrix):
        raise ValueError(f"The length of ground_truth and prediction should be the same: "
                         f"{len(truth)} ground-truth labels, {len(matrix)} predictions")
    if not matrix:
        raise ValueError("metrics need at least one prediction")


def ref_accuracy(truth, matrix):
    ref_check(truth, matrix)
    labels = [ref_argmax(row) for row in ref_rows(matrix)]
    return sum(1 for g, a in zip(truth, labels) if a == g) / len(labels)


def ref_likelihood(truth, matrix):
    ref_check(truth, matrix)
    rows = ref_rows(matrix)
    return ref_sum(row[g] for g, row in zip(truth, rows)) / len(rows)


def ref_macro_f1(truth, matrix):
    ref_check(truth, matrix)
    rows = ref_rows(matrix)
    width = len(rows[0])
    tp, fp, fn = [0] * width, [0] * width, [0] * width
    for g, row in zip(truth, rows):
        a = ref_argmax(row)
        if a == g:
            tp[g] += 1
        else:
            fp[a] += 1
            fn[g] += 1
    scores = []
    for c in range(width):
        precision = tp[c] / (tp[c] + fp[c]) if tp[c] + fp[c] else 0
        recall = tp[c] / (tp[c] + fn[c]) if tp[c] + fn[c] else 0
        scores.append(((2 * precision) * recall) / (precision + recall) if precision + recall else 0)
    return ref_sum(scores) / width


def ref_bin(confidence, bins):
    bounds = [j / bins for j in range(bins + 1)]
    for j in range(bins):
        if bounds[j] <= confidence < bounds[j + 1]:
            return j
    return -1


def ref_ece(truth, matrix, bins=10):
    ref_check(truth, matrix)
    if bins > len(truth):
        raise ValueError("bins should be less than the length of ground_truth.")
    rows = ref_rows(matrix)
    counts, hits, sums = [0] * bins, [0] * bins, [0] * bins
    for g, row in zip(truth, rows):
        c = max(row)
        j = ref_bin(c, bins)
        if j >= 0:
            counts[j] += 1
            hits[j] += ref_argmax(row) == g
            sums[j] += c
    ece = 0
    for j in range(bins):
        if counts[j]:
            ece += (counts[j] / len(truth)) * abs(hits[j] / counts[j] - sums[j] / counts[j])
    return ece


def ref_consistency(truth, matrix, loop_length):
    if loop_length <= 0 or len(matrix) % loop_length != 0:
        raise ValueError("The length of prediction should be the multiple of loop_length: "
                         f"{len(matrix)} predictions, loop_length {loop_length}")
    labels = [ref_argmax(row) for row in ref_rows(matrix)]
    total = 0
    for i in range(loop_length):
        group = labels[i::loop_length]
        counts = {}
        for label in group:
            counts[label] = counts.get(label, 0) + 1
        total += max(counts.values()) / len(group)
    return total / loop_length


def ref_means(matrix):
    totals = [0] * len(matrix[0])
    for row in matrix:
        for c in range(len(totals)):
            totals[c] += row[c]
    return [t / len(matrix) for t in totals]


# ----------------------------------------------------------------------------
# random inputs
# ----------------------------------------------------------------------------
def random_matrix(rng, n, width, kind):
    if kind == "one-hot":
        return [[1 if c == label else 0 for c in range(width)] for label in [rng.randrange(width) for _ in range(n)]]
    if kind == "logits":
        return [[rng.gauss(0, 3) for _ in range(width)] for _ in range(n)]
    if kind == "ties":
        return [[float(rng.randrange(3)) for _ in range(width)] for _ in range(n)]
    if kind == "probabilities":
        return [softmax([rng.gauss(0, 2) for _ in range(width)]) for _ in range(n)]
    if kind == "exact":  # sums exactly 1: the matrix passes the check
        return [[0.25] * 4 if width == 4 else [1.0] if width == 1 else [0.5, 0.5] + [0.0] * (width - 2)
                for _ in range(n)]
    raise AssertionError(kind)


def same(a, b):
    """Equal values of equal types, NaN equal to NaN, recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def outcome(f, *args):
    try:
        return ("value", f(*args))
    except Exception as exc:  # the same error, with the same message, is part of the contract
        return ("error", type(exc), str(exc))


def same_outcome(a, b):
    return a[0] == b[0] and (same(a[1], b[1]) if a[0] == "value" else a[1:] == b[1:])


KINDS = ("one-hot", "logits", "ties", "probabilities", "exact")
SCORE_METRICS = ((accuracy, ref_accuracy), (averaged_truelabel_likelihood, ref_likelihood), (macro_F1, ref_macro_f1),
                 (expected_calibration_error_1, ref_ece))


def cases(seed, count=60):
    rng = random.Random(seed)
    for _ in range(count):
        width = rng.choice((1, 2, 3, 4, 6))
        n = rng.choice((1, 3, 10, 40))
        kind = rng.choice(KINDS)
        truth = [rng.randrange(width) for _ in range(n)]
        if rng.random() < 0.1:  # errors are part of the contract: a label past the width, a length mismatch
            truth[-1] = width if rng.random() < 0.5 else truth[-1]
            truth = truth if rng.random() < 0.5 else truth[:-1]
        yield rng, width, n, random_matrix(rng, n, width, kind), truth


# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------
def test_argmax_is_the_first_maximum_on_lists_tuples_ties_nan_and_signed_zeros():
    rng = random.Random(1)
    specials = [math.nan, -0.0, 0.0, 1, 1.0, -math.inf, math.inf, 2]
    for _ in range(3000):
        row = [rng.choice(specials) if rng.random() < 0.3 else float(rng.randrange(-2, 3))
               for _ in range(rng.randrange(1, 7))]
        assert argmax(row) == ref_argmax(row), row
        assert argmax(tuple(row)) == ref_argmax(row), row
    assert argmax([]) == 0


@pytest.mark.parametrize("seed", range(4))
def test_score_metrics_equal_the_straightforward_rule(seed):
    for _rng, _width, _n, matrix, truth in cases(seed):
        for metric, reference in SCORE_METRICS:
            want = outcome(reference, truth, matrix)
            assert same_outcome(outcome(metric, truth, matrix), want), (metric.__name__, matrix)
            shared = PredictionRows(matrix)
            for _ in range(2):  # computed, then read from what the first metric left
                assert same_outcome(outcome(metric, truth, shared), want), (metric.__name__, matrix)


@pytest.mark.parametrize("seed", range(3))
def test_consistency_equals_the_straightforward_rule(seed):
    for _rng, _width, n, matrix, truth in cases(seed):
        for loop in (1, n, max(1, n // 2), 3, 0, -1):
            want = outcome(ref_consistency, truth, matrix, loop)
            assert same_outcome(outcome(consistency, truth, PredictionRows(matrix), loop), want)
            assert same_outcome(outcome(make_consistency(loop), truth, matrix), want)
        assert same_outcome(outcome(consistency, truth, matrix), outcome(ref_consistency, truth, matrix, 100))


def test_one_hot_rows_known_to_pass_give_what_checking_them_gives():
    rng = random.Random(5)
    for _ in range(200):
        width = rng.randrange(1, 6)
        ints = [rng.randrange(width) for _ in range(rng.randrange(1, 30))]
        truth = [rng.randrange(width) for _ in ints]
        rows = [[1 if c == p else 0 for c in range(width)] for p in ints]
        known = PredictionRows.passing(rows, list(ints))
        assert normalized_labels(known) == [ref_argmax(row) for row in ref_rows(rows)]
        for metric, reference in SCORE_METRICS:
            assert same_outcome(outcome(metric, truth, known), outcome(reference, truth, rows))


def test_joined_rows_keep_the_matrix_rule_of_the_whole():
    """The whole is softmaxed when any row of either part fails, even if the other part passed on its own."""
    rng = random.Random(7)
    for _ in range(300):
        width = rng.choice((2, 3, 4))
        parts = []
        for _part in range(2):
            kind = rng.choice(KINDS + ("known", "empty"))
            n = rng.randrange(1, 12)
            if kind == "empty":
                parts.append([])
            elif kind == "known":
                ints = [rng.randrange(width) for _ in range(n)]
                parts.append(PredictionRows.passing([[int(c == p) for c in range(width)] for p in ints], ints))
            else:
                matrix = random_matrix(rng, n, width, kind)
                parts.append(PredictionRows(matrix) if rng.random() < 0.5 else matrix)
            if isinstance(parts[-1], PredictionRows) and rng.random() < 0.5:
                normalized_labels(parts[-1])  # some parts were already read by a metric
        whole = list(parts[0]) + list(parts[1])
        if not whole:
            continue
        truth = [rng.randrange(width) for _ in whole]
        joined = joined_rows(parts[0], parts[1])
        assert joined == whole
        assert normalized_labels(joined) == [ref_argmax(row) for row in ref_rows(whole)]
        for metric, reference in SCORE_METRICS:
            assert same_outcome(outcome(metric, truth, joined), outcome(reference, truth, whole))


def test_ece_bins_by_bisection_equal_the_scan_of_the_bounds():
    rng = random.Random(11)
    for bins in (2, 3, 7, 10, 13):
        bounds = _ece_bounds(bins)
        values = bounds + [math.nextafter(b, -math.inf) for b in bounds] + [math.nextafter(b, math.inf) for b in bounds]
        values += [rng.random() for _ in range(500)] + [math.nan, -0.0, -1.0, 1.0, 2.0, math.inf, -math.inf, 0, 1]
        for c in values:
            assert _bin_among(c, bounds) == ref_bin(c, bins), (bins, c)
            assert ece_bin(c, bins) == ref_bin(c, bins)


def test_accuracy_from_labels_counts_truthy_matches():
    rng = random.Random(13)
    for _ in range(200):
        n = rng.randrange(1, 20)
        truth = [rng.randrange(3) for _ in range(n)]
        predicted = [rng.randrange(3) for _ in range(n)]
        want = sum(1 for g, a in zip(truth, predicted) if a == g) / len(predicted)
        assert same(accuracy_from_labels(truth, predicted), want)


@pytest.mark.parametrize("seed", range(3))
def test_bias_metrics_read_the_means_once_and_give_the_straightforward_values(seed):
    rng = random.Random(seed)
    for _ in range(80):
        width = rng.choice((2, 3, 4))
        matrix = random_matrix(rng, rng.randrange(1, 20), width, rng.choice(KINDS))
        truth = [rng.randrange(width) for _ in matrix]
        shared = PredictionRows(matrix)
        assert same(column_means(shared), ref_means(matrix))
        first, second = column_means(shared), column_means(shared)
        assert first == second and first is not second  # every call returns a new list
        first.append(99.0)
        assert same(column_means(shared), ref_means(matrix))
        for metric in (bias_distribution, bias_entropy, post_bias_distribution, post_bias_dl_div):
            assert same_outcome(outcome(metric, truth, shared), outcome(metric, truth, [list(r) for r in matrix]))


def test_only_the_marked_metrics_themselves_may_be_handed_shared_rows():
    standard = [accuracy, averaged_truelabel_likelihood, macro_F1, expected_calibration_error_1, consistency,
                make_consistency(7), bias_distribution, bias_entropy, post_bias_distribution, post_bias_dl_div]
    assert all_read_rows_only(standard)
    assert all_read_rows_only([])

    @functools.wraps(accuracy)
    def wrapped(truth, rows):  # copies accuracy's attributes, but may change rows
        return accuracy(truth, rows)

    class Unhashable:
        __hash__ = None

        def __call__(self, truth, rows):
            return 0

    for other in (wrapped, lambda truth, rows: 0, Unhashable(), len):
        assert not all_read_rows_only(standard + [other])
