"""The domain pseudo-query word draws, computed many words at a time.

The rule (the standard's domain generator; ``domain_query_generator`` says it in words):
from stream state X, each word takes two steps of the LCG X -> (a X + c) mod 2**32; the
first new state X1 picks the row s = ((n_rows - 1) * X1) >> 32 (never the last row), the
second X2 the piece w = ((pieces - 1) * X2) >> 32 of that row's text split on single
spaces (so never the last piece of a text that has several).  A query is, for each input
element in turn, ``length`` such words joined with one space; queries follow each other
on one stream.  These are the standard's int_in_range(0, n - 1) = int((n - 1) * X / 2**32)
in integers: for n < 2**21 the float product is exact, so both agree.

Word by word this is a dozen interpreted steps a word, so a chunk of words is computed
with big-integer lane arithmetic instead: the chunk's states are packed as 64-bit lanes
of one int, every operation below keeps each lane's value under 2**64 (so no carry
crosses lanes), and only two look-ups per word remain in Python (the row's descriptor,
then the word).  The values are the rule's own, bit for bit: integer products, no floats.
"""
import sys
from array import array
from itertools import accumulate, chain, repeat
from operator import add, itemgetter, lshift, or_
from typing import Dict, List, Sequence, Tuple

from ..errors import InvalidValueError
from ..standard import LCG_INCREMENT, LCG_MULTIPLIER

_MASK32 = 0xFFFFFFFF
#: words per chunk: enough to spread the per-chunk work thin, few enough that the chunk's
#: ints (8 bytes a word) stay in the processor's cache
CHUNK_WORDS = 8192

Query = Tuple[str, ...]


class WordTable:
    """The texts of one table split on single spaces, laid out for the chunk draw.

    ``flat`` holds every piece of every row, element after element, row after row;
    ``descriptors[e * n_rows + s]`` is row s of input element e as an 8-byte little-endian
    lane: (pieces - 1) in the low half, the position of its first piece in ``flat`` in the
    high half.  ``bits`` is the bit length of the largest (pieces - 1).
    """

    __slots__ = ("flat", "descriptors", "bits", "n_rows", "elements")

    def __init__(self, texts_by_element: Sequence[Sequence[str]]) -> None:
        texts = list(chain.from_iterable(texts_by_element))
        # Joined with one space, the texts split into each text's pieces in turn; a text
        # has one piece more than it has spaces.
        flat = " ".join(texts).split(" ")
        if len(flat) > _MASK32:
            raise InvalidValueError(f"domain queries read at most 2**32 words of text, the table has {len(flat)}")
        last_pieces = list(map(str.count, texts, repeat(" ")))
        firsts = accumulate(map(add, last_pieces, repeat(1)), initial=0)
        lanes = map(or_, last_pieces, map(lshift, firsts, repeat(32)))
        self.descriptors: List[bytes] = list(map(int.to_bytes, lanes, repeat(8), repeat("little")))
        self.flat, self.bits = flat, max(last_pieces, default=0).bit_length()
        self.elements = len(texts_by_element)
        self.n_rows = len(texts_by_element[0]) if texts_by_element else 0


