"""A hostile OpenAI-compatible server on 127.0.0.1 for benchmarks/security_reproductions.py: ``mode`` says
how it answers every POST (an error body dripped, a 200 KB answer, half an echo, no /tokenize)."""
import http.server
import json
import threading

PROMPT = "Review: fine. Sentiment:"


class Hostile(http.server.ThreadingHTTPServer):
    """A hostile OpenAI-compatible server; ``mode`` says how it answers every POST."""

    daemon_threads = True

    def __init__(self, mode):
        self.mode, self.stop = mode, threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _json(self, status, payload):
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        mode = self.server.mode
        try:
            if mode.startswith("drip"):
                self.send_response(int(mode[4:]))
                self.send_header("Content-Length", "100000")
                self.end_headers()
                while not self.server.stop.wait(0.5):
                    self.wfile.write(b"x")
                    self.wfile.flush()
            elif mode == "big_answer":
                self._json(200, {"model": "m", "choices": [{"message": {"content": "positive " * 25000}}]})
            elif mode == "half_echo":
                text = body["prompt"]
                self._json(200, {"model": "m", "choices": [{"text": text + "!", "logprobs": {
                    "tokens": ["", text[:len(text) // 2], "!"], "token_logprobs": [None, -1.0, -0.1],
                    "text_offset": [0, 0, len(text)]}}]})
            elif mode == "tokenize404":
                self._json(404, {"error": {"message": "Not Found"}})
            else:
                self._json(200, {"model": "m", "choices": [{"message": {"content": "positive"}}]})
        except OSError:
            pass


def openai(base_url, **extra):
    """The openai backend against ``base_url`` (the reproductions' settings)."""
    from StaICC.backends.registry import make_backend
    arguments = {"base_url": base_url, "model": "m", "concurrency": "1", "timeout": "30"}
    arguments.update(extra)
    return make_backend("openai", **arguments)


def caught(function):
    """What ``function(request)`` ends in, as one line: its answer or its error."""
    from StaICC.requests import Request
    try:
        return f"answered {function(Request(PROMPT, ('negative', 'positive')))}"
    except Exception as exc:  # the outcome to print: a clear error, one line
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
