"""Methods as an axis of a run: every method on every requested sub-benchmark and dataset, in one run.

:func:`run_methods` plans the plain works of the sub-benchmarks (``vanilla``), the
noisy-channel works when ``noisy_channel`` is asked, and a
:class:`~StaICC.methods.works.MethodWork` per calibration and plain work, then hands all of
them to the one runner (:func:`~StaICC.engine.runner.run_works`): one cache, one dedup (a
calibration that reads the label probabilities asks nothing of the test prompts that the
plain run does not ask), and every check — a method the backend cannot serve included —
before the first inference.  The result maps each method to the suite's result under it.
"""
import time
from typing import Any, Dict, List, Optional, Sequence, Union

from ..errors import InvalidValueError
from ..backends.base import as_backend
from ..engine.cache_use import opened_cache
from ..requests import KIND_NAMES, LABELS
from ..results import ResultDict
from ..results.records import Records
from ..standard import DEFAULT_K
from ..subbenchmarks.suite import _assembled, _standard, build_suite, fewer_collections, suite_parts
from .files import resolve_methods, servable
from .protocol import PLAIN, PROMPTS, VANILLA, Method, needed_kinds
from .works import method_work, prompt_mode_work

MethodEntry = Union[str, Method]


class MethodsResult(ResultDict):
    """``result[method]``: the suite's result under that method (``result["vanilla"]`` is the plain run's);
    ``metadata``: the run's counts and each method as provenance records it."""

    def __init__(self, *args: Any, methods: Sequence[Method] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.methods: Dict[str, Method] = {m.name: m for m in methods}

    def compare(self, **options: Any) -> Dict[str, Any]:
        """Each method against vanilla (:func:`StaICC.methods.compare.compare_methods`, which takes ``options``)."""
        from .compare import compare_methods
        return compare_methods(self, **options)


def plan_methods(backend: Any, benches: Dict[str, Any], methods: Sequence[Method],
                 noisy: Optional[Dict[str, Any]] = None) -> Dict[str, List[Any]]:
    """Each method's works, by method name (every check before any inference).

    ``noisy``: the sub-benchmarks built in noisy-channel mode (for a ``prompts`` method).  A
    method that needs an answer the backend does not give (a hidden state from an HTTP
    server, label probabilities from a generative backend) is refused here.
    """
    plain = [(work, experimentor.k) for name, bench in benches.items()
             for _key, _part_name, part in suite_parts(name, bench)
             for work, experimentor in zip(part.works(), part.get_experimentors())]
    planned: Dict[str, List[Any]] = {}
    for method in methods:
        if method.mode == PLAIN:
            planned[method.name] = [work for work, _k in plain]
        elif method.mode == PROMPTS:
            if noisy is None:
                raise InvalidValueError(f"method {method.name!r} needs the sub-benchmarks built in its prompt mode")
            planned[method.name] = [prompt_mode_work(method, work) for name, bench in noisy.items()
                                    for _key, _part_name, part in suite_parts(name, bench) for work in part.works()]
        else:
            planned[method.name] = [method_work(method, work, k) for work, k in plain]
        check_backend(backend, method, planned[method.name])
    return planned


def check_backend(backend: Any, method: Method, works: Sequence[Any]) -> None:
    """Refuse, before any inference, a method whose answers the backend cannot give."""
    training = [item for work in works for _data, items in getattr(work, "training", ()) for item in items]
    answered = tuple(getattr(backend, "request_kinds", (LABELS,)))
    missing = [kind for kind in needed_kinds(method, training) if kind not in answered]
    if missing:
        raise InvalidValueError(f"method {method.name!r} needs {' and '.join(KIND_NAMES[k] for k in missing)}, which the "
                                f"{backend.name} backend does not give (it answers {', '.join(KIND_NAMES[k] for k in answered)}"
                                "); the hf backend gives them")
    if training and getattr(backend, "needs_segments", False):
        raise InvalidValueError(f"method {method.name!r} writes its calibration prompts whole; a backend that reads "
                                "demonstration boundaries (fewshot_as_multiturn=true) cannot split them: leave it out")
    if method.calibrates and method.needs_probabilities and backend.identity().get("scoring") == "generate":
        raise InvalidValueError(f"method {method.name!r} reads label probabilities; the {backend.name} backend with "
                                "scoring=generate answers label indexes: use a log-probability scoring")


def run_methods(model: Any, methods: Sequence[MethodEntry] = (VANILLA,), benchmarks: Union[str, Sequence[str]] = "Normal",
                datasets: Optional[Sequence[Any]] = None, k: int = DEFAULT_K, cache: Any = None, *,
                batched: bool = False, model_id: Optional[str] = None, progress: Optional[bool] = None,
                requests_per_call: Optional[int] = None, suite: Optional[Dict[str, Any]] = None,
                noisy_suite: Optional[Dict[str, Any]] = None, **options: Any) -> MethodsResult:
    """Every method on every sub-benchmark: ``result[name]`` is the suite's result under method ``name``.

    ``methods``: built-in names (``vanilla``, ``noisy_channel``, ``contextual``, ``domain``,
    ``batch``, ``knn``, ``knn_centroid``, ``hidden``), method files (``"my_method.py"``, see
    :mod:`StaICC.methods.files`) or :class:`~StaICC.methods.protocol.Method` values; vanilla
    is added when not named.  ``model``, ``cache``, ``batched``, ``model_id``, ``progress``,
    ``requests_per_call`` and ``options`` (``test_items=``, ``retriever=`` ...) as for
    :func:`~StaICC.subbenchmarks.suite.run_suite`; ``suite`` / ``noisy_suite``: sub-benchmarks
    already built (the noisy-channel ones for ``noisy_channel``).  ``result.compare()`` tests
    each method against vanilla.

        >>> from StaICC import run_methods
        >>> from StaICC.backends.reference_model import lexical_icl
        >>> from StaICC.engine.selection import QuerySubset
        >>> result = run_methods(lexical_icl, ["contextual"], "Normal", datasets=["TREC"],
        ...                      test_items=QuerySubset.first(8), progress=False)
        >>> sorted(result), result["vanilla"]["Normal"]["Averaged results"]["accuracy"]
        (['contextual', 'vanilla'], 0.3125)
    """
    chosen = resolve_methods(methods)
    with fewer_collections():
        backend = as_backend(model, batched=batched, model_id=model_id)
        chosen = servable(backend, chosen, check_backend)  # what "all" named and the backend cannot give, left out
        benches = suite if suite is not None else build_suite(benchmarks, datasets, k, **options)
        if any(m.mode == PROMPTS for m in chosen) and noisy_suite is None:
            if suite is not None:
                raise InvalidValueError("method 'noisy_channel' with sub-benchmarks built beforehand (suite=) needs them built "
                                        "in noisy-channel mode too: give noisy_suite=build_suite(..., noisy_channel=True)")
            noisy_suite = noisy_channel_suite(benchmarks, datasets, k, **options)
        planned = plan_methods(backend, benches, chosen, noisy_suite)
        return run_planned_methods(backend, chosen, benches, noisy_suite, planned, cache, progress, requests_per_call)


def noisy_channel_suite(benchmarks: Union[str, Sequence[str]], datasets: Optional[Sequence[Any]], k: int,
                        **options: Any) -> Dict[str, Any]:
    """The sub-benchmarks in noisy-channel mode; one that has no such mode is refused, naming the method."""
    try:
        return build_suite(benchmarks, datasets, k, noisy_channel=True, **options)
    except ValueError as exc:
        raise InvalidValueError(f"method 'noisy_channel': {exc}; leave it out for these sub-benchmarks") from None


def run_planned_methods(backend: Any, methods: Sequence[Method], benches: Dict[str, Any],
                        noisy: Optional[Dict[str, Any]], planned: Dict[str, List[Any]], cache: Any,
                        progress: Optional[bool] = None, requests_per_call: Optional[int] = None, *,
                        write_out: int = 0) -> MethodsResult:
    """Run what :func:`plan_methods` planned, in one :func:`~StaICC.engine.runner.run_works` call, and assemble
    each method's result (``write_out``: print the first prompts of each work as the runner writes them)."""
    from ..engine.runner import run_works
    from ..engine.selection import AnswerPolicy
    started = time.perf_counter()
    works = [work for method in methods for work in planned[method.name]]
    counts: Dict[str, Any] = {}
    with opened_cache(cache) as store:
        outcomes = run_works(works, [backend] * len(works), cache=store, progress=progress, distinct=True,
                             counts=counts, requests_per_call=requests_per_call,
                             policy=AnswerPolicy(write_out=write_out))
    identity = {"model": backend.identity(), "fingerprint": backend.fingerprint()}
    results: Dict[str, Any] = {}
    start = 0
    for method in methods:
        mine = outcomes[start:start + len(planned[method.name])]
        start += len(mine)
        results[method.name] = _method_result(backend, method, noisy if method.mode == PROMPTS else benches, mine,
                                              identity)
    metadata = {"methods": [m.describe() for m in methods], "baseline": VANILLA, **identity,
                "prompts": counts["prompts"], "distinct_prompts": counts["distinct"], "asked": counts["asked"],
                "from_cache": counts["cached"], "score_calls": counts["calls"],
                "seconds": round(time.perf_counter() - started, 3)}
    return MethodsResult(results, metadata=metadata, methods=methods)


def _method_result(backend: Any, method: Method, benches: Dict[str, Any], outcomes: List[Any],
                   identity: Dict[str, Any]) -> ResultDict:
    """One method's suite result, as :func:`~StaICC.subbenchmarks.suite.run_suite` assembles it."""
    results = _assembled(backend, benches, outcomes)
    standard = all(_standard(r) for r in results.values())
    metadata = {"benchmarks": list(benches), **identity, "method": method.describe(), "standard": standard}
    result = ResultDict(results, metadata=metadata)
    result.records = Records([r.records for r in results.values()])
    return result

