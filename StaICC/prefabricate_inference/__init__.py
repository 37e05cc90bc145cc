"""The original import paths of the HuggingFace kernels and calibrations, kept working.

Needs the optional extra: ``pip install StaICC[hf]`` (torch + transformers).
Importing this package is cheap: each submodule, and torch with it, is loaded
on first use.  The code lives elsewhere now; these modules re-export it:

* :mod:`.model_kernel` -> :mod:`StaICC.backends.kernels` — the original one-prompt kernels.
* :mod:`.fast_kernel` -> :mod:`StaICC.backends.causal_lm` — :class:`CausalLMScorer`, the batched scorer.
* :mod:`.standard_calibration` -> :mod:`StaICC.methods.calibration` — contextual, domain, batch, hidden and kNN calibrations.
* :mod:`.prompt_template_edit` -> :mod:`StaICC.methods.prompt_edits` — PPL-ICL instruction choice, SA-ICL and TopK.
* :mod:`.tiny_models` -> :mod:`StaICC.backends.tiny_models` — tiny random models for offline tests.
"""
import importlib
from typing import Any

__all__ = ["model_kernel", "fast_kernel", "standard_calibration", "prompt_template_edit", "CausalLMScorer"]

_SUBMODULES = {"model_kernel", "fast_kernel", "standard_calibration", "prompt_template_edit", "tiny_models"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "CausalLMScorer":
        return importlib.import_module("StaICC.backends.causal_lm").CausalLMScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
