"""What the arithmetic can resolve: each metric's noise floor, below which a difference is zero.

Every metric is computed in float64 from at most ~10^5 rows per call.  A left-to-right
sum of N terms of magnitude at most s is exact to N * 2**-53 * s, so the metrics of the
standard are exact to about 1e-11 of their scale; the formulas on top of the sums
(a division, a logarithm per label, a regression over five passes) add a few units in the
last place.  Two runs whose numbers differ by less than that differ by the order in which
sums were taken, not by what the models did.

The noise floor is :data:`RELATIVE_RESOLUTION` (1e-9, a hundred times that bound) times the
metric's scale:

=====================================  =======================  ==========================
metric                                 values                   scale
=====================================  =======================  ==========================
accuracy, macro-F1, likelihood, ECE,   within [0, 1] ([-1, 1]   1
consistency, the calibration metrics,  for kappa, [0, 2] for
kappa                                  the Brier score)
entropy (Contextual / Domain_bias)     [0, log(labels)]         max(1, |a|, |b|)
KL to label frequencies (Post_bias)    [0, inf)                 max(1, |a|, |b|)
GLER slopes, any other metric          unbounded                max(1, |a|, |b|)
=====================================  =======================  ==========================

so the floor is 1e-9 for every bounded metric and 1e-9 times the larger value otherwise.
A difference, a bootstrap resample's difference or an interval end whose magnitude is
below the floor is reported as exactly zero, and a zero difference is never significant.
Figures call :func:`minimum_axis_span` so that no axis is drawn in units of the noise.
"""
import math
from typing import Any

#: the resolvable fraction of a metric's scale (see the module docstring)
RELATIVE_RESOLUTION = 1e-9
#: a figure's axis spans at least this many noise floors (1e-6 of the scale), so that it is never drawn
#: in units of the noise
AXIS_SPAN_FLOORS = 1000.0

#: metrics whose values lie in a fixed range of width at most 2 (result keys and registry names): scale 1
_UNIT_SCALE = frozenset({
    "accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1", "consistency",
    "brier_score", "ece_equal_mass_1", "ece_equal_mass_10", "classwise_ece", "selective_accuracy",
    "coverage_accuracy_area", "ece_platt", "cohen_kappa", "fleiss_kappa", "accuracy_mean", "accuracy_min",
    "accuracy_max", "accuracy_spread",
})


def _magnitude(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0.0
    return abs(float(value))


def metric_scale(metric: str, *values: Any) -> float:
    """The scale a difference of ``metric`` is measured against (see the module's table).

    ``values``: the numbers compared (both runs' values); non-numbers and non-finite ones
    are ignored.  A consistency reported under a loop-length name (``consistency_128``)
    counts as consistency.
    """
    if metric in _UNIT_SCALE or metric.startswith("consistency"):
        return 1.0
    return max([1.0] + [_magnitude(v) for v in values])


def noise_floor(metric: str, *values: Any) -> float:
    """The smallest difference of ``metric`` the arithmetic resolves, given the values compared."""
    return RELATIVE_RESOLUTION * metric_scale(metric, *values)


def resolvable(metric: str, difference: Any, *values: Any) -> bool:
    """Whether ``difference`` (of two values of ``metric``, given as ``values``) is above the noise floor."""
    return _magnitude(difference) >= noise_floor(metric, *values) or \
        (isinstance(difference, float) and not math.isfinite(difference))


def resolved(value: Any, floor: float) -> Any:
    """``value``, or exactly 0.0 when it is a finite number smaller in magnitude than ``floor``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and abs(value) < floor:
        return 0.0
    return value


def minimum_axis_span(metric: str, *values: Any) -> float:
    """The least span of a figure's axis of differences of ``metric`` (values as in :func:`metric_scale`)."""
    return AXIS_SPAN_FLOORS * noise_floor(metric, *values)


def shown_slope(metric: str, slope: Any, x_span: float = 1.0) -> Any:
    """A regression slope of ``metric`` as a table or figure shows it: exactly 0.0 when, over the x-values'
    span, it moves the metric by less than a figure's least axis span (:func:`minimum_axis_span`), which
    is rounding in the model's rows (float32 scores, a chance model's near-equal ones), not an effect."""
    if not x_span or not isinstance(slope, (int, float)) or isinstance(slope, bool) or not math.isfinite(slope):
        return slope
    return resolved(slope, minimum_axis_span(metric) / abs(x_span))


def axis_limits(metric: str, values: Any) -> Any:
    """(low, high) for a figure's axis of ``metric`` holding ``values`` when they span less than
    :func:`minimum_axis_span` (so no axis is drawn in units of the noise), else None: keep the default."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    span = minimum_axis_span(metric, low, high)
    if high - low >= span:
        return None
    centre = (low + high) / 2
    return centre - span / 2, centre + span / 2
