"""write_many (rendered-once pieces, label noise drawn per pass) equals the straightforward rule.

The reference below is written from the rule alone: a direct prompt is the instruction,
per demonstration [prefix_e input_e affix_e]... label-prefix word label-affix, then
query-prefix [prefix_e query_e affix_e]... label-prefix, cut by ``cut_by_length``; label
noise draws W = int(len(demos) * rate) index values per prompt by the pop rule from one
continued LCG stream and flips every demonstration whose value is drawn to the next label.
"""
import random
import warnings

import pytest

from StaICC.datasets import Dataset
from StaICC.datasets.split import triplet_dataset
from StaICC.errors import StaICCWarning, TamperingWarning
from StaICC.prompt import prompt_writter
from StaICC.prompt.template import cut_segments

A, B, M = 1664525, 1013904223, 2 ** 32
ALPHABET = "ab %{}\n:é"


class NaiveStream:
    """The standard's LCG (X0 = 42) and the pop rule on a copied list."""

    def __init__(self):
        self.x = 42

    def pop_rule(self, items, n):
        work, out = list(items), []
        for _ in range(n):
            self.x = (A * self.x + B) % M
            out.append(work.pop(int(self.x / M * len(work))))
        return out


def _text(rnd, longest=6):
    return "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, longest)))


def random_writer(rnd):
    """A writer over a random triplet (1-3 input texts per row, some rows shorter) with a random template."""
    elements, labels = rnd.randint(1, 3), rnd.randint(2, 4)
    space = [f"L{i}" for i in range(labels)]

    def row(i):
        count = elements if rnd.random() < 0.8 else rnd.randint(0, elements)
        return [f"r{i}{_text(rnd)}" for _ in range(count)], rnd.randrange(labels)

    demos, tests = [row(i) for i in range(12)], [row(100 + i) for i in range(5)]
    trip = triplet_dataset(Dataset("toy", demos + tests, space), 0, len(demos), len(tests))
    trip.demonstration.table.rows, trip.test.table.rows = demos, tests
    glue = _text(rnd)  # often the same text between consecutive inputs (the joined shape), sometimes not
    prefixes = [_text(rnd) for _ in range(elements)]
    affixes = [glue if rnd.random() < 0.7 else _text(rnd) for _ in range(elements)]
    writer = prompt_writter(trip)
    writer.apply_template({"instruction": _text(rnd), "input_text_prefixes": prefixes, "input_text_affixes": affixes,
                           "label_prefix": _text(rnd), "label_affix": _text(rnd), "query_prefix": _text(rnd),
                           "label_space": [f"w{i}{_text(rnd, 2)}" for i in range(labels)]})
    writer.cut_by_length = rnd.choice([0, 0, 1, 3, 40])
    return writer


def reference(writer, queries, rate):
    """Each prompt and its segments by the rule, from a fresh stream."""
    template, trip = writer.template, writer.triplet_dataset
    rows, tests, words = trip.demonstration.table.rows, trip.test.table.rows, template.label_space
    stream, out = NaiveStream(), []

    def inputs(texts):
        return "".join(template.input_text_prefixes[e] + t + template.input_text_affixes[e] for e, t in enumerate(texts))

    for demos, query in queries:
        drawn = stream.pop_rule(demos, int(len(demos) * rate))
        parts = [template.instruction]
        for v in demos:
            texts, label = rows[v]
            word = words[(label + 1) % len(words)] if v in drawn else words[label]
            parts += [inputs(texts) + template.label_prefix, word + template.label_affix]
        query_texts = query if isinstance(query, list) else tests[query][0]
        parts.append(template.query_prefix + inputs(query_texts) + template.label_prefix)
        prompt = "".join(parts)
        out.append((prompt[:len(prompt) - template.cut_by_length] if template.cut_by_length else prompt,
                    cut_segments(tuple(parts), template.cut_by_length)))
    return out, stream.x


def random_queries(rnd, pseudo=False):
    return [([rnd.randrange(12) for _ in range(rnd.randint(0, 6))],  # repeated indexes included
             [f"p{_text(rnd)}"] if pseudo and rnd.random() < 0.5 else rnd.randrange(5)) for _ in range(30)]


