"""Original path of the standard's constants (see :mod:`StaICC.standard`)."""
from ..standard import *  # noqa: F401,F403
