"""Sound intervals of the standard's metrics when each answer's label scores are only known within a box.

Each answer is a box (:class:`StaICC.backends.top_logprobs.LabelBox`): label L's score is
``s[L] = lo[L] + u[L]`` with ``u >= 0`` and ``sum(u) <= rest``; its probability the
renormalised ``q[L] = s[L] / sum(s)``.  Each function below returns ``(low, high)`` with the
metric's value at every point of every box inside, by construction (the derivation is in
each docstring); where the tight bound is an optimisation over the boxes, a looser sound one
is taken.  A box of width 0 gives the metric's own value (the same formula, the same order
of operations), so an exact answer collapses the interval.
"""
import math
from typing import Any, Dict, List, Sequence, Tuple

Interval = Tuple[float, float]


def softmax_bounds(bounds: Sequence[Interval]) -> List[Interval]:
    """Each entry's range of softmax(q) for q in a box: e^{q_c} / sum_m e^{q_m} rises with q_c and falls
    with every other q_m, so its extremes are at the corners (q_c at one end, the others at the other)."""
    out = []
    for c, (low, high) in enumerate(bounds):
        others_high = math.fsum(math.exp(h) for m, (_, h) in enumerate(bounds) if m != c)
        others_low = math.fsum(math.exp(lo) for m, (lo, _) in enumerate(bounds) if m != c)
        out.append((math.exp(low) / (math.exp(low) + others_high), math.exp(high) / (math.exp(high) + others_low)))
    return out


def read_bounds(box: Any, softmax_branch: bool) -> List[Interval]:
    """The interval of each entry of the row a score metric reads: the label probabilities q, or, on the
    exact-sum rule's softmax branch (the branch the standard takes for a model's floating-point
    probabilities), softmax(q)."""
    bounds = box.probability_bounds()
    return softmax_bounds(bounds) if softmax_branch else bounds


def _possible_and_certain(box: Any) -> Tuple[List[bool], List[bool]]:
    """Per label: whether it can be the argmax (the first largest), and whether it surely is.

    The argmax of q is that of s (a common positive factor).  L surely wins when its lowest
    score beats every other label's highest (strictly: ties go to the first label, and the
    rule is kept conservative); L can win when its highest score reaches every other's lowest.
    """
    lo, rest = box.lo, box.rest
    n = len(lo)
    if math.fsum(lo) + rest <= 0:
        return [True] * n, [False] * n
    possible = [all(lo[c] + rest >= lo[m] for m in range(n) if m != c) for c in range(n)]
    certain = [all(lo[c] > lo[m] + rest for m in range(n) if m != c) for c in range(n)]
    return possible, certain


def accuracy_interval(truth: Sequence[int], boxes: Sequence[Any]) -> Interval:
    """[share surely right, share possibly right]: accuracy counts items, each right or not per box."""
    sure = maybe = 0
    for g, box in zip(truth, boxes):
        possible, certain = _possible_and_certain(box)
        sure += certain[g]
        maybe += possible[g]
    return sure / len(truth), maybe / len(truth)


def likelihood_interval(truth: Sequence[int], boxes: Sequence[Any], softmax_branch: bool = False) -> Interval:
    """Mean of the read row's true-label entry: each term lies in its interval (for q: all the unlisted
    mass on the other labels, or all of it on this one), and the mean is monotone in each term."""
    lows, highs = [], []
    for g, box in zip(truth, boxes):
        low, high = read_bounds(box, softmax_branch)[g]
        lows.append(low)
        highs.append(high)
    return math.fsum(lows) / len(truth), math.fsum(highs) / len(truth)


def _f1(tp: int, fp: int, fn: int) -> float:
    """The standard's F1 of one label (macro_f1_from_labels): an undefined P, R or F1 counts 0."""
    precision = tp / (tp + fp) if tp + fp else 0
    recall = tp / (tp + fn) if tp + fn else 0
    return ((2 * precision) * recall) / (precision + recall) if precision + recall else 0


def macro_f1_interval(truth: Sequence[int], boxes: Sequence[Any], width: int) -> Interval:
    """Mean over labels of F1 = 2TP / (2TP + FP + FN), with FN = n_c - TP: increasing in TP, decreasing in FP.

    Per label, TP ranges over [items of it surely predicted it, possibly predicted it] and FP over
    [others surely predicted it, possibly predicted it]; taking each label's worst and best
    corner independently bounds every joint choice of predictions (a looser, sound bound).
    """
    tp_lo, tp_hi, fp_lo, fp_hi, count = ([0] * width for _ in range(5))
    for g, box in zip(truth, boxes):
        possible, certain = _possible_and_certain(box)
        count[g] += 1
        tp_lo[g] += certain[g]
        tp_hi[g] += possible[g]
        for c in range(width):
            if c != g:
                fp_lo[c] += certain[c]
                fp_hi[c] += possible[c]
    lows = [_f1(tp_lo[c], fp_hi[c], count[c] - tp_lo[c]) for c in range(width)]
    highs = [_f1(tp_hi[c], fp_lo[c], count[c] - tp_hi[c]) for c in range(width)]
    return math.fsum(lows) / width, math.fsum(highs) / width


