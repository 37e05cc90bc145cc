"""Original path of the diagnosis sub-benchmarks."""
from .subbenchmarks.builtin import (GLER, Contextual_bias, Demo_sens, Domain_bias, Post_bias, Template_sens,  # noqa: F401
                        Triplet_bias)
