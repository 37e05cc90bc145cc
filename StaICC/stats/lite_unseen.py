"""Lite intervals that allow for answers the subset has not seen (the rare-answer case).

A model that answers one label for nearly every prompt gives a few other answers, and a
subset of a dozen items of a label usually sees none of them.  The bootstrap resamples only
what the subset holds, so it gives an interval of (nearly) width zero, and a rare class's F1
or a per-label accuracy of the full run lies outside it.  Here the interval is widened by an
**exact bound on what the subset cannot see**:

* In each label s of the subset (n_s items of the full run's N_s), the *unseen cells* are the
  answers j that no asked item of label s gave (a cell (s, j) of the confusion matrix with no
  observation).  Let D_s be the full run's items of label s with an answer in an unseen cell.
  The subset drew n_s of the N_s items without replacement and found none of them, which has
  probability C(N_s - D_s, n_s) / C(N_s, n_s) (hypergeometric).  The exact one-sided upper
  limit at the run's level is the largest D with that probability above 1 - level
  (:func:`unseen_limit`; the finite-population form of the rule of three, 3 N_s / n_s).
* The metric's range when up to U_s items of each label s leave the seen cells for the unseen
  ones is then **computed**, not guessed (:func:`metric_range`), on the subset's weighted
  confusion matrix scaled to the full run.  Macro-F1 is the mean of the per-class
  F1_j = 2 TP_j / (P_j + N_j) (P_j: answers j, N_j: items of label j); each class's largest and
  least F1 is taken separately, which bounds the mean (the per-class extremes need not be
  reached together, so the range is conservative).  F1_j rises by moving items of label j into
  an unseen (j, j) and by moving answers j of other labels out of a seen (s, j) into an unseen
  cell of their row; it falls by the reverse.  Accuracy moves by the items that enter an unseen
  diagonal cell or leave a seen one for an unseen cell.  A slope over GLER's passes is a
  linear combination of the passes' values, so its range is the combination of theirs with
  each coefficient's sign.  It can also miss for a change over the passes that the subset has not
  seen with every answer seen: a model that barely reacts to the label noise has a handful of items
  whose accuracy falls (or rises) with it, and a subset without them has a slope of one sign;
  :func:`flip_shift` bounds them by the same limit, per label and sign (for the accuracy's slope, a
  mean over items, per item), added to the passes' unseen cells.
* The ECE (Normal's, and GLER's slope of it) reads of an answer only whether it is right, so its
  cells are "right" and "wrong" per label, and its shift is a triangle-inequality bound
  (:func:`ece_shift`): the tiny random HF model answers one label for 99 % of rotten_tomatoes'
  prompts, and a subset that holds none of its few right answers on the other label gave an ECE
  interval of half-width 0.0045 that held the full run's value 41 % of the time.
* The interval becomes [low - (estimate - least), high + (largest - estimate)], clipped to the
  metric's range.  Where every label of the subset saw every answer there is nothing unseen
  and the interval is the bootstrap's.  Which items are unseen depends on the answers, but the
  widening is an upper bound whichever way they fall, so it costs no coverage.

The bound holds at the run's level for each label on its own and is added to the bootstrap
interval at the same level (not split between them): the coverage study measures the sum.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple


#: the (sub-benchmark, metric) pairs widened for unseen answers: those that a rare answer moves far
UNSEEN_METRICS = frozenset({("Normal", "accuracy"), ("Normal", "macro_F1"), ("GLER", "macro_F1"), ("GLER", "accuracy"),
                            ("Normal", "expected_calibration_error_1"), ("GLER", "expected_calibration_error_1")})
#: the calibration error, widened by :func:`ece_shift` (the others by their range on the confusion matrix)
ECE_NAME = "expected_calibration_error_1"

Matrix = List[List[float]]


def unseen_limit(population: int, sample: int, level: float) -> int:
    """The exact upper limit, at ``level``, on how many of ``population`` items have a property that none of
    ``sample`` items drawn without replacement had: the largest D with C(N - D, n) / C(N, n) > 1 - level."""
    alpha, found = 1 - level, 0
    for d in range(1, population - sample + 1):
        chance = 1.0
        for k in range(sample):
            chance *= (population - d - k) / (population - k)
        if chance <= alpha:
            break
        found = d
    return found


def confusion(labels: Sequence[int], answers: Sequence[Sequence[int]], weights: Sequence[float],
              width: int, total: int) -> Matrix:
    """The subset's confusion matrix in items of the full run: row s, column j holds the weighted share of
    label-s items' answers (over their repeats) that are j, scaled so that the weights stand for ``total``."""
    matrix = [[0.0] * width for _ in range(width)]
    scale = total / sum(weights)
    for label, said, weight in zip(labels, answers, weights):
        for j in said:
            matrix[label][j] += weight * scale / len(said)
    return matrix


