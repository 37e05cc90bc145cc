"""A regression gate for CI: conditions on the differences of a comparison that make a job fail.

A condition is ``METRIC:THRESHOLD[:WHERE][:significant]``:

- ``METRIC``: a metric as the comparison tables name it (``accuracy``, ``macro_F1``,
  ``expected_calibration_error_1``, ``entropy``, ``DL div.``, ``consistency``, ...), optionally
  after a sub-benchmark and a slash (``Normal/accuracy``, ``GLER/accuracy``). Without a
  sub-benchmark it applies to every sub-benchmark that reports the metric as a value (GLER's
  regression slopes only when GLER is named);
- ``THRESHOLD``: a number with its sign: ``-0.01`` holds when B - A < -0.01 (a drop of more
  than 0.01), ``+0.02`` when B - A > +0.02; ``-0`` / ``+0`` hold on any drop / any rise (a
  difference below the noise floor is zero, so noise never meets them);
- ``WHERE``: ``averaged`` (default: the averaged row), ``any`` (the averaged row or any
  dataset), or one dataset's name;
- ``significant``: only differences starred significant count (Holm-corrected per dataset,
  uncorrected on the averaged row); without it every difference counts.

Conditions are parsed before any run is read (:func:`parse_condition` raises ValueError with
what was expected); :func:`evaluate` lists every (comparison, sub-benchmark, row) where one
holds.  A difference that is not a number (the KL divergence of two runs that are both
infinite) meets every condition on it: a gate fails closed.
"""
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ..errors import InvalidValueError
from ..spec import SPECS

#: the exit status of ``staicc compare`` when a --fail-if condition holds (1: an error, 2: an argument error)
GATE_EXIT_STATUS = 3

