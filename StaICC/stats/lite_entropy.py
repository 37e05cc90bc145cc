"""The bias entropy with a proxy: the entropy of the power-tuned mean row, and the plain cell where that row is near
the maximum.

The bias entropy is H(m), m the mean row of the model's answers over the pseudo-queries (softmaxed first on the
branch the standard takes).  The mean row is a mean over items, so the difference estimator applies to it as to
any mean (:mod:`.lite_proxy`: the label distribution's cell, a weight per label); the entropy is not.  A
difference of plug-in entropies, H_t(subset) + lambda [H_p(all) - H_p(subset)], failed where the entropies lie
near their maximum ln K, the case of a proxy that nearly copies the target: there H is quadratic in the row's
distance from uniform (like a KL divergence near 0), a proxy whose full-run row is nearer uniform than the
target's has a difference H_p(all) - H_p(subset) of about 2 e^2 (e the proxy subset's error), always >= 0, and a
weight fitted to the quadratic parts of both resamples (about 1: they are equal) adds it to every subset; on a
trained toy model with the target's own run plus log-scale noise of sigma 0.1 as the proxy, the averaged
Domain_bias entropy held the full run's value 89-90 % of the time (plain 94-95.5 %).  So:

* **the estimate** is the entropy of the tuned row, H(m_hat) with m_hat = m_t(subset) + Lambda [m_p(all) -
  m_p(subset)] (the distribution cell's estimate, its weights and their widenings), and each resample the entropy
  of the tuned row's resample; the plain path's bias correction and percentile interval then apply to those
  (:func:`tuned_entropy`).  On the raw branch (rows kept as they are, where the full run's mean sums to exactly 1)
  the tuned row is divided by its sum first (:func:`row_entropy`): weights that differ by label move the row off
  that sum, along which -sum v log v has a gradient the target's own row never follows (with the related proxy of
  the twelve-model study, scores plus noise, the exact-sum model's bias rows were a median 1.41 times the plain
  width without it, 1.02 with it); the softmaxed entropy does not change along it.  A row whose weights are all 0
  leaves the entropy plain, bit for bit;
* **only where it pays** (:func:`pays`): each label's weight pays for the row, but the entropy weighs the labels
  its own way, so the entropy of the tuned row is kept only where its resamples' spread, times the t factor of the
  fitted degrees of freedom, is no wider than the plain entropy's (the rule of :mod:`.lite_proxy_weights`); else
  the entropy is plain.  Without it the related proxy left Domain_bias's entropy 1.02 (averaged 1.04) times the
  plain width;
* **near the maximum** the percentile interval of a function whose gradient is small against the row's error
  under-covers.  With two labels, the row at delta = x sigma from uniform (sigma its standard error), the entropy is
  about ln 2 - 2 delta^2: the resamples' spread is the gradient term, about 4 |delta| sigma, their bootstrap bias
  the curvature term, about 2 sigma^2, and their ratio about 1 / (2x).  A simulation of that case (4,000 subsets,
  200 resamples: tests/stats/test_lite_entropy.py) covers about 99.8 % at x <= 1, 92-93 % at x = 2-3 and 94-95 %
  from x = 4 on (the row's own percentile interval at 200 resamples).  So where the tuned row's own resamples show
  that regime (bias at least :data:`NONLINEAR` of their spread, x <= 4: :func:`near_maximum`) the entropy takes
  **no proxy**: the cell is the plain one, bit for bit.  A proxy that narrows the row several times puts the plain
  row at a fraction of x, where the plain interval over-covers; one that narrows it little leaves the two alike.
  The choice reads the tuned resamples' spread and bias only, not where the full run's value lies.

Options weighed: the hull of the tuned and the plain intervals there (what this module did first: it keeps the
tuned estimate but is never narrower than the plain interval, and on the twelve-model study the related proxy left
Domain_bias's averaged entropy 1.02 times the plain width, a proxy making a cell wider); the entropy's range over
the row's interval (for two labels the image of the row's interval, valid wherever the row's is: in the simulation
above 94.4-97.6 % at every x, 1.03 times the percentile interval's width far from uniform and 1.44 times at it;
for more labels the range over a box of per-label intervals, wider than the entropy's own interval where it is
nearly linear, and on the softmax branch not separable by label).
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .lite_proxy_weights import no_wider
from .statistic import Statistic, entropy_on_branch
from .vectorized import numpy_module

#: (sub-benchmark, metric) of an entropy -> the mean-row metric of the same rows it is the entropy of
ROW_OF: Dict[Tuple[str, str], str] = {("Contextual_bias", "entropy"): "distribution",
                                      ("Domain_bias", "entropy"): "distribution"}
#: the bootstrap bias over the resamples' spread from which the entropy is near its maximum (the row within about 4
#: of its standard errors of uniform): where the tuned row's resamples show it, the entropy takes no proxy
NONLINEAR = 0.125


def entropy_rows(benchmark: str, names: Sequence[str]) -> Dict[str, str]:
    """entropy metric -> its row metric, for the entropies of ``benchmark`` whose row is among ``names``."""
    return {m: row for (b, m), row in ROW_OF.items() if b == benchmark and m in names and row in names}


def tuned_entropy(point: Sequence[float], resamples: Sequence[Sequence[float]],
                  entropy: Callable[[Sequence[float]], float]) -> Optional[Tuple[float, List[float]]]:
    """(the entropy of the tuned row ``point``, the entropy of each tuned resample row), by ``entropy`` (the
    standard's, on the target's branch); None where a row leaves the entropy's domain (a non-finite element, or on
    the raw branch a negative one, which a tuned row of a label near 0 can have): the entropy then stays plain."""
    rows = [list(point), *(list(r) for r in resamples)]
    if not all(all(math.isfinite(v) for v in row) for row in rows):
        return None
    try:
        values = [entropy(row) for row in rows]
    except ValueError:  # the logarithm of a negative mean: no entropy of that row
        return None
    if not all(math.isfinite(v) for v in values):  # a row summing to 0 or below (raw branch): no entropy either
        return None
    return values[0], values[1:]


def near_maximum(resampled: Sequence[float], value: float) -> bool:
    """Whether the entropy's resamples show it in its non-linear regime near the maximum: the bootstrap bias
    |mean(H*) - H| at least :data:`NONLINEAR` of the resamples' standard deviation (a spread of 0 is not)."""
    values = _finite(resampled)
    if len(values) < 3 or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    spread = float(values.std())
    return spread > 0 and abs(float(values.mean()) - value) >= NONLINEAR * spread


