"""The interval metrics are sound: for answers drawn anywhere inside their boxes, the package's own metric of
those answers lies inside the interval; a box of width 0 gives the metric itself."""
import math
import random

import pytest

from StaICC.backends.top_logprobs import LabelBox, box_of, naming_label
from StaICC.metrics import accuracy, averaged_truelabel_likelihood, expected_calibration_error_1, macro_F1
from StaICC.metrics.bias import bias_entropy, post_bias_dl_div
from StaICC.metrics.intervals import standard_intervals
from StaICC.metrics.scores import own_ece_nonstandard, own_likelihood_nonstandard
from StaICC.numeric import SOFTMAX, PredictionRows

#: the metrics as a run of a server backend computes them (its rows take the softmax branch)
SCALAR = {"accuracy": accuracy, "averaged_truelabel_likelihood": averaged_truelabel_likelihood,
          "macro_F1": macro_F1, "expected_calibration_error_1": expected_calibration_error_1,
          "own_likelihood_nonstandard": own_likelihood_nonstandard, "own_ece_nonstandard": own_ece_nonstandard,
          "post_bias_dl_div": post_bias_dl_div, "bias_entropy": bias_entropy}


def random_boxes(rng, items, width, spread):
    boxes = []
    for _ in range(items):
        listed = [rng.random() ** 3 if rng.random() < 0.7 else 0.0 for _ in range(width)]
        scale = (1 - spread) / max(sum(listed), 1e-12) if sum(listed) else 0.0
        lo = tuple(v * scale for v in listed)
        rest = spread * rng.random() if sum(lo) else max(spread, 1e-3)
        boxes.append(LabelBox(lo, rest))
    return boxes


def inside(rng, box):
    """A score vector inside the box: lo plus a random split of at most ``rest``."""
    weights = [rng.random() for _ in box.lo]
    budget = box.rest * rng.random() ** 0.5
    scores = [lo + budget * w / sum(weights) for lo, w in zip(box.lo, weights)]
    if rng.random() < 0.3:  # a corner: all the unlisted mass on one label
        c = rng.randrange(len(box.lo))
        scores = [lo + (box.rest if i == c else 0.0) for i, lo in enumerate(box.lo)]
    total = sum(scores)
    return [s / total for s in scores] if total > 0 else [1 / len(scores)] * len(scores)


def column_means(rows):
    return [sum(r[c] for r in rows) / len(rows) for c in range(len(rows[0]))]


@pytest.mark.parametrize("seed", range(12))
def test_every_point_of_the_boxes_is_inside(seed):
    rng = random.Random(seed)
    width, items = rng.choice([2, 3, 6]), rng.choice([12, 30, 60])
    boxes = random_boxes(rng, items, width, rng.choice([0.0, 0.01, 0.2, 0.6]))
    truth = [rng.randrange(width) for _ in range(items)]
    bounds = standard_intervals(truth, boxes)
    for _ in range(40):
        rows = [inside(rng, box) for box in boxes]
        for name, metric in SCALAR.items():
            value = metric(truth, PredictionRows(rows, SOFTMAX))
            low, high = bounds[name]
            assert low - 1e-12 <= value <= high + 1e-12, (name, low, value, high)
        for m, (low, high) in zip(column_means(rows), bounds["bias_distribution"]):
            assert low - 1e-12 <= m <= high + 1e-12


def test_a_box_of_width_zero_gives_the_metric_itself():
    rng = random.Random(7)
    boxes = []
    for _ in range(40):
        lo = [rng.random() for _ in range(3)]
        boxes.append(LabelBox(tuple(v / sum(lo) for v in lo), 0.0))
    truth = [rng.randrange(3) for _ in boxes]
    rows = PredictionRows([box.point() for box in boxes], SOFTMAX)
    bounds = standard_intervals(truth, boxes)
    for name in ("accuracy", "macro_F1", "expected_calibration_error_1", "own_ece_nonstandard"):
        assert bounds[name][0] == bounds[name][1] == pytest.approx(SCALAR[name](truth, rows), abs=1e-12), name
    for name in ("averaged_truelabel_likelihood", "own_likelihood_nonstandard"):
        low, high = bounds[name]
        assert low == pytest.approx(high) == pytest.approx(SCALAR[name](truth, rows)), name