_THRESHOLD = re.compile(r"^[+-](\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_WHERE_FIXED = ("averaged", "any")


@dataclass(frozen=True)
class Condition:
    """One parsed ``--fail-if`` condition."""

    text: str
    metric: str
    threshold: float
    rising: bool
    benchmark: Optional[str] = None
    where: str = "averaged"
    significant_only: bool = False

    def holds_for(self, delta: Any, significant: bool) -> bool:
        """Whether a difference B - A meets the condition."""
        if self.significant_only and not significant:
            return False
        if not isinstance(delta, (int, float)) or math.isnan(delta):
            return True
        return delta > self.threshold if self.rising else delta < self.threshold

    def to_dict(self) -> Dict[str, Any]:
        return {"condition": self.text, "benchmark": self.benchmark, "metric": self.metric,
                "threshold": self.threshold, "direction": "rise" if self.rising else "drop", "where": self.where,
                "significant_only": self.significant_only}


def known_metrics() -> List[str]:
    """The metric names a condition may use: every result key of the metric registry."""
    from ..metrics.registry import METRICS
    from ..metrics.agreement import GROUPED_METRICS
    return sorted({info.result_key for info in METRICS.values()} | set(GROUPED_METRICS))


def parse_condition(text: str) -> Condition:
    """Parse ``METRIC:THRESHOLD[:WHERE][:significant]`` (see the module docstring); ValueError when malformed."""
    expected = "expected METRIC:THRESHOLD[:WHERE][:significant], e.g. accuracy:-0.01 or Normal/accuracy:-0.01:any"
    parts = text.split(":")
    if len(parts) < 2 or len(parts) > 4:
        raise InvalidValueError(f"--fail-if {text!r}: {expected}")
    significant_only = len(parts) > 2 and parts[-1].strip() == "significant"
    if significant_only:
        parts = parts[:-1]
    if len(parts) > 3:
        raise InvalidValueError(f"--fail-if {text!r}: {expected}")
    name, threshold = parts[0].strip(), parts[1].strip()
    where = parts[2].strip() if len(parts) > 2 else "averaged"
    where = where.lower() if where.lower() in _WHERE_FIXED else where
    benchmark, _, metric = name.rpartition("/")
    if benchmark and benchmark not in SPECS:
        raise InvalidValueError(f"--fail-if {text!r}: unknown sub-benchmark {benchmark!r}; known: {', '.join(SPECS)}")
    known = known_metrics()
    if metric not in known and not metric.startswith("consistency"):
        raise InvalidValueError(f"--fail-if {text!r}: unknown metric {metric!r}; known: {', '.join(known)}")
    if not _THRESHOLD.match(threshold):
        raise InvalidValueError(f"--fail-if {text!r}: the threshold must be a number with its sign (-0.01 fails on a "
                                f"drop of more than 0.01, +0.02 on a rise of more than 0.02), got {threshold!r}")
    value = float(threshold)
    if not math.isfinite(value):
        raise InvalidValueError(f"--fail-if {text!r}: the threshold must be finite, got {threshold!r}")
    if not where:
        raise InvalidValueError(f"--fail-if {text!r}: WHERE is 'averaged', 'any' or a dataset name, got nothing")
    return Condition(text, metric, value, threshold.startswith("+"), benchmark or None, where, significant_only)


def _applies(condition: Condition, benchmark: str) -> bool:
    if condition.benchmark is not None:
        return condition.benchmark == benchmark
    spec = SPECS.get(benchmark)
    return spec is None or not spec.has_slopes


@dataclass(frozen=True)
class Failure:
    """Where a condition holds: the comparison's runs, the sub-benchmark, the row and the difference."""

    condition: Condition
    a: str
    b: str
    benchmark: str
    row: str
    value_a: Any
    value_b: Any
    delta: Any
    significant: bool

    def line(self) -> str:
        return (f"--fail-if {self.condition.text} holds: {self.b} vs {self.a}, {self.benchmark} / {self.row}: "
                f"{self.condition.metric} {_number(self.value_a)} -> {_number(self.value_b)} (difference "
                f"{_number(self.delta)}{', significant' if self.significant else ''})")

    def to_dict(self) -> Dict[str, Any]:
        return {"condition": self.condition.text, "a": self.a, "b": self.b, "benchmark": self.benchmark,
                "row": self.row, "value_a": self.value_a, "value_b": self.value_b, "delta": self.delta,
                "significant": self.significant}


def _number(value: Any) -> str:
    """Six significant digits: enough to compare with a threshold, short enough to read."""
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


def evaluate(conditions: Sequence[Condition], comparisons: Sequence[Any]) -> List[Failure]:
    """Every place where a condition holds; ValueError when a condition matches nothing in the comparisons
    (a gate that checks nothing would pass silently)."""
    failures: List[Failure] = []
    for condition in conditions:
        matched = False
        for comparison in comparisons:
            for name, part in comparison.parts.items():
                if not _applies(condition, name):
                    continue
                rows = _rows(condition, part)
                for row, difference in rows:
                    matched = True
                    if condition.holds_for(difference.delta, difference.significant):
                        failures.append(Failure(condition, comparison.a, comparison.b, name, row, difference.a,
                                                difference.b, difference.delta, difference.significant))
        if not matched:
            raise InvalidValueError(f"--fail-if {condition.text}: no difference of {condition.metric!r}"
                                    f"{' in ' + condition.benchmark if condition.benchmark else ''}"
                                    f"{'' if condition.where in _WHERE_FIXED else ' on ' + condition.where} "
                                    "in the compared runs")
    return failures


def _rows(condition: Condition, part) -> List[Any]:
    """The (row name, difference) pairs of one sub-benchmark the condition looks at."""
    rows = []
    if condition.where in _WHERE_FIXED and condition.metric in part.averaged:
        rows.append(("Averaged", part.averaged[condition.metric]))
    for dataset, differences in part.datasets.items():
        if condition.metric in differences and condition.where in ("any", dataset):
            rows.append((dataset, differences[condition.metric]))
    return rows