def row_details(weight: Any, known: Sequence[Any], many: bool) -> Dict[str, Any]:
    """What an entropy taken through its tuned row records: each proxy's full-run entropy, the mean of the row's
    weights (per proxy) and the weights themselves (``row_weights``), no correlation (no scalar was fitted)."""
    means = [float(w.mean()) for w in weight]
    rows = [w.tolist() for w in weight]
    return {"proxy_full_value": list(known) if many else known[0], "weight": means if many else means[0],
            "row_weights": rows if many else rows[0], "correlation": None}


def through_rows(benchmark: str, points: Dict[str, Any], spreads: Dict[str, Any], kept: Dict[str, Any],
                  details: Dict[str, Any], weights: Dict[str, Any], truths: Sequence[Dict[str, Any]],
                  entropy: Any, evaluated: Sequence[Tuple[Dict[str, Any], Dict[str, Any]]], freedom: int,
                  level: float) -> None:
    """In place: the bias entropies near their maximum taken through their tuned rows (:func:`tuned_entropy`), their
    point, resamples, kept flag and details replaced, where that pays (:func:`pays`, against the
    ``plain`` resamples at ``freedom`` degrees of freedom), else left plain (weight 0).  An entropy whose tuned row's
    resamples, the target's on the subset (``evaluated[0]``: (point, resamples)) and every proxy's on the subset
    (``evaluated[1:]``) all show it nearly linear (not :func:`near_maximum`) keeps the power-tuned difference of
    entropies fitted on its own resamples, as every other metric: its weight targets the entropy's spread, where the
    row's weights target each label's (measured: the related proxy of the twelve-model study narrowed Domain_bias's
    entropy to 0.83 of the plain width that way, and not at all through the row).  A proxy's subset entropy near
    its maximum is what biased the difference (the square of its error), so its resamples are read too, not only
    the tuned row's, which a good proxy makes precise enough to look linear; the tuned row's own resamples near the
    maximum leave the entropy plain (:func:`path`)."""
    np = numpy_module("numpy")
    plain = evaluated[0][1]
    for name, row in entropy_rows(benchmark, list(points)).items():
        taken = None if entropy is None or not kept[row].any() else tuned_entropy(points[row], spreads[row], entropy)
        way = path(taken, name, evaluated)
        if way == "difference":
            continue  # the entropy is nearly linear in its row here: the difference of entropies, as any metric
        if way == "plain" or (taken is not None and not pays(taken[1], plain.get(name, []), freedom,
                                                             len(weights[row]), level)):
            taken = None
        known = [truth[name] for truth in truths]
        if taken is None:
            kept[name] = np.asarray(False)
            details[name] = row_details(np.zeros_like(weights[row]), known, len(truths) > 1)
            continue
        points[name], spreads[name] = taken
        kept[name] = np.asarray(True)
        details[name] = row_details(weights[row], known, len(truths) > 1)


