"""Original path of ``Normal`` and of its dataset list."""
from .subbenchmarks.builtin import Normal  # noqa: F401
from .datasets import STANDARD_LOADERS

#: the ten loader classes in benchmark order (a copy: editing it changes no benchmark)
ORIGINAL_DATA_LOADER_NORMAL = list(STANDARD_LOADERS)
