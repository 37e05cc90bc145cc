"""The ``[hf]`` dependencies of the prefabricated kernels, through :mod:`StaICC.extras`."""
from types import ModuleType

from ..extras import require


def require_torch(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    return require("torch", feature)


def require_numpy(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    return require("numpy", feature)


def require_transformers(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    return require("transformers", feature)
