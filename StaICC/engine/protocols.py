"""What the runner needs of a model and of a prediction cache, as typed protocols.

The engine receives a backend and a cache from its callers; these protocols say what it
reads of them, so that a type checker (and a reader) knows.  :class:`~StaICC.backends.base.Backend`
and :class:`~StaICC.cache.PredictionCache` satisfy them; so does a backend that is built
only when it must answer (:class:`~StaICC.backends.lazy.LazyBackend`).
"""
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from ..requests import Answer, Request


class ScoringBackend(Protocol):
    """A model the runner asks: ``score`` answers a call's requests, the rest describes it."""

    name: str
    requests_per_call: int
    shares_prefixes: bool
    needs_segments: bool
    request_kinds: Tuple[str, ...]

    def score(self, requests: Sequence[Request]) -> List[Answer]: ...

    def identity(self) -> Dict[str, Any]: ...

    def fingerprint(self) -> str: ...

    @property
    def non_standard(self) -> List[str]: ...


class AnswerCache(Protocol):
    """A prediction cache: answers by (model fingerprint, request)."""

    def lookup(self, fingerprint: str, requests: Sequence[Request]) -> List[Optional[Answer]]: ...

    def store(self, fingerprint: str, requests: Sequence[Request], answers: Sequence[Answer]) -> Optional[int]: ...
