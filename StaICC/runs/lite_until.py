"""A lite run repeated at the looks of a fixed schedule until its intervals are narrow enough.

The schedule, the level each look's intervals are computed at and what the run records are
statistics (:mod:`StaICC.stats.lite_until`); asking each look is a run, so it lives here.
"""
from typing import Any, List, Tuple

from ..stats.lite_until import DEFAULT_START


def run_lite_until(model: Any, halfwidth: float, start: float = DEFAULT_START, benchmarks: Any = "all", *,
                   level: float = 0.95, **options: Any) -> Any:
    """:func:`~StaICC.runs.lite.run_lite` at the looks of :func:`~StaICC.stats.lite_until.look_schedule` until
    every reported half-width is at most ``halfwidth`` (or every item is asked); intervals at
    :func:`~StaICC.stats.lite_until.look_level`.  Returns the last look's result, with
    ``metadata["lite"]["until"]`` (:func:`~StaICC.stats.lite_until.until_record`).  Give ``cache`` so that
    each look asks only its new items."""
    from ..stats.lite_until import check_halfwidth, look_level, look_schedule, until_record, widest_half
    from .lite import run_lite
    check_halfwidth(halfwidth)
    looks = look_schedule(start)
    each = look_level(level, len(looks))
    widths: List[Tuple[float, str]] = []
    for fraction in looks:
        result = run_lite(model, fraction, benchmarks, level=each, **options)
        widths.append(widest_half(result.lite.estimates))
        if widths[-1][0] <= halfwidth:
            break
    result.metadata["lite"]["until"] = until_record(halfwidth, level, looks, widths)
    return result
