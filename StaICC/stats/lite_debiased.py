"""Bias-corrected lite estimates of the metrics whose plug-in value moves with the sample size.

The calibration error (ECE) and the bias entropies are not means over items: on a subset of
n items their plug-in value is biased, by about (1/n - 1/N) times a constant for the smooth
ones (the entropy of the mean row: -(1/2)(1/n - 1/N) sum_j S_j^2 / p_j, the Miller-Madow term
for one-hot rows), upwards by the bins' sampling noise for the ECE.  A lite run corrects
them with the **bootstrap bias estimate** of the resamples it already draws (Efron &
Tibshirani, 1993, ch. 10): the rescaling bootstrap of :mod:`StaICC.stats.lite` reproduces the
without-replacement variance of the subset, and so the second-order bias of a smooth
statistic; the estimate becomes

    theta_bc = theta - bias,  bias = mean(theta*) - theta,

and the interval is shifted by the same amount (the percentile interval of theta* - bias).
For the entropy this is the Miller-Madow correction generalised to probability rows and to a
finite population; for the ECE (|.| of each bin's gap is not smooth where a gap is near zero)
it removes most, not all, of the bias: the coverage study says how much.  Where every item is
asked there is no bias and nothing is corrected.

Post_bias's KL divergence is corrected only where every resample takes one branch of the standard
(:data:`ONE_BRANCH`; near zero its plug-in is biased upwards, like a square); elsewhere not: the standard compares the raw mean row where
every mean is positive and the softmaxed rows' mean otherwise (scores), so for a model whose
raw means lie near zero the resamples cross between two functionals, and their mean measures
the distance between the branches, not a bias (the coverage study found the corrected estimate
of such a model far off the full run's value, the plain one within its interval).
"""
import math
from typing import Any, Sequence

#: (sub-benchmark, metric) estimated bias-corrected: biased on small samples, never a mean over items
DEBIASED = frozenset({("Normal", "expected_calibration_error_1"), ("Contextual_bias", "entropy"),
                      ("Domain_bias", "entropy")})


#: corrected only on a subset whose resamples all take one branch of the standard: every row strictly positive (the
#: raw branch), or a label with no positive score in any row (the softmaxed branch)
ONE_BRANCH = frozenset({("Post_bias", "DL div.")})


def one_branch(table: Any, positions: Sequence[int]) -> frozenset:
    """The metrics of :data:`ONE_BRANCH` that the subset of ``positions`` corrects: all, where every row (pass 0,
    every repeat) of its items is strictly positive (every resample's mean row is positive: the raw branch) or
    where some label has no positive score in any row (no resample's mean row is positive: the softmaxed
    branch), else none."""
    names = frozenset(m for b, m in ONE_BRANCH if b == table.benchmark)
    if not names:
        return frozenset()
    rows = [rep[i] for rep in table.rows[0] for i in positions]
    if all(v > 0 for row in rows for v in row):
        return names
    width = len(rows[0]) if rows else 0  # a label no row scores above zero: every mean row takes the softmaxed branch
    return names if any(all(row[j] <= 0 for row in rows) for j in range(width)) else frozenset()


def bias_of(benchmark: str, metric: str, value: Any, resampled: Sequence[Any], also: frozenset = frozenset()) -> float:
    """The bootstrap estimate of the plug-in's bias (0 for a metric not in :data:`DEBIASED` nor ``also``, a
    vector, or resamples without a finite value)."""
    if ((benchmark, metric) not in DEBIASED and metric not in also) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        return 0.0
    finite = [v for v in resampled if isinstance(v, (int, float)) and math.isfinite(v)]
    if not finite:
        return 0.0
    return math.fsum(finite) / len(finite) - value
