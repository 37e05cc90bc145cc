"""Original path of the standard's settings dictionaries; the code lives in :mod:`StaICC.legacy.configs`."""
from typing import Any

import StaICC.legacy.configs as _implementation
from StaICC.legacy.configs import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (lazy and private ones too) resolves to the implementation module's."""
    return getattr(_implementation, name)