def queries_per_block(elements: int, length: int) -> int:
    """How many queries to draw at once: about one chunk of words, at least one query."""
    return max(1, CHUNK_WORDS // max(1, elements * length))


def draw_queries(table: WordTable, length: int, state: int, count: int) -> Tuple[List[Query], List[int]]:
    """The next ``count`` queries of ``length`` words after stream state ``state``, and the state after each."""
    per_query = table.elements * length
    jump_a, jump_b = _affine_power(2 * per_query)  # two steps a word
    states, after = [], state
    for _ in range(count):
        after = (jump_a * after + jump_b) & _MASK32
        states.append(after)
    if per_query == 0:
        return [("",) * table.elements] * count, states
    total = per_query * count
    positions = array("I")
    for done in range(0, total, CHUNK_WORDS):
        a, b = _affine_power(2 * done)
        positions += _word_positions(table, length, (a * state + b) & _MASK32, done, min(CHUNK_WORDS, total - done))
    flat = table.flat
    queries = [tuple(" ".join(_gather(flat, positions[start:start + length]))
                     for start in range(first, first + per_query, length))
               for first in range(0, total, per_query)]
    return queries, states


def query_at(table: WordTable, length: int, state: int, index: int) -> Query:
    """Query ``index`` (0-based) of the stream that starts after ``state``, drawn alone: the stream is jumped
    over the queries before it (two LCG steps a word), so no earlier query is drawn."""
    a, b = _affine_power(2 * table.elements * length * index)
    return draw_queries(table, length, (a * state + b) & _MASK32, 1)[0][0]


def _word_positions(table: WordTable, length: int, state: int, first: int, n: int) -> array:
    """Where in ``table.flat`` the n words after ``state`` lie; the first is word ``first`` of a run of whole queries."""
    lanes = _lanes(n)
    row_states = (lanes.row_a * state + lanes.row_b) & lanes.low
    piece_states = (lanes.piece_a * state + lanes.piece_b) & lanes.low
    # s = ((n_rows - 1) X1) >> 32: the high half of each lane of the product
    rows = row_states * (table.n_rows - 1)
    if table.elements > 1:  # element e reads descriptors e * n_rows onwards
        rows += _element_offsets(table, length, first, n)
    descriptors = int.from_bytes(b"".join(_gather(table.descriptors, _halves(rows, n)[1::2])), "little")
    # w = ((pieces - 1) X2) >> 32: the product summed over the bits of (pieces - 1), added
    # to the row's first position (already in the high half); the high half is the word's position
    total = descriptors & lanes.high
    for bit in range(table.bits):
        total += (piece_states << bit) & ((descriptors & lanes.bit_ones(bit)) * _MASK32)
    return _halves(total, n)[1::2]


def _affine_power(steps: int) -> Tuple[int, int]:
    """(A, B) with X(n + steps) = (A X(n) + B) mod 2**32: the LCG jumped ``steps`` ahead."""
    a = pow(LCG_MULTIPLIER, steps, 1 << 32)
    # B = c (1 + a + ... + a**(steps - 1)); the division is exact modulo (a - 1) 2**32
    geometric = (pow(LCG_MULTIPLIER, steps, (LCG_MULTIPLIER - 1) << 32) - 1) // (LCG_MULTIPLIER - 1)
    return a, geometric * LCG_INCREMENT & _MASK32


class _Lanes:
    """Packed constants for chunks of ``n`` words (lane k belongs to word k).

    The row state of word k is X(2k + 1) = alpha X(0) + beta, with (alpha, beta) the LCG
    jumped 2k + 1 steps, and its piece state X(2k + 2) likewise: packing those coefficients
    lets one multiply-add give every state of a chunk from the state before it.
    """

    __slots__ = ("row_a", "row_b", "piece_a", "piece_b", "ones", "low", "high", "_bit_ones")

    def __init__(self, n: int) -> None:
        (row_a, row_b), (piece_a, piece_b) = _affine_power(1), _affine_power(2)
        ones, have = 1, 1
        while have < n:  # lanes have..2 have - 1 are lanes 0..have - 1 jumped 2 have steps further
            a, b = _affine_power(2 * have)
            low = ones * _MASK32
            row_a |= (row_a * a & low) << 64 * have
            row_b |= ((row_b * a + b * ones) & low) << 64 * have
            piece_a |= (piece_a * a & low) << 64 * have
            piece_b |= ((piece_b * a + b * ones) & low) << 64 * have
            ones |= ones << 64 * have
            have *= 2
        keep = (1 << 64 * n) - 1
        self.row_a, self.row_b, self.piece_a, self.piece_b = row_a & keep, row_b & keep, piece_a & keep, piece_b & keep
        self.ones = ones & keep
        self.low = self.ones * _MASK32
        self.high = self.low << 32
        self._bit_ones: List[int] = []

    def bit_ones(self, bit: int) -> int:
        """Every lane holding 2**bit: what picks bit ``bit`` of each lane."""
        while len(self._bit_ones) <= bit:
            self._bit_ones.append(self.ones << len(self._bit_ones))
        return self._bit_ones[bit]


#: chunk size -> its packed constants (a run uses one or two sizes, each at most CHUNK_WORDS lanes)
_LANES: Dict[int, _Lanes] = {}
_LANES_LIMIT = 4


def _lanes(n: int) -> _Lanes:
    lanes = _LANES.get(n)
    if lanes is None:
        if len(_LANES) >= _LANES_LIMIT:
            _LANES.pop(next(iter(_LANES)))
        lanes = _LANES[n] = _Lanes(n)
    return lanes


def _element_offsets(table: WordTable, length: int, first: int, n: int) -> int:
    """Lanes holding e * n_rows in their high half for the words of input element e."""
    one_query = b"".join((e * table.n_rows << 32).to_bytes(8, "little") * length for e in range(table.elements))
    start = first % (table.elements * length) * 8
    repeats = (start + 8 * n) // len(one_query) + 1
    return int.from_bytes((one_query * repeats)[start:start + 8 * n], "little")


def _halves(packed: int, n: int) -> array:
    """The 2n 32-bit halves of n 64-bit lanes, low half first."""
    halves = array("I")
    halves.frombytes(packed.to_bytes(8 * n, "little"))
    if sys.byteorder == "big":
        halves.byteswap()
    return halves


def _gather(table: Sequence, indexes: Sequence[int]) -> Tuple:
    """table[i] for each i, in order (itemgetter answers a lone index with the item itself)."""
    if len(indexes) > 1:
        return itemgetter(*indexes)(table)
    return tuple(table[i] for i in indexes)
