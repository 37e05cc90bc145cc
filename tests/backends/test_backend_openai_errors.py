"""The openai backend's error paths against a scripted HTTP server on 127.0.0.1.

The success path is tested against a real llama.cpp server (test_backend_openai_server.py);
here a tiny ``http.server`` answers with recorded responses: 429, 500, slow answers,
missing log-probabilities, malformed JSON.
"""
import json
import math

import pytest

from StaICC.backends.openai import APIError, MissingLogprobsError, OpenAIBackend
from StaICC.backends.registry import make_backend
from StaICC.requests import Request

from backend_helpers import ScriptedServer, completion_with_logprobs

LABELS = ("negative", "positive")
PROMPT = "Review: fine. Sentiment:"
SECRET = "sk-test-very-secret-key"


def echo(label, lp):
    text = PROMPT + label
    return completion_with_logprobs(text + "!", [("", None), ("Review", -2.0), (": fine. Sentiment:", -1.0),
                                                 (label[:3], lp / 2), (label[3:], lp / 2), ("!", -0.1)])


def backend(server, **extra):
    arguments = {"base_url": server.base_url, "model": "m", "retries": "3", "backoff": "0.01", "timeout": "2",
                 "concurrency": "1"}
    arguments.update(extra)
    return make_backend("openai", **arguments)


def request():
    return Request(PROMPT, LABELS, dataset="toy", query_index=3)


def test_sequence_scores_from_echoed_logprobs_and_the_request_sent(monkeypatch):
    monkeypatch.setenv("MY_KEY", SECRET)
    with ScriptedServer([(200, echo("negative", -3.0), 0), (200, echo("positive", -1.0), 0)]) as server:
        answer = backend(server, api_key_env="MY_KEY").score([Request(PROMPT, LABELS)])[0]
        sent = server.requests
    e = math.exp(2.0)
    assert answer.prediction == pytest.approx([1 / (1 + e), e / (1 + e)])
    assert sent[0]["path"] == "/v1/completions"
    assert sent[0]["body"] == {"model": "m", "prompt": PROMPT + "negative", "echo": True, "logprobs": 1,
                               "max_tokens": 1, "temperature": 0}
    assert sent[0]["headers"]["Authorization"] == "Bearer " + SECRET


def test_429_and_500_are_retried_with_backoff():
    script = [(429, {"error": {"message": "slow down"}}, 0, {"Retry-After": "0"}), (500, b"oops", 0),
              (200, echo("negative", -3.0), 0), (200, echo("positive", -1.0), 0)]
    with ScriptedServer(script) as server:
        answer = backend(server).score([request()])[0]
        assert len(server.requests) == 4
    assert answer.prediction[1] > answer.prediction[0]


def test_persistent_failures_raise_a_clear_error_without_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ScriptedServer([(503, {"error": {"message": "overloaded; your key " + SECRET}}, 0)]) as server:
        with pytest.raises(APIError, match=r"HTTP 503 after 4 attempt\(s\): overloaded") as info:
            backend(server).score([request()])
        assert len(server.requests) == 4
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_client_errors_are_not_retried():
    with ScriptedServer([(401, {"error": {"message": "bad key"}}, 0)]) as server:
        with pytest.raises(APIError, match="HTTP 401.*environment variable OPENAI_API_KEY"):
            backend(server).score([request()])
        assert len(server.requests) == 1


def test_timeouts_are_retried_then_reported():
    with ScriptedServer([(200, echo("negative", -1.0), 1.0)]) as server:
        with pytest.raises(APIError, match=r"after 2 attempt\(s\).*timeout=0.2s"):
            backend(server, timeout="0.2", retries="1").score([request()])


@pytest.mark.parametrize("payload, message", [
    ({"choices": [{"text": PROMPT + "negative", "logprobs": None}]}, "no logprobs object"),
    ({"choices": [{"text": PROMPT + "negative", "logprobs": {"tokens": ["a"], "token_logprobs": [None]}}]},
     "without text_offset"),
    ({"choices": []}, "no choices"),
    ({"choices": [{"text": "negative", "logprobs": {"tokens": ["neg"], "token_logprobs": [-1.0],
                                                    "text_offset": [0]}}]}, "did not echo the prompt"),
])
def test_missing_logprobs_name_what_is_missing_and_suggest_generate(payload, message):
    with ScriptedServer([(200, payload, 0)]) as server, pytest.raises(MissingLogprobsError, match=message) as info:
        backend(server).score([request()])
    assert "scoring=generate" in str(info.value)


def test_malformed_json_is_an_error():
    with ScriptedServer([(200, b"{not json", 0)]) as server, pytest.raises(APIError, match="malformed JSON"):
        backend(server).score([request()])


def test_generate_mode_chat_messages_and_unparsed_policy():
    chat = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Positive."}}]}
    vague = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hard to say"}}]}
    with ScriptedServer([(200, chat, 0), (200, vague, 0)]) as server:
        b = backend(server, scoring="generate", chat="true", system="labels", max_tokens="4")
        answers = b.score([request(), request()])
        sent = server.requests[0]
    assert answers[0].prediction == [0.0, 1.0] and answers[0].text == "Positive." and answers[0].parsed
    assert answers[1].prediction == [0.5, 0.5] and not answers[1].parsed
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["messages"] == [{"role": "system", "content": "Answer with exactly one of: negative, positive."},
                                        {"role": "user", "content": PROMPT}]
    assert b.non_standard == ["generative answers (scoring=generate)", "chat template (chat=true)"]


def test_concurrency_keeps_the_order():
    def answer_with_the_prompt(body):
        return {"choices": [{"index": 0, "text": body["prompt"][-8:]}]}
    prompts = [f"{i} say {LABELS[i % 3 % 2]}" for i in range(12)]
    with ScriptedServer([(200, answer_with_the_prompt, 0.05)]) as server:
        b = backend(server, concurrency="4", scoring="generate")
        answers = b.score([Request(p, LABELS) for p in prompts])
        b.close()
        b.close()  # idempotent
        assert len(server.requests) == 12
    assert [a.prediction.index(1.0) for a in answers] == [i % 3 % 2 for i in range(12)]


def test_identity_has_no_secret_and_arguments_are_checked(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    b = OpenAIBackend(base_url="http://user:pw@127.0.0.1:9/v1?token=abc", model="m")
    text = json.dumps(b.identity()) + repr(b)
    assert SECRET not in text and "pw" not in text and "abc" not in text
    assert b.identity() == {"backend": "openai", "scoring": "sequence", "base_url": "http://127.0.0.1:9/v1",
                            "model": "m"}
    assert b.non_standard == ["scoring=sequence"]
    with pytest.raises(ValueError, match="scoring=last_token cannot be computed"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="m", scoring="last_token")
    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAIBackend(base_url="127.0.0.1:9", model="m")
    with pytest.raises(ValueError, match="concurrency must be an integer"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="m", concurrency="lots")
    with pytest.raises(ValueError, match="does not take model argument"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="m", api_key=SECRET)


def test_connection_refused_names_the_server():
    b = OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="m", retries=0)
    with pytest.raises(APIError, match="is the server running"):
        b.score([request()])
