"""StaICC: the standardized benchmark for in-context-learning classification.

Write ``f(prompt, label_space) -> logits | probabilities | int`` and call
``Normal()(f)``.  The core needs only the standard library.
"""
from .version import __version__

from .benchmark import (GLER, GLER_corrected, Contextual_bias, Demo_sens, Domain_bias, Normal, Post_bias,
                        SubBenchmark, Template_sens, Triplet_bias)
from .datasets import Dataset, basic_datasets_loader
from .errors import InferenceError, StaICCWarning, TamperingWarning
from .experiment import single_experimentor
from .prompt import prompt_writter
from .sampling import demonstration_sampler
from .split import triplet_dataset

__all__ = ["Normal", "Triplet_bias", "Contextual_bias", "Domain_bias", "Post_bias", "GLER", "GLER_corrected",
           "Template_sens", "Demo_sens", "SubBenchmark", "single_experimentor", "prompt_writter",
           "demonstration_sampler", "triplet_dataset", "Dataset", "basic_datasets_loader", "InferenceError",
           "StaICCWarning", "TamperingWarning", "__version__"]
