"""The bias entropy where a subset cannot tell which branch of the standard's exact check the full run takes.

The standard softmaxes the mean row before its entropy unless the mean sums to exactly 1.0
(:func:`~StaICC.numeric.entropy`).  When every row is a probability vector up to rounding
(a model that answers probabilities), the full run's mean sums to 1 within a few ulps and the
branch it takes is decided by the last bit of a sum over every item: no subset can predict it,
and the two branches' values differ widely (a softmaxed probability row is far closer to
uniform).  A lite estimate on one branch alone then misses the full run's value whenever the
full run took the other, however narrow its interval.

So where the subset's rows are probability vectors up to :data:`TOLERANCE` but not all exactly
(rows that all pass the exact check, such as dyadic probabilities, give a mean whose branch the
subset's own follows), the interval is the **hull of both branches' intervals**: it holds the
full run's value on whichever branch the full run takes, at the nominal level for each.  The
point estimate stays on the subset's own branch (the standard's computation on the subset).
Which interval a cell gets depends on the rows alone, not on the resamples.  The averaged row
takes, on each resample, each dataset's branch at its extreme (:func:`both_branches`).

Post_bias has the same trouble with another branch.  The standard compares the raw mean row
with the label frequencies where every raw mean is positive, and the mean of the softmaxed rows
where a mean is not and a row has a negative entry (scores).  A model whose raw means lie near
zero (scores of both signs) has a full run on one branch that no subset can name: the subset's
mean has the sign of the full run's only when it is far from zero.  Each resample takes its own
branch, but that mixes the two functionals in the proportions of the *subset's* means, so a
subset on the wrong side of zero gives an estimate on the wrong branch, and an interval whose
reach to the right one is a matter of luck (the averaged row, where ten datasets' wrong branches
add up against an interval three times narrower, held the full run's value 86 % of the time for a
random-score model).  So where the subset's evaluations (its estimate and its resamples) take
both branches (:func:`crosses`), the post-bias intervals are the **hull of both branches'
intervals**, each branch evaluated on every resample (:func:`post_branches`; the raw branch at
means clipped at zero where a resample's mean is not positive: the nearest means the raw branch
admits, where the raw functional is continuous), and a scalar's resamples carry, per resample,
how far the two branches lie below and above it (the averaged row's hull, resample by resample).
The estimate stays on the subset's own branch.  Where every evaluation takes one branch the
subset decides it: at 200 resamples a subset mean three standard errors on the wrong side of
zero, the case that could still mislead, has a chance of about 0.1 %.
"""
import copy
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..numeric import SOFTMAX, is_probability_vector
from .statistic import Statistic

#: how far a row's sum may be from 1 (and its entries outside [0, 1]) for it to count as a probability vector
#: up to rounding: far above a sum's rounding error, far below any real departure
TOLERANCE = 1e-9
#: the metric whose value depends on the branch
METRIC = "entropy"
#: Post_bias's metrics, and the branches of the standard its rows take (:func:`post_branches`)
POST_METRICS = ("DL div.", "distribution")
POST_BRANCHES = ("raw", "softmax")

Found = Dict[str, Tuple[Any, Any, Any, List[Any]]]


def item_flags(statistic: Statistic) -> Optional[Tuple[List[bool], List[bool]]]:
    """Per item of the statistic's table (pass 0, every repeat): (its rows are probability vectors up to
    :data:`TOLERANCE`, its rows pass the exact check); None where the statistic has no bias entropy, or where the
    run's rule softmaxes every mean (no last bit decides its branch)."""
    table = statistic.table
    if statistic.entropy_branch is None or table.rule == SOFTMAX:
        return None
    near, exact = [], []
    for i in range(len(table)):
        rows = [table.rows[0][k][i] for k in range(table.repeats)]
        near.append(all(abs(sum(row) - 1) <= TOLERANCE and all(-TOLERANCE <= v <= 1 + TOLERANCE for v in row)
                        for row in rows))
        exact.append(all(is_probability_vector(row) for row in rows))
    return near, exact


def undecided(flags: Optional[Tuple[List[bool], List[bool]]], positions: Sequence[int]) -> bool:
    """Whether the full run's branch is a last-bit accident for a subset of these positions: every row a
    probability vector up to rounding, not every row an exact one."""
    if flags is None:
        return False
    near, exact = flags
    return all(near[i] for i in positions) and not all(exact[i] for i in positions)


def on_branch(statistic: Statistic, branch: Optional[bool]) -> Statistic:
    """The statistic evaluated on the bias entropy's ``branch`` (only the entropy reads it)."""
    if branch is None or branch == statistic.entropy_branch:
        return statistic
    other = copy.copy(statistic)
    other.entropy_branch = branch
    other.__dict__.pop("_point", None)  # its point is the full run's own, on the full run's branch
    return other


