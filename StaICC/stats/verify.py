"""Checking a published run: its aggregates against its own records, and an audit of its answers.

Two checks, each with a plain statistical meaning:

1. **Aggregates.** Every number of ``results.json`` (or of an Every Eval Ever export) is
   recomputed from the per-query records by the statistics' own metric code
   (:func:`StaICC.stats.bootstrap.dataset_statistic`), each dataset's, then each
   sub-benchmark's average by the spec table's averaging rule.  A number that differs
   (beyond 1e-9 relative, the statistics' own comparison) is a mismatch naming its
   sub-benchmark, dataset and metric.  This check is exhaustive: it catches every edited
   aggregate that the records do not support.
2. **Audit.** A seeded random sample of N records is asked again with the verifier's model
   and each answer compared with the record: equal bit for bit, within ``tolerance`` (the
   largest absolute difference of a probability; the default covers float32 kernels on
   another machine), or different.  If a share ``a`` of the M records were altered (their
   answers changed, with the aggregates recomputed to match, which check 1 cannot see), a
   sample of N drawn without replacement misses every altered record with probability
   ``C(M - aM, N) / C(M, N)`` (hypergeometric), at most ``(1 - a)^N``.  :func:`audit_size`
   gives the smallest N that makes that at most 5 % for ``a`` = 2 %: 149 for a large run,
   fewer for a small one (all M when M is small).
"""
import math
import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..validation import is_int

#: the default statement: an alteration of this share of records is caught with this probability
ALTERED_SHARE = 0.02
CONFIDENCE = 0.95
#: the largest absolute difference of a probability accepted as "the same answer" when not bit for bit
DEFAULT_TOLERANCE = 1e-4


def miss_probability(population: int, altered: int, sample: int) -> float:
    """P(a sample of ``sample`` of ``population`` records, drawn without replacement, holds none of
    ``altered`` records): prod_{i < sample} (population - altered - i) / (population - i)."""
    if sample > population - altered:
        return 0.0
    p = 1.0
    for i in range(sample):
        p *= (population - altered - i) / (population - i)
    return p


def audit_size(population: int, share: float = ALTERED_SHARE, confidence: float = CONFIDENCE) -> int:
    """The smallest N such that altering ``share`` of ``population`` records (at least one) is caught with
    probability >= ``confidence`` (hypergeometric; ceil(ln(1 - confidence) / ln(1 - share)) = 149 for a
    large population at the defaults)."""
    if population <= 0:
        return 0
    altered = max(1, math.ceil(share * population))
    n = 0
    while n < population and miss_probability(population, altered, n) > 1 - confidence:
        n += 1
    return n


def statement(population: int, sample: int, share: float = ALTERED_SHARE) -> str:
    """What an audit of ``sample`` records that found nothing means."""
    altered = max(1, math.ceil(share * population))
    caught = 1 - miss_probability(population, altered, sample)
    return (f"an alteration of >= {share:.0%} of the {population} records ({altered} or more) would have been "
            f"caught with probability >= {caught:.1%}")


def audit_sample(records: Sequence[Dict[str, Any]], size: int, seed: int) -> List[Dict[str, Any]]:
    """``size`` records drawn without replacement by a generator seeded with ``seed``, from the records in
    (sub-benchmark, dataset, query) order: the same sample for the same run and seed, whatever the file order."""
    ordered = sorted(records, key=lambda r: (str(r["benchmark"]), str(r["dataset"]), int(r["query_index"])))
    return random.Random(f"staicc-verify:{seed}").sample(ordered, min(size, len(ordered)))


