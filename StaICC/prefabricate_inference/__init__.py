"""Prefabricated inference kernels and calibrations for HuggingFace causal LMs (spec §9).

Needs the optional extra: ``pip install StaICC[hf]`` (torch + transformers).
Importing this package is cheap: each submodule, and torch with it, is loaded
on first use.

* :mod:`.model_kernel` — the original one-prompt kernels (§9.1–9.5), defects fixed.
* :mod:`.fast_kernel` — :class:`CausalLMScorer`, the batched scorer.
* :mod:`.standard_calibration` — contextual, domain, batch, hidden and kNN calibrations.
* :mod:`.prompt_template_edit` — PPL-ICL instruction choice, SA-ICL and TopK demonstrations.
"""
import importlib
from typing import Any

__all__ = ["model_kernel", "fast_kernel", "standard_calibration", "prompt_template_edit", "CausalLMScorer"]

_SUBMODULES = {"model_kernel", "fast_kernel", "standard_calibration", "prompt_template_edit"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "CausalLMScorer":
        return importlib.import_module(f"{__name__}.fast_kernel").CausalLMScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
