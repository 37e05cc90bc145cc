"""Original import path, kept working: the code lives in :mod:`StaICC.backends.tiny_models` (tiny random models for tests)."""
from typing import Any

import StaICC.backends.tiny_models as _implementation
from StaICC.backends.tiny_models import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private helpers too) resolves to the implementation module's."""
    return getattr(_implementation, name)
