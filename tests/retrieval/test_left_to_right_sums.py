"""Float sums that choose demonstrations or make reported numbers add left to right on every CPython.

CPython 3.12 changed ``sum()`` of floats to compensated summation, so a plain ``sum()``
gives different last bits (and, on a near-tie, different demonstrations) on 3.12+ than
on 3.9-3.11.  These vectors make the two disagree outright: left to right,
1e16 + 1 rounds back to 1e16 and the dot product below is 0.0; compensated, it is 1.0.
"""
from StaICC.metrics.agreement import accuracy_mean, mean_cohen_kappa
from StaICC.numeric import sequential_sum
from StaICC.retrieval.dpp import dpp_kernel
from StaICC.retrieval.embedding import EmbeddingSpace

CANCELLING = [1e16, 1.0, -1e16]


def test_the_vectors_tell_the_two_sums_apart():
    assert sequential_sum(x * 1.0 for x in CANCELLING) == 0.0
    total = 0.0
    for x in CANCELLING:
        total += x
    assert total == 0.0  # the rule, written out


def test_embedding_dot_similarities_add_left_to_right():
    vectors = {"q": CANCELLING, "d": [1.0, 1.0, 1.0]}
    space = EmbeddingSpace(lambda text: vectors[text], metric="dot")
    space.index(["d"])
    assert space.similarities(["q"]) == [[0.0]]


def test_dpp_kernel_adds_left_to_right():
    kernel = dpp_kernel([0.0, 0.0], [CANCELLING, [1.0, 1.0, 1.0]], scale_factor=0.1)
    assert kernel[0][1] == kernel[1][0] == 0.5  # (0.0 + 1) / 2 with unit weights


def test_agreement_means_add_left_to_right():
    # three blocks of two items: accuracies 1, 0.5, 0 in order; kappas of the block pairs
    truth = [0, 1, 0, 1, 0, 1]
    rows = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    assert accuracy_mean(truth, rows, 2) == (1.0 + 0.5 + 0.0) / 3
    assert mean_cohen_kappa(truth, rows, 2) == sequential_sum([0.0, -1.0, 0.0]) / 3
