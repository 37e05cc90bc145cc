"""Cohen's and Fleiss' kappa and the grouped metrics against independent computations."""
import random

import numpy as np
import pytest

from StaICC.metrics import consistency
from StaICC.metrics.agreement import (GROUPED_METRICS, accuracy_spread, block_accuracies, bind_grouped, cohen_kappa,
                                      fleiss_kappa, grouped_fleiss_kappa, mean_cohen_kappa)

TOL = {"rel": 1e-9, "abs": 1e-12}


def np_fleiss(ratings, categories):
    ratings = np.asarray(ratings)
    counts = np.stack([(ratings == c).sum(axis=0) for c in range(categories)], axis=1)  # items x categories
    n = ratings.shape[0]
    p_items = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_cat = counts.sum(axis=0) / counts.sum()
    pe = (p_cat ** 2).sum()
    return (p_items.mean() - pe) / (1 - pe)


@pytest.mark.parametrize("seed", range(20))
def test_cohen_kappa_against_scikit_learn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    width = rng.randint(2, 5)
    a = [rng.randrange(width) for _ in range(rng.randint(5, 200))]
    b = [x if rng.random() < 0.6 else rng.randrange(width) for x in a]
    if len(set(a)) == len(set(b)) == 1:
        pytest.skip("degenerate draw")
    assert cohen_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b), **TOL)


def test_cohen_kappa_when_both_raters_give_one_label():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0
    assert cohen_kappa([0, 0, 1, 1], [1, 1, 0, 0]) == -1.0


def test_fleiss_kappa_wikipedia_example():
    """The worked example of Fleiss (1971) as given on Wikipedia: 10 items, 14 raters, kappa = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[0] * 10 for _ in range(14)]
    for item, counts in enumerate(table):
        rater = 0
        for category, count in enumerate(counts):
            for _ in range(count):
                ratings[rater][item] = category
                rater += 1
    assert fleiss_kappa(ratings) == pytest.approx(0.20993070442195522, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_fleiss_kappa_against_numpy(seed):
    rng = random.Random(100 + seed)
    width, raters, items = rng.randint(2, 5), rng.randint(2, 9), rng.randint(3, 80)
    truth = [rng.randrange(width) for _ in range(items)]
    ratings = [[t if rng.random() < 0.7 else rng.randrange(width) for t in truth] for _ in range(raters)]
    assert fleiss_kappa(ratings) == pytest.approx(np_fleiss(ratings, width), **TOL)


def random_blocks(seed, blocks=5, items=40, width=3):
    rng = random.Random(seed)
    truth = [rng.randrange(width) for _ in range(items)]
    rows = [[rng.gauss(0, 1) + (2 if c == truth[i] else 0) for c in range(width)]
            for _ in range(blocks) for i in range(items)]
    return truth, rows


@pytest.mark.parametrize("seed", range(10))
def test_grouped_metrics_against_numpy(seed):
    truth, rows = random_blocks(seed)
    labels = np.asarray(rows).argmax(axis=1).reshape(5, 40)
    accuracies = (labels == np.asarray(truth)[None, :]).mean(axis=1)
    assert block_accuracies(truth, rows, 40) == pytest.approx(accuracies.tolist(), **TOL)
    assert accuracy_spread(truth, rows, 40) == pytest.approx(float(np.ptp(accuracies)), **TOL)
    assert grouped_fleiss_kappa(truth, rows, 40) == pytest.approx(np_fleiss(labels, 3), **TOL)
    metrics = pytest.importorskip("sklearn.metrics")
    pairs = [metrics.cohen_kappa_score(labels[a], labels[b]) for a in range(5) for b in range(a + 1, 5)]
    assert mean_cohen_kappa(truth, rows, 40) == pytest.approx(float(np.mean(pairs)), **TOL)
    # the grouped consistency is the standard's consistency
    assert GROUPED_METRICS["consistency"](truth, rows, 40) == consistency(truth, rows, 40)
    # ground truth of every row (block after block) gives the same values as the L labels
    assert block_accuracies(truth * 5, rows, 40) == block_accuracies(truth, rows, 40)


def test_identical_blocks_agree_perfectly_and_bound_metrics_keep_their_length():
    truth, rows = random_blocks(3, blocks=1)
    repeated = rows * 4
    assert mean_cohen_kappa(truth, repeated, 40) == grouped_fleiss_kappa(truth, repeated, 40) == 1.0
    assert accuracy_spread(truth, repeated, 40) == 0
    bound = bind_grouped(["accuracy_min", "cohen_kappa"], 40)
    assert bound["accuracy_min"](truth, repeated) == block_accuracies(truth, rows, 40)[0]
    with pytest.raises(ValueError, match="multiple of loop_length"):
        bound["cohen_kappa"](truth, rows[:39])
