"""Original path of the metric functions (see :mod:`StaICC.metrics`)."""
from ..metrics import *  # noqa: F401,F403
