"""Each method against vanilla, with the statistics ``staicc compare`` uses (:func:`StaICC.stats.compare_runs`).

A method's result and vanilla's are read as two runs on the same test items: a calibration
leaves the prompts as they are, so the comparison is paired (the same bootstrap resamples of
test items for both; McNemar's exact test for accuracy; Holm's correction across datasets,
per sub-benchmark and metric).  A method that writes other prompts (noisy_channel) is
compared unpaired, as ``staicc compare --unpaired`` would (the statistics refuse to pair runs
whose prompts differ).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from ..results.rundir import Part, result_parts
from ..stats import DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, compare_runs, prompt_differences
from .protocol import VANILLA


@dataclass
class ResultRun:
    """A suite result held in memory, as the statistics read a run (``report.runs.Run``)."""

    label: str
    parts: Dict[str, Part]
    path: str = "(in memory)"
    provenance: Dict[str, Any] = field(default_factory=dict)


def result_run(result: Any, label: str) -> ResultRun:
    """The run view of a suite result: its sub-benchmarks unfolded into parts, each with its records by dataset."""
    return ResultRun(label, result_parts(result))


def compare_methods(result: Any, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                    level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA,
                    progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """``{method: Comparison}``: each method of a :class:`~StaICC.methods.run.MethodsResult` against vanilla."""
    if VANILLA not in result:
        raise ValueError("comparing methods needs vanilla's result, the baseline every method is tested against")
    base = result_run(result[VANILLA], VANILLA)
    comparisons = {}
    for name, method_result in result.items():
        if name == VANILLA:
            continue
        other = result_run(method_result, name)
        paired = not prompt_differences(base, other)
        comparisons[name] = compare_runs(base, other, paired=paired, resamples=resamples, seed=seed, level=level,
                                         alpha=alpha, progress=progress)
    return comparisons
