"""Original import path, kept working: the code lives in :mod:`StaICC.backends.kernels` (the one-prompt kernels)."""
from typing import Any

import StaICC.backends.kernels as _implementation
from StaICC.backends.kernels import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private helpers too) resolves to the implementation module's."""
    return getattr(_implementation, name)
