"""``--lite-until HALFWIDTH``: ask further seeded items until every reported interval is narrow enough.

A lite run with a target half-width starts at its fraction f and, while some reported
metric's interval is wider than 2 x HALFWIDTH, asks the next look of a **fixed schedule**:
f, 2f, 4f, ... and finally 1 (every item).  The subsets are nested, so each look asks only
the items the previous one did not (from the cache, the earlier answers cost nothing).

Stopping when the intervals look narrow enough would make ordinary 95 % intervals too
optimistic (the run stops where the sample happened to look tight).  The intervals stay
valid under *any* stopping rule by spending alpha over the schedule (Bonferroni): with K
looks, every look's intervals are computed at level 1 - alpha/K.  Whatever look the run
stops at, the probability that any interval of any look misses the full run's value is at
most K x alpha/K = alpha.  The last look (fraction 1) is the full run itself: its numbers
are exact and the run always stops there.
"""
import math
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import InvalidValueError
from ..validation import Real

#: the fraction a look schedule starts at when none is given
DEFAULT_START = 0.0625


def look_schedule(start: float) -> Tuple[float, ...]:
    """The fractions of the looks: ``start`` doubled until it reaches 1, then 1."""
    from ..sampling.subsets import check_fraction
    fraction, looks = check_fraction(start), []
    while fraction < 1:
        looks.append(fraction)
        fraction *= 2
    return tuple(looks) + (1.0,)


def look_level(level: float, looks: int) -> float:
    """Each look's interval level: 1 - (1 - level) / looks (alpha spent evenly over the fixed schedule)."""
    return 1 - (1 - level) / looks


def check_halfwidth(value: Any) -> float:
    """A target half-width: a finite number > 0 and below 1 (ValueError otherwise).  The metrics are shares,
    probabilities and nats of a few labels: a half-width of 1 or more (a percentage given for a share, 2 for
    0.02) holds at the first look, whose intervals are wider than a plain lite run's."""
    refusal, number = Real(0, closed="neither").judge(value)
    if refusal is not None:  # the CLI's --lite-until message, word for word
        raise InvalidValueError(f"the target half-width must be a finite number > 0, e.g. 0.02; got {value!r}")
    if Real(high=1, closed="left").judge(number)[0] is not None:
        raise InvalidValueError(f"the target half-width must be below 1, on the metrics' own scale (0.02: two points "
                                f"of accuracy); got {value!r}")
    return number


def widest_half(estimates: Dict[str, Dict[str, Dict[str, Any]]]) -> Tuple[float, str]:
    """(the widest half-width among the reported estimates, where it is): a missing or non-finite end of a
    reported interval counts as infinitely wide, and so does a metric that is not estimable at this look but is
    at a larger studied fraction (:data:`~StaICC.stats.lite.ESTIMABLE`): a look where it is not yet printed is
    not narrow enough (else a run from 6.25 %, where the study prints nothing, would stop at once)."""
    from .lite import ESTIMABLE
    widest, where = 0.0, ""
    for benchmark, rows in estimates.items():
        for row, metrics in rows.items():
            for metric, estimate in metrics.items():
                if not estimate.estimable:
                    later = (benchmark, metric, "averaged" if row == "Averaged" else "dataset") in ESTIMABLE
                    if later and widest < math.inf:
                        widest, where = math.inf, f"{benchmark} / {row} / {metric} (not yet estimable)"
                    continue
                for low, high in zip(*(v if isinstance(v, list) else [v] for v in (estimate.low, estimate.high))):
                    half = (high - low) / 2 if all(isinstance(v, (int, float)) for v in (low, high)) else math.inf
                    half = half if math.isfinite(half) else math.inf
                    if half > widest:
                        widest, where = half, f"{benchmark} / {row} / {metric}"
    return widest, where


def until_record(halfwidth: float, level: float, looks: Sequence[float], widths: List[Tuple[float, str]]) -> Dict[str, Any]:
    """What a lite run stopped by ``--lite-until`` records: the target, the schedule, each look's widest
    half-width, where it stopped and the level of each look's intervals."""
    return {"halfwidth": halfwidth, "level": level, "look_level": look_level(level, len(looks)),
            "schedule": list(looks), "looks": [{"fraction": f, "widest_halfwidth": w, "where": at}
                                                for f, (w, at) in zip(looks, widths)],
            "stopped_at": looks[len(widths) - 1], "reached": bool(widths) and widths[-1][0] <= halfwidth}
