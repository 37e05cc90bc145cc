"""Property tests: whatever a model returns, the run ends in a clear error or in finite numbers.

The model of each example returns one arbitrary Python value (nested lists, tuples, dicts,
floats from tiny to huge, NaN, inf, huge ints, bools, strings, bytes, NumPy arrays) for one
query and a valid row for the others.  The benchmark must either refuse it with a
ValueError/TypeError that names the dataset and the query, or return finite metrics: never
another exception type, never a NaN or an infinity in the results.
"""
import math
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from StaICC import Contextual_bias, Normal, Post_bias  # noqa: E402

np = pytest.importorskip("numpy")

DATASET = "rotten_tomatoes"
LABELS = 2

EXTREME_FLOATS = st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e308, -1e308,
                                  1.7976931348623157e308, -1.7976931348623157e308, math.nan, math.inf, -math.inf,
                                  0.5, 1.0, -1.0, 709.8, -745.2])
NUMBERS = (st.floats(allow_nan=True, allow_infinity=True) | EXTREME_FLOATS | st.integers(-5, 5)
           | st.integers(min_value=-10 ** 400, max_value=10 ** 400) | st.booleans() | st.fractions(max_denominator=7))
SCALARS = NUMBERS | st.none() | st.text(max_size=4) | st.binary(max_size=3)
NESTED = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=2), inner, max_size=2), max_leaves=6)
ROWS = st.lists(NUMBERS, min_size=LABELS, max_size=LABELS) | st.tuples(NUMBERS, NUMBERS)
FLOAT_ROWS = st.lists(st.floats(allow_nan=False, allow_infinity=False) | EXTREME_FLOATS.filter(math.isfinite),
                      min_size=LABELS, max_size=LABELS)
ARRAYS = st.builds(lambda row, dtype: np.array(row, dtype=dtype),
                   st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=3),
                   st.sampled_from(["float64", "float32"])) | st.builds(np.int64, st.integers(-3, 3))
OUTPUTS = NESTED | ROWS | ARRAYS

_benchmarks = {}


def benchmark(cls):
    """One benchmark per class for the whole module: building it is the slow part, running it is not."""
    if cls not in _benchmarks:
        _benchmarks[cls] = cls(datasets=[DATASET])
    return _benchmarks[cls]


def model_returning(value, at_query):
    calls = []

    def model(prompt, label_space):
        calls.append(None)
        return value if len(calls) - 1 == at_query else [0.25, 0.75]
    return model


def all_finite(result):
    values = []
    for metrics in result["Divided results"].values():
        for v in metrics.values():
            values.extend(v if isinstance(v, list) else [v])
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def check_outcome(cls, value, at_query):
    try:
        result = benchmark(cls)(model_returning(value, at_query))
    except (ValueError, TypeError) as exc:
        message = str(exc)
        assert f"dataset '{DATASET}'" in message, message
        assert re.search(rf"query {at_query}\b", message), message
        return
    assert all_finite(result), result


COMMON = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(OUTPUTS, st.sampled_from([0, 1, 777]))
def test_normal_any_output_gives_clear_error_or_finite_metrics(value, at_query):
    check_outcome(Normal, value, at_query)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLOAT_ROWS)
def test_bias_benchmarks_finite_rows_give_finite_metrics(row):
    """Every query returns the same finite row (values up to the float maximum): all metrics finite
    (a row with a negative entry is logits, even when it sums to 1, as in the original)."""
    for cls in (Normal, Contextual_bias, Post_bias):
        result = benchmark(cls)(lambda prompt, label_space: list(row))
        assert all_finite(result), (cls.__name__, row, result)


@pytest.mark.parametrize("value, error, text", [
    ([-1e308, -1e308], None, None),
    ([10 ** 400, 0], ValueError, "too large for a float"),
    ([1e308, 1e308], None, None),
    ([math.nan, 0.5], ValueError, "non-finite"),
    ([True, False], TypeError, "non-numeric score True"),
    (np.array([0.25, 0.75], dtype=np.float32), None, None),
    (np.array([[0.25, 0.75]]), ValueError, "returned 1 scores"),
])
def test_issue_examples(value, error, text):
    model = model_returning(value, 3)
    if error is None:
        for cls in (Normal, Contextual_bias, Post_bias):
            assert all_finite(benchmark(cls)(model_returning(value, 3)))
        return
    with pytest.raises(error, match=text) as caught:
        benchmark(Normal)(model)
    assert f"dataset '{DATASET}', query 3" in str(caught.value)


@pytest.mark.parametrize("cls", [Normal, Contextual_bias, Post_bias])
def test_int_predictions_equal_one_hot_rows(cls):
    def as_int(prompt, label_space):
        return len(prompt) % LABELS

    def as_one_hot(prompt, label_space):
        return [1 if c == len(prompt) % LABELS else 0 for c in range(LABELS)]
    assert benchmark(cls)(as_int)["Divided results"] == benchmark(cls)(as_one_hot)["Divided results"]
