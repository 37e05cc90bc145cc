"""Analytic standard errors of accuracy for the tables ``staicc run`` prints (lm-eval's ``± stderr``).

A summary of the run's records in a few lines of arithmetic, here rather than in ``stats/`` so that a plain
run imports none of the statistics package (the bootstrap, NumPy's vectorised resampling).

The unit is the test item, as in the bootstrap (:mod:`StaICC.stats.items`): an item's repeats share its query, so the
item's accuracy is the mean over its records, and the standard error is the sample standard deviation of
the items' accuracies over the square root of their number. The averaged row is the mean of independent
datasets: its standard error is ``sqrt(sum(se_d ** 2)) / D``. A standard error is given only where the
records reproduce the accuracy the run reported (the same records, the same rule), so a sub-benchmark whose
accuracy is computed some other way gets none rather than a wrong one.
"""
import math
from typing import Any, Dict, Iterable, Optional, Tuple

#: how close the records' accuracy must be to the reported one (both are means of the same 0/1 values)
_SAME = 1e-9


def _item_accuracies(records: Iterable[Dict[str, Any]]) -> Dict[str, Dict[Any, Tuple[int, int]]]:
    """{dataset: {test item: (right, records)}}."""
    items: Dict[str, Dict[Any, Tuple[int, int]]] = {}
    for record in records:
        per_item = items.setdefault(record.get("dataset"), {})
        key = record.get("test_index")
        right, count = per_item.get(key, (0, 0))
        per_item[key] = (right + (record.get("predicted") == record.get("label")), count + 1)
    return items


def _standard_error(per_item: Dict[Any, Tuple[int, int]]) -> Tuple[float, float]:
    """(accuracy over the records, the items' standard error)."""
    means = [right / count for right, count in per_item.values()]
    accuracy = sum(right for right, _ in per_item.values()) / sum(count for _, count in per_item.values())
    n = len(means)
    if n < 2:
        return accuracy, math.nan
    centre = sum(means) / n
    return accuracy, math.sqrt(sum((m - centre) ** 2 for m in means) / (n - 1) / n)


def accuracy_standard_errors(records: Iterable[Dict[str, Any]], reported: Dict[str, Any],
                             averaged: Optional[Any] = None) -> Dict[str, float]:
    """{dataset or "Averaged": standard error of accuracy} where the records give the ``reported`` accuracy
    (``{dataset: accuracy}``) and, for "Averaged", every dataset has one and ``averaged`` is their mean."""
    errors: Dict[str, float] = {}
    for dataset, per_item in _item_accuracies(records).items():
        value = reported.get(dataset)
        accuracy, error = _standard_error(per_item)
        if isinstance(value, (int, float)) and abs(accuracy - value) <= _SAME and math.isfinite(error):
            errors[dataset] = error
    if reported and set(errors) == set(reported) and isinstance(averaged, (int, float)) \
            and abs(sum(reported.values()) / len(reported) - averaged) <= _SAME:
        errors["Averaged"] = math.sqrt(sum(e * e for e in errors.values())) / len(errors)
    return errors
