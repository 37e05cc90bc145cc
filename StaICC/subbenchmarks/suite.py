"""The whole standard in one call: every sub-benchmark over one model, each distinct prompt asked once.

The suite builds every sub-benchmark, plans every experimentor's work (every check before
the first inference), hands all of them to the one runner
(:func:`~StaICC.engine.runner.run_works`), which asks each dataset's distinct prompts
pass by pass (so progress reads "GLER sst2 pass 2/5" and a killed run resumes from the
cache where it stopped), and assembles each sub-benchmark's result from the outcomes.  A
backend that computes shared prefixes once (``Backend.shares_prefixes``: the hf engine)
is asked dataset by dataset, every sub-benchmark's prompts together in text order, so
that the prompts that share demonstrations (a query's GLER passes, Triplet_bias's parts)
meet in one call.  Post_bias sends Normal's prompts, GLER's first pass is Normal again,
Demo_sens and Template_sens repeat some of Normal's: those are not asked twice.  Each
result equals the sub-benchmark's own call, bit for bit.
"""
import contextlib
import dataclasses
import gc
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..backends.base import Backend, as_backend
from .builtin import SUB_BENCHMARKS, SubBenchmark, sub_benchmark, sub_benchmark_names  # noqa: F401
from ..engine.cache_use import opened_cache
from ..datasets import resolve_datasets
from ..engine.plan import Work
from ..engine.selection import EVERYTHING, SUMMARIZE, AnswerPolicy, Selection, Shard
from ..results import ResultDict
from ..results.records import Records
from ..standard import DEFAULT_K
from ..spec import STANDARD_SUITE, unfold
from ..errors import InvalidValueError

__all__ = ["STANDARD_SUITE", "build_suite", "plan_suite", "resolve_benchmark_names", "run_suite"]


def resolve_benchmark_names(benchmarks: Union[str, Sequence[str]]) -> List[str]:
    """``"all"``, one name, a comma-separated string or a list, checked against the registry.

    "all" in a comma-separated string stands for the standard suite, so
    ``"all,Order_sens"`` adds a diagnosis outside the standard to it.
    """
    if isinstance(benchmarks, str):
        names = []
        for b in (part.strip() for part in benchmarks.split(",")):
            names.extend(STANDARD_SUITE if b == "all" else [b] if b else [])
    else:
        names = list(benchmarks)
    if not names:
        raise InvalidValueError("no sub-benchmark named; give 'all' or names such as 'Normal,GLER'")
    known = sub_benchmark_names()
    for name in names:
        if name not in known:
            from ..validation import did_you_mean
            raise InvalidValueError(f"unknown sub-benchmark {name!r}{did_you_mean(name, known + ['all'])} "
                                    f"(choose from all, {', '.join(known)})")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidValueError(f"sub-benchmarks named twice: {duplicated}")
    return names


def build_suite(benchmarks: Union[str, Sequence[str]] = "all", datasets: Optional[Sequence[Any]] = None,
                k: int = DEFAULT_K, *, noisy_channel: bool = False,
                per_benchmark: Optional[Mapping[str, Mapping[str, Any]]] = None, **options: Any) -> Dict[str, Any]:
    """The sub-benchmark objects by name, sharing one loaded copy of each dataset, each built once.

    ``options`` go to every sub-benchmark (``retriever``, ``test_items``, ``retrievers`` ...),
    ``per_benchmark[name]`` to that one only; ``noisy_channel`` is refused, before anything is
    built, for a sub-benchmark that does not support it.
    """
    names = resolve_benchmark_names(benchmarks)
    if noisy_channel:
        for name in names:
            spec = getattr(sub_benchmark(name), "spec", None)
            if spec is not None and not spec.noisy_channel:
                raise InvalidValueError(f"{name} does not support noisy-channel prompts")
        options = dict(options, noisy_channel=True)
    loaded = resolve_datasets(datasets)
    per_benchmark = per_benchmark or {}
    return {name: sub_benchmark(name)(k=k, datasets=loaded, **options, **per_benchmark.get(name, {}))
            for name in names}


def suite_parts(name: str, bench: Any) -> List[Tuple[str, str, SubBenchmark]]:
    """(result key, part name, sub-benchmark) of a suite entry: a compound's parts (spec table), or itself."""
    return [(unfolded.key, unfolded.part, unfolded.value) for unfolded in unfold({name: bench})]