def _f1(tp: float, answered: float, true: float) -> float:
    return 2 * tp / (answered + true) if answered > 0 and tp > 0 else 0.0


def _class_range(matrix: Matrix, seen: List[List[bool]], limit: List[float], j: int) -> Tuple[float, float]:
    """Class j's least and largest F1 when up to limit[s] items of each row s move from seen to unseen cells."""
    width = len(matrix)
    rows = [sum(r) for r in matrix]
    tp, answered, true = matrix[j][j], sum(matrix[s][j] for s in range(width)), rows[j]
    has_unseen = [not all(r) for r in seen]
    gain = min(limit[j], rows[j]) if not seen[j][j] else 0.0
    freed = sum(min(limit[s], matrix[s][j]) for s in range(width) if s != j and seen[s][j] and has_unseen[s])
    lost = min(limit[j], tp) if seen[j][j] and has_unseen[j] else 0.0
    added = sum(min(limit[s], rows[s]) for s in range(width) if s != j and not seen[s][j])
    return _f1(tp - lost, answered - lost + added, true), _f1(tp + gain, answered + gain - freed, true)


def metric_range(metric: str, matrix: Matrix, seen: List[List[bool]], limit: List[float]) -> Tuple[float, float, float]:
    """(least, at the matrix, largest) value of ``metric`` ("macro_F1" or "accuracy") over the confusion
    matrices where up to limit[s] items of row s leave its seen cells for its unseen ones."""
    width = len(matrix)
    rows = [sum(r) for r in matrix]
    if metric == "accuracy":
        total = sum(rows)
        right = sum(matrix[s][s] for s in range(width))
        up = sum(min(limit[s], rows[s]) for s in range(width) if not seen[s][s])
        down = sum(min(limit[s], matrix[s][s]) for s in range(width) if seen[s][s] and not all(seen[s]))
        return (right - down) / total, right / total, (right + up) / total
    at = [_f1(matrix[j][j], sum(matrix[s][j] for s in range(width)), rows[j]) for j in range(width)]
    ranges = [_class_range(matrix, seen, limit, j) for j in range(width)]
    return (sum(r[0] for r in ranges) / width, sum(at) / width, sum(r[1] for r in ranges) / width)


def pass_shift(metric: str, labels: Sequence[int], answers: Sequence[Sequence[int]], weights: Sequence[float],
               width: int, full: Dict[Hashable, int], level: float) -> Tuple[float, float]:
    """How far below and above the subset's value the full run's value of one pass can lie for answers the
    subset has not seen: (estimate - least, largest - estimate)."""
    matrix = confusion(labels, answers, weights, width, sum(full.values()))
    seen, limit = unseen_limits(labels, answers, width, full, level)
    least, at, largest = metric_range(metric, matrix, seen, limit)
    return max(at - least, 0.0), max(largest - at, 0.0)


