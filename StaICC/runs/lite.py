"""A lite run's record: its estimates of the full run and the full run's prompt counts.

The statistics (:mod:`StaICC.stats.lite_run`) estimate from records and the sub-benchmarks'
test labels; building the full run's sub-benchmarks and counting its prompts with a dry run is
the run's business, here: :func:`run_lite` (``StaICC.run_lite``) and the lite part of
:func:`~StaICC.runs.execute.record`.
"""
from dataclasses import replace
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from ..stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from .build import Prepared, build_suite_of
from .config import RunConfig
from ..errors import InvalidValueError


def full_run_counts(model: Any, suite: Dict[str, Any]) -> Dict[str, int]:
    """Prompts and distinct prompts of the full run of ``suite`` (built without a subset), counted by a dry run."""
    from ..engine.selection import Nothing
    from ..subbenchmarks.suite import run_suite
    counted = run_suite(model, suite=suite, selection=Nothing()).metadata
    return {"prompts": counted["prompts"], "distinct": counted["distinct_prompts"]}


def full_counts_of(config: RunConfig, backend: Any) -> Dict[str, int]:
    """The prompt counts of ``config``'s run on every test item (what a lite run of it saves)."""
    return full_run_counts(backend, build_suite_of(replace(config, test_items=None)))


def lite_record(prepared: Prepared, result: Any) -> Tuple[Any, Dict[str, Any]]:
    """(the estimates, the ``provenance.lite`` section) of a finished lite run, with the full run's counts."""
    from ..stats.lite_run import lite_section
    full = full_counts_of(prepared.config, prepared.backend)
    return lite_section(result, prepared.config.lite_sample, prepared.suite, prepared.planned, full_counts=full)


def run_lite(model: Any, lite: Any = 0.125, benchmarks: Union[str, Sequence[str]] = "all",
             datasets: Optional[Sequence[Any]] = None, k: Optional[int] = None, cache: Any = None, *,
             resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL,
             **options: Any) -> Any:
    """A lite run: ``run_suite`` on the lite items, with every standard number estimated for the full run.

    ``lite``: the fraction of each sub-benchmark's test items (0.125: 12.5 %), or a
    :class:`~StaICC.sampling.lite.LiteSample` (``LiteSample(items=64)``: 64 items each).
    ``benchmarks``, ``datasets``, ``k``, ``cache`` and ``options`` are :func:`run_suite`'s;
    ``resamples``, ``seed`` and ``level`` the intervals'.  Returns run_suite's result (the
    subset's own numbers, marked non-standard) with ``result.lite`` (the
    :class:`~StaICC.stats.lite.LiteResult`) and ``result.metadata["lite"]`` (what
    ``results.json`` records); NumPy is needed, and checked before anything is asked.
    ``Run.from_result(result, model)`` records it as ``staicc run --lite`` does.
    """
    from ..backends.base import as_backend
    from ..engine.selection import QuerySubset
    from ..standard import DEFAULT_K
    from ..stats.bootstrap import _check_options
    from ..stats.lite_run import lite_section, require_numpy, sample_of
    from ..subbenchmarks.suite import build_suite, plan_suite, run_suite
    sample = sample_of(lite)
    require_numpy()
    _check_options(resamples, level, seed)
    if "test_items" in options:
        raise InvalidValueError("run_lite chooses the test items itself; leave test_items out")
    run_options = {key: options.pop(key) for key in ("progress", "requests_per_call", "prediction_kind")
                   if key in options}
    backend = as_backend(model, batched=options.pop("batched", False), model_id=options.pop("model_id", None),
                         prediction_kind=run_options.pop("prediction_kind", None))
    suite = build_suite(benchmarks, datasets, DEFAULT_K if k is None else k,
                        test_items=QuerySubset.lite(sample.fraction, items=sample.items), **options)
    planned = plan_suite(backend, suite)
    result = run_suite(backend, suite=suite, planned=planned, cache=cache, **run_options)
    result.lite, result.metadata["lite"] = lite_section(result, sample, suite, planned, resamples=resamples,
                                                        seed=seed, level=level)
    return result
