"""Original import path, kept working: the code lives in :mod:`StaICC.backends.causal_lm` (the batched CausalLMScorer)."""
from typing import Any

import StaICC.backends.causal_lm as _implementation
from StaICC.backends.causal_lm import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private helpers too) resolves to the implementation module's."""
    return getattr(_implementation, name)
