"""The original release's module layout, kept so that code written for StaICC 0.1.1 imports unchanged.

As in the original, the submodules are attributes of this package (``StaICC.util.functional``
after ``import StaICC``); each is imported on first access.
"""
#: ``from StaICC.util import *`` binds no name; each submodule is imported on first access
__all__: list = []
_SUBMODULES = ("configs", "dataset_interface", "experimentor", "functional", "hgf_dataset_loader", "stable_random")


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(_SUBMODULES))
