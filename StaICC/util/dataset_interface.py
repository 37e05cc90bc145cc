"""Original path of the dataset, split, sampler and prompt-writer classes."""
from ..datasets import Dataset, basic_datasets_loader  # noqa: F401
from ..prompt import domain_query_generator, empty_query_generator, prompt_writter  # noqa: F401
from ..sampling.rows import demonstration_sampler  # noqa: F401
from ..datasets.split import triplet_dataset  # noqa: F401
