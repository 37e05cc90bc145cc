"""The stratified picker of test items for lite runs: deterministic, stratified, nested."""
import random
from collections import Counter

import pytest

from StaICC.sampling.subsets import item_key, pick_test_items, stratified_order, subset_size

FRACTIONS = (0.0625, 0.125, 0.25, 0.5, 1.0)


def test_pinned_subsets_are_the_same_on_every_python():
    """Pinned values (checked on CPython 3.9, 3.11 and 3.13): a change here changes every lite run."""
    labels = [i % 3 for i in range(40)]
    assert pick_test_items(labels, ("Normal", "TREC"), fraction=0.125) == [6, 22, 28, 38, 39]
    assert pick_test_items(labels, ("Normal", "TREC"), fraction=0.25) == [6, 9, 22, 24, 28, 29, 32, 37, 38, 39]
    assert pick_test_items(25, ("Domain_bias", "SST5"), fraction=0.25) == [2, 6, 7, 8, 12, 13]
    assert pick_test_items(labels, ("Normal", "TREC"), count=5, salt="x") == [0, 2, 14, 19, 30]
    assert item_key(("Normal", "TREC"), 0) == int.from_bytes(
        __import__("hashlib").sha256("staicc-subset\x1f\x1fNormal\x1fTREC\x1f0".encode()).digest()[:8], "big")


def _random_labels(seed):
    rng = random.Random(seed)
    classes = rng.randint(1, 7)
    weights = [rng.random() ** 3 + 0.01 for _ in range(classes)]
    return rng.choices(range(classes), weights=weights, k=rng.randint(5, 700))


@pytest.mark.parametrize("seed", range(20))
def test_subsets_are_nested_across_fractions_and_counts(seed):
    labels = _random_labels(seed)
    previous = set()
    for fraction in FRACTIONS:
        chosen = pick_test_items(labels, ("GLER", f"d{seed}"), fraction=fraction)
        assert chosen == sorted(set(chosen)) and len(chosen) == subset_size(len(labels), fraction)
        assert previous <= set(chosen)
        previous = set(chosen)
    assert previous == set(range(len(labels)))
    counts = sorted({1, 2, 3, len(labels) // 3, len(labels) // 2, len(labels) - 1, len(labels)} - {0})
    by_count = [set(pick_test_items(labels, ("GLER", f"d{seed}"), count=c)) for c in counts]
    assert all(a < b for a, b in zip(by_count, by_count[1:]))


@pytest.mark.parametrize("seed", range(20))
def test_every_label_gets_two_items_then_its_share(seed):
    """Two items of each label first; then Webster's rule: a label holds n * N_s / N items of a subset of n
    (within about one item) whenever every label's share is above the minimum."""
    labels = _random_labels(seed)
    population = Counter(labels)
    order = stratified_order(labels, ("Normal", f"d{seed}"))
    assert sorted(order) == list(range(len(labels)))
    got: Counter = Counter()
    for n, position in enumerate(order, 1):
        got[labels[position]] += 1
        if n >= 2 * len(population):
            assert all(got[label] >= min(2, size) for label, size in population.items()), n
        if all(n * size / len(labels) >= 3 for size in population.values()):
            for label, size in population.items():
                assert abs(got[label] - n * size / len(labels)) < 1.5, (n, label)


def test_balanced_labels_are_split_exactly():
    labels = [i % 4 for i in range(512)]
    for fraction in (0.0625, 0.125, 0.25):
        chosen = pick_test_items(labels, ("Normal", "AGNews"), fraction=fraction)
        assert Counter(labels[i] for i in chosen) == {c: int(128 * fraction) for c in range(4)}


def test_subsets_depend_on_identity_and_salt_but_not_on_order_of_calls():
    labels = [i % 2 for i in range(200)]
    a = pick_test_items(labels, ("Normal", "SST5"), fraction=0.125)
    assert a == pick_test_items(labels, ("Normal", "SST5"), fraction=0.125)
    assert a != pick_test_items(labels, ("Normal", "TREC"), fraction=0.125)
    assert a != pick_test_items(labels, ("GLER", "SST5"), fraction=0.125)
    assert a != pick_test_items(labels, ("Normal", "SST5"), fraction=0.125, salt="study 1")


def test_unlabelled_items_are_one_stratum():
    chosen = pick_test_items([None] * 100, ("Contextual_bias", "TREC"), fraction=0.25)
    assert chosen == pick_test_items(100, ("Contextual_bias", "TREC"), fraction=0.25) and len(chosen) == 25


def test_sizes_round_half_up_and_keep_one_item():
    assert [subset_size(100, f) for f in (0.0625, 0.125, 0.25)] == [6, 13, 25]  # 6.25, 12.5, 25
    assert subset_size(3, 0.0625) == 1 and subset_size(0, 0.5) == 0 and subset_size(7, 1.0) == 7
    assert pick_test_items([0, 1], ("Normal", "x"), count=10) == [0, 1]


@pytest.mark.parametrize("kwargs, message", [
    ({"fraction": 0}, "in (0, 1]"), ({"fraction": 1.5}, "in (0, 1]"), ({"fraction": True}, "in (0, 1]"),
    ({"count": 0}, "positive integer"), ({"fraction": 0.5, "count": 3}, "exactly one"), ({}, "exactly one"),
])
def test_bad_arguments_say_what_was_expected(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("]", r"\]")):
        pick_test_items([0, 1, 0], ("Normal", "x"), **kwargs)
