"""Stable random generator (STANDARD.md §1)."""
import re
import warnings

import pytest

from StaICC.errors import TamperingWarning
from StaICC.rng import StableRandom, fresh_stream

from conftest import TAMPERING_TEXT

A, B, M = 1664525, 1013904223, 2 ** 32


class NaiveLCG:
    """Independent reference: the LCG of §1.1 and the literal pop rule of §1.5."""

    def __init__(self, seed=42):
        self.x = seed

    def u(self):
        self.x = (A * self.x + B) % M
        return self.x / M

    def n_elements(self, items, n, allow_repetition=False):
        work = list(items)
        out = []
        for _ in range(n):
            p = int(self.u() * len(work))
            out.append(work[p])
            if not allow_repetition:
                work.pop(p)
        return out


# -- §1.1 / §1.2 -------------------------------------------------------------------
def test_worked_states():
    r = StableRandom()
    assert r.state == 42
    states = []
    for _ in range(5):
        r.next_float()
        states.append(r.state)
    assert states == [1083814273, 378494188, 2479403867, 955863294, 1613448261]


def test_worked_first_floats():
    r = fresh_stream()
    assert [r.next_float() for _ in range(3)] == [0.2523451747838408, 0.08812504541128874, 0.5772811982315034]


def test_float_is_new_state_over_2_32():
    r = StableRandom()
    u = r.next_float()
    assert u == 1083814273 / 4294967296
    assert r.state == 1083814273


def test_floats_lie_in_unit_interval_and_match_naive():
    r, ref = StableRandom(), NaiveLCG()
    for _ in range(2000):
        u = r.next_float()
        assert 0 <= u < 1
        assert u == ref.u()


def test_streams_do_not_share_state():
    a, b = fresh_stream(), fresh_stream()
    a.next_float()
    a.next_float()
    assert b.next_float() == 0.2523451747838408


def test_copy_carries_state():
    a = StableRandom()
    a.next_float()
    c = a.copy()
    assert c.next_float() == a.next_float() == 0.08812504541128874


# -- seed ---------------------------------------------------------------------------
def test_other_seed_warns_tampering_and_is_honoured():
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT)):
        r = StableRandom(7)
    assert r.next_float() == ((A * 7 + B) % M) / M


def test_seed_42_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StableRandom(42)
        fresh_stream()


# -- §1.3 / §1.4 ---------------------------------------------------------------------
def test_int_in_range_formula():
    r = fresh_stream()
    # int(start + (end - start) * u) with u = 0.2523451747838408, 0.0881..., 0.5772...
    assert r.int_in_range(0, 10) == 2
    assert r.int_in_range(5, 15) == 5  # int(5 + 10 * 0.0881...) = int(5.88...)
    assert r.int_in_range(0, 100) == 57


def test_int_in_range_integer_shortcut_and_end_excluded():
    r, ref = fresh_stream(), NaiveLCG()
    for end in (1, 2, 3, 7, 100, 4095, 2 ** 21 - 1):
        for _ in range(50):
            value = r.int_in_range(0, end)
            ref.u()
            assert value == (ref.x * end) >> 32
            assert 0 <= value < end


def test_int_in_range_one_consumes_one_float():
    r = fresh_stream()
    assert r.int_in_range(0, 1) == 0
    assert r.state == 1083814273


def test_one_element():
    r = fresh_stream()
    items = list("abcdefghij")
    assert r.one_element(items) == "c"  # int(0.2523... * 10) = 2
    assert r.one_element(items) == "a"  # int(0.0881... * 10) = 0
    assert r.state == 378494188


# -- §1.5 n_elements ------------------------------------------------------------------
SIZES_AND_COUNTS = [(1, 0), (1, 1), (2, 2), (5, 3), (10, 10), (47, 47), (48, 48), (49, 49), (50, 49),
                    (60, 48), (100, 49), (100, 100), (300, 250), (1000, 60), (1000, 1000), (4096, 4),
                    (5000, 4999)]


@pytest.mark.parametrize("size,n", SIZES_AND_COUNTS)
def test_n_elements_equals_naive_pop_rule(size, n):
    items = [f"x{i}" for i in range(size)]
    r, ref = fresh_stream(), NaiveLCG()
    assert r.n_elements(items, n) == ref.n_elements(items, n)
    assert r.state == ref.x  # exactly n floats consumed


