"""n_elements_each and the short-list pop rule equal the literal pop rule (STANDARD.md §1.5) on random inputs."""
import random

import pytest

from StaICC.rng import _SHORT_LIST, fresh_stream

A, B, M = 1664525, 1013904223, 2 ** 32


class NaivePopRule:
    """The LCG X(n+1) = (A X(n) + B) mod 2**32 from 42 and the pop rule on a copied list."""

    def __init__(self):
        self.x = 42

    def n_elements(self, items, n):
        work, out = list(items), []
        for _ in range(n):
            self.x = (A * self.x + B) % M
            out.append(work.pop(int(self.x / M * len(work))))
        return out


@pytest.mark.parametrize("seed", range(40))
def test_n_elements_each_equals_the_pop_rule_list_after_list(seed):
    rnd = random.Random(seed)
    sizes = [rnd.choice([0, 1, 2, 3, 4, 5, 8, _SHORT_LIST, _SHORT_LIST + 1, 200]) for _ in range(50)]
    lists = [[rnd.randrange(1000) for _ in range(size)] for size in sizes]  # repeated values included
    counts = [rnd.randint(0, size) for size in sizes]
    stream, ref = fresh_stream(), NaivePopRule()
    assert stream.n_elements_each(lists, counts) == [ref.n_elements(items, n) for items, n in zip(lists, counts)]
    assert stream.state == ref.x
    one_by_one = fresh_stream()
    assert [one_by_one.n_elements(items, n) for items, n in zip(lists, counts)] == \
        fresh_stream().n_elements_each(lists, counts)


@pytest.mark.parametrize("size", range(0, _SHORT_LIST + 3))
def test_n_elements_on_short_and_longer_lists_equals_the_pop_rule(size):
    items = tuple(f"x{i}" for i in range(size))
    stream, ref = fresh_stream(), NaivePopRule()
    for n in (0, size // 2, size):
        assert stream.n_elements(items, n) == ref.n_elements(items, n)
        assert stream.state == ref.x
    assert list(items) == [f"x{i}" for i in range(size)]  # the caller's list is not touched


def test_too_many_picks_raise_after_the_earlier_lists_drew():
    stream, ref = fresh_stream(), NaivePopRule()
    with pytest.raises(ValueError, match="n should be less than the length of the list"):
        stream.n_elements_each([[1, 2, 3], [4, 5]], [2, 3])
    ref.n_elements([1, 2, 3], 2)
    assert stream.state == ref.x  # the first list's two floats, none for the refused one


def test_n_elements_each_accepts_tuples_ranges_and_empty_input():
    stream, ref = fresh_stream(), NaivePopRule()
    assert stream.n_elements_each([(7, 8, 9), range(4)], [3, 2]) == [ref.n_elements((7, 8, 9), 3),
                                                                     ref.n_elements(range(4), 2)]
    assert stream.n_elements_each([], []) == []
    assert stream.state == ref.x


def test_skip_advances_by_that_many_floats():
    stream, ref = fresh_stream(), NaivePopRule()
    stream.skip(7)
    ref.n_elements(range(10), 7)
    assert stream.state == ref.x
    stream.skip(0)
    assert stream.state == ref.x



def test_a_state_set_out_of_range_draws_as_next_float_does():
    stream, ref = fresh_stream(), fresh_stream()
    stream.state = ref.state = 3 * 2 ** 32 + 12345  # next_float reduces the state modulo 2**32 in its step
    picks = stream.n_elements_each([list(range(5))], [3])[0]
    pool, expected = list(range(5)), []
    for left in (5, 4, 3):
        expected.append(pool.pop(int(ref.next_float() * left)))
    assert picks == expected and stream.state == ref.state
    stream.state = ref.state = 2 ** 40 + 7
    stream.skip(3)
    for _ in range(3):
        ref.next_float()
    assert stream.state == ref.state
