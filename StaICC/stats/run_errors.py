"""± standard errors of every metric for the tables ``staicc run`` prints, computed as the run ends.

Accuracy has an analytic one (:mod:`StaICC.results.stderr`); every other scalar metric gets the
standard deviation of a small bootstrap over test items with a fixed seed, computed by the same
vectorised resampling as ``staicc report`` and ``compare`` (:mod:`.vectorized`), from the run's rows
in memory (no prompt is written again).  The bootstrap needs NumPy: without it only accuracy gets
one.  A sub-benchmark whose records do not reproduce its results, or whose metrics are vectors (the
bias distributions), gets no bootstrap error rather than a wrong one.
"""
import math
from typing import Any, Dict, List, Optional

from ..results.columns import ColumnRecords
from ..results.parts import Part
from .bootstrap import DEFAULT_SEED, dataset_statistic
from .items import draw_resamples
from .vectorized import resample_values

#: resamples of the run-time bootstrap: enough for a standard error to about 5 % of itself, cheap to draw
RUN_RESAMPLES = 200


def _spread(values: List[Any]) -> Optional[float]:
    """The sample standard deviation of a metric's finite resample values (None: not a scalar, or too few)."""
    finite = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if len(finite) < 2 or len(finite) < len(values) / 2:
        return None
    centre = math.fsum(finite) / len(finite)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in finite) / (len(finite) - 1))


def _in_memory_part(part: Any, name: str) -> Optional[Part]:
    """A sub-benchmark's result in memory as the statistics read a loaded one (None: it has no records)."""
    records = {}
    for plan_records in getattr(getattr(part, "records", None), "_parts", ()):
        columns = plan_records.statistics_columns()
        width = len(columns["prediction"]) // len(plan_records) if len(plan_records) else 0
        if width < 1:
            return None
        records[plan_records.dataset] = ColumnRecords(name, plan_records.dataset, width, columns)
    return Part(name, dict(part), dict(part.metadata), records) if records else None


def bootstrap_errors(part: Any, name: str, resamples: int = RUN_RESAMPLES,
                     seed: int = DEFAULT_SEED) -> Dict[str, Dict[str, float]]:
    """{metric: {dataset or "Averaged": bootstrap standard error}} of a sub-benchmark's result in memory."""
    from .vectorized import numpy_module
    loaded = _in_memory_part(part, name)
    if loaded is None or numpy_module() is None or set(loaded.records) != set(loaded.datasets()):
        return {}
    errors: Dict[str, Dict[str, float]] = {}
    distributions: Dict[str, List[List[Any]]] = {}
    for dataset in loaded.datasets():
        try:
            statistic = dataset_statistic(loaded, dataset)
        except ValueError:  # the records do not give the reported numbers: no error rather than a wrong one
            return {}
        values = resample_values(statistic, draw_resamples(len(statistic.table), resamples, seed, name, dataset))
        for metric, column in values.items():
            spread = _spread(column)
            if spread is not None:
                errors.setdefault(metric, {})[dataset] = spread
                distributions.setdefault(metric, []).append(column)
    for metric, columns in distributions.items():
        if len(columns) == len(loaded.datasets()):  # the averaged row: the mean of the datasets' resamples
            spread = _spread([math.fsum(c) / len(c) for c in zip(*columns)])
            if spread is not None:
                errors[metric]["Averaged"] = spread
    return errors
