"""Original path of the helper functions and metrics; the code lives in :mod:`StaICC.legacy.functional`."""
from typing import Any

import StaICC.legacy.functional as _implementation
from StaICC.legacy.functional import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private ones too) resolves to the implementation module's."""
    return getattr(_implementation, name)
