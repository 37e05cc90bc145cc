"""Agreement between repeated predictions of the same test items: Cohen's and Fleiss' kappa, grouped metrics.

A *grouped* run asks about the same L test items B times (B demonstration orders,
B prompt formats, B templates...), its rows laid out block after block: row ``b * L + i``
is item i in block b.  The grouped metrics take ``(ground_truth, rows, loop_length)``
like the standard's consistency: ``ground_truth`` holds the L labels (or all B * L, block
after block), and each row is reduced to its argmax after the standard's softmax rule.

Kappa corrects raw agreement for the agreement expected by chance from each rater's
label frequencies, so a model that always answers "positive" is not called stable.
Pure standard library.
"""
from itertools import combinations
from typing import Callable, Dict, List, Sequence

from ..errors import InvalidValueError
from ..numeric import Matrix, normalized_labels, sequential_sum
from .scores import consistency_from_labels

GroupedMetric = Callable[[Sequence[int], Matrix, int], float]


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa between two label sequences: (p_o - p_e) / (1 - p_e).

    p_o is the share of positions where they agree, p_e = sum_c freq_a(c) * freq_b(c).
    When p_e = 1 (both give one and the same label everywhere) the ratio is 0/0:
    scikit-learn returns NaN, here the value is 1.0, since the two raters agree perfectly.
    """
    if len(a) != len(b) or not a:
        raise InvalidValueError(f"cohen_kappa needs two non-empty sequences of the same length, got {len(a)} and {len(b)}")
    n = len(a)
    observed = sum(1 for x, y in zip(a, b) if x == y) / n
    count_a: Dict[int, int] = {}
    count_b: Dict[int, int] = {}
    for x, y in zip(a, b):
        count_a[x] = count_a.get(x, 0) + 1
        count_b[y] = count_b.get(y, 0) + 1
    expected = sum(count_a[c] * count_b.get(c, 0) for c in count_a) / (n * n)
    if expected == 1:
        return 1.0
    return (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of ``ratings[rater][item]`` (every rater rates every item): (P - P_e) / (1 - P_e).

    P is the mean over items of the share of agreeing rater pairs, P_e = sum_c p_c^2 with
    p_c the share of all ratings in label c.  1.0 when P_e = 1 (every rating the same).
    """
    raters = len(ratings)
    if raters < 2 or not ratings[0] or any(len(r) != len(ratings[0]) for r in ratings):
        raise InvalidValueError("fleiss_kappa needs at least two raters rating the same non-empty list of items")
    items = len(ratings[0])
    totals: Dict[int, int] = {}
    agreement = 0.0
    for i in range(items):
        counts: Dict[int, int] = {}
        for r in range(raters):
            counts[ratings[r][i]] = counts.get(ratings[r][i], 0) + 1
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
        for label, c in counts.items():
            totals[label] = totals.get(label, 0) + c
    observed = agreement / items
    expected = sequential_sum((c / (items * raters)) ** 2 for c in totals.values())
    if expected == 1:
        return 1.0
    return (observed - expected) / (1 - expected)


# ----------------------------------------------------------------------------
# grouped metrics: B blocks of the same L items
# ----------------------------------------------------------------------------
def label_blocks(prediction: Matrix, loop_length: int) -> List[List[int]]:
    """The argmax labels, one list of L per block."""
    if loop_length <= 0 or len(prediction) % loop_length != 0:
        raise ValueError("The length of prediction should be the multiple of loop_length: "
                         f"{len(prediction)} predictions, loop_length {loop_length}")
    labels = normalized_labels(prediction)
    return [labels[b:b + loop_length] for b in range(0, len(labels), loop_length)]


def block_accuracies(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> List[float]:
    """The accuracy of each block on the L items (ground truth of L labels, or of all rows)."""
    truth = list(ground_truth[:loop_length])
    if len(truth) != loop_length:
        raise InvalidValueError(f"ground_truth has {len(ground_truth)} labels, expected at least loop_length {loop_length}")
    return [sum(1 for g, a in zip(truth, block) if g == a) / loop_length
            for block in label_blocks(prediction, loop_length)]


def grouped_consistency(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:  # noqa: ARG001  (every metric takes (ground_truth, prediction))
    """The standard's consistency: mean over items of the majority share of their B labels."""
    return consistency_from_labels([a for block in label_blocks(prediction, loop_length) for a in block], loop_length)


def accuracy_min(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:
    """The lowest block accuracy."""
    return min(block_accuracies(ground_truth, prediction, loop_length))


def accuracy_max(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:
    """The highest block accuracy."""
    return max(block_accuracies(ground_truth, prediction, loop_length))


def accuracy_spread(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:
    """Highest minus lowest block accuracy (lower is better: the blocks matter less)."""
    values = block_accuracies(ground_truth, prediction, loop_length)
    return max(values) - min(values)


def accuracy_mean(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:
    """The mean block accuracy."""
    values = block_accuracies(ground_truth, prediction, loop_length)
    return sequential_sum(values) / len(values)


def mean_cohen_kappa(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:  # noqa: ARG001  (every metric takes (ground_truth, prediction))
    """Mean of Cohen's kappa over every pair of blocks (1.0 with a single block)."""
    blocks = label_blocks(prediction, loop_length)
    pairs = [cohen_kappa(a, b) for a, b in combinations(blocks, 2)]
    return sequential_sum(pairs) / len(pairs) if pairs else 1.0


def grouped_fleiss_kappa(ground_truth: Sequence[int], prediction: Matrix, loop_length: int) -> float:  # noqa: ARG001  (every metric takes (ground_truth, prediction))
    """Fleiss' kappa with the blocks as raters of the L items (1.0 with a single block)."""
    blocks = label_blocks(prediction, loop_length)
    return fleiss_kappa(blocks) if len(blocks) > 1 else 1.0


#: the grouped metrics by result key, and whether higher is better
GROUPED_METRICS: Dict[str, GroupedMetric] = {
    "consistency": grouped_consistency, "accuracy_mean": accuracy_mean, "accuracy_min": accuracy_min,
    "accuracy_max": accuracy_max, "accuracy_spread": accuracy_spread, "cohen_kappa": mean_cohen_kappa,
    "fleiss_kappa": grouped_fleiss_kappa,
}
GROUPED_HIGHER_IS_BETTER: Dict[str, bool] = {
    "consistency": True, "accuracy_mean": True, "accuracy_min": True, "accuracy_max": True,
    "accuracy_spread": False, "cohen_kappa": True, "fleiss_kappa": True,
}


def bind_grouped(names: Sequence[str], loop_length: int) -> Dict[str, Callable[[Sequence[int], Matrix], float]]:
    """The named grouped metrics bound to a loop length, with the registry's metric signature."""
    bound = {}
    for name in names:
        function = GROUPED_METRICS[name]

        def metric(ground_truth, prediction, function=function):
            return function(ground_truth, prediction, loop_length)
        metric.__name__ = f"{name}_{loop_length}"
        bound[name] = metric
    return bound
