"""The chunked domain pseudo-query draw (prompt/word_draws.py) equals the rule drawn word by word."""
import random

import pytest

from StaICC.datasets import Dataset
from StaICC.prompt import domain_query_generator
from StaICC.prompt import word_draws

A, C, MASK = 1664525, 1013904223, 0xFFFFFFFF
LENGTHS = (0, 1, 7, 128)


def reference_queries(rows, length, count, state=42):
    """The rule one word at a time: per input element, ``length`` times a row then a piece of it."""
    queries, states = [], []
    for _ in range(count):
        query = []
        for e in range(len(rows[0][0])):
            words = []
            for _ in range(length):
                state = (A * state + C) & MASK
                pieces = rows[((len(rows) - 1) * state) >> 32][0][e].split(" ")
                state = (A * state + C) & MASK
                words.append(pieces[((len(pieces) - 1) * state) >> 32])
            query.append(" ".join(words))
        queries.append(tuple(query))
        states.append(state)
    return queries, states


def random_text(rng):
    """Words, empty pieces (repeated, leading, trailing spaces) and the odd empty or space-only text."""
    shape = rng.random()
    if shape < 0.05:
        return ""
    if shape < 0.1:
        return " " * rng.randint(1, 4)
    words = [rng.choice(["a", "bb", "ccc", "δ", "é", ",", "", "word", "x y"]) for _ in range(rng.randint(1, 40))]
    return rng.choice(["", " ", "  "]) + " ".join(words) + rng.choice(["", " ", "   "])


def random_rows(rng, n_rows, elements):
    return [([random_text(rng) for _ in range(elements)], rng.choice(["p", "n"])) for _ in range(n_rows)]


def fast_queries(rows, length, count, state=42):
    table = word_draws.WordTable([[row[0][e] for row in rows] for e in range(len(rows[0][0]))])
    return word_draws.draw_queries(table, length, state, count)


@pytest.mark.parametrize("elements", [1, 2])
@pytest.mark.parametrize("length", LENGTHS)
def test_draw_equals_the_rule_on_random_tables(elements, length):
    rng = random.Random(1000 * elements + length)
    for n_rows in (1, 2, 3, 5, 17, 64):
        rows = random_rows(rng, n_rows, elements)
        state = rng.choice([42, 0, MASK, rng.getrandbits(32)])
        count = rng.randint(1, 9)
        assert fast_queries(rows, length, count, state) == reference_queries(rows, length, count, state)


@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
def test_chunks_that_cut_queries_and_elements(monkeypatch, chunk):
    """Chunks smaller than a query, or ending inside one element, keep the words in order."""
    monkeypatch.setattr(word_draws, "CHUNK_WORDS", chunk)
    rng = random.Random(chunk)
    for elements, length, count in [(1, 7, 4), (2, 7, 3), (3, 5, 2), (2, 1, 6)]:
        rows = random_rows(rng, 9, elements)
        assert fast_queries(rows, length, count) == reference_queries(rows, length, count)


def test_wide_texts_use_every_bit_of_the_piece_count():
    """(pieces - 1) of several bits, up to one piece a row, and rows of one piece."""
    rows = [([" ".join(str(i) for i in range(width))], "p") for width in (1, 2, 3, 255, 256, 257, 1000, 4097, 1)]
    assert fast_queries(rows, 128, 5) == reference_queries(rows, 128, 5)


def test_generator_reads_queries_and_stream_states_across_blocks():
    rng = random.Random(7)
    rows = random_rows(rng, 6, 2)
    demo = Dataset("toy", rows, ["p", "n"])
    generator = domain_query_generator(demo, 7)
    count = word_draws.queries_per_block(2, 7) + 3  # the second block is drawn on demand
    expected, states = reference_queries(rows, 7, count)
    for n in range(count):
        assert list(next(generator)) == list(expected[n])
        assert generator._stream.state == states[n]
    generator.restart()
    assert generator._stream.state == 42
    assert [next(generator) for _ in range(3)] == [list(q) for q in expected[:3]]


def test_generator_of_length_zero_keeps_the_stream():
    demo = Dataset("toy", [(["a b", "c"], "p"), (["d", "e f"], "n")], ["p", "n"])
    generator = domain_query_generator(demo, 0)
    assert [next(generator) for _ in range(3)] == [["", ""]] * 3
    assert generator._stream.state == 42


def test_bundled_demonstration_set(rt):
    rows = rt.triplet_dataset.demonstration.table
    expected, states = reference_queries(rows, 128, 70)
    generator = domain_query_generator(rt.triplet_dataset.demonstration, 128)
    got = [tuple(next(generator)) for _ in range(70)]  # past the first block of 64
    assert got == expected
    assert generator._stream.state == states[-1]


def test_domain_calibration_lines(rt):
    """The domain calibration's generator: the calibration set, 64 words, 128 lines (one block)."""
    calibration_set = rt.triplet_dataset.calibration
    expected, _ = reference_queries(calibration_set.table, 64, 130)
    generator = domain_query_generator(calibration_set, 64)
    assert [tuple(next(generator)) for _ in range(130)] == expected
