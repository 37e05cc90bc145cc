"""Bias-corrected lite estimates of the metrics whose plug-in value moves with the sample size.

The calibration error (ECE), the bias entropies and Post_bias's KL divergence are not means over
items: on a subset of
n items their plug-in value is biased, by about (1/n - 1/N) times a constant for the smooth
ones (the entropy of the mean row: -(1/2)(1/n - 1/N) sum_j S_j^2 / p_j, the Miller-Madow term
for one-hot rows), upwards by the bins' sampling noise for the ECE, and upwards for the KL divergence of
the mean row from the label frequencies (a smooth function with its minimum, 0, near where a
well-calibrated model's mean row lies: the noise of the mean adds a chi-square-like term).  A lite run corrects
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
"""
import math
from typing import Any, Sequence

#: (sub-benchmark, metric) estimated bias-corrected: biased on small samples, never a mean over items
DEBIASED = frozenset({("Normal", "expected_calibration_error_1"), ("Contextual_bias", "entropy"),
                      ("Domain_bias", "entropy"), ("Post_bias", "DL div.")})


def bias_of(benchmark: str, metric: str, value: Any, resampled: Sequence[Any]) -> float:
    """The bootstrap estimate of the plug-in's bias (0 for a metric not in :data:`DEBIASED`, a vector, or
    resamples without a finite value)."""
    if (benchmark, metric) not in DEBIASED or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0.0
    finite = [v for v in resampled if isinstance(v, (int, float)) and math.isfinite(v)]
    if not finite:
        return 0.0
    return math.fsum(finite) / len(finite) - value
