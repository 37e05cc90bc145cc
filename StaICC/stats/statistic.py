"""A sub-benchmark's statistic: its metric values recomputed on a resample of test items.

The metrics are recomputed with the package's own metric functions, so the identity
resample reproduces the recorded numbers bit for bit.  The four score metrics and
consistency also have a fast path on per-row summaries (argmax, confidence, ECE bin)
computed once per run, calling the same formulas as the metric functions; it is used
only after it gave the same bits as those functions on the whole run.
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import metrics as _metrics
from ..numeric import SOFTMAX
from ..metrics import (accuracy_from_labels, column_means, consistency_from_labels, ece_from_confidence,
                       is_probability_vector, linear_regression, macro_f1_from_labels, sequential_sum, softmax)
from ..standard import ECE_BINS
from ..spec import SPECS, abscissae_of, label_noise_x_values
from .items import ItemTable, is_consistency, is_slope

#: direction of the metrics of the standard (None: no better direction)
_HIGHER_IS_BETTER: Dict[str, Optional[bool]] = {
    "accuracy": True, "averaged_truelabel_likelihood": True, "macro_F1": True,
    "expected_calibration_error_1": False, "entropy": True, "DL div.": False, "consistency": True,
    "distribution": None,
}


def higher_is_better(metric: str) -> Optional[bool]:
    """True/False when the metric has a better direction, None otherwise (the metric registry first)."""
    registry = getattr(_metrics, "higher_is_better", None)
    if callable(registry):
        try:
            found = registry(metric)
        except (KeyError, ValueError, TypeError):
            found = None
        if found is not None:
            return found
    return _HIGHER_IS_BETTER.get(metric)


# ----------------------------------------------------------------------------
# the score metrics on per-row summaries (bit-identical to the metric functions)
# ----------------------------------------------------------------------------
def _score_metrics(summaries: Sequence[Tuple[int, float, float, int]], truth: Sequence[int], width: int,
                   names: Sequence[str]) -> Dict[str, float]:
    """accuracy, averaged_truelabel_likelihood, macro_F1 and ECE from row summaries.

    The metric functions of :mod:`StaICC.metrics` reduce their rows to the same
    summaries and call the same formulas, so the numbers are the same bits; here the
    per-row argmax, confidence and bin are computed once per run instead of once per
    metric and resample.  :class:`Statistic` checks the identity on the full run before
    using this.
    """
    out: Dict[str, float] = {}
    predicted, confidence, truelabel, bin_indexes = zip(*summaries)
    if "accuracy" in names:
        out["accuracy"] = accuracy_from_labels(truth, predicted)
    if "averaged_truelabel_likelihood" in names:
        out["averaged_truelabel_likelihood"] = _metrics.sequential_sum(truelabel) / len(truelabel)
    if "macro_F1" in names:
        out["macro_F1"] = macro_f1_from_labels(truth, predicted, width)
    if "expected_calibration_error_1" in names:
        correct = [a == g for a, g in zip(predicted, truth)]
        out["expected_calibration_error_1"] = ece_from_confidence(confidence, correct, ECE_BINS, bin_indexes)
    return out


FAST_METRICS = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")


def entropy_branch_of(rule: str, rows: Any) -> bool:
    """The bias entropy's branch for ``rows`` taken under the exact-sum ``rule`` the run recorded: True (the mean
    row read as it is) only where the rule is the check and the mean passes it; rows on the softmax rule (the
    model backends') are softmaxed whatever their mean sums to, as :func:`StaICC.metrics.bias_entropy` does."""
    return rule != SOFTMAX and is_probability_vector(column_means(rows))


def entropy_on_branch(means: Sequence[float], probabilities: bool) -> float:
    """The bias entropy of a mean row, on the branch of the standard's exact check given by ``probabilities``.

    The standard softmaxes the mean row first unless it sums to exactly 1.0, so the branch
    depends on the last bit of a sum.  A resample takes the branch the whole run took
    (as the score metrics keep the run's softmax decision, see
    :class:`~StaICC.stats.items.ItemTable`): otherwise the bootstrap distribution mixes two
    functionals (a softmaxed mean is several times closer to uniform than the raw one) and
    its tail is made of last-bit accidents, not of other test items.
    """
    vector = list(means) if probabilities else softmax(means)
    return -sequential_sum(v * math.log(v) for v in vector if v != 0)


# ----------------------------------------------------------------------------
# a sub-benchmark's statistic: metric values from a resample of items
# ----------------------------------------------------------------------------
def _metric_table(benchmark: str) -> Dict[str, Callable]:
    """The sub-benchmark's default metrics by result key, from the spec table (Normal's for an unknown name)."""
    from ..metrics.registry import METRICS
    spec = SPECS.get(benchmark)
    if spec is None or not spec.metrics:
        return _metrics.normal_metrics()
    return {METRICS[n].result_key: METRICS[n].function for n in spec.metrics}


def metric_function(benchmark: str, name: str) -> Optional[Callable]:
    """The metric function a sub-benchmark used for ``name`` (None when unknown)."""
    table = _metric_table(benchmark)
    if name in table:
        return table[name]
    found = getattr(_metrics, name, None)
    return found if callable(found) and not isinstance(found, type) else None


class Statistic:
    """Metric values of one (sub-benchmark, dataset) on a resample of its test items.

    The four score metrics and consistency run on per-row summaries (argmax, confidence,
    bin) computed once; that path is used only after it gave the same bits as the
    metric functions on the whole run (``fast``).  Other metrics always call their
    function on the laid-out rows.
    """

    def __init__(self, benchmark: str, table: ItemTable, metric_names: Sequence[str],
                 metadata: Optional[Dict[str, Any]] = None) -> None:
        self.benchmark = benchmark
        self.table = table
        self.functions: Dict[str, Callable] = {}
        if is_consistency(benchmark):
            # consistency (with its fast path), and the agreement metrics over the same blocks of an item
            from ..metrics.agreement import GROUPED_METRICS
            self.functions = {n: _metrics.consistency if n.startswith("consistency") else GROUPED_METRICS[n]
                              for n in metric_names if n.startswith("consistency") or n in GROUPED_METRICS}
        else:
            for name in metric_names:
                f = metric_function(benchmark, name)
                if f is not None:
                    self.functions[name] = f
        self.x_values: Optional[List[float]] = None
        if is_slope(benchmark):
            abscissae = abscissae_of(benchmark, (metadata or {}).get("procedure"))
            self.x_values = label_noise_x_values(table.passes, abscissae)
        #: the exact-check branch of the bias entropy on the whole run (see entropy_on_branch); None: no entropy
        self.entropy_branch: Optional[bool] = None
        if any(f is _metrics.bias_entropy for f in self.functions.values()):
            _, rows = table.layout(table.identity(), [0])
            self.entropy_branch = entropy_branch_of(table.rule, rows)
        #: the post-bias means every weighted evaluation takes (:mod:`.lite_branches`): None, each its own branch of
        #: the standard; "raw", the raw means clipped at zero; "softmax", the softmaxed rows' means
        self.post_branch: Optional[str] = None
        self.fast_names = [n for n, f in self.functions.items()
                           if (n in FAST_METRICS and f is getattr(_metrics, n)) or f is _metrics.consistency]
        self.fast = False
        if self.fast_names:  # the identity resample's values by both paths: the point is the one taken
            full = table.identity()
            quick, checked = self._evaluate(full, True), self._evaluate(full, False)
            self.fast = quick == checked
            self._point = quick if self.fast else checked

    def names(self) -> List[str]:
        return list(self.functions)

    def point(self) -> Dict[str, Any]:
        """The values on the identity resample (the run's own numbers), computed once."""
        cached = getattr(self, "_point", None)
        if cached is None:
            cached = self._point = self(self.table.identity())
        return dict(cached)

    def __call__(self, sample: Sequence[int]) -> Dict[str, Any]:
        return self._evaluate(sample, self.fast)

    def _pass_values(self, sample: Sequence[int], passes: Sequence[int], fast: bool) -> Dict[str, Any]:
        table = self.table
        slow = [n for n in self.functions if not fast or n not in self.fast_names]
        values: Dict[str, Any] = {}
        if fast:
            summaries, truth = [], []
            labels = table.labels
            for p in passes:
                for rep in table.summaries[p]:
                    for i in sample:
                        summaries.append(rep[i])
                        truth.append(labels[i])
            if is_consistency(self.benchmark):
                for n in self.fast_names:
                    values[n] = consistency_from_labels([s[0] for s in summaries], len(sample))
            else:
                values.update(_score_metrics(summaries, truth, table.width, self.fast_names))
        if slow:
            truth, rows = table.layout(sample, passes)
            for n in slow:
                if self.functions[n] is _metrics.bias_entropy:
                    values[n] = entropy_on_branch(column_means(rows), bool(self.entropy_branch))
                elif is_consistency(self.benchmark):
                    values[n] = self.functions[n](truth, rows, len(sample))
                else:
                    values[n] = self.functions[n](truth, rows)
        return {n: values[n] for n in self.functions}

    def _evaluate(self, sample: Sequence[int], fast: bool) -> Dict[str, Any]:
        table = self.table
        if is_consistency(self.benchmark):
            return self._pass_values(sample, range(table.passes), fast)
        if self.x_values is not None:
            per_pass = [self._pass_values(sample, [p], fast) for p in range(table.passes)]
            return {n: linear_regression(self.x_values, [r[n] for r in per_pass])[0] for n in self.functions}
        return self._pass_values(sample, [0], fast)
