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
"""
import copy
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..numeric import is_probability_vector
from .statistic import Statistic

#: how far a row's sum may be from 1 (and its entries outside [0, 1]) for it to count as a probability vector
#: up to rounding: far above a sum's rounding error, far below any real departure
TOLERANCE = 1e-9
#: the metric whose value depends on the branch
METRIC = "entropy"

Found = Dict[str, Tuple[Any, Any, Any, List[Any]]]


def item_flags(statistic: Statistic) -> Optional[Tuple[List[bool], List[bool]]]:
    """Per item of the statistic's table (pass 0, every repeat): (its rows are probability vectors up to
    :data:`TOLERANCE`, its rows pass the exact check); None where the statistic has no bias entropy."""
    if statistic.entropy_branch is None:
        return None
    table = statistic.table
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
    alternative = other().get(METRIC)
    if alternative is None:
        return found
    value, low, high, scaled = found[METRIC]
    return {**found, METRIC: (value, min(low, alternative[1]), max(high, alternative[2]),
                              both_branches(scaled, alternative[3]))}


def both_branches(scaled: List[Any], other: List[Any]) -> Any:
    """The resamples of the subset's branch, each with how far the other branch's same resample lies below and
    above it (the averaged row's hull, resample by resample: :class:`~.lite_averaged.Resamples`)."""
    from .lite_averaged import Resamples
    gaps = [o - v if isinstance(v, float) and isinstance(o, float) and math.isfinite(o - v) else 0.0
            for v, o in zip(scaled, other)]
    return Resamples(scaled, [max(-g, 0.0) for g in gaps], [max(g, 0.0) for g in gaps])
