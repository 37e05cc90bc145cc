"""The degrees of freedom of a proxy-corrected estimate's spread, from its items' residuals.

The plain path widens its bootstrap deviations by Student's t over the normal quantile with n - G degrees of
freedom, as if each item's contribution were roughly normal.  A proxy that follows the target closely leaves a
*sparse* residual: zero on most items, large on the few where target and proxy disagree.  The spread of such a
residual is estimated from those few items, and its estimate varies far more than a normal sample's of n (the Wald
interval's trouble with a rare proportion): a rescaling bootstrap of 64 items under-states it.  Satterthwaite's
effective degrees of freedom of a variance estimate, nu = 2 Var^2 / Var(estimated variance), say by how much: for the
sum of the squared item residuals u_i^2 (each centred within its resampling group),

    nu = 2 (sum u_i^2)^2 / sum (u_i^2 - mean u^2)^2,

which is n for normal residuals and about twice the number of non-zero ones for a sparse residual.  The combined
resamples' deviations are widened by t_{nu} / t_{d} (d the degrees of freedom the interval already takes), never
narrowed: nu at most d.

The residuals u_i are the estimate's empirical influence values, read off the resamples themselves: every
resample's value is, to first order, sum_i (w*_i - w-bar_i) u_i, so the least-squares regression of the centred
resampled values on the centred resample weights gives them (exactly for a mean, whose value is linear in the
weights; Efron's regression estimate of the influence function for a plug-in).  The resample weights of a
resampling group sum to a constant, so the minimum-norm solution is centred within each group.  It needs more
resamples than items; with fewer (or a resample without a value) the widening is 1.
"""
import math
from typing import Any

from .lite import t_over_z
from .vectorized import numpy_module


def effective_freedom(residuals: Any) -> Any:
    """Satterthwaite's nu = 2 (sum u^2)^2 / sum (u^2 - mean u^2)^2 per column of ``residuals`` (items x elements,
    centred); inf where the residuals are all zero or equal in size (a variance estimated without error)."""
    np = numpy_module("numpy")
    squares = np.asarray(residuals, dtype=np.float64) ** 2
    total = squares.sum(axis=0)
    spread = ((squares - total / len(squares)) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, 2 * total ** 2 / spread, math.inf)


def influence(combined: Any, draws: Any) -> Any:
    """The items' influence values (items x elements) of the resampled values ``combined`` (resamples x elements)
    on the resample weights ``draws`` (resamples x items): the least-squares fit of the centred values on the
    centred weights, None where it is not determined (no more resamples than items, or a value missing)."""
    np = numpy_module("numpy")
    values, weights = np.asarray(combined, dtype=np.float64), np.asarray(draws, dtype=np.float64)
    if len(weights) <= weights.shape[1] or not np.isfinite(values).all():
        return None
    centred = weights - weights.mean(axis=0)
    return np.linalg.lstsq(centred, values - values.mean(axis=0), rcond=None)[0]


def sparse_widening(combined: Any, draws: Any, freedom: int, level: float) -> Any:
    """The factor (one per element, at least 1) by which the combined resamples' deviations widen: t at the
    residuals' effective degrees of freedom (at most ``freedom``) over t at ``freedom``; 1 where the influence
    values are not determined."""
    np = numpy_module("numpy")
    flat = np.asarray(combined, dtype=np.float64)
    shape = flat.shape[1:]
    found = influence(flat.reshape(len(flat), -1), draws)
    if found is None:
        return np.ones(shape)
    nu = np.minimum(effective_freedom(found), freedom)
    base = t_over_z(level, freedom)
    factor = [t_over_z(level, int(v)) / base if math.isfinite(v) else 1.0 for v in nu]
    return np.maximum(np.asarray(factor).reshape(shape), 1.0)
