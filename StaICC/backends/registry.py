"""Backends by name: the CLI's ``--model NAME`` and :func:`make_backend` look here.

Entries are ``"module:factory"`` strings so that naming a backend imports nothing until
it is used: ``import StaICC`` never loads torch, an HTTP client or vLLM.  A factory takes
keyword arguments (strings from ``--model-args key=value,...`` or Python values) and
returns a :class:`~StaICC.backends.base.Backend`; it validates them before loading
anything heavy.
"""
import importlib
from typing import Any, Callable, Dict, List

from .base import Backend

_REGISTRY: Dict[str, str] = {
    "reference": "StaICC.backends.reference:reference_backend",
    "uniform": "StaICC.backends.reference:uniform_backend",
    "hf": "StaICC.backends.hf:hf_backend",
    "openai": "StaICC.backends.openai:openai_backend",
    "vllm": "StaICC.backends.vllm:vllm_backend",
}


_DEFAULT_ENTRIES = dict(_REGISTRY)


def register_backend(name: str, factory: Any) -> None:
    """Add a backend: ``factory`` is a callable or a ``"module:attribute"`` string."""
    if not isinstance(name, str) or not name:
        raise ValueError("a backend name must be a non-empty string")
    _REGISTRY[name] = factory


def backend_names() -> List[str]:
    return sorted(_REGISTRY)


def backend_factory(name: str) -> Callable[..., Backend]:
    if name not in _REGISTRY:
        raise ValueError(f"unknown model backend {name!r}; choose one of {', '.join(backend_names())}")
    entry = _REGISTRY[name]
    if callable(entry):
        return entry
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)


def make_backend(name: str, **arguments: Any) -> Backend:
    """The backend registered as ``name``, built from ``arguments``."""
    return backend_factory(name)(**arguments)


#: backends that can say who they are before loading their model: the factory that describes them
_PLANNED: Dict[str, str] = {"hf": "StaICC.backends.hf_planned:planned_hf_backend"}


def planned_backend(name: str, **arguments: Any) -> Backend:
    """:func:`make_backend`, but a model loaded only when a request must be asked, where the backend allows.

    Every argument is checked now, as by :func:`make_backend`; a run whose answers are all in
    its cache then never loads the model (see :class:`~StaICC.backends.lazy.LazyBackend`).
    """
    entry = _PLANNED.get(name) if _REGISTRY.get(name) == _DEFAULT_ENTRIES.get(name) else None
    if entry is None:
        return make_backend(name, **arguments)
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)(**arguments)


def parse_model_args(text: str) -> Dict[str, str]:
    """``"pretrained=/m,dtype=bfloat16"`` -> ``{"pretrained": "/m", "dtype": "bfloat16"}``.

    Values stay strings; each factory converts and checks its own.  A comma inside a value
    is written ``\\,``.
    """
    arguments: Dict[str, str] = {}
    if not text:
        return arguments
    pieces, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    for piece in pieces:
        if not piece.strip():
            continue
        key, sep, value = piece.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"model argument {piece!r} is not key=value")
        if key in arguments:
            raise ValueError(f"model argument {key!r} is given twice")
        arguments[key] = value.strip()
    return arguments
