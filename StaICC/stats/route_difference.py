"""Two runs of one model by different routes: what their predictions differ by, and no significance stars.

Runs of the same model on the same prompts that differ only in how the work was shaped
(packing, requests per call, shards, numerics) differ by arithmetic, not by the model.  What
``compare`` says about them is measured here from the records: how many predictions flipped
and the largest difference of a prediction's score; and the comparison marks none of their
differences significant (a bootstrap over test items cannot tell arithmetic from an effect).
"""
from typing import Any, Dict

from .items import _fields


def measured_difference(a: Any, b: Any) -> Dict[str, Any]:
    """``{"flipped", "compared", "largest"}`` over every record both loaded runs hold at the same place."""
    flipped = compared = 0
    largest = 0.0
    for name, part_a in a.parts.items():
        part_b = b.parts.get(name)
        if part_b is None or not part_a.records or not part_b.records:
            continue
        for dataset, records in part_a.records.items():
            if dataset not in part_b.records:
                continue
            rows_a, rows_b = _rows(records), _rows(part_b.records[dataset])
            for key, row in rows_a.items():
                other = rows_b.get(key)
                if other is None or len(other) != len(row):
                    continue
                compared += 1
                flipped += _argmax(row) != _argmax(other)
                largest = max([largest] + [abs(x - y) for x, y in zip(row, other) if x == x and y == y])
    return {"flipped": flipped, "compared": compared, "largest": largest}


def unstarred(comparison: Any) -> Any:
    """The comparison with no difference marked significant (it is returned, changed in place)."""
    for part in comparison.parts.values():
        for row in list(part.datasets.values()) + [part.averaged]:
            for difference in row.values():
                difference.significant = False
    return comparison


def _rows(records: Any) -> Dict[Any, Any]:
    passes, repeats, tests, _labels, predictions, _hashes, queries = _fields(records)
    return {(p, k, t, q): list(row) for p, k, t, q, row in zip(passes, repeats, tests, queries, predictions)}


def _argmax(row: Any) -> int:
    best = 0
    for i, value in enumerate(row):
        if value > row[best]:
            best = i
    return best
