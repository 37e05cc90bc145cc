"""The scaled resamples of a lite estimate and their interval (:func:`~StaICC.stats.lite.finished`'s arithmetic).

Each resample's deviation from the estimate is widened by the small-sample t factor and shifted by the bias
correction; the interval is the percentile interval of the scaled resamples, an end within the metric's noise
floor of the estimate snapped to it.
"""
import math
from typing import Any, List, Tuple

from .resolution import noise_floor, resolved
from .vectorized import numpy_module


def scaled_all(estimate: Any, values: List[Any], scale: float, bias: float) -> List[Any]:
    """Each resample ``estimate + scale * (value - estimate) - bias`` (NaN where a value is missing or not finite;
    element-wise for a vector), with NumPy for a scalar: the same IEEE operations per element."""
    if isinstance(estimate, list) or not math.isfinite(estimate):
        return [_scaled(estimate, v, scale) - bias if bias else _scaled(estimate, v, scale) for v in values]
    np = numpy_module("numpy")
    array = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isfinite(array), estimate + scale * (array - estimate), math.nan)
    return (scaled - bias if bias else scaled).tolist()


def _scaled(estimate: Any, value: Any, scale: float) -> Any:
    if isinstance(estimate, list):
        return [_scaled(e, v, scale) for e, v in zip(estimate, value)] if isinstance(value, list) else None
    if value is None or not math.isfinite(value) or not math.isfinite(estimate):
        return math.nan
    return estimate + scale * (value - estimate)


def snapped(metric: str, value: Any, end: Any) -> Any:
    """An interval end within the metric's noise floor of the estimate is the estimate (a constant metric's
    resamples differ from it in the last bits only)."""
    if isinstance(value, list):
        return [snapped(metric, v, e) for v, e in zip(value, end)]
    if not (isinstance(end, float) and math.isfinite(end) and math.isfinite(value)):
        return end
    return value + resolved(end - value, noise_floor(metric, value))


def resample_interval(values: List[Any], level: float) -> Tuple[Any, Any]:
    """The percentile interval of a lite cell's scaled resamples (each component's for a vector; a resample whose
    vector is missing, None, left out): the run bootstrap's :func:`~.bootstrap.finite_interval`.  That leaves out
    the infinite resamples and counts them; a lite cell's have none to count (:func:`scaled_all` makes every
    resample that is not finite NaN, which every percentile interval ignores)."""
    from .bootstrap import finite_interval
    low, high, _ = finite_interval([v for v in values if v is not None], level)
    return low, high