def unseen_limits(labels: Sequence[int], answers: Sequence[Sequence[int]], width: int, full: Dict[Hashable, int],
                  level: float, columns: Optional[int] = None) -> Tuple[List[List[bool]], List[float]]:
    """(seen cells of the label x answer matrix, the exact limit U_s of each label's items with an answer in an
    unseen cell): 0 for a label whose asked items gave every answer, or that the subset did not ask.  ``columns``:
    how many answers there are (default: ``width``, the labels)."""
    seen = [[False] * (columns or width) for _ in range(width)]
    asked: Dict[int, int] = {}
    for label, said in zip(labels, answers):
        asked[label] = asked.get(label, 0) + 1
        for j in said:
            seen[label][j] = True
    limit = [0.0] * width
    for s in range(width):
        if s in asked and not all(seen[s]):
            limit[s] = float(unseen_limit(full.get(s, 0), asked[s], level))
    return seen, limit


def ece_shift(labels: Sequence[int], answers: Sequence[Sequence[int]], gaps: Sequence[float], width: int,
              full: Dict[Hashable, int], level: float) -> Tuple[float, float]:
    """How far the full run's ECE of one pass can lie from the subset's for answers the subset has not seen, each
    way.  The ECE reads of an answer only whether it is right (and its confidence), so a label's cells are
    "right" and "wrong": a label whose asked rows were all right (or all wrong) may hold up to U_s items of the
    other kind.  The shift is sum_s U_s (1 + m_s) / T, m_s the largest |correct - confidence| of a row of label
    s's asked items (``gaps``: per item, over its repeats).  An item that leaves the seen cell takes its rows'
    (correct - confidence) out of their bins (each at most m_s in size) and puts rows of at most 1 into theirs
    (correct is 0 or 1, a confidence lies in [0, 1]); by the triangle inequality, bin by bin, the ECE moves by at
    most the sum of both over the R T rows it averages."""
    right = [[int(a == label) for a in said] for label, said in zip(labels, answers)]
    _, limit = unseen_limits(labels, right, width, full, level, columns=2)
    largest = [0.0] * width
    for label, gap in zip(labels, gaps):
        largest[label] = max(largest[label], gap)
    shift = sum(u * (1 + m) for u, m in zip(limit, largest)) / sum(full.values())
    return shift, shift


@dataclass(frozen=True)
class IntervalRules:
    """A subset's interval rules beyond the bootstrap's: the exact interval (:mod:`.lite_exact`; a callable
    metric -> interval or None) and the widening for unseen answers (metric -> (down, up) or None)."""

    exact: Optional[Callable[[str], Any]] = None
    unseen: Optional[Callable[[str], Optional[Tuple[float, float]]]] = None
    #: whether the widened metrics lie in [0, 1] (not a slope): the widened interval is clipped there
    clip: bool = True
    #: metrics bias-corrected on this subset beyond :data:`~.lite_debiased.DEBIASED` (:func:`~.lite_debiased.one_branch`)
    debiased: frozenset = frozenset()

    def __call__(self, name: str) -> Any:
        return self.exact(name) if self.exact else None

    def widened(self, name: str, low: Any, high: Any) -> Tuple[Any, Any]:
        shift = self.unseen(name) if self.unseen else None
        if not shift or not isinstance(low, float):
            return low, high
        low, high = low - shift[0], high + shift[1]
        return (max(low, 0.0), min(high, 1.0)) if self.clip else (low, high)


def interval_rules(statistic: Any, population: Any, plan: Any, level: float) -> IntervalRules:
    """A subset's own interval rules (its table, its :class:`~.lite.Population` and :class:`~.lite.Design`):
    the exact interval of :mod:`.lite_exact` and the widening for unseen answers."""
    from .lite_exact import exact_interval
    table = statistic.table
    return rules(statistic, range(len(table)), plan.weights, dict(population.strata), level,
                 lambda name: exact_interval(table, population, name, level))


