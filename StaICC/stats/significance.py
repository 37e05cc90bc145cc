"""Significance tests and interval arithmetic: McNemar's exact test, Holm's correction, percentiles.

Plain functions of numbers, with no knowledge of runs or records, so that they can be
checked against textbook values (and SciPy / NumPy where installed).  Only the
standard library is used; McNemar's p-value is computed in exact integers.
"""
import math
from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..validation import Integer


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: binomial(b + c, 1/2) on the discordant pairs.

    ``b``: pairs right in the first run only; ``c``: right in the second only.
    p = min(1, 2 · Σ_{i ≤ min(b, c)} C(n, i) / 2^n), computed in exact integers.
    """
    for name, value in (("b", b), ("c", c)):
        if Integer(0).judge(value)[0] is not None:  # the message tests and callers know
            raise InvalidValueError(f"McNemar counts must be non-negative ints: {name} = {value!r}")
    b, c = int(b), int(c)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def holm(p_values: Sequence[Optional[float]]) -> List[Optional[float]]:
    """Holm's step-down adjusted p-values (None entries are left out of the family and kept None)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(indexed)
    adjusted: List[Optional[float]] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) by linear interpolation between order statistics (NumPy's default)."""
    if not sorted_values:
        raise InvalidValueError("percentile of an empty list")
    h = (len(sorted_values) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(sorted_values) - 1)
    a, b = sorted_values[low], sorted_values[high]
    if a == b or h == low:
        return a
    return a + (h - low) * (b - a)


def percentile_interval(values: Sequence[float], level: float) -> Tuple[float, float]:
    """The central ``level`` percentile interval of a bootstrap distribution (NaNs ignored)."""
    ordered = sorted(v for v in values if not math.isnan(v))
    if not ordered:
        return math.nan, math.nan
    tail = (1 - level) / 2
    return percentile(ordered, tail), percentile(ordered, 1 - tail)


def bootstrap_p_value(deltas: Sequence[float]) -> float:
    """Two-sided p-value of "no difference" from a bootstrap distribution of differences.

    p = min(1, 2 · (min(#{δ ≤ 0}, #{δ ≥ 0}) + 1) / (B + 1)): the smallest two-sided
    percentile level whose interval excludes 0, with the usual +1 so that p > 0.
    """
    if not deltas:
        return math.nan
    below = sum(1 for d in deltas if d <= 0)
    above = sum(1 for d in deltas if d >= 0)
    return min(1.0, 2 * (min(below, above) + 1) / (len(deltas) + 1))
