"""Original path of the experimentor classes; the code lives in :mod:`StaICC.legacy.experimentor`."""
from typing import Any

import StaICC.legacy.experimentor as _implementation
from StaICC.legacy.experimentor import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (lazy and private ones too) resolves to the implementation module's."""
    return getattr(_implementation, name)