def _confidence(box: Any, softmax_branch: bool) -> Interval:
    """The read row's largest entry over the box: at least the largest lower bound, at most the largest upper."""
    bounds = read_bounds(box, softmax_branch)
    return max(low for low, _ in bounds), max(high for _, high in bounds)


def _bins_of(low: float, high: float, bins: int) -> List[int]:
    """The ECE bins a confidence in [low, high] can fall in, by the standard's bin rule (-1: in no bin,
    confidence 1.0)."""
    from .scores import _bin_among, _ece_bounds
    bounds = _ece_bounds(bins)
    first, last = _bin_among(low, bounds), _bin_among(high, bounds)
    if last < 0:
        return list(range(max(first, 0), bins)) + [-1]
    return list(range(max(first, 0), last + 1))


def ece_interval(truth: Sequence[int], boxes: Sequence[Any], bins: int = 10, softmax_branch: bool = False
                 ) -> Interval:
    """ECE = sum over bins of |sum_{i in bin} (right_i - conf_i)| / N (the standard's equal-width bins).

    Each item's x_i = right_i - conf_i lies in [a_i, b_i] (right_i from its argmax sets,
    conf_i from :func:`_confidence`).  Items whose bin is known add to their bin's sum, whose
    |.| ranges over [0 or the nearer end, the farther end]; an item whose bin is not known
    changes the total by at most max(|a_i|, |b_i|) wherever it lands (triangle inequality),
    which widens the upper and lowers the lower bound (not below 0).
    """
    low_sums, high_sums = [0.0] * bins, [0.0] * bins
    loose = 0.0
    for g, box in zip(truth, boxes):
        possible, certain = _possible_and_certain(box)
        c_low, c_high = _confidence(box, softmax_branch)
        a = float(certain[g]) - c_high
        b = float(possible[g]) - c_low
        where = _bins_of(c_low, c_high, bins)
        if len(where) == 1 and where[0] >= 0:
            low_sums[where[0]] += a
            high_sums[where[0]] += b
        elif where != [-1]:
            loose += max(abs(a), abs(b))
    total = len(truth)
    upper = sum(max(abs(lo), abs(hi)) for lo, hi in zip(low_sums, high_sums)) + loose
    lower = sum(0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)) for lo, hi in zip(low_sums, high_sums)) - loose
    return max(0.0, lower / total), min(1.0, upper / total)


def mean_row_interval(boxes: Sequence[Any]) -> List[Interval]:
    """Each label's mean probability (the bias distribution): a mean of per-item intervals."""
    per_item = [box.probability_bounds() for box in boxes]
    width = len(per_item[0])
    return [(math.fsum(b[c][0] for b in per_item) / len(boxes), math.fsum(b[c][1] for b in per_item) / len(boxes))
            for c in range(width)]


def post_distribution_interval(truth: Sequence[int], boxes: Sequence[Any]) -> List[Interval]:
    """Each label's mean probability minus its share of the true labels (the posterior bias distribution of
    probability rows, whose column means are positive): the mean's interval shifted by a constant."""
    means = mean_row_interval(boxes)
    freqs = [sum(1 for g in truth if g == c) / len(truth) for c in range(len(means))]
    return [(lo - f, hi - f) for (lo, hi), f in zip(means, freqs)]


def _plogp_range(low: float, high: float) -> Interval:
    """The range of -m log m over [low, high] (concave, largest at 1/e)."""
    def h(m: float) -> float:
        return -m * math.log(m) if m > 0 else 0.0
    top = h(min(max(1 / math.e, low), high))
    return min(h(low), h(high)), top


def entropy_interval(boxes: Sequence[Any], softmax_branch: bool = False) -> Interval:
    """Entropy of the mean row (softmaxed first on the softmax branch), -sum m log m: each term's range over
    its entry's interval, summed (the sum-to-one coupling dropped: looser, sound), within [0, log n]."""
    means = mean_row_interval(boxes)
    if softmax_branch:
        means = softmax_bounds(means)
    ranges = [_plogp_range(lo, hi) for lo, hi in means]
    return max(0.0, math.fsum(r[0] for r in ranges)), min(math.log(len(means)), math.fsum(r[1] for r in ranges))


def kl_interval(truth: Sequence[int], boxes: Sequence[Any]) -> Interval:
    """KL(mean row || label frequencies) = sum m log(m / f): each term convex in m, so its largest value over
    the mean's interval is at an end and its smallest at f/e (clamped); summed, and the lower bound kept >= 0."""
    means = mean_row_interval(boxes)
    freqs = [sum(1 for g in truth if g == c) / len(truth) for c in range(len(means))]

    def term(m: float, f: float) -> float:
        if m <= 0:
            return 0.0
        return math.inf if f == 0 else m * math.log(m / f)
    lows, highs = [], []
    for (lo, hi), f in zip(means, freqs):
        highs.append(max(term(lo, f), term(hi, f)))
        lows.append(term(min(max(f / math.e, lo), hi), f) if f > 0 else term(lo, f))
    return max(0.0, math.fsum(lows)), math.fsum(highs)


