"""Outcomes: answers become metric dicts, failures name the metric, and the prompt-set digest is exact.

The digest is recomputed here from its documented framing; the metric values from the rows.
"""
import hashlib
import warnings

import pytest

from StaICC import GLER, Normal
from StaICC.engine.outcome import compute_metrics, prompt_set_digest
from StaICC.errors import TamperingWarning
from StaICC.metrics import accuracy
from StaICC.requests import Request

LABELS = ("negative", "positive")


def framed_digest(groups):
    """SHA-256 of: per label-space change "L" + labels joined by NUL + NUL; per text "<bytes>:" + the bytes."""
    digest = hashlib.sha256()
    for labels, prompts in groups:
        digest.update(b"L" + "\x00".join(labels).encode() + b"\x00")
        for prompt in prompts:
            for text in (prompt if isinstance(prompt, tuple) else (prompt,)):
                data = text.encode()
                digest.update(str(len(data)).encode() + b":" + data)
    return digest.hexdigest()


def test_the_prompt_set_digest_frames_every_prompt_and_label_space_change():
    other = ("no", "yes")
    requests = [Request("a", LABELS), Request("bé", LABELS), Request(("x", "y"), other), Request("c", other)]
    assert prompt_set_digest(requests) == framed_digest([(LABELS, ["a", "bé"]), (other, [("x", "y"), "c"])])


def test_the_digest_tells_apart_prompts_that_concatenate_alike():
    assert prompt_set_digest([Request("ab", LABELS)]) != prompt_set_digest([Request("a", LABELS),
                                                                            Request("b", LABELS)])
    assert prompt_set_digest([Request("a", LABELS)]) != prompt_set_digest([Request("a", ("positive", "negative"))])


def test_compute_metrics_applies_each_metric_to_truth_and_rows():
    rows = [[0.2, 0.8], [0.9, 0.1], [0.6, 0.4]]
    got = compute_metrics({"accuracy": accuracy, "rows": lambda truth, stored: len(stored)}, [1, 1, 0], rows, "toy")
    assert got == {"accuracy": 2 / 3, "rows": 3}


def test_a_failing_metric_is_named_with_the_dataset():
    def broken(truth, stored):
        raise ZeroDivisionError("division by zero")

    with pytest.raises(ValueError, match=r"metric 'broken' failed at dataset 'toy' on 2 predictions: division by zero"):
        compute_metrics({"broken": broken}, [0, 1], [[1, 0], [0, 1]], "toy")


def counted_accuracy(predictions, truth):
    return sum(1 for p, t in zip(predictions, truth) if p == t) / len(truth)


def test_a_run_summary_is_its_metrics_over_the_answers():
    exp = Normal(datasets=["rotten_tomatoes"], k=1)[0]
    prompts = exp.prompt_set()

    def parity(prompt, label_space):
        return len(prompt) % 2

    summary, _ok = exp.auto_run(parity)
    truth = exp.ground_truth()
    assert summary["accuracy"] == counted_accuracy([len(p) % 2 for p in prompts], truth)


def test_a_gler_summary_holds_every_pass_and_the_slopes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        exp = GLER(datasets=["rotten_tomatoes"], k=1)[0]
    prompts = exp.prompt_set()
    per_pass = len(prompts) // 5
    truth = exp.ground_truth()

    def parity(prompt, label_space):
        return len(prompt) % 2

    summary, _ok = exp.auto_run(parity)
    for number in range(5):
        chunk = prompts[number * per_pass:(number + 1) * per_pass]
        assert summary[str(number)]["accuracy"] == counted_accuracy([len(p) % 2 for p in chunk], truth)
    assert set(summary["sensitivity"]) == set(summary["0"])


def test_a_prompt_set_digested_again_gives_the_same_digest_and_label_spaces_still_count():
    prompts = [f"prompt {i}" for i in range(50)]
    first = prompt_set_digest([Request(p, LABELS) for p in prompts])
    rebuilt = [Request("".join(["prompt ", str(i)]), LABELS) for i in range(50)]  # equal strings, other objects
    assert prompt_set_digest(rebuilt) == first == framed_digest([(LABELS, prompts)])
    flipped = ("positive", "negative")
    assert prompt_set_digest([Request(p, flipped) for p in prompts]) == framed_digest([(flipped, prompts)]) != first
    listed = [Request(p, list(LABELS)) for p in prompts]  # a label space as a list: not a key, still digested
    assert prompt_set_digest(listed) == first


def test_the_same_request_objects_are_digested_once_within_a_runner_call_and_kept_by_nothing_after():
    import gc
    import weakref

    from StaICC.engine import outcome
    requests = [Request(f"prompt {i}", LABELS) for i in range(40)]
    with outcome.digests_remembered():
        first = prompt_set_digest(requests)
        before = outcome._digest
        outcome._digest = None  # a second computation would fail: the very objects are answered from memory
        try:
            assert prompt_set_digest(list(requests)) == first
        finally:
            outcome._digest = before
        again = [Request(f"prompt {i}", LABELS) for i in range(39)] + [requests[-1]]  # not the very objects
        assert prompt_set_digest(again) == first == framed_digest([(LABELS, [f"prompt {i}" for i in range(40)])])
        other = list(requests[:39]) + [Request("other", LABELS)]  # same first object and length, another prompt
        assert prompt_set_digest(other) == framed_digest([(LABELS, [f"prompt {i}" for i in range(39)] + ["other"])])
    assert outcome._DIGESTS.get() is None
    outcome._digest = None  # outside a runner call nothing is remembered: a digest is computed
    try:
        with pytest.raises(TypeError):
            prompt_set_digest(list(requests))
    finally:
        outcome._digest = before
    probe = weakref.ref(requests[0])
    del requests, again, other
    gc.collect()
    assert probe() is None  # the memory keeps no request (and so no prompt) alive after the call
