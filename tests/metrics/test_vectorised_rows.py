"""The rows computed at once with NumPy (softmax, the exact-sum check, batch calibration) are the per-row loop's bits.

Each case runs the same rows through both paths (NumPy loaded, and ``loaded_numpy`` made to say it
is not) and compares every value's bits (the sign of a zero too) and every argmax label.
"""
import math
import random

import pytest

np = pytest.importorskip("numpy")

import StaICC.methods.calibration.base as calibration_base  # noqa: E402
import StaICC.numeric as numeric  # noqa: E402
from StaICC.numeric import CHECK, SOFTMAX, PredictionRows, normalized_labels, softmax_unless_probabilities  # noqa: E402

SPECIAL = [0.0, -0.0, 1.0, 0.5, 1e-300, 5e-324, -1e308, 1e308, 0.1, 0.2, 0.7]


def _bits(rows):
    return [[(v == v, v if v == v else 0.0, math.copysign(1.0, v)) for v in row] for row in rows]


def _cases(seed: int, count: int):
    rng = random.Random(seed)
    for number in range(count):
        n, k = rng.randint(numeric.VECTOR_ROWS, 90), rng.randint(1, 10)
        kind = number % 5
        if kind == 0:  # probabilities from a float softmax: some rows sum to exactly 1, some do not
            rows = [list(map(float, np.random.default_rng(number).dirichlet([0.5] * k))) for _ in range(n)]
        elif kind == 1:  # logits
            rows = [[rng.gauss(0, 20) for _ in range(k)] for _ in range(n)]
        elif kind == 2:  # zeros of both signs, extremes, subnormals: overflowing differences included
            rows = [[rng.choice(SPECIAL) for _ in range(k)] for _ in range(n)]
        elif kind == 3:  # one-hot float rows: every row passes the check
            rows = [[1.0 if c == rng.randrange(k) else 0.0 for c in range(k)] for _ in range(n)]
        else:  # ties everywhere: the first maximum is the label
            rows = [[rng.choice([0.25, 0.5]) for _ in range(k)] for _ in range(n)]
        yield rows


def _without_numpy(monkeypatch, function, *args):
    with monkeypatch.context() as patched:
        patched.setattr(numeric, "loaded_numpy", lambda: None)
        patched.setattr(calibration_base, "loaded_numpy", lambda: None)
        return function(*args)


@pytest.mark.parametrize("rule", [CHECK, SOFTMAX])
def test_the_rule_and_labels_at_once_are_the_loops_bits(monkeypatch, rule):
    assert numeric.loaded_numpy() is np
    for rows in _cases(7, 300):
        fast, slow = PredictionRows(rows, rule), PredictionRows(rows, rule)
        fast_rows, fast_labels = softmax_unless_probabilities(fast), normalized_labels(fast)
        slow_rows = _without_numpy(monkeypatch, softmax_unless_probabilities, slow)
        slow_labels = _without_numpy(monkeypatch, normalized_labels, slow)
        assert (fast_rows is fast) == (slow_rows is slow)  # the same branch of the exact-sum rule
        assert _bits(fast_rows) == _bits(slow_rows)
        assert fast_labels == slow_labels == [row.index(max(row)) for row in slow_rows]


def test_the_softmax_at_once_meets_the_per_row_softmax_on_plain_lists(monkeypatch):
    for rows in _cases(8, 100):
        assert _bits(softmax_unless_probabilities(rows)) == _bits(
            _without_numpy(monkeypatch, softmax_unless_probabilities, rows))


@pytest.mark.parametrize("batch_size", [1, 3, 16, 128])
def test_batch_calibration_at_once_is_the_loops_bits(monkeypatch, batch_size):
    for rows in _cases(9, 120):
        fast = calibration_base.batch_calibration(rows, batch_size)
        slow = _without_numpy(monkeypatch, calibration_base.batch_calibration, rows, batch_size)
        assert _bits(fast) == _bits(slow)


def test_rows_the_array_cannot_hold_keep_the_loop():
    assert numeric.float_array(np, [[1, 0]] * 20) is None  # ints: Python's int arithmetic
    assert numeric.float_array(np, [[0.5, 0.5]] * 19 + [[1.0]]) is None  # ragged
    assert numeric.float_array(np, [[0.5, float("nan")]] * 20) is None  # not finite
    assert numeric.float_array(np, [(0.5, 0.5)] * 20) is None  # not lists
    assert numeric.float_array(np, [[0.5, 0.5]] * 20).shape == (20, 2)