def standard_intervals(truth: Sequence[int], boxes: Sequence[Any], softmax_branch: bool = True) -> Dict[str, Any]:
    """Every interval above for one dataset's answers, by the metric names results use.

    ``softmax_branch``: the rows take the exact-sum rule's softmax branch, as a server backend's
    floating-point probabilities do (``prediction_kind="probabilities"``): the standard's likelihood,
    ECE and bias entropy read softmax(q); the ``own_*`` columns read q itself.
    """
    width = len(boxes[0].lo)
    return {"accuracy": accuracy_interval(truth, boxes),
            "averaged_truelabel_likelihood": likelihood_interval(truth, boxes, softmax_branch),
            "macro_F1": macro_f1_interval(truth, boxes, width),
            "expected_calibration_error_1": ece_interval(truth, boxes, softmax_branch=softmax_branch),
            "own_likelihood_nonstandard": likelihood_interval(truth, boxes),
            "own_ece_nonstandard": ece_interval(truth, boxes),
            "bias_distribution": mean_row_interval(boxes),
            "post_bias_distribution": post_distribution_interval(truth, boxes),
            "bias_entropy": entropy_interval(boxes, softmax_branch),
            "post_bias_dl_div": kl_interval(truth, boxes)}


# ----------------------------------------------------------------------------
# the sub-benchmarks of several passes: GLER's slopes, the sensitivities' consistency
# ----------------------------------------------------------------------------
def slope_interval(xs: Sequence[float], bounds: Sequence[Interval]) -> Interval:
    """The least-squares slope of y over ``xs`` (the standard's ``linear_regression``) for every y_i in its
    interval ``bounds[i]``: exact, not merely sound.

    The slope is (n·Σx_i·y_i − Σx·Σy) / (n·Σx² − (Σx)²) = Σ_i w_i·y_i with w_i = (n·x_i − Σx) / D and
    D = n·Σ(x − x̄)² > 0: linear in y, so over the box of the y_i its minimum is at the vertex that takes
    each y_i's low end where w_i > 0 and its high end where w_i < 0, its maximum at the opposite vertex.
    Both vertices are passed through ``linear_regression`` itself, so intervals of width 0 give the
    recorded slope bit for bit.
    """
    from ..numeric import linear_regression
    n, total = len(xs), math.fsum(xs)
    rising = [n * x - total > 0 for x in xs]
    low = [lo if up else hi for up, (lo, hi) in zip(rising, bounds)]
    high = [hi if up else lo for up, (lo, hi) in zip(rising, bounds)]
    return linear_regression(xs, low)[0], linear_regression(xs, high)[0]


def consistency_interval(repetitions: Sequence[Sequence[Any]]) -> Interval:
    """Consistency (the mean over items of the majority share of an item's predicted labels over its
    repetitions) for every answer anywhere in its box; ``repetitions[i]``: item i's boxes.

    Each answer's predicted label can be any label of its possible set (:func:`_possible_and_certain`, a
    superset of the labels that can be its argmax) and the answers' boxes are independent, so an item's
    majority count ranges over [least largest count over every choice, largest count over every choice]:
    the high end is the label possible in the most repetitions; the low end is the smallest t such that
    every repetition can be given a possible label with no label given more than t times, an assignment
    (a bipartite matching with capacity t per label) decided exactly by augmenting paths.  Supersets of the
    argmax sets only widen the range, so the interval is sound; the mean is monotone in each item's share.
    Shares are summed left to right from 0 and divided as ``consistency_from_labels`` does.
    """
    low_total = high_total = 0
    for boxes in repetitions:
        options = [[c for c, ok in enumerate(_possible_and_certain(box)[0]) if ok] for box in boxes]
        m = len(options)
        high_total += max(sum(1 for o in options if c in o) for c in range(len(boxes[0].lo))) / m
        low_total += _least_majority(options) / m
    return low_total / len(repetitions), high_total / len(repetitions)


def _least_majority(options: Sequence[Sequence[int]]) -> int:
    """The smallest largest count of one label when each repetition takes one label of its ``options``."""
    labels = {c for o in options for c in o}
    t = max(1, -(-len(options) // max(1, len(labels))))
    while not _assignable(options, t):
        t += 1
    return t


def _assignable(options: Sequence[Sequence[int]], capacity: int) -> bool:
    """Whether every repetition can take one of its labels with at most ``capacity`` per label (Kuhn's
    augmenting paths; the slots of one label are interchangeable, so a label is visited once per path)."""
    load: Dict[int, List[int]] = {}
    return all(_place(j, options, capacity, load, set()) for j in range(len(options)))


def _place(j: int, options: Sequence[Sequence[int]], capacity: int, load: Dict[int, List[int]], seen: set) -> bool:
    """Give repetition j a label: a label with room, or one whose holder k moves to another label."""
    for c in options[j]:
        if c in seen:
            continue
        seen.add(c)
        holders = load.setdefault(c, [])
        if len(holders) < capacity:
            holders.append(j)
            return True
        for k in list(holders):
            if _place(k, options, capacity, load, seen):
                holders.remove(k)
                holders.append(j)
                return True
    return False