@pytest.mark.parametrize("size,n", [(64, 64), (200, 150), (1024, 512)])
def test_n_elements_pop_rule_continues_a_used_stream(size, n):
    r, ref = fresh_stream(), NaiveLCG()
    for _ in range(3):  # several consecutive draws, tree path (n > 48) included
        assert r.index_set(n, size) == ref.n_elements(range(size), n)
        assert r.state == ref.x


@pytest.mark.parametrize("size,n", [(5, 12), (1, 3), (100, 100), (3, 0)])
def test_n_elements_with_repetition(size, n):
    items = list(range(100, 100 + size))
    r, ref = fresh_stream(), NaiveLCG()
    assert r.n_elements(items, n, allow_repetition=True) == ref.n_elements(items, n, allow_repetition=True)
    assert r.state == ref.x


def test_repetition_picks_are_independent_uniform_indexes():
    # with repetition the list never shrinks: pick i is int(u_i * len)
    r = fresh_stream()
    us = [0.2523451747838408, 0.08812504541128874, 0.5772811982315034]
    assert r.n_elements(list(range(7)), 3, allow_repetition=True) == [int(u * 7) for u in us]


def test_n_zero_consumes_no_float():
    r = fresh_stream()
    assert r.n_elements([1, 2, 3], 0) == []
    assert r.n_elements([1, 2, 3], 0, allow_repetition=True) == []
    assert r.state == 42


def test_n_elements_more_than_len_raises():
    with pytest.raises(ValueError, match="n should be less than the length of the list"):
        fresh_stream().n_elements([1, 2, 3], 4)


def test_n_elements_equal_to_len_allowed():
    assert sorted(fresh_stream().n_elements([1, 2, 3], 3)) == [1, 2, 3]


def test_n_elements_does_not_modify_input():
    items = [5, 6, 7, 8, 9]
    fresh_stream().n_elements(items, 5)
    fresh_stream().shuffle(items)
    big = list(range(100))
    fresh_stream().n_elements(big, 80)
    assert items == [5, 6, 7, 8, 9]
    assert big == list(range(100))


def test_n_elements_on_pop_rule_small_example():
    # u = 0.2523.., 0.0881.., 0.5772..: p = int(0.2523 * 5) = 1 of [a b c d e] -> b;
    # p = int(0.0881 * 4) = 0 of [a c d e] -> a; p = int(0.5772 * 3) = 1 of [c d e] -> d
    assert fresh_stream().n_elements(list("abcde"), 3) == ["b", "a", "d"]


# -- §1.6 / §1.7 ------------------------------------------------------------------------
def test_index_set_worked_example():
    assert fresh_stream().index_set(10, 100) == [25, 8, 58, 22, 39, 2, 47, 13, 88, 99]


def test_index_set_with_repetition_worked_example():
    assert fresh_stream().index_set(10, 5, allow_repetition=True) == [1, 0, 2, 1, 1, 0, 2, 0, 4, 4]


def test_index_set_too_many_raises():
    with pytest.raises(ValueError, match="sample_number should be less than max_index"):
        fresh_stream().index_set(6, 5)


def test_index_set_equal_allowed_and_is_a_permutation():
    drawn = fresh_stream().index_set(50, 50)
    assert sorted(drawn) == list(range(50))


def test_shuffle_worked_example():
    items = list(range(10))
    r = fresh_stream()
    assert r.shuffle(items) == [2, 0, 6, 3, 5, 1, 7, 4, 9, 8]
    assert items == list(range(10))
    ref = NaiveLCG()
    for _ in range(10):
        ref.u()
    assert r.state == ref.x  # len(list) floats


def test_shuffle_large_equals_naive():
    items = list(range(3000))
    assert fresh_stream().shuffle(items) == NaiveLCG().n_elements(items, 3000)


@pytest.mark.parametrize("seed", [True, 4.2, "42"])
def test_seed_must_be_an_int(seed):
    with pytest.raises(TypeError, match="seed must be an int"):
        StableRandom(seed)
