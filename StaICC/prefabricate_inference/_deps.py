"""Lazy imports of the optional ``[hf]`` dependencies.

The StaICC core is stdlib-only.  Everything in :mod:`StaICC.prefabricate_inference`
that needs torch, transformers or NumPy imports it through these helpers, so
importing the package never pulls them in and a missing extra fails with one
clear message that names the fix.
"""
from types import ModuleType

INSTALL_HINT = "pip install StaICC[hf]"


def _missing(package: str, feature: str, error: ImportError) -> ImportError:
    return ImportError(
        f"{feature} needs the optional dependency '{package}', which is not installed "
        f"({error}). Install the extra with: {INSTALL_HINT}"
    )


def require_torch(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    """Return the torch module or raise an ImportError naming the ``[hf]`` extra."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise _missing("torch", feature, error) from None
    return torch


def require_numpy(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    """Return numpy (installed with transformers) or raise naming the ``[hf]`` extra."""
    try:
        import numpy
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise _missing("numpy", feature, error) from None
    return numpy


def require_transformers(feature: str = "StaICC.prefabricate_inference") -> ModuleType:
    """Return transformers or raise an ImportError naming the ``[hf]`` extra."""
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise _missing("transformers", feature, error) from None
    return transformers
