"""The sub-benchmarks of the standard: the generic :class:`SubBenchmark`, parameterised seven ways.

``Normal``, ``Contextual_bias``, ``Domain_bias``, ``Post_bias``, ``GLER``, ``Template_sens``
and ``Demo_sens`` keep the original constructor signatures; ``Triplet_bias`` runs the
three bias diagnoses over one loaded copy of the data.
"""
from typing import Dict

from ..datasets import resolve_datasets
from ..metrics import bias_metrics, consistency_metrics, post_bias_metrics
from ..engine.procedures import LabelNoiseProcedure, SensitivityProcedure, TemplateProcedure
from ..results import ResultDict
from ..standard import (DEFAULT_K, DEMO_SENS_REPEAT_TIMES, DEMO_SENS_TEST_SIZE, DOMAIN_QUERY_LENGTH,
                       GLER_INTERPOLATIONS, TEMPLATE_SENS_TEST_SIZE)
from .generic import SubBenchmark, average_sensitivity, average_slopes
from .generic import FUNCTION_COUNT_ERROR, average_metrics  # noqa: F401  (their old import path)


# ----------------------------------------------------------------------------
# the sub-benchmarks of the standard
# ----------------------------------------------------------------------------
class Normal(SubBenchmark):
    """Accuracy, true-label likelihood, macro-F1 and ECE over 1024 queries per dataset."""

    benchmark_name = "Normal"


class Contextual_bias(SubBenchmark):
    """Entropy of the mean prediction for demonstrations + an empty query (lower = more biased)."""

    benchmark_name = "Contextual_bias"
    pseudo_query = "contextual"

    def default_metrics(self, test_size=None):
        return bias_metrics()


class Domain_bias(SubBenchmark):
    """Entropy of the mean prediction for demonstrations + a random-word in-domain query."""

    benchmark_name = "Domain_bias"
    pseudo_query = "domain"

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics=None, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:
        self.domain_query_length = domain_query_length
        super().__init__(k, noisy_channel, metrics, datasets, **options)

    def default_metrics(self, test_size=None):
        return bias_metrics()

    def extra_experimentor_options(self):
        return {"domain_query_length": self.domain_query_length}


class Post_bias(SubBenchmark):
    """KL divergence of the mean predicted distribution from the true label frequencies."""

    benchmark_name = "Post_bias"

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics=None, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:
        super().__init__(k, noisy_channel, metrics, datasets, **options)  # domain_query_length: unused, as in the standard

    def default_metrics(self, test_size=None):
        return post_bias_metrics()


class GLER(SubBenchmark):
    """Label-noise sensitivity: slope of each metric against demonstration label noise."""

    benchmark_name = "GLER"
    supports_noisy_channel = False
    averaging = staticmethod(average_slopes)
    abscissae = "standard"

    def __init__(self, k: int = DEFAULT_K, metrics=None, datasets=None,
                 interpolations: int = GLER_INTERPOLATIONS, **options) -> None:
        LabelNoiseProcedure(interpolations)  # validate before building anything
        self.interpolations = interpolations
        super().__init__(k, False, metrics, datasets, **options)

    def make_procedure(self, dataset):
        return LabelNoiseProcedure(self.interpolations, self.abscissae)


class GLER_corrected(GLER):
    """GLER regressed on label correctness (1 - noise rate). NOT the standard: not comparable."""

    benchmark_name = "GLER_corrected"
    abscissae = "correctness"


class Template_sens(SubBenchmark):
    """Prediction consistency over the 9 templates of an L9 orthogonal table (100 test items)."""

    benchmark_name = "Template_sens"
    repeat_times = 1
    test_size = TEMPLATE_SENS_TEST_SIZE
    supports_noisy_channel = False
    averaging = staticmethod(average_sensitivity)

    def __init__(self, k: int = DEFAULT_K, metrics=None, datasets=None, **options) -> None:
        super().__init__(k, False, metrics, datasets, **options)

    def default_metrics(self, test_size=None):
        return consistency_metrics(test_size or TEMPLATE_SENS_TEST_SIZE)

    def make_procedure(self, dataset):
        if not dataset.alternate_template:
            raise ValueError(f"Template_sens needs alternate templates for dataset {dataset.name!r}")
        return TemplateProcedure(dataset.alternate_template)


class Demo_sens(SubBenchmark):
    """Prediction consistency over 8 demonstration sets per query (first 128 test items)."""

    benchmark_name = "Demo_sens"
    repeat_times = DEMO_SENS_REPEAT_TIMES
    test_size = DEMO_SENS_TEST_SIZE
    supports_noisy_channel = False
    averaging = staticmethod(average_sensitivity)

    def __init__(self, k: int = DEFAULT_K, datasets=None, **options) -> None:
        super().__init__(k, False, None, datasets, **options)

    def default_metrics(self, test_size=None):
        return consistency_metrics(test_size or DEMO_SENS_TEST_SIZE)

    def make_procedure(self, dataset):
        return SensitivityProcedure()


class Triplet_bias:
    """Contextual, domain and posterior bias together; the data is loaded once."""

    benchmark_name = "Triplet_bias"

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:
        loaded = resolve_datasets(datasets)
        self.contextual = Contextual_bias(k, noisy_channel, None, loaded, **options)
        self.domain = Domain_bias(k, noisy_channel, None, loaded, domain_query_length, **options)
        self.post = Post_bias(k, noisy_channel, None, loaded, **options)

    def benchmarks(self) -> Dict[str, SubBenchmark]:
        return {"contextual": self.contextual, "domain": self.domain, "post": self.post}

    def __getitem__(self, key: str) -> SubBenchmark:
        return self.benchmarks()[key]

    def __len__(self) -> int:
        return len(self.contextual)

    def auto_run(self, list_of_forward_inference=None, return_divided_results: bool = True,
                 batched_inference: bool = False, **options) -> ResultDict:
        results = {name: bench.auto_run(list_of_forward_inference, return_divided_results, batched_inference, **options)
                   for name, bench in self.benchmarks().items()}
        return ResultDict(results, metadata={name: r.metadata for name, r in results.items()})

    __call__ = auto_run


SUB_BENCHMARKS = {cls.benchmark_name: cls for cls in (Normal, Contextual_bias, Domain_bias, Post_bias, GLER,
                                                       GLER_corrected, Template_sens, Demo_sens, Triplet_bias)}
