"""The whole standard in one call: every sub-benchmark over one model, each distinct prompt asked once.

The suite builds every sub-benchmark, collects each experimentor's plan and requests, asks
the model for the prompts it has not answered yet (pass by pass, so progress reads
"GLER sst2 pass 2/5" and a killed run resumes from the cache where it stopped), then
computes each sub-benchmark's results from the answers.  A backend that computes shared
prefixes once (``Backend.shares_prefixes``: the hf engine) is asked dataset by dataset
instead, every sub-benchmark's prompts together in text order, so that the prompts that
share demonstrations (a query's GLER passes, Triplet_bias's parts) meet in one call.
Post_bias sends Normal's prompts, GLER's first pass is Normal again, Demo_sens and
Template_sens repeat some of Normal's: those are not asked twice.  Each result equals the
sub-benchmark's own call, bit for bit.
"""
import contextlib
import gc
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ..backends.base import Backend, as_backend
from .builtin import SUB_BENCHMARKS, SubBenchmark, Triplet_bias
from ..engine.cache_use import opened_cache
from ..datasets import resolve_datasets
from ..engine.scoring import score_requests
from ..requests import Answer, Request
from ..results import ResultDict
from ..results.records import Records
from ..engine.outcome import pass_description
from ..standard import DEFAULT_K

#: what ``benchmarks="all"`` runs: the seven sub-benchmarks of the standard (Triplet_bias is three)
STANDARD_SUITE = ("Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens")


def resolve_benchmark_names(benchmarks: Union[str, Sequence[str]]) -> List[str]:
    """``"all"``, one name, a comma-separated string or a list, checked against the registry."""
    if isinstance(benchmarks, str):
        names = list(STANDARD_SUITE) if benchmarks == "all" else [b.strip() for b in benchmarks.split(",") if b.strip()]
    else:
        names = list(benchmarks)
    if not names:
        raise ValueError("no sub-benchmark named; give 'all' or names such as 'Normal,GLER'")
    for name in names:
        if name not in SUB_BENCHMARKS:
            raise ValueError(f"unknown sub-benchmark {name!r}; choose from all, {', '.join(sorted(SUB_BENCHMARKS))}")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"sub-benchmarks named twice: {duplicated}")
    return names


def build_suite(benchmarks: Union[str, Sequence[str]] = "all", datasets: Optional[Sequence[Any]] = None,
                k: int = DEFAULT_K, **options: Any) -> Dict[str, Any]:
    """The sub-benchmark objects by name, sharing one loaded copy of each dataset."""
    names = resolve_benchmark_names(benchmarks)
    loaded = resolve_datasets(datasets)
    return {name: SUB_BENCHMARKS[name](k=k, datasets=loaded, **options) for name in names}


def _parts(bench: Any) -> List[Tuple[str, SubBenchmark]]:
    if isinstance(bench, Triplet_bias):
        return [(part.benchmark_name, part) for part in bench.benchmarks().values()]
    return [(bench.benchmark_name, bench)]


class _Answered(Backend):
    """The suite's answers, served to each sub-benchmark under the real model's identity."""

    def __init__(self, model: Backend, answers: Dict[Any, Answer]) -> None:
        self.model, self.answers = model, answers
        self.name = model.name
        self.batch_size = 1 << 30
        self.serves_validated_answers = True

    def score(self, requests: Sequence[Request]) -> List[Answer]:
        return [self.answers[(r.prompt, r.label_space)] for r in requests]

    def identity(self) -> Dict[str, Any]:
        return self.model.identity()

    @property
    def non_standard(self) -> List[str]:
        return self.model.non_standard


