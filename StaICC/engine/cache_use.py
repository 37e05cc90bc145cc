"""The prediction cache a run was given, open for the run's duration.

The ``cache/`` package (and ``sqlite3`` with it) is imported only when a cache is given.
"""
import contextlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from ..requests import Answer, Request
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


def cached_answers(cache: AnswerCache, fingerprint: str, requests: Sequence[Request],
                   validated: Callable[[Answer, Request], Answer]) -> Tuple[List[Optional[Answer]], Any]:
    """The cache's answers to ``requests`` (None where it has none), each ``validated``, and the batch key to
    remember them under.

    A :class:`~StaICC.cache.PredictionCache` first reads the batch's own row (one SELECT for the whole
    batch: see :mod:`StaICC.cache.batches`), whose decoding checks what ``validated`` checks (a label index
    in range, finite scores as many as the labels).  When it has none, or one that does not decode exactly,
    every entry is looked up and checked one by one, and the key comes back so that the batch's row is
    written once every answer is known (:func:`remember_batch`).
    """
    key = None
    lookup_batch = getattr(cache, "lookup_batch", None)
    if lookup_batch is not None:
        found, key = lookup_batch(fingerprint, requests)
        if found is not None:
            return found, None
    return [None if answer is None else validated(answer, request)
            for answer, request in zip(cache.lookup(fingerprint, requests), requests)], key


def remember_batch(cache: Any, fingerprint: str, key: Any, requests: Sequence[Request],
                   answers: Sequence[Answer], as_stored: bool) -> None:
    """Write the batch row under ``key``, only when ``as_stored``: every answer is the one its entry holds (read
    from the entry, or stored by this run as a new entry), so the row answers what the entries answer."""
    if key is not None and as_stored:
        cache.remember_batch(fingerprint, key, requests, answers)
