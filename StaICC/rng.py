"""The standard's stable random generator: a 32-bit LCG, X(n+1) = (1664525 X(n) + 1013904223) mod 2**32, X0 = 42.

Every random choice in StaICC goes through this class so that splits,
demonstrations and label noise are identical on every platform and Python
version.  Selection without repetition follows the standard's pop-based rule
(draw a position, remove it, shift the rest left).  A short list (label noise over
a prompt's few demonstrations) is copied and popped as the rule says; a longer one
is never copied: small draws track the removed positions, large draws use a
Fenwick tree, so no call is quadratic in the list length.
"""
from bisect import bisect_right, insort
from functools import lru_cache
from math import floor
from typing import List, Sequence, TypeVar

from .errors import InvalidValueError
from .standard import LCG_INCREMENT, LCG_MODULUS, LCG_MULTIPLIER, SEED
from .validation import check_int

T = TypeVar("T")

_SMALL_DRAW = 4096  # up to this many picks, bisecting the removed positions beats a tree
_SHORT_LIST = 64  # up to this many items, a copy popped in place beats tracking removed positions
# The LCG step on a state held as a double: A * X + C < 2**53 for every X < 2**32, so each product,
# sum and remainder is an integer a double holds exactly, the step is the integer one, and u = X / 2**32
# is the same double as next_float's (loops that draw many floats use it; ints of this size are slower)
_A, _C, _M = float(LCG_MULTIPLIER), float(LCG_INCREMENT), float(LCG_MODULUS)
assert LCG_MULTIPLIER * (LCG_MODULUS - 1) + LCG_INCREMENT < 2 ** 53


class StableRandom:
    """Deterministic generator; ``state`` is the last LCG value (X0 = seed)."""

    __slots__ = ("state",)

    def __init__(self, seed: int = SEED) -> None:
        seed = check_int(seed, "seed")
        if seed != SEED:
            from .errors import warn_tampering
            warn_tampering(f"random seed {seed} instead of {SEED}")
        self.state = seed % LCG_MODULUS

    def copy(self) -> "StableRandom":
        clone = StableRandom.__new__(StableRandom)
        clone.state = self.state
        return clone

    # -- primitives -------------------------------------------------------
    def next_float(self) -> float:
        """Advance once and return the new state / 2**32, in [0, 1)."""
        self.state = (LCG_MULTIPLIER * self.state + LCG_INCREMENT) % LCG_MODULUS
        return self.state / LCG_MODULUS

    def skip(self, n: int) -> None:
        """Advance by n floats (draws whose values do not matter, such as picking every item of a list)."""
        state = float(self.state % LCG_MODULUS)
        for _ in range(n):
            state = (_A * state + _C) % _M  # next_float's step (see _A)
        self.state = int(state)

    def int_in_range(self, start: int, end: int) -> int:
        """int(start + (end - start) * u): in [start, end) for end > start."""
        return int(start + (end - start) * self.next_float())

    def one_element(self, items: Sequence[T]) -> T:
        return items[int(self.next_float() * len(items))]

    # -- selections -------------------------------------------------------
    def n_elements(self, items: Sequence[T], n: int, allow_repetition: bool = False) -> List[T]:
        """n picks in draw order; without repetition each pick is removed (pop rule)."""
        if not allow_repetition and n > len(items):
            raise InvalidValueError("n should be less than the length of the list")
        if n <= 0:
            return []
        size = len(items)
        if allow_repetition:
            return [items[int(self.next_float() * size)] for _ in range(n)]
        if size <= _SHORT_LIST:
            return self.n_elements_each((items,), (n,))[0]
        if n <= _SMALL_DRAW:
            return [items[p] for p in self._pop_positions_small(size, n)]
        return [items[p] for p in self._pop_positions_tree(size, n)]

    def index_set(self, n: int, max_index: int, allow_repetition: bool = False) -> List[int]:
        if not allow_repetition and n > max_index:
            raise InvalidValueError("sample_number should be less than max_index")
        return self.n_elements(range(max_index), n, allow_repetition)

    def shuffle(self, items: Sequence[T]) -> List[T]:
        return self.n_elements(items, len(items))

    def n_elements_each(self, lists: Sequence[Sequence[T]], counts: Sequence[int]) -> List[List[T]]:
        """``[self.n_elements(items, n) for items, n in zip(lists, counts)]``: the same picks, the same stream.

        Label noise draws a few of a prompt's demonstrations per prompt, tens of thousands of
        times a run.  A short list is drawn here by the pop rule as written, on a copy: pick i
        is ``pool.pop(int(u_i * (len(items) - i)))``, with the LCG step of :meth:`next_float`
        inlined (on a double-held state, see ``_A``); a longer one by :meth:`n_elements`, which never copies it.
        """
        state = float(self.state % LCG_MODULUS)
        picks = []
        for items, n in zip(lists, counts):
            size = len(items)
            if n > size or size > _SHORT_LIST:
                self.state = int(state)
                picks.append(self.n_elements(items, n))  # raises when n > size
                state = float(self.state % LCG_MODULUS)
                continue
            pool = [*items]
            out = []
            for left in range(size, size - n, -1):
                state = (_A * state + _C) % _M
                out.append(pool.pop(floor(state / _M * left)))  # floor = int() for u * left >= 0
            picks.append(out)
        self.state = int(state)
        return picks

    # -- pop-rule helpers: map "position in the shrunk list" to the original index, without copying the list
    def _pop_positions_small(self, size: int, n: int) -> List[int]:
        removed: List[int] = []  # sorted original positions already taken
        out = []
        for i in range(n):
            rank = int(self.next_float() * (size - i))
            # The rank-th position not yet taken is the least fixpoint of x = rank + #removed <= x,
            # reached from below in a few C-speed bisections.
            pos, taken = rank, 0
            while True:
                now = bisect_right(removed, pos, taken)
                if now == taken:
                    break
                pos += now - taken
                taken = now
            insort(removed, pos)
            out.append(pos)
        return out

    def _pop_positions_tree(self, size: int, n: int) -> List[int]:
        tree = _full_fenwick_tree(size)[:]  # "still available" flags, all 1; a C-speed copy
        top = 1 << size.bit_length()
        out = []
        for i in range(n):
            rank = int(self.next_float() * (size - i))  # 0-based rank among available
            pos, step = 0, top
            while step:
                nxt = pos + step
                if nxt <= size and tree[nxt] <= rank:
                    pos = nxt
                    rank -= tree[nxt]
                step >>= 1
            out.append(pos)  # tree index pos + 1 holds the original position pos
            j = pos + 1
            while j <= size:
                tree[j] -= 1
                j += j & -j
        return out


@lru_cache(maxsize=8)
def _full_fenwick_tree(size: int) -> List[int]:
    """Fenwick tree over ``size`` ones (index 0 unused); built once per size, then copied."""
    tree = [0] * (size + 1)
    for i in range(1, size + 1):
        tree[i] += 1
        parent = i + (i & -i)
        if parent <= size:
            tree[parent] += tree[i]
    return tree


def fresh_stream() -> StableRandom:
    """A new generator in the standard's initial state."""
    return StableRandom(SEED)
