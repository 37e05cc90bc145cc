"""A hostile OpenAI-compatible server on 127.0.0.1, part two: error bodies dripped past the deadline,
answers of hundreds of kilobytes, an echo that covers half the prompt, a port nobody listens on, a
/tokenize that is missing, and secrets hidden in URL path parameters and fragments.  Each ends in
one clear error within its bound, or in the right answer; none in a hang or a wrong number."""
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import ScriptedServer, ThreadedServer, completion_with_logprobs  # noqa: E402

from StaICC.backends.openai import APIError, MissingLogprobsError  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.backends.secrets import MASK, redact_text, redact_url  # noqa: E402
from StaICC.requests import Request  # noqa: E402

CANARY = "sk-canary-3c9d1f7a5e2b"
LABELS = ("negative", "positive")
PROMPT = "Review: fine. Sentiment:"


@pytest.fixture(autouse=True)
def canary_key(monkeypatch):
    monkeypatch.setenv("I28_CANARY_KEY", CANARY)


def backend(base_url, **extra):
    arguments = {"base_url": base_url, "model": "m", "retries": "2", "backoff": "0.01", "timeout": "5",
                 "concurrency": "1", "api_key_env": "I28_CANARY_KEY"}
    arguments.update(extra)
    return make_backend("openai", **arguments)


class DripErrorServer(ThreadedServer):
    """Answers every POST with ``status`` and a long error body dripped one byte per ``pause`` seconds."""

    def __init__(self, status: int, pause: float = 0.05) -> None:
        self.stop = threading.Event()
        self.requests = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests += 1
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "')
                    while not owner.stop.wait(pause):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self._serve(Handler)

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.mark.parametrize("status", [400, 503])
def test_an_error_body_dripped_past_the_deadline_is_cut_off(status):
    with DripErrorServer(status) as server:
        started = time.monotonic()
        with pytest.raises(APIError, match=r"no complete answer within deadline=1\.5s"):
            backend(server.base_url, deadline="1.5").score([Request(PROMPT, LABELS)])
        elapsed = time.monotonic() - started
    assert elapsed < 4.0, elapsed  # the body was read under the watchdog, not after it


def test_a_200_kb_generated_answer_is_redacted_within_the_deadline():
    answer = ("positive " + CANARY + " ") * 7000  # 200 KB: quadratic redaction held such a run for minutes
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}], "model": "m"}
    with ScriptedServer([(200, body, 0)]) as server:
        started = time.monotonic()
        answers = backend(server.base_url, scoring="generate", chat="true", deadline="5").score(
            [Request(PROMPT, LABELS)] * 3)
        elapsed = time.monotonic() - started
    assert elapsed < 5.0, elapsed
    assert [a.prediction for a in answers] == [[0.0, 1.0]] * 3
    assert CANARY not in answers[0].text and answers[0].text.count(MASK) == 7000


def test_redaction_is_linear_on_hostile_text():
    # a quadratic rule takes about an hour on 1 MB; the measured figure is in benchmarks/security_reproductions.py
    for text in ("a" * (1 << 20), "a." * (1 << 19), "x://" + "a" * (1 << 20), "k=" * (1 << 19)):
        started = time.process_time()
        redact_text(text, [CANARY])
        assert time.process_time() - started < 2.0


def _half_echo(body):
    """The whole prompt as text, log-probabilities for its first half, then one 'generated' token."""
    text = body["prompt"]
    half = len(text) // 2
    answer = completion_with_logprobs(text + "!", [("", None), (text[:half], -1.0)])
    logprobs = answer["choices"][0]["logprobs"]
    logprobs["tokens"].append("!")
    logprobs["token_logprobs"].append(-0.1)
    logprobs["text_offset"].append(len(text))
    return answer


def test_an_echo_covering_half_the_prompt_plus_a_generated_token_is_refused():
    partial = r"covering only the first \d+ of the prompt's \d+ characters"
    with ScriptedServer([(200, _half_echo, 0)]) as server, pytest.raises(MissingLogprobsError, match=partial):
        backend(server.base_url).score([Request(PROMPT, LABELS)])


def test_an_echo_skipping_the_middle_of_the_prompt_is_refused():
    def skipping(body):  # 'Review' ends at character 6; the next token starts at 20: 6..20 are not covered
        text = body["prompt"]
        answer = completion_with_logprobs(text, [("", None), ("Review", -2.0), (text[20:], -1.0)])
        answer["choices"][0]["logprobs"]["text_offset"][2] = 20
        return answer
    skipped = r"skip characters 6\.\.20"
    with ScriptedServer([(200, skipping, 0)]) as server, pytest.raises(MissingLogprobsError, match=skipped):
        backend(server.base_url).score([Request(PROMPT, LABELS)])


