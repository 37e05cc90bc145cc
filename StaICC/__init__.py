"""StaICC: the standardized benchmark for in-context-learning classification.

Write ``f(prompt, label_space) -> logits | probabilities | int`` and call
``Normal()(f)``.  The core needs only the standard library.

``import StaICC`` loads nothing but this file: each public name is imported from its
module on first access (module ``__getattr__``), so tools that only need a constant or
one submodule do not pay for the benchmark machinery.
"""
#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    "Normal": "benchmark", "Triplet_bias": "benchmark", "Contextual_bias": "benchmark", "Domain_bias": "benchmark",
    "Post_bias": "benchmark", "GLER": "benchmark", "GLER_corrected": "benchmark", "Template_sens": "benchmark",
    "Demo_sens": "benchmark", "SubBenchmark": "benchmark",
    "single_experimentor": "experiment",
    "prompt_writter": "prompt",
    "demonstration_sampler": "sampling",
    "triplet_dataset": "split",
    "Dataset": "datasets", "basic_datasets_loader": "datasets",
    "InferenceError": "errors", "StaICCWarning": "errors", "TamperingWarning": "errors",
    "run_suite": "suite", "build_suite": "suite",
    "Backend": "backends", "FunctionBackend": "backends", "make_backend": "backends",
    "PredictionCache": "cache", "__version__": "version",
}

#: submodules the original made available as attributes of the package after ``import StaICC``
_SUBMODULES = ("util", "normal", "diagnosis")

__all__ = ["Normal", "Triplet_bias", "Contextual_bias", "Domain_bias", "Post_bias", "GLER", "GLER_corrected",
           "Template_sens", "Demo_sens", "SubBenchmark", "single_experimentor", "prompt_writter",
           "demonstration_sampler", "triplet_dataset", "Dataset", "basic_datasets_loader", "InferenceError",
           "StaICCWarning", "TamperingWarning", "run_suite", "build_suite", "Backend", "FunctionBackend",
           "make_backend", "PredictionCache", "__version__"]


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