def path(taken: Optional[Tuple[float, List[float]]], name: str,
         evaluated: Sequence[Tuple[Dict[str, Any], Dict[str, Any]]]) -> str:
    """How a bias entropy takes its proxies: ``"plain"`` where the tuned row's own resamples (``taken``) show the
    maximum's non-linear regime (its percentile interval would under-cover: no proxy), ``"row"`` where only the
    target's or a proxy's subset entropy shows it (the entropy of the tuned row), ``"difference"`` where none does
    (the difference of entropies, as every metric).  ``"row"`` too where there is no tuned row (``taken`` None):
    the entropy is then plain with its weights recorded as 0."""
    if taken is not None and near_maximum(taken[1], taken[0]):
        return "plain"
    if taken is not None and not any(near_maximum(resampled.get(name, []), point.get(name, math.nan))
                                     for point, resampled in evaluated):
        return "difference"
    return "row"


def pays(tuned: Sequence[float], plain: Sequence[Any], freedom: int, proxies: int, level: float) -> bool:
    """Whether the entropy of the tuned row is expected no wider than the plain one, the rule of
    :func:`~.lite_proxy_weights.paying` for the entropy itself: the tuned resamples' spread (their rows already
    widened for the weights' own variability) times the t factor at d - m degrees of freedom against the plain
    resamples' spread times the t factor at d.  Each label's weight pays for the row, but the entropy weighs the
    labels its own way: a proxy whose row follows the target's on some labels only can leave the entropy's
    interval wider than the plain one."""
    mine, theirs = _finite(tuned), _finite(plain)
    if len(mine) < 3 or len(theirs) < 3:
        return False
    return bool(no_wider(float(mine.std()), float(theirs.std()), freedom, proxies, level))


def _finite(values: Sequence[Any]) -> Any:
    """The finite numbers among ``values`` (resamples: None or NaN where one has no value), as an array."""
    np = numpy_module("numpy")
    return np.asarray([v for v in values if isinstance(v, (int, float)) and math.isfinite(v)], dtype=np.float64)


def row_entropy(statistic: Statistic) -> Any:
    """The standard's bias entropy of a tuned mean row on the branch ``statistic`` takes (None: it has no entropy).
    On the raw branch the row is divided by its sum first: the full run's mean row takes that branch only where it
    sums to exactly 1, and a row tuned label by label leaves that sum, along which the raw entropy, -sum v log v,
    has a gradient of its own (the softmaxed entropy is unchanged along it); a sum of 0 or below has no entropy."""
    branch = statistic.entropy_branch
    if branch is None:
        return None
    if not branch:
        return lambda means: entropy_on_branch(means, False)

    def raw(means: Sequence[float]) -> float:
        total = math.fsum(means)
        return entropy_on_branch([v / total for v in means], True) if total > 0 else math.nan
    return raw
