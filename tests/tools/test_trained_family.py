"""The distilled member of benchmarks/lite_trained_family.py: its loss is the KL divergence from the teacher's
distribution over the label words to the student's at every label position (checked against NumPy), and the
label words' token ids are the single tokens that follow the label prefix (a word of several tokens is refused)."""
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.append(BENCHMARKS)  # after the tests' own folders: benchmarks/ has a route_matrix.py of its own

import lite_trained_family as family  # noqa: E402


def numpy_kl(student, teacher, weights, label_ids):
    """The mean over marked positions of sum_j p_j (log p_j - log q_j), p and q the softmaxes of the teacher's and
    the student's logits restricted to the row's label tokens."""
    def log_softmax(x):
        x = x - x.max()
        return x - np.log(np.exp(x).sum())
    terms = []
    for row, ids in enumerate(label_ids):
        for position in np.flatnonzero(weights[row] > 0):
            p = log_softmax(teacher[row, position, ids])
            q = log_softmax(student[row, position, ids])
            terms.append(float((np.exp(p) * (p - q)).sum()))
    return sum(terms) / len(terms)


def test_distillation_loss_is_the_label_word_kl():
    rng = np.random.default_rng(7)
    student, teacher = rng.normal(size=(2, 6, 12)) * 3, rng.normal(size=(2, 6, 12)) * 3
    weights = np.zeros((2, 6))
    weights[0, [1, 4]] = 1.0
    weights[1, [2, 3, 5]] = 1.0
    label_ids = [[3, 7], [1, 2, 9, 11]]
    found = family.distillation_loss(torch.tensor(student), torch.tensor(teacher), torch.tensor(weights), label_ids)
    assert float(found) == pytest.approx(numpy_kl(student, teacher, weights, label_ids), rel=1e-12)
    assert float(found) > 0
    same = family.distillation_loss(torch.tensor(teacher), torch.tensor(teacher), torch.tensor(weights), label_ids)
    assert float(same) == pytest.approx(0.0, abs=1e-12)
    # the logits of other tokens do not enter: only the label words' distribution is matched
    moved = student.copy()
    moved[:, :, 0] += 50.0
    again = family.distillation_loss(torch.tensor(moved), torch.tensor(teacher), torch.tensor(weights), label_ids)
    assert float(again) == pytest.approx(float(found), rel=1e-12)


def writer(prefix, words):
    return SimpleNamespace(get_config_dict=lambda: {"label_prefix": prefix}, get_label_space=lambda: list(words))


def test_label_token_ids_are_the_single_tokens_after_the_prefix():
    from StaICC.backends.tiny_models import tiny_tokenizer
    words = ["negative", "positive"]
    texts = [f"review: film {i} sentiment: {words[i % 2]}\n" for i in range(400)]
    tokenizer = tiny_tokenizer(texts, bos=True, vocab_size=400)
    ids = family.label_token_ids(tokenizer, writer("sentiment: ", words))
    assert [tokenizer.decode([i]) for i in ids] == [" negative", " positive"]
    encoded = tokenizer("sentiment: positive")["input_ids"]
    assert encoded[-1] == ids[1]
    small = tiny_tokenizer(texts, bos=True, vocab_size=262)  # bytes and a few merges: a word is several tokens
    with pytest.raises(SystemExit, match="label word 'negative' is [0-9]+ tokens after 'sentiment: '"):
        family.label_token_ids(small, writer("sentiment: ", words))


def broad_sources():
    """The broad prompts' material on the bundled rotten_tomatoes and TREC (label token ids stood in: the tests read
    the text, not the tokens)."""
    import lite_family_prompts as prompts
    return prompts.broad_sources(None, family.writers(), lambda _tokenizer, _prefix, words: list(range(len(words))))


def demonstrations_of(text, prefix, affix, words):
    """(input text, label word) of each demonstration line of a standard-template rotten_tomatoes prompt, and the
    query's part; each line reads 'review: X sentiment: Y' + affix."""
    lines = text.split(affix)
    parsed = []
    for line in lines[:-1]:
        head, _, word = line.rpartition(" " + prefix)
        assert head.startswith("review: ") and word in words
        parsed.append((head[len("review: "):], word))
    return parsed, lines[-1]


def test_broad_prompts_flip_labels_as_gler_and_query_with_the_demonstration_texts(monkeypatch):
    import random

    import lite_family_prompts as prompts
    source = broad_sources()[0]
    assert source.triplet.name == "rotten_tomatoes" and len(source.templates) == 10
    rows = source.triplet.demonstration.table.rows
    truth = {inputs[0]: label for inputs, label in rows}
    pieces = {piece for inputs, _ in rows for piece in inputs[0].split(" ")}
    words = ["negative", "positive"]
    monkeypatch.setattr(prompts, "STANDARD_SHARE", 1.0)  # the standard template, always noisy, a domain query
    monkeypatch.setattr(prompts, "CLEAN_SHARE", 0.0)
    monkeypatch.setattr(prompts, "QUERY_SHARES", (0.0, 1.0, 0.0))
    rng, flips = random.Random(11), set()
    for _ in range(160):
        text, template, _ids = prompts.broad_text(source, rng)
        assert template.label_prefix == "sentiment: " and template.label_wrong_rate == 0  # the source's, unchanged
        demos, query = demonstrations_of(text, "sentiment: ", "\n", words)
        wrong = sum(words[(truth[x] + 1) % 2] == y for x, y in demos)
        assert wrong + sum(words[truth[x]] == y for x, y in demos) == len(demos)
        assert wrong in {int(len(demos) * r) for r in (0.25, 0.5, 0.75, 1.0)}  # GLER's W = int(k * rate)
        flips.add((len(demos), wrong))
        body, _, word = query.rpartition(" sentiment: ")
        assert body.startswith("review: ") and word in words
        query_words = body[len("review: "):].split(" ")
        assert len(query_words) == 128 and set(query_words) <= pieces  # 128 words of the demonstration texts
    assert {(4, 1), (4, 2), (4, 3), (4, 4)} <= flips
    monkeypatch.setattr(prompts, "CLEAN_SHARE", 1.0)
    monkeypatch.setattr(prompts, "QUERY_SHARES", (1.0, 0.0, 0.0))
    for _ in range(30):  # clean prompts: every label true, the query a demonstration-set item
        demos, query = demonstrations_of(prompts.broad_text(source, rng)[0], "sentiment: ", "\n", words)
        assert all(words[truth[x]] == y for x, y in demos)
        assert query.rpartition(" sentiment: ")[0][len("review: "):] in truth


def test_broad_prompts_are_seeded_and_use_every_kind():
    import random

    import lite_family_prompts as prompts
    sources = broad_sources()
    first = [prompts.broad_text(sources[i % 2], random.Random(3))[0] for i in range(4)]
    again = [prompts.broad_text(sources[i % 2], random.Random(3))[0] for i in range(4)]
    assert first == again
    rng = random.Random(5)
    drawn = [prompts.broad_text(sources[0], rng) for _ in range(400)]
    prefixes = {template.label_prefix for _, template, _ in drawn}
    assert prefixes == {"sentiment: ", "label: ", "Label: "}  # Template_sens's label prefixes
    empty = sum(text.rsplit("\n", 1)[-1].startswith(("review:  ", "text:  ", "sentence:  ")) for text, _, _ in drawn)
    assert 60 < empty < 140  # about a quarter of 400 query with the empty query
