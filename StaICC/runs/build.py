"""A run planned before any inference: its sub-benchmarks, its backend, its works and its cache.

:func:`prepare` makes, in this order, everything a run needs and checks everything that can be
checked without a model: the sub-benchmarks (each built once from the configuration: k, noisy
channel, retrievers, test items and task metrics given at construction), the backend (made so
that it loads its model only when a request must be asked:
:func:`~StaICC.backends.registry.planned_backend`), the works (a methods run's included), the
shard and the cache.  Every refusal is a ``ValueError``, ``TypeError``, ``ImportError`` or
``OSError`` raised before the first inference (``staicc run`` prints it as its one-line
argument error).
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..engine.selection import Shard
from .config import RunConfig
from ..errors import InvalidValueError


@dataclass(frozen=True)
class Prepared:
    """A run planned and checked: what :func:`~StaICC.runs.execute.run_prepared` runs."""

    config: RunConfig
    suite: Dict[str, Any] = field(hash=False)
    backend: Any = field(hash=False)
    planned: Dict[str, List[Any]] = field(hash=False)  # works by part name (a methods run: by method name)
    noisy: Optional[Dict[str, Any]] = field(default=None, hash=False)  # the noisy_channel method's sub-benchmarks
    cache: Any = field(default=None, hash=False)  # the opened prediction cache (None: no cache)
    owns_backend: bool = True  # made here, so closed when the run ends

    def works(self) -> List[Any]:
        return [work for part in self.planned.values() for work in part]

    def close(self) -> None:
        """Close what the run opened: the backend it made and the cache it opened from a path (a cache object
        given in the configuration stays open, as ``run_suite`` leaves it)."""
        if self.owns_backend:
            self.backend.close()
        if self.cache is not None and self.cache is not self.config.cache:
            self.cache.close()


#: sub-benchmark options at their defaults (every sub-benchmark built without them is built the same)
_DEFAULTS = (("test_items", None), ("own_distribution", False))


def build_suite_of(config: RunConfig, noisy_channel: Optional[bool] = None) -> Dict[str, Any]:
    """The sub-benchmarks of ``config``, each built once with everything it needs (``noisy_channel``: in that
    prompt mode whatever ``config.noisy_channel`` says: the noisy_channel method's)."""
    from ..subbenchmarks.suite import build_suite
    # beside the standard's likelihood and ECE: the same on the model's own distribution (non-standard columns)
    options: Dict[str, Any] = {"test_items": config.test_items, "own_distribution": True}
    if config.retriever is not None:
        options["retriever"] = config.retriever
    per_benchmark: Dict[str, Dict[str, Any]] = {}
    if config.tasks:
        from ..tasks.runs import task_options
        options["retrievers"], per_benchmark = task_options(config.tasks)
    options.update(config.suite_options)  # a notebook's further options (own_distribution=False: without them)
    per_benchmark = dict(per_benchmark, **options.pop("per_benchmark", None) or {})
    # options at the sub-benchmarks' defaults are left out: a registered class that takes neither is built too
    options = {key: value for key, value in options.items() if (key, value) not in _DEFAULTS}
    datasets = list(config.datasets) if isinstance(config.datasets, tuple) else config.datasets
    return build_suite(config.benchmarks, datasets, config.k,
                       noisy_channel=config.noisy_channel if noisy_channel is None else noisy_channel,
                       per_benchmark=per_benchmark, **options)


def noisy_suite_of(config: RunConfig) -> Dict[str, Any]:
    """The sub-benchmarks in noisy-channel mode (the noisy_channel method's); one without it refused, one line."""
    try:
        return build_suite_of(config, noisy_channel=True)
    except ValueError as exc:
        raise InvalidValueError(f"method noisy_channel: {exc}; leave it out, or run these sub-benchmarks without it") \
            from None


def prepare(config: RunConfig, backend: Any = None, *, suite: Optional[Dict[str, Any]] = None,
            planned: Optional[Dict[str, List[Any]]] = None, noisy: Optional[Dict[str, Any]] = None) -> Prepared:
    """Build and check the run of ``config`` (``backend``: a backend or function to use instead of making
    ``config.model``'s; it is not closed when the run ends).  ``suite``: sub-benchmarks built beforehand, run
    instead of building them from the configuration (``planned``: what ``plan_suite`` returned for them;
    ``noisy``: the same sub-benchmarks in noisy-channel mode, for a methods run's ``noisy_channel``)."""
    built = suite if suite is not None else build_suite_of(config)
    if config.methods and noisy is None:
        noisy = _noisy_suite(config, given=suite is not None)
    owns = backend is None
    if owns:
        from ..backends.registry import planned_backend
        backend = planned_backend(config.model, **config.arguments)
    else:
        from ..backends.base import as_backend
        backend = as_backend(backend)
    if config.methods:
        from dataclasses import replace

        from ..methods.files import servable
        from ..methods.run import check_backend, plan_methods
        config = replace(config, methods=tuple(servable(backend, config.methods, check_backend)))
        planned = plan_methods(backend, built, config.methods, noisy)
    else:
        if planned is None:
            from ..subbenchmarks.suite import plan_suite
            planned = plan_suite(backend, built)
        _check_proxy(config.lite_proxy, planned, built, "--lite-proxy: " if config.command is not None else "")
    if isinstance(config.selection, Shard):
        from ..engine.sharding import check_shard
        works = [work for part in planned.values() for work in part]
        check_shard(config.selection, works, [backend] * len(works))
    return Prepared(config, built, backend, planned, noisy, open_cache(config.cache), owns)


def _noisy_suite(config: RunConfig, given: bool) -> Optional[Dict[str, Any]]:
    """The noisy_channel method's sub-benchmarks (None when no method reads prompts of that mode); sub-benchmarks
    built beforehand need theirs given too (they cannot be built again from the configuration)."""
    from ..methods.protocol import PROMPTS
    if not any(method.mode == PROMPTS for method in config.methods):
        return None
    if given:
        raise InvalidValueError("method 'noisy_channel' with sub-benchmarks built beforehand (suite=) needs them built "
                                "in noisy-channel mode too: give noisy_suite=build_suite(..., noisy_channel=True)")
    return noisy_suite_of(config)


def _check_proxy(proxy: Any, planned: Dict[str, List[Any]], built: Dict[str, Any], where: str) -> None:
    """A lite run's proxy run of other prompts, other items, another label space or not on every test item of
    ``built`` (the suite): refused before inference (``where``: the message's start, the command line's flag; a
    notebook's ``run_lite`` says it as it is)."""
    if isinstance(proxy, (list, tuple)):  # several proxies: each run checked (the reference model is built here)
        proxy = [p for p in proxy if p != "reference"] or None
    if proxy is not None and proxy != "reference":
        from ..stats.lite_proxy import check_proxy
        from ..stats.lite_run import check_proxy_covers, populations
        try:
            check_proxy(proxy, planned)
            check_proxy_covers(proxy, populations(built))
        except ValueError as error:
            if not where:
                raise
            raise InvalidValueError(f"{where}{error}") from None


def open_cache(path: Optional[str]) -> Any:
    """The run's cache, opened before any inference so that a foreign file is refused before the model loads."""
    if path is None:
        return None
    from ..cache import open_cache as opened
    return opened(path)
