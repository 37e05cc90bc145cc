"""The sub-benchmarks of the standard: the generic :class:`SubBenchmark`, parameterised seven ways.

``Normal``, ``Contextual_bias``, ``Domain_bias``, ``Post_bias``, ``GLER``, ``Template_sens``
and ``Demo_sens`` keep the original constructor signatures; ``Triplet_bias`` runs the
three bias diagnoses over one loaded copy of the data.
"""
from typing import Dict, List

from ..datasets import resolve_datasets
from ..engine.procedures import LabelNoiseProcedure
from ..results import ResultDict
from ..standard import DEFAULT_K, DOMAIN_QUERY_LENGTH, GLER_INTERPOLATIONS
from .generic import SubBenchmark, average_sensitivity, average_slopes  # noqa: F401  (their old import path)
from .extensions import EXTENSION_BENCHMARKS
from ..spec import SPECS, SubBenchmarkSpec
from .generic import FUNCTION_COUNT_ERROR, average_metrics  # noqa: F401  (their old import path)
from ..errors import InvalidValueError


# ----------------------------------------------------------------------------
# the sub-benchmarks of the standard
# ----------------------------------------------------------------------------
class Normal(SubBenchmark):
    """Accuracy, true-label likelihood, macro-F1 and ECE over 1024 queries per dataset.

    The original's call, ``Normal()(f)``; here the built-in lexical model on TREC's first 8 test items::

        >>> from StaICC import Normal
        >>> from StaICC.backends.reference_model import lexical_icl
        >>> from StaICC.engine.selection import QuerySubset
        >>> result = Normal(datasets=["TREC"], test_items=QuerySubset.first(8))(lexical_icl)
        >>> result["Averaged results"]["accuracy"], result.metadata["standard"]
        (0.3125, False)
    """

    spec = SPECS["Normal"]


class Contextual_bias(SubBenchmark):
    """Entropy of the mean prediction for demonstrations + an empty query (lower = more biased)."""

    spec = SPECS["Contextual_bias"]


class Domain_bias(SubBenchmark):
    """Entropy of the mean prediction for demonstrations + a random-word in-domain query."""

    spec = SPECS["Domain_bias"]

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics=None, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:
        self.domain_query_length = domain_query_length
        super().__init__(k, noisy_channel, metrics, datasets, **options)

    def extra_experimentor_options(self):
        return {"domain_query_length": self.domain_query_length}


class Post_bias(SubBenchmark):
    """KL divergence of the mean predicted distribution from the true label frequencies."""

    spec = SPECS["Post_bias"]

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics=None, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:  # noqa: ARG002  (the original's signature; unused, as in the standard)
        super().__init__(k, noisy_channel, metrics, datasets, **options)  # domain_query_length: unused, as in the standard


class GLER(SubBenchmark):
    """Label-noise sensitivity: slope of each metric against demonstration label noise."""

    spec = SPECS["GLER"]

    def __init__(self, k: int = DEFAULT_K, metrics=None, datasets=None,
                 interpolations: int = GLER_INTERPOLATIONS, **options) -> None:
        LabelNoiseProcedure(interpolations)  # validate before building anything
        self.interpolations = interpolations
        noisy_channel = options.pop("noisy_channel", False)  # the original ran GLER with noisy-channel prompts too
        super().__init__(k, noisy_channel, metrics, datasets, **options)

    @property
    def abscissae(self) -> str:
        return self.spec.abscissae or "standard"


class GLER_corrected(GLER):
    """GLER regressed on label correctness (1 - noise rate). NOT the standard: not comparable."""

    spec = SPECS["GLER_corrected"]


class Template_sens(SubBenchmark):
    """Prediction consistency over the 9 templates of an L9 orthogonal table (100 test items)."""

    spec = SPECS["Template_sens"]

    def __init__(self, k: int = DEFAULT_K, metrics=None, datasets=None, **options) -> None:
        super().__init__(k, False, metrics, datasets, **options)


class Demo_sens(SubBenchmark):
    """Prediction consistency over 8 demonstration sets per query (first 128 test items)."""

    spec = SPECS["Demo_sens"]

    def __init__(self, k: int = DEFAULT_K, datasets=None, **options) -> None:
        super().__init__(k, False, None, datasets, **options)


class Triplet_bias:
    """Contextual, domain and posterior bias together; the data is loaded once."""

    spec = SPECS["Triplet_bias"]
    benchmark_name = spec.name

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, datasets=None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, **options) -> None:
        loaded = resolve_datasets(datasets)
        self.contextual = Contextual_bias(k, noisy_channel, None, loaded, **options)
        self.domain = Domain_bias(k, noisy_channel, None, loaded, domain_query_length, **options)
        self.post = Post_bias(k, noisy_channel, None, loaded, **options)

    def benchmarks(self) -> Dict[str, SubBenchmark]:
        return {key: getattr(self, key) for key, _part in self.spec.parts}

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
# the diagnoses outside the standard: runnable by name, never part of "all"
SUB_BENCHMARKS.update(EXTENSION_BENCHMARKS)

#: the procedures the generic :class:`SubBenchmark` runs from a spec row alone (``generic.make_procedure``)
GENERIC_PROCEDURES = ("normal", "label_noise", "template", "demonstration_sensitivity")
_FROM_ROWS: Dict[SubBenchmarkSpec, type] = {}


def sub_benchmark_names() -> List[str]:
    """Every sub-benchmark a run can name: a class's, or a spec row's whose procedure is generic."""
    return sorted(set(SUB_BENCHMARKS) | {name for name, row in SPECS.items() if _generic(row)})


def sub_benchmark(name: str) -> type:
    """The sub-benchmark class of ``name``: its own class, else one made from its spec row alone (a row whose
    procedure and metrics the generic sub-benchmark runs needs no class of its own)."""
    if name in SUB_BENCHMARKS:
        return SUB_BENCHMARKS[name]
    row = SPECS.get(name)
    if row is None or not _generic(row):
        raise InvalidValueError(f"unknown sub-benchmark {name!r}")
    if row not in _FROM_ROWS:
        _FROM_ROWS[row] = type(name, (SubBenchmark,), {"spec": row, "__doc__": f"{name}: made from its spec row.",
                                                       "__module__": __name__})
    return _FROM_ROWS[row]


def _generic(row: SubBenchmarkSpec) -> bool:
    return not row.compound and row.procedure in GENERIC_PROCEDURES
