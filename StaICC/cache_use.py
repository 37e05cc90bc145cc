"""Opening the prediction cache a run was given: a path, an open cache, or nothing."""
import contextlib
from typing import Any, Iterator, Optional


@contextlib.contextmanager
def opened_cache(cache: Any) -> Iterator[Optional[Any]]:
    """Yield an open :class:`~StaICC.cache.PredictionCache` (closed afterwards if opened here) or None."""
    if cache is None:
        yield None
        return
    if hasattr(cache, "lookup") and hasattr(cache, "store"):
        yield cache
        return
    if not isinstance(cache, (str, bytes)) and not hasattr(cache, "__fspath__"):
        raise TypeError(f"cache must be a file path or a PredictionCache, got {type(cache).__name__}")
    from .cache import PredictionCache
    store = PredictionCache(cache)
    try:
        yield store
    finally:
        store.close()
