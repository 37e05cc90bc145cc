"""The prediction cache a run was given, open for the run's duration.

The ``cache/`` package (and ``sqlite3`` with it) is imported only when a cache is given.
"""
import contextlib
from typing import Any, Iterator, Optional

from .protocols import AnswerCache


@contextlib.contextmanager
def opened_cache(cache: Any) -> Iterator[Optional[AnswerCache]]:
    """Yield :func:`~StaICC.cache.open_cache`'s cache (or None); close it afterwards if it was opened here."""
    if cache is None:
        yield None
        return
    from ..cache import open_cache
    store = open_cache(cache)
    try:
        yield store
    finally:
        if store is not cache:
            store.close()
