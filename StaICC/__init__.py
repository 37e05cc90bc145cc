"""StaICC: the standardized benchmark for in-context-learning classification.

Write ``f(prompt, label_space) -> logits | probabilities | int`` and call
``Normal()(f)``.  The core needs only the standard library.

``import StaICC`` loads nothing but this file: each public name is imported from its
module on first access (module ``__getattr__``), so tools that only need a constant or
one submodule do not pay for the benchmark machinery.
"""
#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    **dict.fromkeys(("Normal", "Triplet_bias", "Contextual_bias", "Domain_bias", "Post_bias", "GLER", "GLER_corrected",
                     "Template_sens", "Demo_sens", "SubBenchmark"), "subbenchmarks.builtin"),
    **dict.fromkeys(("Order_sens", "Format_spread"), "subbenchmarks.extensions"),
    "single_experimentor": "subbenchmarks.experimentor",
    "prompt_writter": "prompt",
    "demonstration_sampler": "sampling.rows",
    "triplet_dataset": "datasets.split",
    "Dataset": "datasets", "basic_datasets_loader": "datasets",
    "InferenceError": "errors", "StaICCError": "errors", "StaICCWarning": "errors", "TamperingWarning": "errors",
    "run_suite": "runs.calls", "build_suite": "subbenchmarks.suite", "run_methods": "runs.calls",
    "run_lite": "runs.lite",
    "Backend": "backends", "FunctionBackend": "backends", "make_backend": "backends",
    "PredictionCache": "cache", "__version__": "version",
}

#: submodules the original made available as attributes of the package after ``import StaICC``
_SUBMODULES = ("util", "normal", "diagnosis")

#: the documented API: what ``from StaICC import *`` gives (every other name lives in its module)
__all__ = ["Normal", "Triplet_bias", "Contextual_bias", "Domain_bias", "Post_bias", "GLER", "GLER_corrected",
           "Template_sens", "Demo_sens", "Order_sens", "Format_spread", "SubBenchmark", "single_experimentor",
           "prompt_writter", "demonstration_sampler", "triplet_dataset", "Dataset", "basic_datasets_loader",
           "InferenceError", "StaICCError", "StaICCWarning", "TamperingWarning", "run_suite", "build_suite",
           "run_methods", "run_lite", "Backend", "FunctionBackend", "make_backend", "PredictionCache", "__version__"]


#: module paths of this package's own earlier layout -> where the module lives now.  Importing an
#: old path gives the new module object itself (same classes, same state) and a DeprecationWarning.
#: The original 0.1.1 paths (``StaICC.util.*``, ``StaICC.normal`` ...) are real modules, not here.
_MOVED = {
    "StaICC.benchmark": "StaICC.subbenchmarks.builtin",
    "StaICC.subbenchmark": "StaICC.subbenchmarks.generic",
    "StaICC.experiment": "StaICC.subbenchmarks.experimentor",
    "StaICC.suite": "StaICC.subbenchmarks.suite",
    "StaICC.experiment_accessors": "StaICC.subbenchmarks.accessors",
    "StaICC.legacy.experimentor_accessors": "StaICC.subbenchmarks.accessors",
    "StaICC.plan": "StaICC.engine.plan",
    "StaICC.procedures": "StaICC.engine.procedures",
    "StaICC.preflight": "StaICC.engine.preflight",
    "StaICC.inference": "StaICC.engine.scoring",
    "StaICC.run": "StaICC.engine.outcome",
    "StaICC.cache_use": "StaICC.engine.cache_use",
    "StaICC.progress": "StaICC.engine.progress",
    "StaICC.demonstrations": "StaICC.sampling.demonstrations",
    "StaICC.split": "StaICC.datasets.split",
    "StaICC.calibration": "StaICC.methods.calibration",
    "StaICC.prompt_edits": "StaICC.methods.prompt_edits",
    "StaICC.reference_model": "StaICC.backends.reference_model",
    "StaICC.methods.reference_model": "StaICC.backends.reference_model",
    "StaICC.vectors": "StaICC.methods.vectors",
    "StaICC.metrics.original": "StaICC.legacy.functional",
    "StaICC.metrics.numeric": "StaICC.numeric",
    "StaICC.subbenchmarks.spec": "StaICC.spec",
}


class _MovedModuleLoader:
    """Serves a moved module under its old name: the module object itself, not a copy."""

    def __init__(self, new_name: str) -> None:
        self.new_name = new_name
        self.real_spec = None

    def create_module(self, spec: object) -> object:
        import importlib
        import warnings
        warnings.warn(f"{spec.name} moved to {self.new_name}; import it from there",  # type: ignore[attr-defined]
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new_name)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module: object) -> None:
        module.__spec__ = self.real_spec  # the import system set the alias's spec on the real module


class _MovedModuleFinder:
    """A meta-path finder for the names in :data:`_MOVED` (nothing else is looked at)."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> object:  # noqa: ARG004  (the importlib MetaPathFinder signature)
        new_name = _MOVED.get(fullname)
        if new_name is None:
            return None
        return type(__spec__)(fullname, _MovedModuleLoader(new_name))


def _install_alias_finder() -> None:
    import sys
    if not any(isinstance(finder, type) and finder.__name__ == "_MovedModuleFinder" for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder)


_install_alias_finder()


def __getattr__(name: str) -> object:
    """Import the module that defines ``name`` on first access and cache the value here.

    ``import importlib`` stays inside: a module-level import would be paid by every
    ``import StaICC``.
    """
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")  # the import also sets the attribute
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
