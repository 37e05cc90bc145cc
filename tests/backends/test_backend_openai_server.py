"""The openai backend end to end over real HTTP on 127.0.0.1, compared with the hf backend.

Two servers, each started by the test:

* llama.cpp (``python -m llama_cpp.server``, from ``pip install "llama-cpp-python[server]" gguf``)
  serving a GGUF written from the tiny random Llama — an independent implementation of
  the model and the protocol.  Skipped when llama-cpp-python or gguf is not installed.
* ``tests/openai_reference_server.py``: a small OpenAI-protocol server over the same tiny
  HF model (its own forward pass, not ``CausalLMScorer``).

Both compute the same quantity as the hf backend's ``sequence`` and ``first_token``
modes (log-probabilities of the label continuation after a joint tokenization), so the
probabilities must agree.
"""
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.hf import HFBackend  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import LlamaCppServer, tiny_pair, write_gguf  # noqa: E402
from openai_reference_server import ReferenceServer  # noqa: E402

LABELS = ("negative", "positive")
TOPICS = ("sports", "business", "world news")
PROMPTS = ["Review: a gripping, funny film. Sentiment:", "Review: dull, slow and far too long. Sentiment: ",
           "Text: stocks rose.\nLabel:", "Review: the story is fresh. Sentiment: "]


def requests():
    out = [Request(p, LABELS, dataset="toy", query_index=i) for i, p in enumerate(PROMPTS)]
    out.append(Request(PROMPTS[2], TOPICS, dataset="topics", query_index=0))
    noisy = tuple(f"Review: fine. Sentiment: {label}" for label in LABELS)
    out.append(Request(noisy, LABELS, dataset="toy", query_index=9))
    return out


@pytest.fixture(scope="module")
def reference_server():
    model, tokenizer = tiny_pair()
    with ReferenceServer(model, tokenizer) as server:
        yield server


@pytest.fixture(scope="module")
def llama_cpp_server(tmp_path_factory):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: "
                                            "pip install 'llama-cpp-python[server]' gguf")
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server extra is not installed")
    pytest.importorskip("gguf", reason="the gguf package is not installed: pip install gguf")
    path = write_gguf(str(tmp_path_factory.mktemp("gguf") / "tiny.gguf"))
    with LlamaCppServer(path, alias="tiny") as server:
        yield server


def hf(scoring):
    model, tokenizer = tiny_pair()
    return HFBackend(model, tokenizer, scoring=scoring, model_id="tiny")


@pytest.mark.parametrize("server_name, tolerance", [("reference_server", 1e-5), ("llama_cpp_server", 2e-3)])
@pytest.mark.parametrize("scoring", ["sequence", "first_token"])
def test_openai_scores_match_hf(request, server_name, tolerance, scoring):
    server = request.getfixturevalue(server_name)
    backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring=scoring,
                           concurrency="4", retries="0")
    try:
        remote = backend.score(requests())
    finally:
        backend.close()
    local = hf(scoring).score(requests())
    for r, a, b in zip(requests(), remote, local):
        assert a.prediction == pytest.approx(b.prediction, abs=tolerance), (r.prompt, a, b)
        assert a.parsed and a.text is None
    assert max(max(a.prediction) for a in local) > 0.6  # the sharpened random model is far from uniform


@pytest.mark.parametrize("server_name", ["reference_server", "llama_cpp_server"])
def test_generate_mode_over_http(request, server_name):
    server = request.getfixturevalue(server_name)
    backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="generate", max_tokens="4",
                           retries="0")
    answers = backend.score(requests()[:4])
    for answer in answers:
        assert isinstance(answer.text, str)
        assert answer.parsed == (answer.prediction not in ([0.5, 0.5],))
    chat = make_backend("openai", base_url=server.base_url, model="tiny", scoring="generate", chat="true",
                        max_tokens="4", retries="0").score(requests()[:2])
    assert all(isinstance(a.text, str) for a in chat)


def test_unknown_model_is_a_clear_error(reference_server):
    from StaICC.backends.openai import APIError
    backend = make_backend("openai", base_url=reference_server.base_url, model="nope", retries="0")
    with pytest.raises(APIError, match="HTTP 404.*model 'nope' not found"):
        backend.score(requests()[:1])


def test_gguf_twin_round_trips_through_transformers(tmp_path):
    """The GGUF helper's layout (Q/K permutation, tokenizer) read back by transformers' GGUF loader."""
    pytest.importorskip("gguf", reason="the gguf package is not installed: pip install gguf")
    import torch
    import transformers
    write_gguf(str(tmp_path / "tiny.gguf"))
    model, tokenizer = tiny_pair()
    twin = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file="tiny.gguf")
    twin_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path), gguf_file="tiny.gguf")
    ids = tokenizer(PROMPTS[1] + "positive")["input_ids"]
    assert twin_tokenizer(PROMPTS[1] + "positive")["input_ids"] == ids
    with torch.inference_mode():
        assert torch.equal(model(input_ids=torch.tensor([ids])).logits, twin(input_ids=torch.tensor([ids])).logits)