def run_suite(model: Any, benchmarks: Union[str, Sequence[str]] = "all", datasets: Optional[Sequence[Any]] = None,
              k: int = DEFAULT_K, cache: Any = None, *, batched: bool = False, model_id: Optional[str] = None,
              progress: Optional[bool] = None, suite: Optional[Dict[str, Any]] = None,
              planned: Optional[Dict[str, List[Any]]] = None, shard: Optional[Tuple[int, int]] = None,
              **options: Any) -> ResultDict:
    """Run several sub-benchmarks on one model; ``result[name]`` equals ``Name(...)(model)``.

    ``model``: a function ``f(prompt, label_space)`` (``batched=True``: called on a list of
    prompts), or a :class:`~StaICC.backends.Backend`.  ``cache``: a prediction-cache file
    shared by every sub-benchmark and every run that points at it.  ``suite``: sub-benchmark
    objects built by :func:`build_suite` (to run configured ones), ``planned`` what
    :func:`plan_suite` returned for them.  The result maps each
    name to that sub-benchmark's result dict; its ``metadata`` says how many prompts were
    asked, how many were distinct and how many came from the cache, and ``records`` holds
    every per-query record.  ``shard=(index, count)``: ask only that shard of the run's
    distinct prompts (:mod:`StaICC.scaleout.shards`) and store the answers in ``cache``;
    nothing is summarised and the result holds only ``metadata``.
    """
    with fewer_collections():
        return _run_suite(as_backend(model, batched=batched, model_id=model_id),
                          suite if suite is not None else build_suite(benchmarks, datasets, k, **options),
                          cache, progress, planned, shard)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect young objects less often while a suite builds its ~10^5 requests and answers.

    They live until the results are computed, so the default thresholds would traverse
    them again and again (about a third of the framework's time); nothing here makes cycles.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 50_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _run_suite(backend: Backend, benches: Dict[str, Any], cache: Any, progress: Optional[bool],
               planned: Optional[Dict[str, List[Any]]], shard: Optional[Tuple[int, int]] = None) -> ResultDict:
    started = time.perf_counter()
    planned = planned if planned is not None else plan_suite(backend, benches)
    if shard is not None:  # a shard's answers go to the cache only; the merged run summarises
        from ..scaleout.shards import score_shard
        with opened_cache(cache) as store:
            return ResultDict({}, metadata=score_shard(backend, planned, store, shard, progress))
    answers: Dict[Any, Answer] = {}  # by (prompt, label space): Python's string hashes, no digest per prompt
    counts: Dict[str, int] = {"asked": 0, "cached": 0}
    total = 0
    with opened_cache(cache) as store:
        if backend.shares_prefixes:
            for dataset, (part_names, requests) in _by_dataset(planned).items():
                total += len(requests)
                _answer_new(backend, requests, answers, store, progress, counts,
                            f"{', '.join(part_names)} {dataset}", in_text_order=True)
        else:
            for part_name, plans in planned.items():
                for plan, requests in plans:
                    total += len(requests)
                    for number in range(len(plan.passes)):
                        chunk = requests[number * plan.queries_per_pass:(number + 1) * plan.queries_per_pass]
                        _answer_new(backend, chunk, answers, store, progress, counts,
                                    pass_description(plan, number, plan.passes[number].describe()))
    served = _Answered(backend, answers)
    results: Dict[str, Any] = {}
    for name, bench in benches.items():
        parts = {part_name: part.run_prepared([(served, None)] * len(part), True, None, False, planned[part_name])
                 for part_name, part in _parts(bench)}
        if isinstance(bench, Triplet_bias):
            keys = {"Contextual_bias": "contextual", "Domain_bias": "domain", "Post_bias": "post"}
            results[name] = ResultDict({keys[n]: r for n, r in parts.items()},
                                       metadata={keys[n]: r.metadata for n, r in parts.items()})
            results[name].records = Records([r.records for r in parts.values()])
        else:
            results[name] = parts[name]
    metadata = {"benchmarks": list(benches), "model": backend.identity(), "fingerprint": backend.fingerprint(),
                "prompts": total, "distinct_prompts": len(answers), "asked": counts["asked"],
                "from_cache": counts["cached"], "seconds": round(time.perf_counter() - started, 3),
                "standard": all(_standard(r) for r in results.values())}
    suite_result = ResultDict(results, metadata=metadata)
    suite_result.records = Records([r.records for r in results.values()])
    return suite_result


def plan_suite(backend: Backend, benches: Dict[str, Any]) -> Dict[str, List[Any]]:
    """Every check and every prompt of the suite, before the first inference: (plan, requests) per experimentor."""
    planned: Dict[str, List[Any]] = {}
    for bench in benches.values():
        for part_name, part in _parts(bench):
            part.prepare(backend)
            planned[part_name] = [e.planned() for e in part]
    return planned


def _by_dataset(planned: Dict[str, List[Any]]) -> Dict[str, Tuple[List[str], List[Request]]]:
    """Every planned request grouped by dataset, with the sub-benchmarks that ask them."""
    grouped: Dict[str, Tuple[List[str], List[Request]]] = {}
    for part_name, plans in planned.items():
        for _, requests in plans:  # one experimentor: one dataset
            if requests:
                names, found = grouped.setdefault(requests[0].dataset, ([], []))
                if part_name not in names:
                    names.append(part_name)
                found.extend(requests)
    return grouped


def _text_order(request: Request) -> Tuple[Tuple[str, ...], Any]:
    """Sort key that puts prompts with a common beginning next to each other."""
    prompt = request.prompt
    return request.label_space, (prompt,) if isinstance(prompt, str) else tuple(prompt)


def _answer_new(backend: Backend, requests: Sequence[Request], answers: Dict[Any, Answer], cache: Any,
                progress: Optional[bool], counts: Dict[str, int], description: str,
                in_text_order: bool = False) -> None:
    """Ask for the requests whose prompts were not answered earlier in this suite.

    ``in_text_order``: ask them sorted by prompt text, so that each backend call holds
    prompts with shared beginnings (answers are keyed by prompt: the order changes nothing else).
    """
    new: List[Request] = []
    keys: List[Any] = []
    seen = set()
    for request in requests:
        key = (request.prompt, request.label_space)
        if key not in answers and key not in seen:
            seen.add(key)
            new.append(request)
            keys.append(key)
    if not new:
        return
    if in_text_order:
        order = sorted(range(len(new)), key=lambda i: _text_order(new[i]))
        new, keys = [new[i] for i in order], [keys[i] for i in order]
    for key, answer in zip(keys, score_requests(backend, new, cache=cache, progress=progress,
                                                description=description, counts=counts)):
        answers[key] = answer


def _standard(result: ResultDict) -> bool:
    metadata = result.metadata
    if "standard" in metadata:
        return bool(metadata["standard"])
    return all(m.get("standard", False) for m in metadata.values())
