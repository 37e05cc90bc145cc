"""HTTP hygiene of the server backends against hostile servers on 127.0.0.1: redirects
never carry the key to another origin, a dripping server is cut off at the deadline, a
huge answer is refused without being held, odd Retry-After values keep the backoff,
and impossible or partial log-probabilities are errors, not answers."""
import http.server
import math
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import ScriptedServer, ThreadedServer, completion_with_logprobs  # noqa: E402

from StaICC.backends.http import MAX_BACKOFF_SECONDS, retry_after  # noqa: E402
from StaICC.backends.openai import APIError, MissingLogprobsError  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402

CANARY = "sk-canary-7f3a9c1e5b2d"
LABELS = ("negative", "positive")
PROMPT = "Review: fine. Sentiment:"


def backend(base_url, **extra):
    arguments = {"base_url": base_url, "model": "m", "retries": "2", "backoff": "0.01", "timeout": "2",
                 "concurrency": "1", "api_key_env": "I21_CANARY_KEY"}
    arguments.update(extra)
    return make_backend("openai", **arguments)


def echo(label, lp, pieces=None):
    text = PROMPT + label
    pieces = pieces or [("", None), ("Review", -2.0), (": fine. Sentiment:", -1.0), (label, lp), ("!", -0.1)]
    return completion_with_logprobs(text + "!", pieces)


@pytest.fixture(autouse=True)
def canary_key(monkeypatch):
    monkeypatch.setenv("I21_CANARY_KEY", CANARY)


# ---------------------------------------------------------------------------- redirects
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_never_carries_the_key(status):
    with ScriptedServer([(200, echo("negative", -1.0), 0)]) as other:
        target = other.base_url + "/completions"
        with ScriptedServer([(status, {"moved": True}, 0, {"Location": target})]) as server:
            with pytest.raises(APIError, match=rf"redirected \(HTTP {status}\) to .*does not follow redirects"):
                backend(server.base_url).score([Request(PROMPT, LABELS)])
            assert len(server.requests) == 1  # not retried either
        assert other.requests == []  # nothing, and so no Authorization header, reached the other origin


# ---------------------------------------------------------------------------- deadline
class DripServer(ThreadedServer):
    """Answers 200 and then one byte every ``pause`` seconds, for ever (or drips the headers)."""

    def __init__(self, pause: float, in_headers: bool = False) -> None:
        self.stop = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    if in_headers:
                        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10000:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            if owner.stop.wait(pause):
                                return
                    self.send_response(200)
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    while not owner.stop.wait(pause):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass

            def log_message(self, *args):
                pass

        self._serve(Handler)

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.mark.parametrize("in_headers", [False, True])
def test_a_dripping_server_is_cut_off_at_the_deadline(in_headers):
    with DripServer(0.1, in_headers) as server:
        started = time.monotonic()
        with pytest.raises(APIError, match=r"no complete answer within deadline=1\.5s"):
            backend(server.base_url, timeout="2", deadline="1.5").score([Request(PROMPT, LABELS)])
        elapsed = time.monotonic() - started
    assert elapsed < 4.0, elapsed  # a 2 s socket timeout alone would wait for ever


# ---------------------------------------------------------------------------- size
class StreamServer(ThreadedServer):
    """Answers 200 with ``size`` bytes, with or without announcing the length."""

    def __init__(self, size: int, announce: bool) -> None:
        self.sent = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                if announce:
                    self.send_header("Content-Length", str(size))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    chunk = b"[" * 65536
                    while owner.sent < size:
                        self.wfile.write(chunk)
                        owner.sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass

            def log_message(self, *args):
                pass

        self._serve(Handler)


def test_an_announced_huge_answer_is_refused_before_reading():
    refused = r"announced a 209715200-byte answer, over max_response_bytes=1000000"
    with StreamServer(200 << 20, announce=True) as server, pytest.raises(APIError, match=refused):
        backend(server.base_url, max_response_bytes="1000000").score([Request(PROMPT, LABELS)])


