"""``StaICC.run_lite``: a lite run from a notebook, :func:`~StaICC.runs.execute.execute` of the run its
arguments make.

What a lite run adds inside ``execute`` (its further looks, the full run's counts, its record) is
:mod:`StaICC.runs.lite_record`'s.
"""
from typing import Any, Optional, Sequence, Union

from ..stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from .config import RunConfig
from ..errors import InvalidValueError


def run_lite(model: Any, lite: Any = 0.125, benchmarks: Union[str, Sequence[str]] = "all",
             datasets: Optional[Sequence[Any]] = None, k: Optional[int] = None, cache: Any = None, *,
             resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL,
             proxy: Any = None, **options: Any) -> Any:
    """A lite run: ``run_suite`` on the lite items, with every standard number estimated for the full run.

    ``lite``: the fraction of each sub-benchmark's test items (0.125: 12.5 %), or a
    :class:`~StaICC.sampling.lite.LiteSample` (``LiteSample(items=64)``: 64 items each).
    ``benchmarks``, ``datasets``, ``k``, ``cache`` and ``options`` are :func:`run_suite`'s;
    ``resamples``, ``seed`` and ``level`` the intervals'.  Returns run_suite's result (the
    subset's own numbers, marked non-standard) with ``result.lite`` (the
    :class:`~StaICC.stats.lite.LiteResult`) and ``result.metadata["lite"]`` (what
    ``results.json`` records); NumPy is needed, and checked before anything is asked.
    ``Run.from_result(result, model)`` records it as ``staicc run --lite`` does.

    It is :func:`~StaICC.runs.execute.execute` of the :class:`RunConfig` these arguments make
    (:func:`lite_run_config`), without the full run's counts ``staicc run --lite`` adds.
    """
    from ..backends.base import as_backend
    from .execute import execute
    backend = as_backend(model, batched=options.pop("batched", False), model_id=options.pop("model_id", None),
                         prediction_kind=options.pop("prediction_kind", None))
    config = lite_run_config(backend, lite, benchmarks, datasets, k, cache, resamples=resamples, seed=seed,
                             level=level, proxy=proxy, **options)
    run = execute(config, backend=backend)
    result = run.result
    result.lite, result.metadata["lite"] = run.lite, run.provenance["lite"]
    return result


def lite_run_config(backend: Any, lite: Any, benchmarks: Union[str, Sequence[str]], datasets: Optional[Sequence[Any]],
                    k: Optional[int], cache: Any, *, resamples: int, seed: int, level: float, proxy: Any,
                    **options: Any) -> RunConfig:
    """The :class:`RunConfig` of a :func:`run_lite` call, its arguments checked before anything is asked (the
    sub-benchmarks built as ``run_suite`` builds them: without the non-standard own-distribution columns)."""
    from ..engine.selection import QuerySubset
    from ..standard import DEFAULT_K
    from ..stats.bootstrap import _check_options
    from ..stats.lite_run import require_numpy, sample_of
    from .config import LiteOptions
    sample = sample_of(lite)
    require_numpy()
    _check_options(resamples, level, seed)
    if "test_items" in options:
        raise InvalidValueError("run_lite chooses the test items itself; leave test_items out")
    from .calls import notebook_config
    progress, requests_per_call = options.pop("progress", None), options.pop("requests_per_call", None)
    return notebook_config(backend, benchmarks, datasets, DEFAULT_K if k is None else k, cache, options,
                           test_items=QuerySubset.lite(sample.fraction, items=sample.items), progress=progress,
                           requests_per_call=requests_per_call, lite_proxy=proxy,
                           lite_options=LiteOptions(resamples, seed, level, full_counts=False))
