"""A backend built on the first request it must answer: a run that finds every answer in its cache loads no model.

A run reads a backend's name, identity and fingerprint (to look answers up in the cache),
whether it shares prefixes or reads demonstration boundaries, and its departures from the
standard before it asks anything.  :class:`LazyBackend` knows those from a description made
without the model (for ``hf``: the model's files, see :mod:`StaICC.backends.hf_planned`) and
builds the real backend only when ``score`` is first called.  The built backend's identity
must equal the described one, else the answers would be stored under another model's
fingerprint: a difference is an error before anything is stored.
"""
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..errors import InferenceError
from ..requests import Answer, Request
from .base import Backend


class LazyBackend(Backend):
    """``build()`` makes the real backend when it must answer; ``described`` says what it will be meanwhile.

    ``described``: a backend-like object whose ``identity()``, ``non_standard``,
    ``shares_prefixes``, ``needs_segments``, ``request_kinds`` and ``requests_per_call`` (None:
    known only once built) are those of the backend ``build`` makes.
    """

    def __init__(self, name: str, build: Callable[[], Backend], described: Any) -> None:
        self.name = name
        self._build, self._backend = build, None
        self._identity: Dict[str, Any] = dict(described.identity())
        self._non_standard: List[str] = list(described.non_standard)
        self.shares_prefixes = bool(getattr(described, "shares_prefixes", False))
        self.needs_segments = bool(getattr(described, "needs_segments", False))
        self.request_kinds = tuple(getattr(described, "request_kinds", Backend.request_kinds))
        self._requests_per_call: Optional[int] = getattr(described, "requests_per_call", None)
        # what its rows are (the exact-sum rule's branch): a property of the scoring mode, known without the model
        self.prediction_kind: Optional[str] = getattr(described, "prediction_kind", None)
        self.reproducible_rows = bool(getattr(described, "reproducible_rows", False))

    @property
    def built(self) -> bool:
        return self._backend is not None

    def backend(self) -> Backend:
        """The real backend, built now if it was not yet (its identity checked against the description)."""
        if self._backend is None:
            backend = self._build()
            identity = backend.identity()
            if identity != self._identity:
                changed = sorted(k for k in set(identity) | set(self._identity)
                                 if identity.get(k) != self._identity.get(k))
                backend.close()
                raise InferenceError(f"the {self.name} model that was loaded is not the one its files described "
                                     f"({', '.join(changed)} differ); give these model arguments explicitly "
                                     "(for example dtype=...)")
            self._backend = backend
        return self._backend

    def score(self, requests: Sequence[Request]) -> List[Answer]:
        return self.backend().score(requests)

    def identity(self) -> Dict[str, Any]:
        return dict(self._identity)

    @property
    def non_standard(self) -> List[str]:
        return list(self._non_standard)

    @property  # type: ignore[override]
    def requests_per_call(self) -> int:
        if self._requests_per_call is None:  # known only once built (it may depend on the device)
            return self.backend().requests_per_call
        return self._requests_per_call

    @property
    def planned_requests_per_call(self) -> Optional[int]:
        """The requests per call known without building: the built backend's, the given or described one, or
        None (it depends on the device the load picks)."""
        return self._backend.requests_per_call if self._backend is not None else self._requests_per_call

    @requests_per_call.setter
    def requests_per_call(self, value: int) -> None:
        self._requests_per_call = value

    def numerics(self) -> Dict[str, Any]:
        """What the loaded model computed its answers under (device, packing ...); empty when nothing was loaded:
        every answer came from the cache, whose own notes say how they were computed."""
        own = getattr(self._backend, "numerics", None)
        return dict(own()) if callable(own) else {}

    def usage(self) -> Dict[str, Any]:
        """What the loaded model computed (tokens ...); empty when no model was loaded."""
        own = getattr(self._backend, "usage", None)
        return dict(own()) if callable(own) else {}

    @property
    def runtime(self) -> Optional[Dict[str, Any]]:
        """How the model ran here (threads ...), once built; None when no model was loaded (nothing ran here)."""
        return getattr(self._backend, "runtime", None)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
