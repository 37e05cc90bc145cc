"""Model backends: the one interface through which a run reaches a model.

``Backend`` (``score`` a batch of requests, ``identity``/``fingerprint``, ``batch_size``),
``FunctionBackend`` (any ``f(prompt, label_space)``), and the registry that finds
``reference``, ``uniform``, ``hf``, ``openai`` and ``vllm`` by name.  Heavy backends are
imported only when asked for.
"""
from .base import Backend, FunctionBackend, as_backend, fingerprint_of
from .registry import backend_names, make_backend, parse_model_args, register_backend

__all__ = ["Backend", "FunctionBackend", "as_backend", "fingerprint_of", "backend_names", "make_backend",
           "parse_model_args", "register_backend"]
