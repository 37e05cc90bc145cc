"""The original package's ``StaICC.util.functional``: its helper functions, with the same results.

Thin names over the operations of :mod:`StaICC.numeric` and the original's
small list utilities, kept so that code written for the original keeps working; the
benchmark itself does not call them.  The original module also held the metrics, so
every public name of :mod:`StaICC.metrics` is importable from here too.
"""
import math
from typing import Any, List, Sequence

from ..metrics import *  # noqa: F401,F403  (the original module held the metrics as well)
from ..metrics.bias import bias_distribution, bias_entropy, post_bias_distribution, post_bias_dl_div
from .. import numeric as _numeric
from ..numeric import (Matrix, Vector, column_means, is_probability_matrix, is_probability_vector,
                               sequential_sum)

#: an argument not given (None may be a value a caller passes on purpose)
_UNSET = object()


def _either(function: str, given: Any, original: Any, name: str, original_name: str) -> Any:
    """The argument given under the new name or under the original's keyword name, not both."""
    if given is _UNSET and original is _UNSET:
        raise TypeError(f"{function}() missing its argument {name!r} (the original called it {original_name!r})")
    if given is not _UNSET and original is not _UNSET:
        raise TypeError(f"{function}() got both {name!r} and {original_name!r} (the original's name for it); give one")
    return given if given is not _UNSET else original


# the original's keyword names (argmax(x=...), exp_to_list(list=...)) are accepted beside the new ones
def argmax(vector: Any = _UNSET, x: Any = _UNSET) -> int:
    """The first index of the largest value (:func:`StaICC.numeric.argmax`)."""
    return _numeric.argmax(_either("argmax", vector, x, "vector", "x"))


def argmin(vector: Any = _UNSET, x: Any = _UNSET) -> int:
    """The first index of the smallest value (:func:`StaICC.numeric.argmin`)."""
    return _numeric.argmin(_either("argmin", vector, x, "vector", "x"))


def softmax(vector: Any = _UNSET, x: Any = _UNSET) -> List[float]:
    """:func:`StaICC.numeric.softmax`."""
    return _numeric.softmax(_either("softmax", vector, x, "vector", "x"))


def entropy(vector: Any = _UNSET, x: Any = _UNSET) -> float:
    """:func:`StaICC.numeric.entropy`."""
    return _numeric.entropy(_either("entropy", vector, x, "vector", "x"))


def probability_vector_check(x: Vector) -> bool:
    """The original's name of :func:`is_probability_vector`."""
    return is_probability_vector(x)


def probability_matrix_check(x: Matrix) -> bool:
    """The original's name of :func:`is_probability_matrix`."""
    return is_probability_matrix(x)


def exp_to_list(values: Any = _UNSET, list: Any = _UNSET) -> List[float]:  # noqa: A002 - the original's name
    """[exp(v) for v in values]: no max subtraction, so exp of a value above ~709.78 overflows."""
    return [math.exp(v) for v in _either("exp_to_list", values, list, "values", "list")]


def two_dimensional_list_mean(x: Matrix) -> List[float]:
    """Column means of a list of rows: :func:`column_means` for rectangular input.

    The width is the first row's; a shorter later row contributes 0 to the columns it
    lacks and a longer one raises IndexError, as the original did.
    """
    if all(len(row) == len(x[0]) for row in x):
        return column_means(x)
    totals = [0] * len(x[0])
    for row in x:
        for c, v in enumerate(row):
            totals[c] += v
    return [t / len(x) for t in totals]


def _check_same_length(x: Vector, y: Vector) -> None:
    if len(x) != len(y):
        raise ValueError(f"The length of x and y should be the same: {len(x)} and {len(y)}")


def L2_dist(x: Vector, y: Vector) -> float:
    """Euclidean distance, (left-to-right sum of (x_i - y_i)**2) ** 0.5."""
    _check_same_length(x, y)
    return sequential_sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5


def kl_divergence(x: Vector, y: Vector) -> float:
    """KL(x || y) = left-to-right sum of x_i * log(x_i / y_i).

    Strict, like the original: a zero ``y_i`` raises ZeroDivisionError and a zero or
    negative ratio raises ValueError (math domain error).  The post-bias metric
    :func:`post_bias_dl_div` applies the KL conventions instead.
    """
    _check_same_length(x, y)
    return sequential_sum(a * math.log(a / b) for a, b in zip(x, y))


def linspace(start: float, end: float, num: int) -> List[float]:
    """``num`` evenly spaced values from ``start`` to ``end`` inclusive: start + (end - start) * i / (num - 1)."""
    if num <= 1:
        raise ValueError(f"num should be greater than 1, got {num}")
    return [start + (end - start) * i / (num - 1) for i in range(num)]


def unique_check(values: Any = _UNSET, list: Any = _UNSET) -> bool:  # noqa: A002 - the original's name
    """True when no value occurs twice (values must be hashable)."""
    values = _either("unique_check", values, list, "values", "list")
    return len(set(values)) == len(values)


def compress_logits_prediction_to_onehot(prediction: Matrix) -> List[int]:
    """The predicted label of each row: its first argmax."""
    if len(prediction) == 0:
        raise IndexError("compress_logits_prediction_to_onehot needs at least one row")
    return [argmax(row) for row in prediction]


def extend_onehot_prediction_to_logits(prediction: Sequence[int]) -> List[List[int]]:
    """One-hot rows of width max(prediction) + 1, the original's expansion of int predictions.

    The benchmark itself expands ints to the label count's width instead, because a
    narrower row crashes the metrics when some label is never predicted.
    """
    if len(prediction) == 0:
        raise IndexError("extend_onehot_prediction_to_logits needs at least one prediction")
    width = max(prediction) + 1
    return [[1 if c == p else 0 for c in range(width)] for p in prediction]


# the original's names of the bias metrics (the defaults of its bias benchmarks)
bias_mean_metric = bias_distribution
bias_mean_entropy_metric = bias_entropy
post_bias_dis_metric = post_bias_distribution
post_bias_dl_metric = post_bias_dl_div