def test_trimmed_offsets_of_a_real_tokenizer_are_accepted():
    """Offsets that skip a token's leading space (HF offset mapping with trimming) still cover the prompt."""
    def trimmed(body):
        text = body["prompt"]
        label = text[len(PROMPT):]
        pieces = [("<s>", None), ("Review", -2.0), (":", -0.5), (" fine", -1.0), (".", -0.2), (" Sentiment", -0.3),
                  (":", -0.1), (label, -0.7 if label == "positive" else -1.7)]
        answer = completion_with_logprobs(text, pieces)
        answer["choices"][0]["logprobs"]["text_offset"] = [0, 0, 6, 8, 12, 14, 23, 24]  # ' fine' at 8, not 7
        return answer
    with ScriptedServer([(200, trimmed, 0)]) as server:
        answer = backend(server.base_url).score([Request(PROMPT, LABELS)])[0]
    assert answer.prediction[1] > answer.prediction[0]


def test_connection_refused_fails_at_once_without_retries():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        started = time.monotonic()
        with pytest.raises(APIError, match=r"connection refused \(not retried\): is the server running at "
                                           rf"127\.0\.0\.1:{port}\?"):
            backend(f"http://127.0.0.1:{port}/v1", retries="5", backoff="1").score([Request(PROMPT, LABELS)])
    assert time.monotonic() - started < 2.0  # 1+2+4+8+16 s of backoff before


def test_a_503_is_still_retried_and_then_answered():
    from backend_helpers import completion_with_logprobs as echo_of
    def echo(body):
        text = body["prompt"]
        return echo_of(text, [("", None), (PROMPT, -1.0), (text[len(PROMPT):], -0.5)])
    with ScriptedServer([(503, {"error": {"message": "busy"}}, 0), (200, echo, 0)]) as server:
        answer = backend(server.base_url).score([Request(PROMPT, LABELS)])[0]
        assert len(server.requests) == 3  # one retry, then one request per label
    assert answer.prediction == [0.5, 0.5]


def test_a_missing_tokenize_says_the_server_lacks_it_not_that_base_url_is_wrong():
    with ScriptedServer([(404, {"error": {"message": "Not Found"}}, 0)]) as server, pytest.raises(APIError) as info:
        backend(server.base_url, label_logprobs="on", scoring="first_token").score([Request(PROMPT, LABELS)])
    message = str(info.value)
    assert "/tokenize" in message and "keep base_url as it is" in message and "label_logprobs=off" in message
    assert "it usually ends in /v1" not in message


@pytest.mark.parametrize("url, hidden", [
    ("http://h:1/v1;access_token=SECRETPARAM9", "SECRETPARAM9"),
    ("http://h:1/v1;a=1;sig=abc", "abc"),
    ("http://h:1/v1#token=FRAGSECRET7", "FRAGSECRET7"),
    ("http://h:1/v1?x=1#api_key=k", "=k"),
])
def test_path_parameters_and_fragments_are_redacted_like_query_parameters(url, hidden):
    assert hidden not in redact_url(url)
    assert hidden not in redact_text(f"base_url={url},model=m")
    identity = backend(url).identity()
    assert hidden not in json.dumps(identity)


def test_a_path_parameter_token_is_in_no_file_of_a_real_run(tmp_path):
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "positive"}}], "model": "m"}
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    with ScriptedServer([(200, body, 0)]) as server:
        base_url = server.base_url + ";access_token=PATHSECRET42#token=FRAGSECRET42"
        model_args = f"base_url={base_url},model=m,scoring=generate,chat=true,retries=0,timeout=5,concurrency=1"
        done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "openai", "--model-args", model_args,
                               "--datasets", "0", "--limit", "8", "--output-dir", str(out), "--log-samples",
                               "--cache", str(cache), "--no-progress"],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.getcwd()), timeout=300)
        assert server.requests and all(";access_token=PATHSECRET42" in r["path"] for r in server.requests)
    assert done.returncode == 0, done.stderr
    for text, where in [(done.stdout, "stdout"), (done.stderr, "stderr")] + \
            [(p.read_bytes().decode("utf-8", "replace"), str(p)) for p in tmp_path.rglob("*") if p.is_file()]:
        assert "PATHSECRET42" not in text and "FRAGSECRET42" not in text, where