def run_suite(model: Any, benchmarks: Union[str, Sequence[str]] = "all", datasets: Optional[Sequence[Any]] = None,
              k: int = DEFAULT_K, cache: Any = None, *, batched: bool = False, model_id: Optional[str] = None,
              progress: Optional[bool] = None, suite: Optional[Dict[str, Any]] = None,
              planned: Optional[Dict[str, List[Any]]] = None, requests_per_call: Optional[int] = None,
              shard: Optional[Union[Shard, Tuple[Any, ...]]] = None, selection: Selection = EVERYTHING,
              policy: AnswerPolicy = SUMMARIZE, prediction_kind: Optional[str] = None,
              exact_sum: Optional[str] = None, **options: Any) -> ResultDict:
    """Run several sub-benchmarks on one model; ``result[name]`` equals ``Name(...)(model)``.

    ``model``: a function ``f(prompt, label_space)`` (``batched=True``: called on a list of
    prompts), or a :class:`~StaICC.backends.Backend`.  ``cache``: a prediction-cache file
    shared by every sub-benchmark and every run that points at it.  ``suite``: sub-benchmark
    objects built by :func:`build_suite` (to run configured ones), ``planned`` what
    :func:`plan_suite` returned for them; ``options`` go to :func:`build_suite` otherwise
    (``test_items=QuerySubset...`` evaluates a subset of the test items).  ``requests_per_call``:
    how many requests one backend call receives (default: the backend's own).  The result maps
    each name to that sub-benchmark's result dict; its ``metadata`` says how many prompts were
    asked, how many were distinct and how many came from the cache, and ``records`` holds every
    per-query record.  ``selection`` (:mod:`StaICC.engine.selection`): a ``Shard`` asks only
    that shard of the run's distinct prompts and stores the answers in ``cache``, ``Nothing()``
    counts them; either way nothing is summarised and the result holds only ``metadata``.
    ``shard=(index, count[, unit])`` is the same as ``selection=Shard(index, count, unit)``.
    ``prediction_kind``: what a function's vectors are (see :mod:`StaICC.metrics.exact_sum`; a backend says
    so itself). ``exact_sum="original"``: declared rows (a model backend's, a function's with a
    ``prediction_kind``) meet the original's exact check instead of the softmax branch, to replicate a
    published run (the run says it is not standard); the same as ``policy``'s ``exact_sum``.

    Example: the built-in lexical model on TREC's first 8 test items (a smoke run, marked non-standard)::

        >>> from StaICC import run_suite
        >>> from StaICC.backends.reference_model import lexical_icl
        >>> from StaICC.engine.selection import QuerySubset
        >>> result = run_suite(lexical_icl, "Normal", datasets=["TREC"], test_items=QuerySubset.first(8),
        ...                    progress=False)
        >>> sorted(result), result["Normal"]["Averaged results"]["accuracy"], result.metadata["prompts"]
        (['Normal'], 0.3125, 16)
    """
    with fewer_collections():
        backend = as_backend(model, batched=batched, model_id=model_id, prediction_kind=prediction_kind)
        benches = suite if suite is not None else build_suite(benchmarks, datasets, k, **options)
        planned = planned if planned is not None else plan_suite(backend, benches)
        if shard is not None:
            selection = shard if isinstance(shard, Shard) else Shard(*shard)
        if exact_sum is not None:
            policy = dataclasses.replace(policy, exact_sum=exact_sum)
        return _run_suite(backend, benches, cache, progress, planned, requests_per_call, selection, policy)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect young objects less often while a suite builds its ~10^4 requests and answers per dataset.

    They live until the dataset's results are computed, so the default thresholds would
    traverse them again and again; nothing here makes cycles.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 50_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def plan_suite(backend: Backend, benches: Dict[str, Any]) -> Dict[str, List[Work]]:  # noqa: ARG001  (public signature; the backend is chosen when the works run)
    """Every check of the suite, before the first inference: the works of each part, by part name.

    Each work iterates as ``(plan, requests)`` (its prompts are written when read).
    """
    planned: Dict[str, List[Work]] = {}
    for name, bench in benches.items():
        for _key, part_name, part in suite_parts(name, bench):
            planned[part_name] = part.works()
    return planned


def _run_suite(backend: Backend, benches: Dict[str, Any], cache: Any, progress: Optional[bool],
               planned: Dict[str, List[Work]], requests_per_call: Optional[int], selection: Selection,
               policy: AnswerPolicy) -> ResultDict:
    from ..engine.runner import run_works
    started = time.perf_counter()
    works = [work for part_works in planned.values() for work in part_works]
    counts: Dict[str, Any] = {}
    if isinstance(selection, Shard):  # refused before the cache is opened
        from ..engine.sharding import check_shard
        check_shard(selection, works, [backend] * len(works))
    with opened_cache(cache) as store:
        outcomes = run_works(works, [backend] * len(works), cache=store, progress=progress, distinct=True,
                             counts=counts, requests_per_call=requests_per_call, selection=selection, policy=policy)
    metadata = {"prompts": counts["prompts"], "distinct_prompts": counts["distinct"], "asked": counts["asked"],
                "from_cache": counts["cached"], "score_calls": counts["calls"]}
    if not outcomes:  # a shard or a dry run: answers stored or counted, nothing summarised
        metadata.update(model=backend.identity(), fingerprint=backend.fingerprint(), standard=False,
                        seconds=round(time.perf_counter() - started, 3))
        if "shard" in counts:
            metadata["shard"] = counts["shard"]
        return ResultDict({}, metadata=metadata)
    results = _assembled(backend, benches, outcomes)
    identity = {"identity": backend.identity(), "fingerprint": backend.fingerprint()}
    metadata = {"benchmarks": list(benches), "model": identity["identity"], "fingerprint": identity["fingerprint"],
                **metadata, "seconds": round(time.perf_counter() - started, 3),
                "standard": all(_standard(r) for r in results.values())}
    suite_result = ResultDict(results, metadata=metadata)
    suite_result.records = Records([r.records for r in results.values()])
    return suite_result


def _assembled(backend: Backend, benches: Dict[str, Any], outcomes: List[Any]) -> Dict[str, Any]:
    """Each sub-benchmark's result from the outcomes of its parts' works."""
    by_part: Dict[str, List[Any]] = {}
    for outcome in outcomes:
        by_part.setdefault(outcome.work.part, []).append(outcome)
    described: Dict[int, Any] = {}
    results: Dict[str, Any] = {}
    for name, bench in benches.items():
        parts = [(key, part.collect(by_part.get(part_name, []), [backend] * len(part), True, 0.0, described))
                 for key, part_name, part in suite_parts(name, bench)]
        if len(parts) == 1 and parts[0][0] == name:
            results[name] = parts[0][1]
        else:
            results[name] = ResultDict(dict(parts), metadata={key: r.metadata for key, r in parts})
            results[name].records = Records([r.records for _, r in parts])
    return results


def _standard(result: ResultDict) -> bool:
    metadata = result.metadata
    if "standard" in metadata:
        return bool(metadata["standard"])
    return all(m.get("standard", False) for m in metadata.values())
