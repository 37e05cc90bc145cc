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