def test_an_unannounced_huge_answer_is_cut_at_the_limit():
    import tracemalloc
    with StreamServer(50 << 20, announce=False) as server:
        tracemalloc.start()
        try:
            with pytest.raises(APIError, match=r"sent more than max_response_bytes=1000000 bytes"):
                backend(server.base_url, max_response_bytes="1000000").score([Request(PROMPT, LABELS)])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 20 << 20, peak  # far below the 50 MiB sent


# ---------------------------------------------------------------------------- Retry-After
@pytest.mark.parametrize("value, expected", [("nan", None), ("NaN", None), ("-5", None), ("garbage", None),
                                             ("inf", MAX_BACKOFF_SECONDS), ("1e400", MAX_BACKOFF_SECONDS),
                                             ("99999999", MAX_BACKOFF_SECONDS), ("2.5", 2.5), (" 3 ", 3.0),
                                             ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("", None), (None, None)])
def test_retry_after_values(value, expected):
    assert retry_after(value) == expected


def test_an_http_date_retry_after_in_the_future_is_read():
    assert retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)


def test_retry_after_nan_keeps_the_exponential_backoff():
    script = [(429, {"error": {"message": "slow"}}, 0, {"Retry-After": "nan"})] * 2 + \
             [(200, echo("negative", -3.0), 0), (200, echo("positive", -1.0), 0)]
    with ScriptedServer(script) as server:
        started = time.monotonic()
        backend(server.base_url, backoff="0.3").score([Request(PROMPT, LABELS)])
        elapsed = time.monotonic() - started
    assert elapsed >= 0.3 + 0.6 - 0.05  # 0.3 then 0.6 s: not "at once"


def test_a_retry_after_beyond_the_deadline_ends_the_request_at_once():
    script = [(503, {"error": {"message": "later"}}, 0, {"Retry-After": "50"})]
    with ScriptedServer(script) as server:
        started = time.monotonic()
        with pytest.raises(APIError, match=r"deadline=2s.*next retry would start after 50 s"):
            backend(server.base_url, deadline="2").score([Request(PROMPT, LABELS)])
        assert time.monotonic() - started < 1.5


# ---------------------------------------------------------------------------- log-probabilities
def test_log_probabilities_covering_part_of_the_prompt_are_refused():
    def partial(body):  # the whole prompt echoed as text, log-probabilities for its first word only
        return completion_with_logprobs(body["prompt"], [("", None), ("Review", -2.0)])
    covering = r"covering only the first \d+ of the prompt's \d+ characters"
    with ScriptedServer([(200, partial, 0)]) as server, pytest.raises(MissingLogprobsError, match=covering):
        backend(server.base_url).score([Request(PROMPT, LABELS)])


@pytest.mark.parametrize("value", [1e308, 0.5, math.inf, math.nan])
def test_impossible_log_probabilities_are_refused(value):
    impossible = r"impossible log-probability"
    with ScriptedServer([(200, echo("negative", value), 0)]) as server, \
            pytest.raises(MissingLogprobsError, match=impossible):
        backend(server.base_url).score([Request(PROMPT, LABELS)])


def test_out_of_order_offsets_are_refused():
    def shuffled(body):
        answer = echo(body["prompt"][len(PROMPT):], -1.0)
        answer["choices"][0]["logprobs"]["text_offset"][3] = 1
        return answer
    with ScriptedServer([(200, shuffled, 0)]) as server, pytest.raises(MissingLogprobsError, match="out of order"):
        backend(server.base_url).score([Request(PROMPT, LABELS)])


def test_url_credentials_go_in_a_header_never_in_messages():
    with ScriptedServer([(500, {"error": {"message": "boom"}}, 0)]) as server:
        url = server.base_url.replace("http://", "http://alice:hunter2-secret@") + "?api_key=" + CANARY
        with pytest.raises(APIError) as info:
            backend(url, retries="0").score([Request(PROMPT, LABELS)])
        sent = server.requests[0]
    message = str(info.value)
    assert "hunter2-secret" not in message and CANARY not in message and "alice" not in message
    assert sent["headers"]["Authorization"] == "Bearer " + CANARY  # the configured key wins over user info
    assert sent["path"].startswith("/v1/completions?api_key=")  # the query string stays after the path

