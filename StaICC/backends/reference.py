"""The built-in, dependency-free models as backends: ``reference`` (lexical) and ``uniform``."""
from typing import Any, Dict

from ..errors import InvalidValueError
from .base import FunctionBackend

#: bump a model's version when its scoring changes, so that cached answers are not reused
REFERENCE_MODEL_VERSION = 1
#: per model: uniform became chance (a drawn label) in version 2
REFERENCE_MODEL_VERSIONS = {"lexical": REFERENCE_MODEL_VERSION, "uniform": 2}


class ReferenceBackend(FunctionBackend):
    """A built-in model by name; its identity is its name and version, not its bytecode."""

    name = "reference"
    reproducible_rows = True  # pure-Python arithmetic: the same bits on every route and machine

    def __init__(self, model: str = "lexical") -> None:
        from .reference_model import REFERENCE_MODELS
        if model not in REFERENCE_MODELS:
            raise InvalidValueError(f"unknown reference model {model!r}; choose one of {', '.join(sorted(REFERENCE_MODELS))}")
        super().__init__(REFERENCE_MODELS[model], batch_size=256)
        self.model = model

    def identity(self) -> Dict[str, Any]:
        return {"backend": "reference", "model": self.model, "version": REFERENCE_MODEL_VERSIONS[self.model]}


def _no_arguments(name: str, arguments: Dict[str, Any]) -> None:
    if arguments:
        raise InvalidValueError(f"the {name} backend takes no model arguments, got {', '.join(sorted(arguments))}")


def reference_backend(model: str = "lexical", **arguments: Any) -> ReferenceBackend:
    _no_arguments("reference", arguments)
    return ReferenceBackend(model)


def uniform_backend(**arguments: Any) -> ReferenceBackend:
    _no_arguments("uniform", arguments)
    return ReferenceBackend("uniform")
