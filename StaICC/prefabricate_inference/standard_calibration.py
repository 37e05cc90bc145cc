"""Original import path, kept working: the code lives in :mod:`StaICC.methods.calibration` (the calibrations)."""
from typing import Any

import StaICC.methods.calibration as _implementation
from StaICC.methods.calibration import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    """Every other name (private helpers too) resolves to the implementation module's."""
    return getattr(_implementation, name)
