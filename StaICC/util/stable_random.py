"""Original path of the stable random generator (see :mod:`StaICC.rng`)."""
from ..rng import StableRandom, fresh_stream  # noqa: F401

stable_random = StableRandom