@pytest.mark.parametrize("seed", range(60))
def test_write_many_equals_the_rule_on_random_templates_rows_and_noise(seed):
    rnd = random.Random(seed)
    writer = random_writer(rnd)
    pieces = {}
    for _ in range(3):  # passes sharing the pieces, each with its own label-noise rate
        rate = rnd.choice([0, 0, 0.25, 0.5, 0.75, 1.0, 0.3])
        writer._set_label_wrong_rate(rate)
        queries = random_queries(rnd, pseudo=seed % 3 == 0)
        expected, state = reference(writer, queries, rate)
        writer.restart_streams()
        segments = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StaICCWarning)
            prompts = writer.write_prompts(queries, pieces, segments)
        assert prompts == [prompt for prompt, _ in expected]
        assert segments == [parts for _, parts in expected]
        assert writer._label_error_stream.state == state  # exactly W floats per prompt
        writer.restart_streams()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StaICCWarning)
            assert writer.write_prompts(queries, {}) == prompts  # fresh pieces: the same text


def test_pieces_follow_the_label_words_of_each_pass():
    writer = random_writer(random.Random(7))
    queries = random_queries(random.Random(8))
    pieces = {}
    first = writer.write_prompts(queries, pieces)
    trip = writer.triplet_dataset
    trip.demonstration.label_mapping = {raw: (raw + 1) % len(trip.demonstration.label_space)
                                        for raw in trip.demonstration.label_mapping}
    changed = writer.write_prompts(queries, pieces)  # same pieces dict, other label words per row
    assert changed == writer.write_prompts(queries, {})
    assert changed != first


def test_segments_concatenate_to_the_prompt_and_split_before_the_label_word():
    writer = random_writer(random.Random(3))
    writer.cut_by_length = 0
    segments = []
    prompts = writer.write_prompts([([0, 1], 0)], {}, segments)
    assert "".join(segments[0]) == prompts[0]
    words = writer.template.label_space
    assert segments[0][2].startswith(words[writer.triplet_dataset.demonstration.table.rows[0][1]])


def test_an_index_out_of_range_names_the_index_whatever_the_pieces_hold():
    writer = random_writer(random.Random(5))
    pieces = {}
    writer.write_prompts([([0, 1], 0)], pieces)
    for demos, query, message in [([12], 0, r"demonstration index 12 not in \[0, 12\)"),
                                  ([-1], 0, r"demonstration index -1 not in \[0, 12\)"),
                                  ([0], 5, r"query index 5 not in \[0, 5\)")]:
        with pytest.raises(ValueError, match=r"Index out of range: " + message + r" \(dataset 'toy'\)"):
            writer.write_prompts([(demos, query)], pieces)


def test_more_input_texts_than_prefixes_is_refused_in_many_prompts():
    writer = random_writer(random.Random(11))
    rows = writer.triplet_dataset.demonstration.table.rows
    rows[0] = (["x"] * (len(writer.template.input_text_prefixes) + 1), 0)
    with pytest.raises(ValueError, match="more input texts than the template has input text prefixes"):
        writer.write_prompts([([0], 0)], {})


def test_a_non_integer_wrong_count_warns_once_per_prompt_from_many_prompts():
    writer = random_writer(random.Random(2))
    writer._set_label_wrong_rate(0.3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.write_prompts([([0, 1, 2, 3], 0), ([0], 0), ([0, 1, 2, 3, 4], 1)], {})
    relevant = [w for w in caught if not issubclass(w.category, TamperingWarning)]
    assert [str(w.message) for w in relevant] == ["The number of wrong labels is not an integer."] * 2
    assert all(w.filename == __file__ for w in relevant)  # the caller of write_prompts is named


def test_label_noise_without_a_stream_is_refused_by_write_many():
    writer = random_writer(random.Random(4))
    writer._set_label_wrong_rate(0.5)
    with pytest.raises(ValueError, match="label wrong rate 0.5 needs a label-noise stream .dataset 'toy'."):
        writer.compiled().write_many([([0, 1], 0)], None, {})
    assert writer.compiled().write_many([([0], 0)], None, {}) == writer.write_prompts([([0], 0)], {})
