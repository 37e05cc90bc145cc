"""Diagnoses outside the standard: demonstration-order sensitivity and format spread.

``Order_sens`` asks every test item with R orders of one demonstration set (the
standard's first draw, or a retriever's row); ``Format_spread`` asks them under F prompt
formats sampled from a small grammar (:mod:`StaICC.subbenchmarks.formats`).  Both are
plain :class:`SubBenchmark` parameterisations (demonstration rows, passes, metrics,
averaging) and mark every result ``metadata["standard"] = False``: their numbers are
not comparable with the standard's and never enter its averages.
"""
import itertools
import math
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..engine.procedures import PassSpec, Procedure
from ..metrics import argmax, softmax_unless_probabilities
from ..metrics.agreement import bind_grouped, block_accuracies
from ..sampling.demonstrations import Demonstrations
from ..sampling.rows import default_rows, fixed_sampler, validate_sampler
from ..standard import DEFAULT_K
from ..validation import check_int
from .formats import FORMAT_GRAMMAR_SIZE, describe_format, format_template, sample_formats
from .generic import SubBenchmark
from ..spec import SPECS
from ..numeric import sequential_sum

#: the permutations per query of Order_sens, and its test items (the sub-benchmark table's row)
ORDER_PERMUTATIONS = SPECS["Order_sens"].repeat_times
ORDER_TEST_SIZE = SPECS["Order_sens"].test_size
#: formats sampled by Format_spread (the first is the dataset's own template), its test items and prompt budget
FORMAT_COUNT = 8
FORMAT_TEST_SIZE = SPECS["Format_spread"].test_size
FORMAT_BUDGET = 4096
#: bootstrap resamples and level of Format_spread's intervals
FORMAT_RESAMPLES = 1000
FORMAT_LEVEL = 0.95

ORDER_METRICS = ("consistency", "accuracy_mean", "accuracy_min", "accuracy_max", "accuracy_spread", "cohen_kappa",
                 "fleiss_kappa")
FORMAT_METRICS = ("accuracy_mean", "accuracy_min", "accuracy_max", "accuracy_spread", "consistency", "fleiss_kappa")
NON_STANDARD = "{name}: a diagnosis outside the standard"
#: result keys of the non-scalar metrics, moved out of "sensitivity" by the procedures
PER_BLOCK = "per_block_accuracy"
INTERVALS = "intervals"


# ----------------------------------------------------------------------------
# Order_sens: R permutations of one demonstration set per query
# ----------------------------------------------------------------------------
def permutations_of(row: Sequence[int], count: int, rng: random.Random) -> List[List[int]]:
    """``count`` orders of ``row``: the given order first, then distinct random ones while any are left.

    With k! < count every order is used and the list then cycles through them again
    (k <= 1 gives ``count`` copies of the one order).
    """
    base = list(row)
    orders = [base]
    seen = {tuple(base)}
    total = math.factorial(len(base))
    if total <= 24 and total < count:
        everything = [list(p) for p in itertools.permutations(base) if p != tuple(base)]
        rng.shuffle(everything)
        orders += everything
    else:
        while len(orders) < min(count, total):
            candidate = base[:]
            rng.shuffle(candidate)
            if tuple(candidate) not in seen:
                seen.add(tuple(candidate))
                orders.append(candidate)
    return [orders[i % len(orders)] for i in range(count)]


def permuted_rows(base: Sequence[Sequence[int]], count: int, seed: int, dataset: str) -> List[List[int]]:
    """Repeat-major rows: repeat r of test item j is order r of base[j].

    Item j's orders come from ``random.Random(f"{seed}/{dataset}/{j}")``, so they do not
    depend on the other items, on the number of items evaluated or on the Python version.
    """
    per_item = [permutations_of(row, count, random.Random(f"{seed}/{dataset}/{j}")) for j, row in enumerate(base)]
    return [per_item[j][r] for r in range(count) for j in range(len(base))]


class PermutedDemonstrations(Demonstrations):
    """Demonstration rows of Order_sens: the base row of each test item in R orders (repeat r = order r).

    The base rows are the standard's first draw for the dataset (what Normal's first
    repeat shows) unless a retriever or a custom sampler gave one row per test item.
    """

    def __init__(self, triplet, k: int, permutations: int, seed: int) -> None:
        super().__init__(triplet, k, permutations)
        self.seed = seed
        self.base_rows: Optional[List[List[int]]] = None

    @property
    def uses_default_rows(self) -> bool:
        return self.base_rows is None

    def current_sampler(self):
        if self.sampler is None:
            T, D = len(self.triplet.test), len(self.triplet.demonstration)
            base = self.base_rows if self.base_rows is not None else \
                [list(r) for r in default_rows(self.k, D, T, self.k > D)]
            self.sampler = fixed_sampler(permuted_rows(base, self.repeat_times, self.seed, self.triplet.name))
        return self.sampler

    def reset(self) -> None:
        self.repeat_times = self.default_repeat_times
        self.base_rows = None
        self.sampler = None

    def use_rows(self, rows, *, allow_variable_length: bool, dataset: str) -> None:
        """A custom row per test item becomes the base row; the R orders stay."""
        self.base_rows = validate_sampler(rows, None if allow_variable_length else self.k, len(self.triplet.test),
                                          len(self.triplet.demonstration), dataset)
        self.sampler = None

    def orders(self) -> List[List[List[int]]]:
        """orders[j][r]: the demonstration indexes of test item j in repeat r (what the run shows)."""
        sampler, T = self.current_sampler(), len(self.triplet.test)
        return [[list(sampler[j + r * T]) for r in range(self.repeat_times)] for j in self.evaluated()]