def rules(statistic: Any, positions: Sequence[int], weights: Sequence[float], full: Dict[Hashable, int],
          level: float, exact: Optional[Callable[[str], Any]] = None) -> IntervalRules:
    """A subset's interval rules: ``exact`` and the widening for unseen answers (:func:`unseen_rule`)."""
    from .lite_debiased import one_branch
    return IntervalRules(exact, unseen_rule(statistic, positions, weights, full, level), statistic.x_values is None,
                         one_branch(statistic.table, positions))


def unseen_rule(statistic: Any, positions: Sequence[int], weights: Sequence[float], full: Dict[Hashable, int],
                level: float) -> Optional[Callable[[str], Optional[Tuple[float, float]]]]:
    """metric -> the widening (down, up) of a subset (``positions`` into the statistic's table, with the
    design's ``weights``) for answers it has not seen; None where the sub-benchmark has no such metric."""
    table = statistic.table
    names = {m for b, m in UNSEEN_METRICS if b == table.benchmark}
    if not names:
        return None
    labels = [table.labels[i] for i in positions]
    x = statistic.x_values
    passes = range(table.passes) if x is not None else range(1)
    cache: Dict[str, Optional[Tuple[float, float]]] = {}

    def shift(name: str) -> Optional[Tuple[float, float]]:
        if name not in names:
            return None
        if name not in cache:
            per_pass = [ece_shift(labels, _answers(table, p, positions), _deviations(table, p, positions),
                                  table.width, full, level) if name == ECE_NAME
                        else pass_shift(name, labels, _answers(table, p, positions), weights, table.width, full, level)
                        for p in passes]
            cache[name] = per_pass[0] if x is None else _slope_shift(x, per_pass)
            if x is not None and name != ECE_NAME:  # and for a slope: its passes' unseen change (flip_shift)
                flips = flip_shift(name, x, labels, [_answers(table, p, positions) for p in passes], weights,
                                   table.width, full, level)
                cache[name] = (cache[name][0] + flips[0], cache[name][1] + flips[1])
        return cache[name]
    return shift


def _answers(table: Any, p: int, positions: Sequence[int]) -> List[List[int]]:
    """Each subset item's answers (argmax of its summarised row) over the repeats of pass p."""
    return [[rep[i][0] for rep in table.summaries[p]] for i in positions]


def _deviations(table: Any, p: int, positions: Sequence[int]) -> List[float]:
    """Each subset item's largest |correct - confidence| over the repeats of pass p."""
    return [max(abs((rep[i][0] == table.labels[i]) - rep[i][1]) for rep in table.summaries[p]) for i in positions]


def _slope_shift(x: Sequence[float], per_pass: List[Tuple[float, float]]) -> Tuple[float, float]:
    """A least-squares slope's (down, up) range from its passes' (down, up): slope = sum_p c_p y_p with
    c_p = (x_p - mean x) / sum (x - mean x)^2, each pass moved in the direction its coefficient's sign asks."""
    mean = sum(x) / len(x)
    spread = sum((v - mean) ** 2 for v in x)
    coefficients = [(v - mean) / spread for v in x]
    up = sum(c * u if c > 0 else -c * d for c, (d, u) in zip(coefficients, per_pass))
    down = sum(c * d if c > 0 else -c * u for c, (d, u) in zip(coefficients, per_pass))
    return down, up


