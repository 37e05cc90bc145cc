"""Each method against vanilla, with the statistics ``staicc compare`` uses (:func:`StaICC.stats.compare_runs`).

A method's result and vanilla's are read as two runs on the same test items: a calibration
leaves the prompts as they are, so the comparison is paired (the same bootstrap resamples of
test items for both; McNemar's exact test for accuracy; Holm's correction across datasets,
per sub-benchmark and metric).  A method that writes other prompts (noisy_channel) is
compared unpaired, as ``staicc compare --unpaired`` would (the statistics refuse to pair runs
whose prompts differ).
"""
from typing import Any, Callable, Dict, Optional

from ..errors import InvalidValueError
from ..results.run import Run
from ..stats import DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, compare_runs, prompt_differences
from .protocol import VANILLA


def compare_methods(result: Any, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                    level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA,
                    progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """``{method: Comparison}``: each method of a :class:`~StaICC.methods.run.MethodsResult` against vanilla."""
    if VANILLA not in result:
        raise InvalidValueError("comparing methods needs vanilla's result, the baseline every method is tested against")
    base = Run.from_result(result[VANILLA], label=VANILLA)
    comparisons = {}
    for name, method_result in result.items():
        if name == VANILLA:
            continue
        other = Run.from_result(method_result, label=name)
        paired = not prompt_differences(base, other)
        comparisons[name] = compare_runs(base, other, paired=paired, resamples=resamples, seed=seed, level=level,
                                         alpha=alpha, progress=progress)
    return comparisons