def split_summary(metrics: Dict[str, Any], blocks_key: str) -> Dict[str, Any]:
    """``{"sensitivity": scalars, blocks_key: {"accuracy": per block}, "intervals": ...}`` from one metric dict.

    The per-block accuracies and the intervals are dicts beside "sensitivity", so tables
    and averages (which read the scalars of "sensitivity") leave them out.
    """
    scalars = dict(metrics)
    per_block = scalars.pop(PER_BLOCK, None)
    intervals = scalars.pop(INTERVALS, None)
    summary: Dict[str, Any] = {"sensitivity": scalars}
    if per_block is not None:
        summary[blocks_key] = {"accuracy": per_block}
    if intervals is not None:
        summary[INTERVALS] = intervals
    return summary


class OrderProcedure(Procedure):
    """One pass over R orders per item, reported as ``{"sensitivity": metrics, "per_order": ...}``."""

    name = "demonstration_order"

    def __init__(self, permutations: int, seed: int) -> None:
        self.permutations, self.seed = permutations, seed

    def summarize(self, pass_results):
        return split_summary(pass_results[-1], "per_order")

    def describe(self):
        return {"procedure": self.name, "permutations": self.permutations, "seed": self.seed}


class Order_sens(SubBenchmark):
    """Demonstration-order sensitivity: the same k demonstrations in R seeded orders per query.

    Reports the standard's consistency over the R orders, each order's accuracy
    (mean, min, max, spread = max - min), the mean pairwise Cohen's kappa between
    orders and Fleiss' kappa with the orders as raters.  Outside the standard.
    """

    spec = SPECS["Order_sens"]

    def __init__(self, k: int = DEFAULT_K, datasets=None, *, permutations: int = ORDER_PERMUTATIONS, seed: int = 0,
                 **options) -> None:
        self.permutations = check_int(permutations, "permutations", minimum=2, at=" in Order_sens")
        self.seed = check_int(seed, "seed", at=" in Order_sens")
        self.repeat_times = self.permutations
        super().__init__(k, False, None, datasets, **options)

    def default_metrics(self, test_size=None):
        loop_length = test_size or ORDER_TEST_SIZE
        return {**bind_grouped(ORDER_METRICS, loop_length), PER_BLOCK: _per_block_metric(loop_length)}

    def make_procedure(self, dataset):  # noqa: ARG002  (the SubBenchmark.make_procedure signature)
        return OrderProcedure(self.permutations, self.seed)

    def _build(self, dataset, k, noisy_channel):
        experimentor = super()._build(dataset, k, noisy_channel)
        experimentor.demonstrations = PermutedDemonstrations(experimentor.triplet_dataset, k, self.permutations,
                                                             self.seed)
        experimentor._non_standard.append(NON_STANDARD.format(name=self.benchmark_name))
        return experimentor


# ----------------------------------------------------------------------------
# Format_spread: F formats of the same prompts
# ----------------------------------------------------------------------------
class FormatProcedure(Procedure):
    """One pass per format; the metrics of the last pass see every pass (items in F blocks)."""

    name = "format_spread"

    def __init__(self, formats: Sequence[Tuple[int, ...]], templates: Sequence[Dict[str, Any]], seed: int) -> None:
        self.formats, self.templates, self.seed = list(formats), list(templates), seed

    def passes(self):
        return [PassSpec(template=tuple((key, tuple(v) if isinstance(v, list) else v) for key, v in t.items()),
                         template_row=i, carry=True) for i, t in enumerate(self.templates)]

    def summarize(self, pass_results):
        summary = split_summary(pass_results[-1], "per_format")
        summary["per_format"]["format"] = [describe_format(f) for f in self.formats]
        return summary

    def describe(self):
        return {"procedure": self.name, "seed": self.seed, "formats": [describe_format(f) for f in self.formats]}


