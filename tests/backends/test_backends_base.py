"""The model interface: FunctionBackend, fingerprints, the registry, model arguments."""
import pytest

from StaICC import Normal
from StaICC.backends import Backend, FunctionBackend, as_backend, backend_names, make_backend, parse_model_args
from StaICC.backends.base import code_digest
from StaICC.requests import Answer, Request, content_key


def f_one(prompt, label_space):
    return [0.5] * len(label_space)


def f_two(prompt, label_space):
    return [0.25] * len(label_space)


def test_function_identity_follows_its_code_or_its_model_id():
    assert FunctionBackend(f_one).fingerprint() == FunctionBackend(f_one).fingerprint()
    assert FunctionBackend(f_one).fingerprint() != FunctionBackend(f_two).fingerprint()
    assert FunctionBackend(f_one).identity()["function"].endswith("test_backends_base.f_one")
    named = FunctionBackend(f_one, model_id="llama-3-8b@abc")
    assert named.identity() == {"backend": "function", "model_id": "llama-3-8b@abc"}
    assert named.fingerprint() == FunctionBackend(f_two, model_id="llama-3-8b@abc").fingerprint()
    assert code_digest(lambda prompt, label_space: 1) != code_digest(lambda prompt, label_space: 2)


def test_plain_functions_are_wrapped_and_backends_pass_through():
    wrapped = as_backend(f_one, batched=True)
    assert isinstance(wrapped, FunctionBackend) and wrapped.batched and wrapped.batch_size > 10 ** 6
    reference = make_backend("reference")
    assert as_backend(reference) is reference
    with pytest.raises(ValueError, match="model_id names a plain function"):
        as_backend(reference, model_id="x")
    with pytest.raises(TypeError, match="the model must be callable or a Backend, got int"):
        as_backend(3)


def test_a_batched_function_receives_one_label_space_per_call():
    seen = []

    def batched(prompt, label_space):
        seen.append((len(prompt), tuple(label_space)))
        return [0] * len(prompt)

    requests = [Request("a", ("x", "y")), Request("b", ("x", "y")), Request("c", ("p", "q", "r")),
                Request("d", ("x", "y"))]
    answers = FunctionBackend(batched, batched=True).score(requests)
    assert answers == [Answer(0)] * 4
    assert seen == [(2, ("x", "y")), (1, ("p", "q", "r")), (1, ("x", "y"))]


def test_noisy_channel_prompts_reach_functions_as_lists():
    got = []
    FunctionBackend(lambda prompt, label_space: got.append(prompt) or 0).score([Request(("a", "b"), ("x", "y"))])
    assert got == [["a", "b"]]


def test_request_keys_separate_prompt_kinds_and_boundaries():
    assert content_key("ab", ("c",)) != content_key(("ab",), ("c",))
    assert content_key("a", ("bc",)) != content_key("ab", ("c",))
    assert content_key(("a", "b"), ("x",)) != content_key(("ab",), ("x",))
    assert Request("p", ("x",), dataset="A").key() == Request("p", ("x",), dataset="B", query_index=9).key()


def test_registry_and_model_arguments():
    assert {"reference", "uniform", "hf", "openai", "vllm"} <= set(backend_names())
    with pytest.raises(ValueError, match="unknown model backend 'gpt5'; choose one of"):
        make_backend("gpt5")
    assert parse_model_args("pretrained=/m, dtype=bfloat16,note=a\\,b") == \
        {"pretrained": "/m", "dtype": "bfloat16", "note": "a,b"}
    assert parse_model_args("") == {}
    with pytest.raises(ValueError, match="'x' is not key=value"):
        parse_model_args("x")
    with pytest.raises(ValueError, match="'a' is given twice"):
        parse_model_args("a=1,a=2")
    with pytest.raises(ValueError, match="takes no model arguments, got batch"):
        make_backend("uniform", batch="3")


def test_reference_backend_equals_the_reference_function():
    from StaICC.backends.reference_model import lexical_icl
    bench = Normal(datasets=["financial_phrasebank"])
    assert bench(make_backend("reference")) == bench(lexical_icl)
    assert make_backend("reference").identity() == {"backend": "reference", "model": "lexical", "version": 1}


class CountingBackend(Backend):
    name = "counting"
    batch_size = 100

    def __init__(self):
        self.calls = []

    def score(self, requests):
        self.calls.append(len(requests))
        return [Answer(len(r.prompt) % len(r.label_space)) for r in requests]

    def identity(self):
        return {"backend": "counting"}


def test_a_backend_is_called_in_batches_of_its_size_and_recorded():
    backend = CountingBackend()
    result = Normal(datasets=["financial_phrasebank"])(backend)
    assert backend.calls == [100] * 10 + [24]
    assert result.metadata["model"] == {"identity": {"backend": "counting"}, "fingerprint": backend.fingerprint()}


def test_a_backend_that_answers_badly_is_refused_naming_the_query():
    class Wrong(CountingBackend):
        def score(self, requests):
            return [3 for _ in requests]

    with pytest.raises(TypeError, match=r"must answer with StaICC.requests.Answer values, got int at dataset "
                                        r"'financial_phrasebank', query 0"):
        Normal(datasets=["financial_phrasebank"])(Wrong())