def _row_cases(seed: int, count: int):
    """The rows above as arrays, plus rows with NaN and infinities (what a fit's logits cannot hold, the helpers
    still meet NumPy's reductions on)."""
    rng = random.Random(seed)
    for rows in _cases(seed, count):
        yield np.array(rows, dtype=np.float64)
    for k in range(1, 12):
        yield np.array([[rng.choice(SPECIAL + [math.inf, -math.inf, math.nan]) for _ in range(k)] for _ in range(60)])


def _bits_any_nan(rows):
    """:func:`_bits`, every NaN alike (the sign of inf − inf's NaN is the hardware's, not the arithmetic's)."""
    return [[(v == v, v if v == v else 0.0, math.copysign(1.0, v) if v == v else 0.0) for v in row] for row in rows]


def test_the_row_maximum_a_column_at_a_time_is_numpys_reduction():
    for values in _row_cases(10, 200):
        with np.errstate(invalid="ignore"):
            assert _bits(numeric.row_max(np, values)) == _bits(values.max(axis=1, keepdims=True))


def test_the_row_sum_a_column_at_a_time_is_the_sequential_sum_and_below_8_columns_numpys():
    from StaICC.methods.calibration.labelled import numpy_row_sum
    for values in _row_cases(11, 200):
        with np.errstate(invalid="ignore", over="ignore"):
            got = numeric.row_sum(values)
            assert _bits_any_nan(got) == _bits_any_nan([[numeric.sequential_sum(row)] for row in values.tolist()])
            if values.shape[1] < 8:
                assert _bits_any_nan(got) == _bits_any_nan(values.sum(axis=1, keepdims=True))
            assert _bits_any_nan(numpy_row_sum(values)) == _bits_any_nan(values.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("rule", [CHECK, SOFTMAX])
def test_ece_from_rows_computed_at_once_is_the_loops_bits(monkeypatch, rule):
    """ECE's bins, counts and per-bin sums over the float array of the rows equal the loop over the rows: every
    kind of row above (ones that pass the check, ties, confidences on the bins' bounds: 0.1, 0.2, 0.5, 0.7, 1.0)."""
    import StaICC.metrics.scores as scores
    from StaICC.metrics import expected_calibration_error_1
    rng = random.Random(12)
    at_once = 0
    for rows in _cases(12, 300):
        if len(rows) < 10:
            continue
        truth = [rng.randrange(len(rows[0])) for _ in rows]
        fast = PredictionRows(rows, rule)
        got = expected_calibration_error_1(truth, fast)
        at_once += numeric.normalized_values(fast) is not None
        with monkeypatch.context() as patched:
            patched.setattr(numeric, "loaded_numpy", lambda: None)
            patched.setattr(scores, "normalized_values", lambda _rows: None)
            slow = expected_calibration_error_1(truth, PredictionRows(rows, rule))
        assert _bits([[got]]) == _bits([[slow]])
    assert at_once > 200  # the array path was taken


def test_rows_made_from_an_array_keep_it_and_give_the_plain_rows_metrics():
    """:meth:`PredictionRows.of_array`: the rows are the array's ``tolist()``; the metrics read the kept array (not
    the rows again) and give the plain rows' bits; a non-finite array is not kept; the kept one cannot change."""
    from StaICC.engine.outcome import compute_metrics
    from StaICC.metrics.scores import (accuracy, averaged_truelabel_likelihood, expected_calibration_error_1,
                                       macro_F1)
    metrics = {"accuracy": accuracy, "likelihood": averaged_truelabel_likelihood, "macro_F1": macro_F1,
               "ece": expected_calibration_error_1}
    for number, rows in enumerate(_cases(11, 60)):
        values = np.array(rows, dtype=np.float64)
        made = PredictionRows.of_array(values)
        assert made == rows and all(type(v) is float for row in made for v in row)
        truth = [number % len(rows[0])] * len(rows)
        if np.isfinite(values).all():
            assert numeric.float_array(np, made) is values and not values.flags.writeable
            with pytest.raises(ValueError):
                values[0, 0] = 0.5
        else:
            assert made.floats is None
        assert repr(compute_metrics(metrics, truth, made, "d")) == repr(compute_metrics(metrics, truth, list(rows), "d"))
    assert PredictionRows.of_array(np.array([[0.5, math.nan]] * 20)).floats is None
