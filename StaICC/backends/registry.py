"""Backends by name: the CLI's ``--model NAME`` and :func:`make_backend` look here.

Entries are ``"module:factory"`` strings so that naming a backend imports nothing until
it is used: ``import StaICC`` never loads torch, an HTTP client or vLLM.  A factory takes
keyword arguments (strings from ``--model-args key=value,...`` or Python values) and
returns a :class:`~StaICC.backends.base.Backend`; it validates them before loading
anything heavy.
"""
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..registry import Registry, optional_info
from .base import Backend
from ..errors import InvalidValueError


@dataclass(frozen=True)
class BackendCapabilities:
    """What the package may do with a backend, read here instead of matching its name."""

    batch_api: bool = False  # its requests go through the OpenAI Batch API (``staicc batch``)
    token_counting: bool = False  # a dry run counts its tokens with the model's tokenizer and reads its shape
    per_rank_device: bool = False  # under torchrun each rank's model goes to its own GPU (``cuda:LOCAL_RANK``)
    engine: Optional[str] = None  # the inference engine an EEE export names (its package's version recorded)
    hosted: bool = False  # a server's API (EEE: externally managed unless the URL is local)
    open_weights: bool = False  # EEE's model availability: the weights are open


#: a backend registered without a row: no capability beyond answering requests
NO_CAPABILITIES = BackendCapabilities()

#: backend name -> its factory (``"module:factory"``: nothing is imported until the name is used)
BACKENDS: Registry[Callable[..., Backend]] = Registry("model backend")
BACKENDS.register("reference", "StaICC.backends.reference:reference_backend",
                  info=BackendCapabilities(open_weights=True))
BACKENDS.register("uniform", "StaICC.backends.reference:uniform_backend", info=NO_CAPABILITIES)
BACKENDS.register("hf", "StaICC.backends.hf:hf_backend",
                  info=BackendCapabilities(token_counting=True, per_rank_device=True, engine="transformers"))
BACKENDS.register("openai", "StaICC.backends.openai:openai_backend",
                  info=BackendCapabilities(batch_api=True, hosted=True))
BACKENDS.register("vllm", "StaICC.backends.vllm:vllm_backend", info=BackendCapabilities(engine="vllm"))

_DEFAULT_ENTRIES = {name: BACKENDS.entry(name) for name in BACKENDS}


def register_backend(name: str, factory: Any, capabilities: Optional[BackendCapabilities] = None, *,
                     replace: bool = False) -> None:
    """Add a backend: ``factory`` is a callable or a ``"module:attribute"`` string, ``capabilities`` its row
    (default: none).  A name already registered is refused unless ``replace=True``."""
    BACKENDS.register(name, factory, info=capabilities or NO_CAPABILITIES, replace=replace)


def capabilities(name: Optional[str]) -> BackendCapabilities:
    """The capability row of the backend registered as ``name`` (none for an unknown name or a function)."""
    return optional_info(BACKENDS, name, NO_CAPABILITIES)


def backends_with(capability: str) -> List[str]:
    """The names of the backends that have ``capability`` (a field of :class:`BackendCapabilities`)."""
    return [name for name, row in BACKENDS.rows().items() if getattr(row, capability)]


def backend_names() -> List[str]:
    return BACKENDS.names()


def backend_factory(name: str) -> Callable[..., Backend]:
    if name not in BACKENDS:
        raise InvalidValueError(f"unknown model backend {name!r}; choose one of {', '.join(backend_names())}")
    return BACKENDS.get(name)


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
    entry = _PLANNED.get(name) if BACKENDS.entry(name) == _DEFAULT_ENTRIES.get(name) else None
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
            raise InvalidValueError(f"model argument {piece!r} is not key=value")
        if key in arguments:
            raise InvalidValueError(f"model argument {key!r} is given twice")
        arguments[key] = value.strip()
    return arguments
