"""The note under a lite table where an estimate or an interval end lies outside the values its metric can take.

The lite estimators correct a small sample's bias (the bias entropies, Normal's ECE, Post_bias's KL divergence:
:mod:`StaICC.stats.lite_debiased`) and widen intervals for what a subset cannot see; neither cuts the result to
the metric's range.  So a KL divergence of a model whose full-run value is near 0 can print a negative estimate,
an entropy of two labels can print above ln 2, an averaged ECE interval can start below 0.  The numbers are
what the estimators give and are recorded as such; the table says where they leave the range and how to read
them (the full run's value lies inside the range, so in the part of the interval that does), rather than showing
a number a reader takes for an error.
"""
import math
from typing import Any, Dict, List, Optional, Tuple

#: the top of a bias entropy: ln K for the row's K labels
LN_LABELS = "ln K"
#: (sub-benchmark, metric) -> the values it can take (None: unbounded)
RANGES: Dict[Tuple[str, str], Tuple[float, Any]] = {
    ("Normal", "expected_calibration_error_1"): (0.0, 1.0),
    ("Post_bias", "DL div."): (0.0, None),
    ("Contextual_bias", "entropy"): (0.0, LN_LABELS),
    ("Domain_bias", "entropy"): (0.0, LN_LABELS),
}
#: how far past its range a value must lie to be named (not the last bits of a float)
TOLERANCE = 1e-12


def _tops(found: Dict[str, Dict[str, Any]]) -> Dict[str, float]:
    """Each row's ln K, K the labels of its distribution; the averaged row's, the mean of the datasets'."""
    tops = {}
    for row, cells in found.items():
        value = (cells.get("distribution") or {}).get("value")
        if isinstance(value, list) and value:
            tops[row] = math.log(len(value))
    if tops and "Averaged" in found:
        tops["Averaged"] = math.fsum(tops.values()) / len(tops)
    return tops


def _outside(cell: Any, low: float, high: Optional[float]) -> List[str]:
    """Which of the cell's estimate and interval ends lie outside [low, high]."""
    if not isinstance(cell, dict) or not cell.get("estimable", True):
        return []
    said = []
    for word, key in (("estimate", "value"), ("low end", "low"), ("high end", "high")):
        v = cell.get(key)
        if isinstance(v, (int, float)) and (v < low - TOLERANCE or high is not None and v > high + TOLERANCE):
            said.append(word)
    return said


def range_notes(name: str, found: Dict[str, Dict[str, Any]], label: Any = str) -> List[str]:
    """One note per metric of sub-benchmark ``name`` whose estimates (``found``: row -> metric -> cell) leave its
    range; ``label`` names a metric as the table does."""
    tops, notes = _tops(found), []
    for (benchmark, metric), (low, high) in RANGES.items():
        if benchmark != name:
            continue
        places = []
        for row, cells in found.items():
            top = tops.get(row) if high == LN_LABELS else high
            if high == LN_LABELS and top is None:
                continue
            ends = _outside(cells.get(metric), low, top)
            if ends:
                places.append(f"{row} ({', '.join(ends)})")
        if places:
            span = "from 0 to ln K (K: the dataset's labels)" if high == LN_LABELS else \
                f"from {low:g}" + (f" to {high:g}" if high is not None else " up")
            notes.append(f"{label(metric)} goes {span}; outside that here: {'; '.join(places)}. The estimators "
                         "correct a small sample's bias and widen for what the subset did not see, and do not cut "
                         "the result to that range: the full run's value lies inside it, so read the part of the "
                         "interval that does.")
    return notes
