"""The weights of the power-tuned difference estimator with several proxies at once.

With proxies p_1 ... p_m known on every item, the estimate of a metric is

    M_target(subset) + sum_j lambda_j [M_j(all items) - M_j(subset)],

and its variance over the stratified resamples is a convex quadratic in the vector lambda:
Var(t*) - 2 lambda' c + lambda' G lambda, with G_jk = Cov(p_j*, p_k*) and c_j = Cov(t*, p_j*).
The weights minimise it over the box [0, 1]^m (each proxy's weight in [0, 1], as one proxy's):
the least-squares regression of the target's resampled values on the proxies', with its
coefficients bounded.  Where the unbounded least-squares solution lies inside the box it is
that solution (``numpy.linalg.lstsq`` of the centred resamples); for one proxy the box
minimum is the clipped ratio Cov(t*, p*) / Var(p*) of :func:`~.lite_proxy.tuned_weight`, which
computes it.  lambda = 0 lies in the box, so the minimum's variance is never above the plain
estimate's on the resamples, however many proxies and however related to one another (copies
of one run together carry the weight one copy would; a proxy that does not help gets 0).

The box minimum is found by cyclic coordinate descent (each coordinate's exact minimum given
the others, clipped to [0, 1]), vectorised over the elements of a vector metric: every sweep
lowers the variance, and it stops when no weight moves by more than ``TOLERANCE``.

**The weights' own sampling variability.** The weights are fitted on the subset and then held fixed while the
same resamples give the interval, so the resamples' spread is the residual spread *at the fitted weights*: it
misses that the weights themselves vary from subset to subset.  For the regression estimator with m fitted
slopes and d degrees of freedom of the plain spread (:attr:`~.lite.Design.freedom`) the classic small-sample
variance (Cochran, 1977, ch. 7, for normal proxies: the residual variance times 1 + m / (d - m - 1), the
term (x_mean - X_mean)' S^-1 (x_mean - X_mean) of the slopes' error) and the residuals' d - m degrees of freedom
against the d the resampled spread divides by give the fitted cell's spread over the resampled one as
sqrt(d (d - 1) / ((d - m) (d - m - 1))).  :func:`~.lite_proxy.power_tuned` already widens several proxies'
spread by sqrt((d - 1) / (d - m)); :func:`weight_widening` is the rest, sqrt(d / (d - m - 1)), applied to every
element whose weights are not all 0 (a weight fitted at 0 leaves the plain estimate).  Measured
(``benchmarks/lite_proxy_lambda_trace.py``): re-fitting lambda inside each resample widens the related proxy's
likelihood and label-distribution intervals by a median 1.2 % over the twelve study models, this factor by
1.6-1.7 % at 12.5 % of 512 items; the four cells the 200-subset study found short meet the rule with it.

**A proxy that does not pay for itself is not used** (:func:`paying`).  Every widening above is paid wherever a
weight is not 0, however small, while the variance a small weight removes is small too: a proxy that barely
follows the target (lambda near 0 but not 0) made the interval wider than without it (the lexical model's worst
cell 1.03 times the plain width at 12.5 %, three proxies' 1.10 at 6.25 %).  So, per element (a scalar metric, a
label of a distribution, a bin of Normal's ECE: what one set of weights is fitted for, and the unit whose interval
the coverage study measures), the fitted weights are kept only where the fitted interval is expected no wider
than the plain one after everything it pays: the combined resamples' spread times every widening and the t factor
at d - m degrees of freedom against the target's own spread times the t factor at d, both on the same
resamples.  Elsewhere the weights are 0 and the element is the plain estimate: estimate, interval and resamples
bit for bit (:func:`spliced`), its weight recorded as 0.  This is a choice made on the subset, as lambda itself
is, not an estimator fixed in advance; but it looks only at the spreads, not at where either estimate lies, and
where it flips the two intervals are about as wide and their centres differ by lambda [M_proxy(all) -
M_proxy(subset)], whose spread is rho times the plain one's (rho, the correlation that decides the flip, about
0.2 at 64 items and one proxy: the widenings' square minus 1): the two intervals nearly coincide there, so which
one is printed moves the coverage little.  Measured in docs/lite.md.
"""
import math
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .lite import t_over_z
from .vectorized import numpy_module

