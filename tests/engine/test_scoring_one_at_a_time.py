"""A one-at-a-time inference function is called request by request inside ``score_requests``.

The general path (one ``backend.score([request])`` call per request) is the reference: a
FunctionBackend subclass that overrides ``score`` takes it.  On random prompts and random
behaviours (valid ints and vectors, bad values, exceptions, Ctrl-C) both paths must give
the same answers, the same error with the same message at the same query, the same
partial predictions, the same counts, the same calls of the function and the same cache.
"""
import random

import pytest

from StaICC.backends.base import FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.engine import scoring
from StaICC.engine.scoring import score_requests
from StaICC.requests import Answer, Request

LABELS = ("neg", "neu", "pos")


class ThroughScore(FunctionBackend):
    """The same function, asked through ``score`` one request per call (the general path)."""

    def score(self, requests):
        return super().score(requests)


class Scripted:
    """f(prompt, label_space): each prompt's scripted behaviour; every call recorded."""

    def __init__(self, script):
        self.script, self.calls = script, []

    def __call__(self, prompt, label_space):
        assert label_space == list(LABELS)
        label_space.append("changed")  # a fresh list per call: changing it affects no other call
        self.calls.append(prompt)
        kind, value = self.script[prompt if isinstance(prompt, str) else "|".join(prompt)]
        if kind == "raise":
            raise value("model fell over")
        return value


BEHAVIOURS = [("value", 0), ("value", 2), ("value", [0.1, 0.2, 0.7]), ("value", (1, -2, 3)),
              ("value", 3), ("value", -1), ("value", True), ("value", [0.5, float("nan"), 0.5]),
              ("value", [0.2, 0.8]), ("value", "pos"), ("raise", RuntimeError), ("raise", KeyError),
              ("raise", KeyboardInterrupt), ("raise", StopIteration)]


def _scenario(rng):
    prompts = [f"prompt {rng.randrange(12)}" for _ in range(rng.randrange(1, 25))]
    script = {}
    for prompt in set(prompts):
        good = rng.random() < 0.85
        script[prompt] = BEHAVIOURS[rng.randrange(4)] if good else rng.choice(BEHAVIOURS[4:])
    requests = [Request(p, LABELS, "Normal", "toy", q, 0) for q, p in enumerate(prompts)]
    return script, requests


def _outcome(backend_type, script, requests, cache=None):
    model = Scripted(script)
    counts = {}
    try:
        answers = score_requests(backend_type(model, model_id="m"), requests, cache=cache, counts=counts)
        result = ("answers", [(a.prediction, a.text, a.parsed) for a in answers])
    except BaseException as exc:  # noqa: B036 - Ctrl-C is part of the contract under test
        result = (type(exc).__name__, str(exc), getattr(exc, "dataset", None), getattr(exc, "query_index", None),
                  exc.partial_predictions, type(exc.__cause__).__name__)
    return result, model.calls, counts


@pytest.mark.parametrize("seed", range(60))
def test_the_loop_answers_and_fails_exactly_as_one_score_call_per_request(seed, tmp_path):
    script, requests = _scenario(random.Random(seed))
    assert _outcome(FunctionBackend, script, requests) == _outcome(ThroughScore, script, requests)
    with PredictionCache(str(tmp_path / "loop.sqlite")) as loop, PredictionCache(str(tmp_path / "calls.sqlite")) as calls:
        assert _outcome(FunctionBackend, script, requests, loop) == _outcome(ThroughScore, script, requests, calls)
        fingerprint = FunctionBackend(Scripted(script), model_id="m").fingerprint()
        assert loop.lookup(fingerprint, requests) == calls.lookup(fingerprint, requests)  # the same answers kept


def test_an_error_names_the_query_and_the_answers_before_it_are_stored_first(tmp_path):
    script = {"a": ("value", 1), "b": ("value", [1.0, 2.0, 3.0]), "c": ("raise", RuntimeError), "d": ("value", 0)}
    requests = [Request(p, LABELS, "Normal", "toy", 10 + q, 0) for q, p in enumerate("abcd")]
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        with pytest.raises(Exception, match=r"inference function raised RuntimeError: model fell over at dataset "
                                            r"'toy', query 12") as info:
            score_requests(FunctionBackend(Scripted(script), model_id="m"), requests, cache=cache)
        assert info.value.query_index == 12 and info.value.partial_predictions == [1, [1.0, 2.0, 3.0]]
        stored = cache.lookup(FunctionBackend(Scripted(script), model_id="m").fingerprint(), requests)
    assert stored == [Answer(1), Answer([1.0, 2.0, 3.0]), None, None]


