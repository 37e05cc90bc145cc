"""The openai backend's label-token path over real HTTP on 127.0.0.1, compared with the hf backend."""
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.hf import HFBackend  # noqa: E402
from StaICC.backends.openai import APIError  # noqa: E402
from StaICC.backends.openai_labels import FALLBACK_NOTE, server_root  # noqa: E402
from StaICC.errors import StaICCWarning  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import tiny_pair  # noqa: E402
from label_token_server import LabelTokenServer  # noqa: E402
from openai_reference_server import ReferenceServer  # noqa: E402

LABELS = ("negative", "positive")
PROMPTS = ["Review: a gripping, funny film. Sentiment:", "Review: dull, slow and far too long. Sentiment: ",
           "Text: stocks rose.\nLabel:"]


def requests():
    out = [Request(p, LABELS, dataset="toy", query_index=i) for i, p in enumerate(PROMPTS)]
    out.append(Request(PROMPTS[2], ("sports", "business", "world news"), dataset="topics"))
    out.append(Request(tuple(f"Review: fine. Sentiment: {label}" for label in LABELS), LABELS, dataset="toy"))
    return out


@pytest.fixture(scope="module")
def label_server():
    model, tokenizer = tiny_pair()
    with LabelTokenServer(model, tokenizer) as server:
        yield server


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_label_tokens_match_hf(label_server, scoring):
    model, tokenizer = tiny_pair()
    backend = make_backend("openai", base_url=label_server.base_url, model="tiny", scoring=scoring,
                           label_logprobs="on", concurrency="1")
    label_server.calls.clear()
    got = backend.score(requests())
    want = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny").score(requests())
    for a, b in zip(got, want):
        assert a.prediction == pytest.approx(b.prediction, abs=1e-5)
    assert backend.identity()["label_logprobs"] == "token_ids"
    if scoring == "last_token":  # 4 direct prompts: one request each, plus the probe; the noisy one echoes its 2
        assert label_server.calls["/v1/completions"] == 1 + 4 + 2
    assert backend.non_standard == ([] if scoring == "last_token" else [f"scoring={scoring}"])


def test_auto_falls_back_to_echo_with_a_note():
    model, tokenizer = tiny_pair()
    with ReferenceServer(model, tokenizer) as server:
        backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="first_token",
                               label_logprobs="auto")
        with pytest.warns(StaICCWarning, match="label-token log-probabilities .* offers no /tokenize") as caught:
            assert backend.identity()["label_logprobs"] == FALLBACK_NOTE
        assert len(caught) == 1  # one line, once: the server is probed once
        assert backend.numerics()["switched_off"] == backend.switched_off() != []
        got = backend.score(requests())
        strict = make_backend("openai", base_url=server.base_url, model="tiny", scoring="last_token",
                              label_logprobs="auto")
        with pytest.raises(APIError, match="does not offer label-token scoring"):
            strict.score(requests()[:1])
    want = HFBackend(model, tokenizer, scoring="first_token", model_id="tiny").score(requests())
    for a, b in zip(got, want):
        assert a.prediction == pytest.approx(b.prediction, abs=1e-5)


def test_arguments():
    with pytest.raises(ValueError, match="scoring=last_token cannot be computed .* label_logprobs=on"):
        make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="last_token")
    with pytest.raises(ValueError, match="label_logprobs"):
        make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", label_logprobs="maybe")
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("https://host/proxy/v1") == "https://host/proxy"