class Format_spread(SubBenchmark):
    """Accuracy over F prompt formats sampled from a grammar: mean, min, max and spread.

    The first format is the dataset's own template; the other F - 1 are drawn without
    replacement from the grammar (:mod:`StaICC.subbenchmarks.formats`) by
    ``random.Random(seed)``.  ``budget`` caps the prompts of a dataset: F is lowered to
    budget // test items when needed (never below 2).  Percentile-bootstrap intervals
    over test items (:func:`format_intervals`) are in ``result["intervals"]``.  Outside
    the standard.
    """

    spec = SPECS["Format_spread"]

    def __init__(self, k: int = DEFAULT_K, datasets=None, *, formats: int = FORMAT_COUNT, seed: int = 0,
                 budget: int = FORMAT_BUDGET, **options) -> None:
        self.format_count = check_int(formats, "formats", minimum=2, maximum=FORMAT_GRAMMAR_SIZE + 1,
                                      at=" in Format_spread")
        self.seed = check_int(seed, "seed", at=" in Format_spread")
        self.budget = check_int(budget, "budget", minimum=2, at=" in Format_spread")
        super().__init__(k, False, None, datasets, **options)

    def formats_for(self, dataset) -> int:
        """F for a dataset: the formats asked for, fewer when F * test items would exceed the budget."""
        items = self.test_size_for(dataset) or FORMAT_TEST_SIZE
        return max(2, min(self.format_count, self.budget // items))

    def default_metrics(self, test_size=None):
        loop_length = test_size or FORMAT_TEST_SIZE
        return {**bind_grouped(FORMAT_METRICS, loop_length), PER_BLOCK: _per_block_metric(loop_length)}

    def _add_intervals(self, experimentor) -> None:
        """The interval metric needs the number of formats of the experimentor's procedure."""
        experimentor.metrics[INTERVALS] = _interval_metric(experimentor.test_count(),
                                                           len(experimentor.procedure.templates), self.seed)

    def metrics_for_items(self, experimentor, dataset):
        metrics = super().metrics_for_items(experimentor, dataset)
        metrics[INTERVALS] = _interval_metric(experimentor.test_count(), len(experimentor.procedure.templates),
                                              self.seed)
        return metrics

    def make_procedure(self, dataset):
        formats = sample_formats(self.formats_for(dataset) - 1, self.seed)
        templates = [None] + formats
        return FormatProcedure(templates, [format_template(dataset, f) for f in templates], self.seed)

    def _build(self, dataset, k, noisy_channel):
        experimentor = super()._build(dataset, k, noisy_channel)
        experimentor._non_standard.append(NON_STANDARD.format(name=self.benchmark_name))
        if self._metrics is None:
            self._add_intervals(experimentor)
        return experimentor


# ----------------------------------------------------------------------------
# the metrics that are not scalars: per-block accuracies and bootstrap intervals
# ----------------------------------------------------------------------------
def _per_block_metric(loop_length: int):
    def per_block_accuracy(ground_truth, prediction):
        return block_accuracies(ground_truth, prediction, loop_length)
    return per_block_accuracy


def _interval_metric(loop_length: int, blocks: int, seed: int):
    """Bootstrap intervals once every format was asked (earlier passes give None, costing nothing)."""
    def intervals(ground_truth, prediction):
        if len(prediction) != blocks * loop_length:
            return None
        return {name: list(bounds) for name, bounds in
                format_intervals(ground_truth, prediction, loop_length, seed=seed).items()}
    return intervals


def format_intervals(ground_truth: Sequence[int], prediction: Sequence[Sequence[float]], loop_length: int,
                     resamples: int = FORMAT_RESAMPLES, level: float = FORMAT_LEVEL, seed: int = 0
                     ) -> Dict[str, Tuple[float, float]]:
    """Percentile-bootstrap intervals of the mean, min, max and spread of the F format accuracies.

    Test items are resampled with replacement (``random.Random(seed)``), the same items
    for every format, so the formats stay paired.
    """
    rows = softmax_unless_probabilities(prediction)
    truth = list(ground_truth[:loop_length])
    right = [[argmax(rows[b + i]) == truth[i] for i in range(loop_length)]
             for b in range(0, len(rows), loop_length)]
    rng = random.Random(seed)
    draws: Dict[str, List[float]] = {"accuracy_mean": [], "accuracy_min": [], "accuracy_max": [],
                                     "accuracy_spread": []}
    for _ in range(resamples):
        sample = [int(rng.random() * loop_length) for _ in range(loop_length)]
        accuracies = [sum(block[i] for i in sample) / loop_length for block in right]
        low, high = min(accuracies), max(accuracies)
        draws["accuracy_mean"].append(sequential_sum(accuracies) / len(accuracies))
        draws["accuracy_min"].append(low)
        draws["accuracy_max"].append(high)
        draws["accuracy_spread"].append(high - low)
    tail = (1 - level) / 2
    out = {}
    for name, values in draws.items():
        values.sort()
        out[name] = (values[int(math.floor(tail * (resamples - 1)))], values[int(math.ceil((1 - tail) * (resamples - 1)))])
    return out


#: the diagnoses of this module by name (the suite and the CLI find them beside the standard's)
EXTENSION_BENCHMARKS = {cls.benchmark_name: cls for cls in (Order_sens, Format_spread)}