def test_tokens_name_one_label_by_prefix():
    labels = ("negative", "positive", "neutral")
    assert naming_label(" Positive", labels) == 1
    assert naming_label("pos", labels) == 1
    assert naming_label("ne", labels) is None  # a prefix of two labels names neither
    assert naming_label("neg", labels) == 0
    assert naming_label("  ", labels) is None
    assert naming_label("positively", labels) is None
    box = box_of([(" positive", math.log(0.5)), ("Pos", math.log(0.2)), ("the", math.log(0.1))], labels)
    assert box.lo == pytest.approx((0.0, 0.7, 0.0))
    assert box.rest == pytest.approx(0.2, abs=2e-5)
    lows_highs = box.probability_bounds()
    assert lows_highs[1][0] == pytest.approx(0.7 / (0.7 + box.rest))
    assert lows_highs[1][1] == pytest.approx(1.0)
    assert sum(box.point()) == pytest.approx(1.0)


# ------------------------------------------------------------------ several passes: slopes, consistency
def test_the_slope_interval_is_the_exact_range_over_the_per_pass_intervals():
    """Every y inside the per-pass intervals has its slope inside; the ends are the extremes over all 2^n
    vertices of the box (computed by brute force), so the interval is exact; width 0 gives the slope itself."""
    import itertools

    from StaICC.metrics.intervals import slope_interval
    from StaICC.numeric import linear_regression
    from StaICC.spec import label_noise_x_values
    rng = random.Random(3)
    for passes, abscissae in ((5, "standard"), (4, "correctness"), (6, "standard")):
        xs = label_noise_x_values(passes, abscissae)
        for _ in range(20):
            bounds = [tuple(sorted((rng.random(), rng.random()))) for _ in range(passes)]
            low, high = slope_interval(xs, bounds)
            vertices = [linear_regression(xs, list(v))[0] for v in itertools.product(*bounds)]
            assert low == pytest.approx(min(vertices), abs=1e-12) and high == pytest.approx(max(vertices), abs=1e-12)
            for _ in range(20):
                ys = [lo + (hi - lo) * rng.random() for lo, hi in bounds]
                assert low - 1e-12 <= linear_regression(xs, ys)[0] <= high + 1e-12
        ys = [rng.random() for _ in range(passes)]
        assert slope_interval(xs, [(y, y) for y in ys]) == (linear_regression(xs, ys)[0],) * 2


def _majority_range(options):
    """(least, largest) majority count over every choice of one label per repetition: brute force."""
    import itertools
    counts = [max(choice.count(c) for c in set(choice)) for choice in itertools.product(*options)]
    return min(counts), max(counts)


@pytest.mark.parametrize("seed", range(6))
def test_the_consistency_interval_is_exact_over_the_argmax_sets_and_holds_every_point(seed):
    """Per item, the majority count's range over every choice of each repetition's possible labels (brute
    force) gives the interval's ends; consistency of answers drawn inside the boxes (the package's own
    metric, rows laid out as a run lays them: repetition-major, items repeating every L) lies inside."""
    from StaICC.metrics.intervals import _possible_and_certain, consistency_interval
    from StaICC.metrics.scores import consistency
    rng = random.Random(seed)
    width, items, reps = rng.choice([2, 3, 4]), rng.choice([5, 12]), rng.choice([3, 4, 6])
    boxes = random_boxes(rng, items * reps, width, rng.choice([0.0, 0.05, 0.3, 0.8]))
    repetitions = [[boxes[r * items + i] for r in range(reps)] for i in range(items)]
    low, high = consistency_interval(repetitions)
    ranges = [_majority_range([[c for c, ok in enumerate(_possible_and_certain(b)[0]) if ok] for b in group])
              for group in repetitions]
    assert low == pytest.approx(sum(lo / reps for lo, _ in ranges) / items, abs=1e-12)
    assert high == pytest.approx(sum(hi / reps for _, hi in ranges) / items, abs=1e-12)
    for _ in range(40):
        rows = [inside(rng, box) for box in boxes]
        value = consistency(list(range(len(rows))), PredictionRows(rows, SOFTMAX), items)
        assert low - 1e-12 <= value <= high + 1e-12
