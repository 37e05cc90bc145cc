"""The hf backend on a tiny random Llama saved to disk: numbers, identity, arguments."""
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.registry import make_backend, parse_model_args  # noqa: E402
from StaICC.prefabricate_inference import model_kernel  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import save_tiny, tiny_pair  # noqa: E402

LABELS = ("negative", "positive")
PROMPTS = ["Review: a gripping film. Sentiment:", "Review: dull and slow. Sentiment: ",
           "Review: the story is fresh.\nSentiment:"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny-llama")))


def requests(prompts=PROMPTS, labels=LABELS):
    return [Request(p, labels, dataset="toy", query_index=i) for i, p in enumerate(prompts)]


def test_standard_scoring_equals_the_reference_kernel(model_dir):
    backend = make_backend("hf", **parse_model_args(f"pretrained={model_dir},dtype=float32,device=cpu"))
    model, tokenizer = tiny_pair()
    answers = backend.score(requests())
    for prompt, answer in zip(PROMPTS, answers):
        expected = model_kernel.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tokenizer, list(LABELS))
        assert answer.prediction == pytest.approx(expected, abs=1e-6)
        assert answer.parsed and answer.text is None
    assert backend.non_standard == []
    assert backend.identity()["scoring"] == "last_token"


def test_noisy_channel_and_mixed_label_spaces(model_dir):
    backend = make_backend("hf", pretrained=model_dir, dtype="float32", device="cpu")
    model, tokenizer = tiny_pair()
    noisy = Request(tuple(p + " negative" for p in PROMPTS[:1]) + (PROMPTS[0] + " positive",), LABELS)
    other = Request(PROMPTS[1], ("sports", "business", "world"))
    answers = backend.score([requests()[0], noisy, other])
    expected = model_kernel.noisy_channel_ICL_inference_with_torch_Causal_LM(list(noisy.prompt), model, tokenizer,
                                                                              list(LABELS))
    assert answers[1].prediction == pytest.approx(expected, abs=1e-5)
    assert len(answers[2].prediction) == 3


@pytest.mark.parametrize("scoring", ["first_token", "sequence"])
def test_other_scoring_modes_are_recorded_as_non_standard(model_dir, scoring):
    backend = make_backend("hf", pretrained=model_dir, dtype="float32", scoring=scoring, batch_size="2")
    answers = backend.score(requests())
    assert all(abs(sum(a.prediction) - 1) < 1e-9 for a in answers)
    assert backend.non_standard == [f"scoring={scoring}"]


def test_identity_names_weights_tokenizer_and_mode(model_dir, tmp_path):
    a = make_backend("hf", pretrained=model_dir, dtype="float32")
    b = make_backend("hf", pretrained=model_dir, dtype="float32")
    identity = a.identity()
    assert identity["model"] == model_dir and identity["dtype"] == "float32"
    assert len(identity["weights_sha256"]) == 64 and len(identity["tokenizer_sha256"]) == 64
    assert a.fingerprint() == b.fingerprint()
    assert make_backend("hf", pretrained=model_dir, scoring="sequence").fingerprint() != a.fingerprint()
    other = save_tiny(str(tmp_path), seed=1)  # other weights, same config and tokenizer
    c = make_backend("hf", pretrained=other, dtype="float32")
    assert c.identity()["weights_sha256"] != identity["weights_sha256"]
    assert c.identity()["tokenizer_sha256"] == identity["tokenizer_sha256"]


def test_generate_mode_parses_answers(model_dir):
    backend = make_backend("hf", pretrained=model_dir, scoring="generate", max_new_tokens="3", unparsed="uniform")
    answers = backend.score(requests())
    for answer in answers:
        assert isinstance(answer.text, str)
        assert answer.prediction in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5])
        assert answer.parsed == (answer.prediction != [0.5, 0.5])
    assert backend.non_standard == ["generative answers (scoring=generate)"]
    with pytest.raises(ValueError, match="no chat template"):
        make_backend("hf", pretrained=model_dir, scoring="generate", chat="true").score(requests()[:1])


@pytest.mark.parametrize("arguments, message", [
    ({}, "pretrained"),
    ({"pretrained": "/no/such/dir"}, "not a model directory"),
    ({"pretrained": "x", "scoring": "best"}, "model argument scoring"),
    ({"pretrained": "x", "dtype": "float8"}, "model argument dtype"),
    ({"pretrained": "x", "token_budget": "many"}, "model argument token_budget must be an integer"),
    ({"pretrained": "x", "batch_size": "0"}, "model argument batch_size must be >= 1"),
    ({"pretrained": "x", "trust_remote_code": "maybe"}, "model argument trust_remote_code"),
    ({"pretrained": "x", "unparsed": "skip"}, "unparsed must be one of"),
    ({"pretrained": "x", "temprature": "0"}, "does not take model argument"),
])
def test_bad_arguments_fail_before_loading(arguments, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make_backend("hf", **arguments)
