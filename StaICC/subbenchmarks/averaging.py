"""How a sub-benchmark averages its datasets' results: the spec table's ``averaging`` rules.

Sums run left to right from the integer 0, as the standard's do, so the averages equal the
original's bit for bit.
"""
from typing import Any, Callable, Dict, List


def average_metrics(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """Normal-style average: per metric, a left-to-right sum over datasets / dataset count.

    A value that cannot be added (the list-valued "distribution") contributes 0, so its
    average is 0.0, exactly as the standard reports it.
    """
    names: List[str] = []
    for result in divided.values():
        names.extend(n for n in result if n not in names)
    averaged = {}
    for name in names:
        total = 0
        for result in divided.values():
            try:
                total = total + result[name]
            except (TypeError, KeyError):
                total = total + 0
        averaged[name] = total / dataset_count
    return averaged


def _average_sensitivity(divided: Dict[str, Dict[str, Any]], dataset_count: int, slope: bool) -> Dict[str, Any]:
    first = next(iter(divided.values()))["sensitivity"]
    averaged = {}
    for metric in first:
        total = 0
        for result in divided.values():
            value = result["sensitivity"][metric]
            total += value[0] if slope else value
        averaged[metric] = total / dataset_count
    return averaged


def average_slopes(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """GLER: mean slope per metric."""
    return _average_sensitivity(divided, dataset_count, slope=True)


def average_sensitivity(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """Template_sens, Demo_sens: mean of each sensitivity value."""
    return _average_sensitivity(divided, dataset_count, slope=False)


#: the spec table's averaging names
AVERAGING: Dict[str, Callable] = {"mean": average_metrics, "slope": average_slopes, "sensitivity": average_sensitivity}
