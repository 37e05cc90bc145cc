"""``StaICC.run_suite`` and ``StaICC.run_methods``: :func:`~StaICC.runs.execute.execute` of the run their
arguments make, returning what the engine returns.

The engine functions (:func:`StaICC.subbenchmarks.suite.run_suite`,
:func:`StaICC.methods.run.run_methods`) stay where they are, for the package's own callers below
this floor; the package's public names are these, so a notebook's call is planned, checked and
asked by the one orchestration ``staicc run`` uses.  They take the engine's every argument and
return its result object itself (``execute(...).result``): the numbers cannot differ.  No record is
assembled (``recorded=False``: no provenance, no methods' tests against vanilla), so a small run
costs what the engine's costs; ``Run.from_result(result, model)`` records one afterwards, as
``staicc run`` records it.  The sub-benchmarks are built as the engine builds them
(``own_distribution=False``: without the non-standard columns ``staicc run`` adds).
"""
import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..engine.selection import EVERYTHING, SUMMARIZE, AnswerPolicy, Selection, Shard
from ..standard import DEFAULT_K
from .config import RunConfig


def run_suite(model: Any, benchmarks: Union[str, Sequence[str]] = "all", datasets: Optional[Sequence[Any]] = None,
              k: int = DEFAULT_K, cache: Any = None, *, batched: bool = False, model_id: Optional[str] = None,
              progress: Optional[bool] = None, suite: Optional[Dict[str, Any]] = None,
              planned: Optional[Dict[str, List[Any]]] = None, requests_per_call: Optional[int] = None,
              shard: Optional[Union[Shard, Tuple[Any, ...]]] = None, selection: Selection = EVERYTHING,
              policy: AnswerPolicy = SUMMARIZE, prediction_kind: Optional[str] = None,
              exact_sum: Optional[str] = None, **options: Any) -> Any:
    """Run several sub-benchmarks on one model; ``result[name]`` equals ``Name(...)(model)``.

    Every argument is :func:`StaICC.subbenchmarks.suite.run_suite`'s (documented there), and so is the
    result; the run is :func:`~StaICC.runs.execute.execute` of the :class:`RunConfig` they make.

        >>> from StaICC import run_suite
        >>> from StaICC.backends.reference_model import lexical_icl
        >>> from StaICC.engine.selection import QuerySubset
        >>> result = run_suite(lexical_icl, "Normal", datasets=["TREC"], test_items=QuerySubset.first(8),
        ...                    progress=False)
        >>> sorted(result), result["Normal"]["Averaged results"]["accuracy"], result.metadata["prompts"]
        (['Normal'], 0.3125, 16)
    """
    from ..backends.base import as_backend
    from .execute import execute
    backend = as_backend(model, batched=batched, model_id=model_id, prediction_kind=prediction_kind)
    if shard is not None:
        selection = shard if isinstance(shard, Shard) else Shard(*shard)
    if exact_sum is not None:
        policy = dataclasses.replace(policy, exact_sum=exact_sum)
    config = notebook_config(backend, benchmarks, datasets, k, cache, options, progress=progress,
                             requests_per_call=requests_per_call, selection=selection, policy=policy,
                             write_out=policy.write_out, exact_sum=policy.exact_sum)
    return execute(config, backend=backend, recorded=False, suite=suite, planned=planned).result


def run_methods(model: Any, methods: Sequence[Any] = ("vanilla",), benchmarks: Union[str, Sequence[str]] = "Normal",
                datasets: Optional[Sequence[Any]] = None, k: int = DEFAULT_K, cache: Any = None, *,
                batched: bool = False, model_id: Optional[str] = None, progress: Optional[bool] = None,
                requests_per_call: Optional[int] = None, suite: Optional[Dict[str, Any]] = None,
                noisy_suite: Optional[Dict[str, Any]] = None, **options: Any) -> Any:
    """Every method on every sub-benchmark: ``result[name]`` is the suite's result under method ``name``.

    Every argument is :func:`StaICC.methods.run.run_methods`'s (documented there), and so is the result
    (``result.compare()`` tests each method against vanilla when asked); the run is
    :func:`~StaICC.runs.execute.execute` of the :class:`RunConfig` they make.

        >>> from StaICC import run_methods
        >>> from StaICC.backends.reference_model import lexical_icl
        >>> from StaICC.engine.selection import QuerySubset
        >>> result = run_methods(lexical_icl, ["contextual"], "Normal", datasets=["TREC"],
        ...                      test_items=QuerySubset.first(8), progress=False)
        >>> sorted(result), result["vanilla"]["Normal"]["Averaged results"]["accuracy"]
        (['contextual', 'vanilla'], 0.3125)
    """
    from ..backends.base import as_backend
    from ..methods.files import resolve_methods
    from .execute import execute
    chosen = tuple(resolve_methods(methods))
    backend = as_backend(model, batched=batched, model_id=model_id)
    config = notebook_config(backend, benchmarks, datasets, k, cache, options, progress=progress,
                             requests_per_call=requests_per_call, methods=chosen)
    return execute(config, backend=backend, recorded=False, suite=suite, noisy_suite=noisy_suite).result


def notebook_config(backend: Any, benchmarks: Union[str, Sequence[str]], datasets: Optional[Sequence[Any]], k: int,
                    cache: Any, options: Dict[str, Any], **fields: Any) -> RunConfig:
    """The :class:`RunConfig` of a notebook's call (``run_suite``, ``run_methods``, ``run_lite``): its
    sub-benchmark options (``options``: ``noisy_channel``, and ``test_items``, ``retriever`` or whatever else
    each sub-benchmark takes, given to each as they are) and ``fields``: the sub-benchmarks are built as
    ``build_suite`` builds them (a subset of the test items given here is not a lite run's sample)."""
    options = dict(options)
    return RunConfig(model=getattr(backend, "name", "function"), benchmarks=_frozen(benchmarks), k=k,
                     datasets=_frozen(datasets), cache=cache, noisy_channel=options.pop("noisy_channel", False),
                     suite_options=dict({"own_distribution": False}, **options), **fields)


def _frozen(given: Any) -> Any:
    """A list or tuple of names as a tuple (a frozen configuration's); anything else as given, for the engine to
    accept or refuse with its own message."""
    return tuple(given) if isinstance(given, (list, tuple)) else given
