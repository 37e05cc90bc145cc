"""Original import path, kept working: the code lives in :mod:`StaICC.methods.prompt_edits` (PPL-ICL, SA-ICL, TopK)."""
from typing import Any

import StaICC.methods.prompt_edits as _implementation
from StaICC.methods.prompt_edits import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private helpers too) resolves to the implementation module's."""
    return getattr(_implementation, name)
