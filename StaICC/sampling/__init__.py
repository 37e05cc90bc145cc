"""Which training rows become demonstrations.

- :mod:`.rows`: the standard's default rows (drawn once per (k, D) and shared), fixed samplers;
- :mod:`.demonstrations`: an experimentor's k, repeats and rows.

The names of the module this package replaced are importable from here.
"""
from .rows import default_rows, demonstration_sampler, fixed_sampler, validate_sampler

__all__ = ["default_rows", "demonstration_sampler", "fixed_sampler", "validate_sampler"]