@dataclass
class Findings:
    """What verify found: aggregate mismatches, and the audit's outcome."""

    checked: int = 0                                   # aggregate numbers recomputed
    mismatches: List[str] = field(default_factory=list)
    audited: int = 0
    identical: int = 0                                 # answers equal bit for bit
    close: int = 0                                     # within the tolerance
    different: List[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches and not self.different


def recompute_aggregates(run: Any, findings: Findings) -> None:
    """Check 1 over every sub-benchmark of a loaded run (:func:`StaICC.report.runs.load_run`'s value)."""
    from .bootstrap import _recorded, _same, dataset_statistic
    for part in run.parts.values():
        for dataset in part.datasets():
            if dataset not in part.records:
                findings.mismatches.append(f"{part.name} / {dataset}: no records for this dataset")
                continue
            _check_count(part, dataset)
            recorded = _recorded(part.divided.get(dataset, {}))
            point = dataset_statistic(part, dataset, check=False).point()
            for name, value in point.items():
                if name not in recorded:
                    continue
                findings.checked += 1
                if not _same(value, recorded[name]):
                    findings.mismatches.append(f"{part.name} / {dataset}: {name} is {recorded[name]!r} in the "
                                               f"results, {value!r} recomputed from the records")
        _check_average(part, findings)


def _check_count(part: Any, dataset: str) -> None:
    """Refuse a dataset whose records are fewer or more than the run answered (a truncated or padded file)."""
    counts = part.metadata.get("answer_counts")
    expected = counts.get(dataset) if isinstance(counts, dict) else None
    found = len(part.records[dataset])
    if is_int(expected) and found != expected:
        raise InvalidValueError(f"{part.name} / {dataset}: the records file holds {found} records, the run answered "
                                f"{expected}: a truncated or edited records file")


def _check_average(part: Any, findings: Findings) -> None:
    """The averaged row against the spec table's averaging of the datasets' recorded numbers."""
    from ..spec import SPECS
    from ..subbenchmarks.averaging import AVERAGING
    from .bootstrap import _same
    from ..results import flatten
    spec = SPECS.get(part.name)
    if spec is None or not part.divided or not part.averaged:
        return
    expected = flatten(AVERAGING[spec.averaging](part.divided, len(part.divided)))
    recorded = flatten(part.averaged)
    # a dataset's non-finite number (written null) makes its average non-finite; the averaging counts a null as 0
    expected.update({name: math.inf for d in part.divided.values() for name, v in flatten(d).items()
                     if v is None and name in expected})
    for name, value in expected.items():
        if name in recorded and isinstance(value, (int, float)):
            findings.checked += 1
            if not _same(value, recorded[name]):
                findings.mismatches.append(f"{part.name} / Averaged: {name} is {recorded[name]!r} in the results, "
                                           f"{value!r} averaged from the datasets")


def compare_answer(record: Dict[str, Any], row: Sequence[float], tolerance: float, findings: Findings) -> None:
    """One audited answer against its record: bit for bit, within ``tolerance``, or a difference."""
    findings.audited += 1
    recorded = record["prediction"]
    where = f"{record['benchmark']} / {record['dataset']} / query {record['query_index']}"
    if len(recorded) != len(row):
        findings.different.append(f"{where}: {len(row)} label probabilities, the record has {len(recorded)}")
        return
    if all(float(a) == float(b) for a, b in zip(recorded, row)):
        findings.identical += 1
        return
    gap = max(abs(float(a) - float(b)) for a, b in zip(recorded, row))
    if gap <= tolerance:
        findings.close += 1
    else:
        findings.different.append(f"{where}: answer differs from the record by {gap:.3g} (tolerance {tolerance:g}); "
                                  f"recorded {_short(recorded)}, recomputed {_short(row)}")


def _short(row: Sequence[Any]) -> str:
    return "[" + ", ".join(f"{float(v):.6g}" for v in row[:6]) + (", ..." if len(row) > 6 else "") + "]"


def verdict(findings: Findings, population: int) -> Tuple[str, List[str]]:
    """(the verdict line, the lines that explain it)."""
    lines = [f"aggregates: {findings.checked} numbers recomputed from the records, {len(findings.mismatches)} "
             "mismatches"]
    lines += [f"  mismatch: {m}" for m in findings.mismatches]
    if findings.audited:
        lines.append(f"audit: {findings.audited} of {population} records asked again: {findings.identical} bit for "
                     f"bit, {findings.close} within tolerance, {len(findings.different)} different")
        lines += [f"  different: {d}" for d in findings.different]
    if not findings.passed:
        return "FAILED: the results are not supported by their records or by the model", lines
    if not findings.audited:
        return "PASSED (aggregates only): every number follows from the records; no answer was re-scored", lines
    return f"PASSED: every number follows from the records, and {statement(population, findings.audited)}", lines


def prompt_hashes_present(records: Sequence[Dict[str, Any]]) -> Optional[int]:
    """The position of the first record without a prompt hash, or None when every record has one."""
    for i, record in enumerate(records):
        value = record.get("prompt_sha256")
        if not isinstance(value, str) or len(value) != 64:
            return i
    return None