def other_branch(statistic: Statistic) -> Statistic:
    """The statistic on the branch its own table did not take."""
    return on_branch(statistic, not statistic.entropy_branch)


def hulled(found: Found, other: Callable[[], Found]) -> Found:
    """``found`` with the entropy's interval widened to the hull of it and ``other()``'s (the other branch's
    estimate, computed only where there is an entropy to widen)."""
    if METRIC not in found:
        return found
    return hull(found, [other()], (METRIC,))


def hull(found: Found, others: Sequence[Found], metrics: Sequence[str] = POST_METRICS) -> Found:
    """``found`` with each of ``metrics``' intervals widened to the hull of it and ``others``' (element-wise for a
    vector), and a scalar's resamples carrying, per resample, how far the others' lie below and above it
    (:func:`both_branches`); the estimate stays ``found``'s."""
    out = dict(found)
    for name in metrics:
        alternatives = [other[name] for other in others if name in other]
        if name not in found or not alternatives:
            continue
        value, low, high, scaled = found[name]
        if isinstance(value, list):
            lows = [min(ends) for ends in zip(low, *(a[1] for a in alternatives))]
            highs = [max(ends) for ends in zip(high, *(a[2] for a in alternatives))]
            out[name] = (value, lows, highs, scaled)
        else:
            out[name] = (value, min(low, *(a[1] for a in alternatives)), max(high, *(a[2] for a in alternatives)),
                         both_branches(scaled, *(a[3] for a in alternatives)))
    return out


def both_branches(scaled: List[Any], *others: List[Any]) -> Any:
    """The resamples of the subset's branch, each with how far the other branches' same resample lies below and
    above it (the averaged row's hull, resample by resample: :class:`~.lite_averaged.Resamples`)."""
    from .lite_averaged import Resamples
    gaps = [[o - v if isinstance(v, float) and isinstance(o, float) and math.isfinite(o - v) else 0.0
             for v, o in zip(scaled, other)] for other in others]
    per = list(zip(*gaps)) if gaps else [() for _ in scaled]
    return Resamples(scaled, [max([0.0] + [-g for g in r]) for r in per], [max([0.0] + list(r)) for r in per])


# -- Post_bias: the raw means where every one is positive, the softmaxed rows' means where not -------------------
def has_post_bias(statistic: Statistic) -> bool:
    """Whether the statistic has a post-bias metric (those that read :func:`~StaICC.metrics.bias._post_bias_rows`)."""
    from ..metrics.bias import post_bias_distribution, post_bias_dl_div
    return any(f is post_bias_dl_div or f is post_bias_distribution for f in statistic.functions.values())


def crosses(statistic: Statistic, point: Sequence[float], rows: Any) -> bool:
    """Whether the evaluations with item weights ``point`` (the estimate's) and ``rows`` (the resamples') take
    both of the standard's post-bias branches: the softmaxed rows' means for some (a raw mean not positive, a
    drawn row with a negative entry: scores), the raw means for others."""
    if not has_post_bias(statistic):
        return False
    from .vectorized import numpy_module
    np = numpy_module("numpy")
    taken = softmaxed(statistic, np.vstack([np.asarray(point, dtype=np.float64)[None, :], rows]))
    return bool(taken.any() and not taken.all())


def softmaxed(statistic: Statistic, weights: Any) -> Any:
    """Per weight row (rows x items of pass 0), whether its post-bias evaluation takes the softmaxed rows' means."""
    from .vectorized import numpy_module
    np = numpy_module("numpy")
    sums, negative = statistic.table.pass_zero_sums()
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    return ~(weights @ sums > 0).all(axis=1) & (weights @ negative > 0)


def off_branch(proxy: Statistic, weights: Any, whole: Statistic) -> frozenset:
    """The post-bias metrics a proxy cannot correct on a subset: all (:data:`POST_METRICS`) where its evaluations
    there (``proxy`` with the weight rows ``weights``: the estimate's and the resamples') do not all take the branch
    its full run ``whole`` takes (a difference across the branches measures their distance, not the subset's
    error), else none."""
    if not has_post_bias(whole):
        return frozenset()
    full = softmaxed(whole, [[1.0] * len(whole.table)])[0]
    return frozenset() if bool((softmaxed(proxy, weights) == full).all()) else frozenset(POST_METRICS)


def post_branches(statistic: Statistic, point: Sequence[float], rows: Any,
                  evaluate: Callable[[Statistic], Found]) -> List[Found]:
    """Where the subset's evaluations cross between the post-bias branches (:func:`crosses`), ``evaluate`` of the
    statistic on each branch for every evaluation (:data:`POST_BRANCHES`), to be hulled with the estimate
    (:func:`hull`); else nothing."""
    if not crosses(statistic, point, rows):
        return []
    found = []
    for branch in POST_BRANCHES:
        forced = copy.copy(statistic)
        forced.post_branch = branch
        found.append(evaluate(forced))
    return found

