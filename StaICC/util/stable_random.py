"""Original path of the stable random generator; the code lives in :mod:`StaICC.legacy.stable_random`."""
from typing import Any

import StaICC.legacy.stable_random as _implementation
from StaICC.legacy.stable_random import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (lazy and private ones too) resolves to the implementation module's."""
    return getattr(_implementation, name)
