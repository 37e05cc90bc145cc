"""Original path of ``Normal``."""
from .benchmark import Normal  # noqa: F401
