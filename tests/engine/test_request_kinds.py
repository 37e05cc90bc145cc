"""What a request asks for (``Request.kind``): its key, its validation, who answers it and how it is cached.

Label requests keep the key they always had (a cache written before kinds existed is still
read); a representation (full-vocabulary logits, a hidden state) has a key of its own, is
refused before any inference by a backend that does not list its kind, and is stored and read
back bit for bit as a float32 vector.
"""
import hashlib
import json
import math
from array import array

import pytest

from StaICC.backends.base import Backend, FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.engine.scoring import check_state, score_requests
from StaICC.requests import FULL_VOCAB, HIDDEN, LABELS, Answer, Request, requests_asking, state_vector

LABEL_SPACE = ("negative", "positive")


def _json_key(*parts):
    body = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("prompt", ["Review: fine\nSentiment:", ("a \"quoted\" one", "second\tprompt"), "é\u2028x"])
def test_label_requests_keep_their_key_and_representations_have_their_own(prompt):
    label = Request(prompt, LABEL_SPACE)
    as_list = list(prompt) if isinstance(prompt, tuple) else prompt
    assert label.kind == LABELS and label.key() == _json_key(as_list, list(LABEL_SPACE))
    keys = {label.key()}
    for kind in (FULL_VOCAB, HIDDEN):
        other = Request(prompt, LABEL_SPACE, kind=kind)
        assert other.key() == _json_key(as_list, list(LABEL_SPACE), kind)
        assert other != label
        keys.add(other.key())
    assert len(keys) == 3


def test_label_keys_are_the_keys_caches_were_written_with():
    """Computed by the package before requests had a kind: a cache written then is read now."""
    assert Request("p", ("a", "b")).key() == "b81d2c30c3fc250b86924c8ecea1ef015950c75a7bbe702f511e0e6230991220"
    assert Request(("x", "y"), ("a", "b")).key() == "089d3da01331c4b6cf89c96dffbad7bc2e5ccd7e4a0a4d6862932ae0426204f2"


def test_requests_asking_copy_every_field_but_the_kind():
    requests = [Request(f"p{i}", LABEL_SPACE, "Normal", "toy", i, 1, ("seg",)) for i in range(3)]
    hidden = requests_asking(requests, HIDDEN)
    for before, after in zip(requests, hidden):
        assert (after.prompt, after.label_space, after.benchmark, after.dataset, after.query_index, after.pass_index,
                after.segments, after.kind) == (before.prompt, before.label_space, before.benchmark, before.dataset,
                                                before.query_index, before.pass_index, before.segments, HIDDEN)
        assert after.key() == Request(before.prompt, LABEL_SPACE, kind=HIDDEN).key()
    assert requests_asking(requests, LABELS) == requests


def test_a_function_is_refused_a_hidden_state_before_it_is_called():
    calls = []

    def f(prompt, **_label_space):
        calls.append(prompt)
        return [0.5, 0.5]
    requests = [Request("p", LABEL_SPACE, dataset="toy"), Request("q", LABEL_SPACE, dataset="toy", kind=HIDDEN)]
    with pytest.raises(ValueError, match=r"function backend cannot answer hidden states at dataset 'toy'.*hf"):
        score_requests(FunctionBackend(f), requests)
    assert calls == []


class StatesBackend(Backend):
    """Answers every kind: label scores, and a representation that depends on the prompt."""

    name = "states"
    request_kinds = (LABELS, FULL_VOCAB, HIDDEN)
    requests_per_call = 8

    def __init__(self):
        self.asked = []

    def score(self, requests):
        self.asked.extend(requests)
        out = []
        for r in requests:
            if r.kind == LABELS:
                out.append(Answer([0.25, 0.75]))
            else:
                width = 3 if r.kind == HIDDEN else 5
                out.append(Answer([len(r.prompt) / 3 + i * 0.1 for i in range(width)]))
        return out

    def identity(self):
        return {"backend": "states"}


def test_representations_are_float32_vectors_stored_and_read_back_bit_for_bit(tmp_path):
    backend = StatesBackend()
    requests = [Request(p, LABEL_SPACE, kind=kind) for p in ("ab", "abcd") for kind in (LABELS, FULL_VOCAB, HIDDEN)]
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        counts = {}
        first = score_requests(backend, requests, cache=cache, counts=counts)
        again = score_requests(backend, requests, cache=cache, counts=counts)
    assert counts == {"asked": 6, "cached": 6} and len(backend.asked) == 6
    for request, answer, cached in zip(requests, first, again):
        if request.kind == LABELS:
            assert answer.prediction == cached.prediction == [0.25, 0.75]
            continue
        expected = array("f", [len(request.prompt) / 3 + i * 0.1 for i in range(3 if request.kind == HIDDEN else 5)])
        assert answer.prediction == expected and answer.prediction.typecode == "f"
        assert cached.prediction == expected and cached.prediction.typecode == "f"
        assert cached.prediction.tobytes() == expected.tobytes()


@pytest.mark.parametrize("value, message", [
    ("text", "expected a vector"), (3, "expected a vector"), ([], "empty vector"),
    ([1.0, math.nan], "non-finite"), ([1.0, math.inf], "non-finite"), ([1e39], "non-finite"),
    (["a", "b"], "not a vector of numbers")])
def test_a_bad_representation_is_refused_where_it_is_answered(value, message):
    with pytest.raises((TypeError, ValueError), match=message):
        check_state(value, Request("p", LABEL_SPACE, dataset="toy", kind=HIDDEN))


def test_state_vector_keeps_float32_values_exactly():
    numpy = pytest.importorskip("numpy")
    values = numpy.array([[0.1, -2.5, 3.0e-8]], dtype=numpy.float32)
    vector = state_vector(values)
    assert vector.typecode == "f" and vector.tobytes() == values.tobytes()
    assert state_vector(vector) is vector
    assert list(state_vector([0.5, 1.5])) == [0.5, 1.5]