class Bar:
    def __init__(self):
        self.updates, self.closed = [], False

    def update(self, n=1):
        self.updates.append(n)

    def close(self):
        self.closed = True


class StoreLog:
    """A cache that has nothing and records every store (the number of answers stored)."""

    def __init__(self):
        self.stores = []

    def lookup(self, fingerprint, requests):
        return [None] * len(requests)

    def store(self, fingerprint, requests, answers):
        assert all(isinstance(a, Answer) for a in answers)
        self.stores.append(len(requests))


def test_the_bar_advances_per_request_and_answers_are_stored_in_groups(monkeypatch):
    bar = Bar()
    monkeypatch.setattr(scoring, "progress_bar", lambda total, desc, enabled: bar)
    monkeypatch.setattr(scoring, "STORE_EVERY", 3)
    cache = StoreLog()
    requests = [Request(f"p{i}", LABELS, "Normal", "toy", i, 0) for i in range(8)]
    score_requests(FunctionBackend(lambda prompt, label_space: 1, model_id="m"), requests, cache=cache)
    assert bar.updates == [1] * 8 and bar.closed
    assert cache.stores == [3, 3, 2]


def test_a_group_is_also_stored_when_it_is_old_enough(monkeypatch):
    monkeypatch.setattr(scoring, "STORE_SECONDS", -1.0)  # every answer is "older" than the limit
    cache = StoreLog()
    requests = [Request(f"p{i}", LABELS, "Normal", "toy", i, 0) for i in range(4)]
    score_requests(FunctionBackend(lambda prompt, label_space: [0.0, 1.0, 2.0], model_id="m"), requests, cache=cache)
    assert cache.stores == [1, 1, 1, 1]


def test_an_interrupt_stores_what_was_answered_before_it_propagates(monkeypatch):
    cache = StoreLog()

    def interrupted(prompt, label_space):
        if prompt == "p5":
            raise KeyboardInterrupt
        return 2

    requests = [Request(f"p{i}", LABELS, "Normal", "toy", i, 0) for i in range(8)]
    with pytest.raises(KeyboardInterrupt) as info:
        score_requests(FunctionBackend(interrupted, model_id="m"), requests, cache=cache)
    assert cache.stores == [5] and info.value.partial_predictions == [2] * 5


def test_noisy_channel_prompts_reach_the_function_as_lists():
    seen = []

    def f(prompt, label_space):
        seen.append(prompt)
        return [0.0, 0.5, 0.5]

    requests = [Request(("a x", "b x", "c x"), LABELS, "Normal", "toy", 0, 0)]
    assert score_requests(FunctionBackend(f), requests)[0].prediction == [0.0, 0.5, 0.5]
    assert seen == [["a x", "b x", "c x"]]


def test_label_answers_are_shared_and_vectors_are_not():
    requests = [Request(f"p{i}", LABELS, "Normal", "toy", i, 0) for i in range(4)]
    ints = score_requests(FunctionBackend(lambda prompt, label_space: 1), requests)
    assert ints[0] is ints[3] and ints[0] == Answer(1)
    rows = score_requests(FunctionBackend(lambda prompt, label_space: [0.0, 1.0, 0.0]), requests)
    assert rows[0] == rows[1] and rows[0].prediction is not rows[1].prediction


def test_a_batch_shape_error_raised_by_a_plain_function_reads_the_same_on_both_paths():
    from StaICC.backends.base import BatchShapeError

    def odd(prompt, label_space):
        raise BatchShapeError("3 predictions", "1, one per prompt", False)

    requests = [Request("p", LABELS, "Normal", "toy", 4, 0)]
    seen = []
    for backend in (FunctionBackend(odd), ThroughScore(odd)):
        with pytest.raises(ValueError) as info:
            score_requests(backend, requests)
        seen.append((type(info.value), str(info.value), info.value.__cause__, info.value.__suppress_context__))
    assert seen[0] == seen[1] and "returned 3 predictions at dataset 'toy'" in seen[0][1]


def test_the_shared_label_answer_of_k_is_answer_k_whatever_the_order_of_first_use():
    import threading

    from StaICC.requests import label_answer
    order = list(range(40))
    random.Random(3).shuffle(order)
    threads = [threading.Thread(target=lambda part=order[i::4]: [label_answer(k) for k in part]) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(label_answer(k) == Answer(k) and label_answer(k) is label_answer(k) for k in range(40))