#: the coordinate descent stops when no weight moves by more than this in a sweep (or after MAX_SWEEPS)
TOLERANCE = 1e-13
MAX_SWEEPS = 500


def box_weights(target: Any, proxies: Sequence[Any]) -> Any:
    """The weights (an array: proxies x the metric's shape) minimising the variance of
    target* - sum_j lambda_j proxy_j* over the resamples, each in [0, 1]; a proxy whose resamples do not vary
    beyond rounding (a spread of 1e-10 relative) gets 0, as does every proxy with fewer than 3 finite
    resamples.  ``target`` and each proxy: resamples (x width) arrays, NaN where a resample has no value."""
    np = numpy_module("numpy")
    stacked = np.stack([np.asarray(p, dtype=np.float64) for p in proxies])
    finite = np.isfinite(target) & np.isfinite(stacked).all(axis=0)
    count = finite.sum(axis=0)
    t, p = np.where(finite, target, 0.0), np.where(finite, stacked, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mt, mp = t.sum(axis=0) / count, p.sum(axis=1) / count
        dt, dp = np.where(finite, t - mt, 0.0), np.where(finite, p - mp[:, None], 0.0)
        gram = np.einsum("jr...,kr...->jk...", dp, dp)
        cross = np.einsum("r...,jr...->j...", dt, dp)
        spread = np.einsum("jj...->j...", gram)
        usable = (spread > count * (1e-10 * np.maximum(1.0, np.abs(mp))) ** 2) & (count > 2)
    usable &= np.isfinite(spread) & np.isfinite(cross)
    return _descent(np, np.where(usable[:, None] & usable[None, :], gram, 0.0), np.where(usable, cross, 0.0),
                    np.where(usable, spread, 1.0), usable)


def _descent(np: Any, gram: Any, cross: Any, spread: Any, usable: Any) -> Any:
    """Cyclic coordinate descent on lambda' G lambda - 2 lambda' c over [0, 1]^m, from lambda = 0."""
    weights = np.zeros_like(cross)
    for _ in range(MAX_SWEEPS):
        moved = 0.0
        for j in range(len(weights)):
            rest = cross[j] - np.einsum("k...,k...->...", gram[j], weights) + gram[j, j] * weights[j]
            new = np.where(usable[j], np.clip(rest / spread[j], 0.0, 1.0), 0.0)
            moved = max(moved, float(np.max(np.abs(new - weights[j]), initial=0.0)))
            weights[j] = new
        if moved <= TOLERANCE:
            break
    return weights


def weight_widening(freedom: int, proxies: int) -> float:
    """How much wider than the resampled residual spread a cell of ``proxies`` fitted weights is, beyond the
    sqrt((d - 1) / (d - m)) of several proxies: sqrt(d / (d - m - 1)) (d: the plain spread's degrees of
    freedom; at least 1 below the root)."""
    return math.sqrt(freedom / max(freedom - proxies - 1, 1))


def widened_spread(combined: Any, weights: Any, freedom: int, also: float = 1.0) -> Any:
    """The combined resamples (resamples x the metric's shape) spread about their mean by :func:`weight_widening`
    of the ``weights`` (proxies x the metric's shape) times ``also`` (a further factor for the same fitted
    elements), each element whose weights are all 0 left as it is (it is the plain estimate)."""
    np = numpy_module("numpy")
    factor = np.where(np.any(weights != 0, axis=0), also * weight_widening(freedom, len(weights)), 1.0)
    with warnings.catch_warnings():  # an element without a finite resample stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmean(combined, axis=0)
    return centre + factor * (combined - centre)


def paying(weights: Any, target: Any, proxies: Sequence[Any], freedom: int, level: float, also: float = 1.0) -> Any:
    """``weights`` (proxies x the metric's shape) where the fitted element's interval is expected no wider than the
    plain one, 0 elsewhere: the spread of the combined resamples target* - sum_j lambda_j proxy_j*, times ``also``
    (several proxies' factor), :func:`weight_widening` and the t factor at d - m degrees of freedom, against the
    target's own spread times the t factor at d (``target``, each proxy: resamples (x width) arrays, NaN where a
    resample has none).  The widenings exceed 1, so a tie needs both spreads 0: a bin of the ECE that neither the
    target's nor the proxy's subset reached, whose pooled weight corrects it at no width; an element without a
    finite spread either way takes 0."""
    np = numpy_module("numpy")
    combined = np.asarray(target, dtype=np.float64) - sum(w * p for w, p in zip(weights, proxies))
    with warnings.catch_warnings():  # an element without finite resamples has no spread: it stays plain
        warnings.simplefilter("ignore", RuntimeWarning)
        pays = no_wider(np.nanstd(combined, axis=0), np.nanstd(target, axis=0), freedom, len(weights), level,
                        also * weight_widening(freedom, len(weights)))
    return np.where(pays, weights, 0.0)


def no_wider(fitted: Any, plain: Any, freedom: int, proxies: int, level: float, widening: Any = 1.0) -> Any:
    """Whether a fitted interval is expected no wider than the plain one: the ``fitted`` spread times ``widening``
    and the t factor at d - m degrees of freedom (m the ``proxies``' weights) against the ``plain`` spread times the
    t factor at d (scalars or arrays, element by element)."""
    return widening * t_over_z(level, max(freedom - proxies, 1)) * fitted <= t_over_z(level, freedom) * plain


def spliced(fitted: Any, plain: Any, kept: Any) -> Any:
    """A cell (estimate, low, high, scaled resamples) of the fitted estimator where ``kept`` (per element: whether a
    weight is not 0), the plain cell elsewhere: a whole cell for a scalar, element by element for a vector."""
    kept = [bool(k) for k in numpy_module("numpy").atleast_1d(kept)]
    if all(kept) or not any(kept):
        return fitted if all(kept) else plain

    def pick(mine: Any, other: Any) -> Any:
        if not (isinstance(mine, list) and isinstance(other, list)):
            return mine  # a missing resample (None, or NaN throughout) stays missing
        return [a if k else b for a, b, k in zip(mine, other, kept)]
    return (*(pick(f, p) for f, p in zip(fitted[:3], plain[:3])), [pick(f, p) for f, p in zip(fitted[3], plain[3])])


def details(ts: Any, ps: Sequence[Any], weight: Any, known: List[Any], width: Optional[int]) -> Dict[str, Any]:
    """What a cell records of its proxies: one proxy's weight, full-run value and correlation as they are; for
    several, a list of weights and of full-run values (in the proxies' order) and the correlation of the
    target's resamples with the weighted sum of the proxies' (the multiple correlation the weights reach)."""
    if len(ps) == 1:
        return {"proxy_full_value": known[0], "weight": weight[0].tolist(),
                "correlation": None if width else correlation(ts, ps[0])}
    fitted = sum(w * p for w, p in zip(weight, ps))
    return {"proxy_full_value": known, "weight": [w.tolist() for w in weight],
            "correlation": None if width else correlation(ts, fitted)}


def correlation(target: Any, proxy: Any) -> Optional[float]:
    """Pearson's correlation of two resampled scalar metrics (arrays; None with fewer than 3 finite pairs or no
    spread)."""
    np = numpy_module("numpy")
    finite = np.isfinite(target) & np.isfinite(proxy)
    if finite.sum() < 3:
        return None
    t, p = target[finite] - target[finite].mean(), proxy[finite] - proxy[finite].mean()
    sxx, syy = float((t * t).sum()), float((p * p).sum())
    return float((t * p).sum()) / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None