def flip_shift(metric: str, x: Sequence[float], labels: Sequence[int], answers: Sequence[Sequence[Sequence[int]]],
               weights: Sequence[float], width: int, full: Dict[Hashable, int], level: float) -> Tuple[float, float]:
    """How far below and above the subset's value a slope over the passes (GLER's) of accuracy or macro-F1 can lie
    for a **change over the passes** that the subset has not seen (``answers``: per pass, each item's answers).

    An item's share of right answers y_p in each pass gives it a slope contribution d = sum_p c_p y_p
    (:func:`_slope_shift`'s c_p; the accuracy's slope is the mean of d over the items, and an item right or wrong
    in every pass adds 0).  A model whose answers barely move with the label noise has a handful of items with
    d < 0 (or d > 0), and a subset that holds none of them has a slope of one sign whose bootstrap interval holds
    only that sign.  Per label s whose asked items have no d < 0, up to U_s of its items may (:func:`unseen_limit`):
    for the accuracy each moves once to the least d an item can have (:func:`_item_bound`).  For macro-F1 such an
    item is more wrong in the passes of c_p > 0 and more right in those of c_p < 0, so each pass's value is taken
    at its least with up to U_s items of label s leaving the diagonal (c_p > 0) or at its largest with up to U_s
    entering it (c_p < 0), by :func:`metric_range`; the sum over the passes with the coefficients is the slope's
    least (:func:`_slope_shift`).  Likewise upwards for the labels with no d > 0.  Macro-F1 rises with each item's
    correctness where there are two labels, so its slope moves the accuracy slope's way; an answer moved between
    two wrong labels is :func:`pass_shift`'s unseen cells.  Returns (down, up)."""
    mean = sum(x) / len(x)
    spread = sum((v - mean) ** 2 for v in x)
    coefficients = [(v - mean) / spread for v in x]
    contribution = [sum(c * sum(a == label for a in said[i]) / len(said[i]) for c, said in zip(coefficients, answers))
                    for i, label in enumerate(labels)]
    asked = sorted(set(labels))
    matrices = [confusion(labels, said, weights, width, sum(full.values())) for said in answers]
    found = []
    for sign in (-1, 1):  # the labels with no asked item of a slope contribution of this sign
        missing = [s for s in asked if not any(sign * d > FLIP_TOLERANCE for d, l in zip(contribution, labels) if l == s)]
        limit = [0.0] * width
        for s in missing:
            limit[s] = float(unseen_limit(full.get(s, 0), labels.count(s), level))
        if metric == "accuracy":
            found.append(_item_bound(coefficients, sign, contribution, labels, limit, sum(full.values())))
            continue
        per_pass = [_across_diagonal(metric, matrix, missing, limit) for matrix in matrices]
        found.append(_slope_shift(x, per_pass)[0 if sign < 0 else 1])
    return found[0], found[1]


def _item_bound(coefficients: Sequence[float], sign: int, contribution: Sequence[float], labels: Sequence[int],
                limit: Sequence[float], total: int) -> float:
    """The accuracy slope's shift towards ``sign`` (the mean of the items' d over the full run's ``total``): up to
    limit[s] items of label s move from its asked items' mean d to the end sign * sum_{c_p > 0} c_p of what an
    item's d can be (y_p in [0, 1], sum_p c_p = 0), each by at most that end's distance from the mean."""
    end = sum(c for c in coefficients if c > 0)
    shift = 0.0
    for s, u in enumerate(limit):
        if u:
            mine = [d for d, label in zip(contribution, labels) if label == s]
            shift += u * (end + max(0.0, -sign * sum(mine) / len(mine)))
    return shift / total


#: a slope contribution within this of 0 is 0 (an item right or wrong in every pass; the sum's rounding)
FLIP_TOLERANCE = 1e-9


def _across_diagonal(metric: str, matrix: Matrix, moved: Sequence[int], limit: List[float]) -> Tuple[float, float]:
    """(value - least, largest - value) of one pass's ``metric`` when up to limit[s] items of each label s in
    ``moved`` leave the diagonal (least; at most the items on it) or enter it (largest; at most those off it)."""
    width = len(matrix)
    leave = [[s not in moved or j == s for j in range(width)] for s in range(width)]
    enter = [[s not in moved or j != s for j in range(width)] for s in range(width)]
    right = [matrix[s][s] for s in range(width)]
    least, at, _ = metric_range(metric, matrix, leave, [min(u, r) for u, r in zip(limit, right)])
    _, _, largest = metric_range(metric, matrix, enter, [min(u, sum(row) - r) for u, r, row in zip(limit, right, matrix)])
    return max(at - least, 0.0), max(largest - at, 0.0)
