"""A small OpenAI-protocol HTTP server for a HuggingFace causal LM, for tests on 127.0.0.1.

It speaks the subset of the protocol that StaICC's ``openai`` backend uses, the way
vLLM does: ``POST /v1/completions`` (``prompt``, ``max_tokens``, ``temperature`` 0,
``echo``, ``logprobs``: per-token ``tokens``/``token_logprobs``/``text_offset``, the first
token's log-probability null) and ``POST /v1/chat/completions`` (messages joined as
"role: content" lines, greedy answer), plus ``GET /v1/models``.  With ``reasoning_parser``
it answers chat requests as vLLM's ``--reasoning-parser`` does: the thinking section of the
answer (``<think>...</think>``) apart in ``message.reasoning_content`` (``content`` null while
the section is unfinished) and its tokens in ``usage.completion_tokens_details.reasoning_tokens``.
Asked for ``logprobs`` with ``top_logprobs=k`` (chat) or ``logprobs=k`` without ``echo``
(completions), it returns the first generated token's k most likely tokens, as OpenAI does
(``logprobs.content[0].top_logprobs`` / ``logprobs.top_logprobs[0]``); each token's text is
:meth:`ReferenceServer.token_text` (distinct per token id), and :meth:`next_token_logprobs`
gives the whole distribution the list is cut from, for tests that know the exact scores.

Its log-probabilities come from one plain forward pass and ``log_softmax`` — code
independent of ``CausalLMScorer`` — so comparing the two checks the backend's
protocol handling and its prompt/label boundary rule.  Run it alone with
``python tests/openai_reference_server.py --port 8000`` (the tiny random model).
"""
import http.server
import json
import threading
import time
from typing import Any, Dict, List, Tuple

from backend_helpers import ThreadedServer


class JSONHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that answers JSON and logs nothing: the base of the test servers' handlers."""

    def _send(self, status: int, payload: Dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


class ReferenceServer(ThreadedServer):
    """Serves ``model``/``tokenizer`` on 127.0.0.1 (a free port) until ``close()``."""

    def __init__(self, model: Any, tokenizer: Any, name: str = "tiny", port: int = 0,
                 reasoning_parser: bool = False) -> None:
        import torch
        self.torch, self.model, self.tokenizer, self.name = torch, model.eval(), tokenizer, name
        self.reasoning_parser = reasoning_parser
        self.bodies: List[Dict[str, Any]] = []  # every request body, in order
        self.lock = threading.Lock()  # one forward at a time: torch on a shared CPU
        owner = self

        class Handler(JSONHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": owner.name, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                owner.bodies.append(body)
                if body.get("model") != owner.name:
                    return self._send(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
                try:
                    if self.path == "/v1/completions":
                        return self._send(200, owner.completion(body))
                    if self.path == "/v1/chat/completions":
                        return self._send(200, owner.chat(body))
                except (KeyError, TypeError, ValueError) as error:
                    return self._send(400, {"error": {"message": str(error)}})
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        self._serve(Handler, port)

    # ------------------------------------------------------------ endpoints
    def completion(self, body: Dict[str, Any]) -> Dict[str, Any]:
        prompt = body["prompt"]
        if not isinstance(prompt, str):
            raise ValueError("prompt must be a string")
        max_tokens = int(body.get("max_tokens", 16))
        encoded = self.tokenizer(prompt, return_offsets_mapping=True)
        ids, offsets = list(encoded["input_ids"]), [start for start, _ in encoded["offset_mapping"]]
        generated = self._generate(ids, max_tokens)
        text = self.tokenizer.decode(generated, skip_special_tokens=True)
        choice: Dict[str, Any] = {"index": 0, "text": (prompt + text) if body.get("echo") else text,
                                  "finish_reason": "length", "logprobs": None}
        if body.get("logprobs") is not None and not body.get("echo"):
            choice["logprobs"] = {"top_logprobs": [dict(self.top_list(ids, int(body["logprobs"])))]}
        elif body.get("logprobs") is not None:
            all_ids = ids + generated if body.get("echo") else generated
            values = self._token_logprobs(ids + generated)
            values = values if body.get("echo") else values[len(ids):]
            tokens = [self.tokenizer.decode([i]) for i in all_ids]
            positions = offsets if body.get("echo") else []
            position = len(prompt)
            for token in tokens[len(positions):]:
                positions.append(position)
                position += len(token)
            choice["logprobs"] = {"tokens": tokens, "token_logprobs": values, "text_offset": positions,
                                  "top_logprobs": None}
        return {"id": f"cmpl-{time.time_ns()}", "object": "text_completion", "created": int(time.time()),
                "model": self.name, "choices": [choice]}

    def chat(self, body: Dict[str, Any]) -> Dict[str, Any]:
        ids = self.chat_ids(body["messages"])
        max_tokens = int(body.get("max_tokens", 16))
        generated = self._generate(ids, max_tokens)
        finish = "length" if len(generated) == max_tokens else "stop"
        message: Dict[str, Any] = {"role": "assistant",
                                   "content": self.tokenizer.decode(generated, skip_special_tokens=True)}
        logprobs = None
        if body.get("logprobs"):
            top = self.top_list(ids, int(body.get("top_logprobs") or 0))
            first = generated[0] if generated else self.tokenizer.eos_token_id
            logprobs = {"content": [{"token": self.token_text(first), "logprob": self.next_token_logprobs(ids)[first],
                                     "top_logprobs": [{"token": t, "logprob": v} for t, v in top]}]}
        usage: Dict[str, Any] = {"prompt_tokens": len(ids), "completion_tokens": len(generated),
                                 "total_tokens": len(ids) + len(generated)}
        if self.reasoning_parser:
            message, usage["completion_tokens_details"] = self._separate_reasoning(generated)
        return {"id": f"chat-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
                "model": self.name, "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                                              "logprobs": logprobs}],
                "usage": usage}

    def _separate_reasoning(self, generated: List[int]) -> Tuple[Dict[str, Any], Dict[str, int]]:
        """The message with its thinking section apart, and the section's tokens (the first tokens whose
        text holds the end marker; all of them while it is unfinished)."""
        def text(ids: List[int]) -> str:
            return self.tokenizer.decode(ids, skip_special_tokens=True)
        whole = text(generated)
        if "<think>" not in whole and "</think>" not in whole:
            return {"role": "assistant", "content": whole}, {"reasoning_tokens": 0}
        used = next((n for n in range(1, len(generated) + 1) if "</think>" in text(generated[:n])), None)
        if used is None:
            reasoning = whole.split("<think>", 1)[-1]
            return {"role": "assistant", "content": None, "reasoning_content": reasoning}, \
                {"reasoning_tokens": len(generated)}
        head, content = whole.split("</think>", 1)
        return {"role": "assistant", "content": content, "reasoning_content": head.split("<think>", 1)[-1]}, \
            {"reasoning_tokens": used}

    # -------------------------------------------------------------- model
    def chat_ids(self, messages: List[Dict[str, str]]) -> List[int]:
        """The token ids a chat request's answer follows ("role: content" lines, then "assistant:")."""
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return list(self.tokenizer("\n".join(lines) + "\nassistant:")["input_ids"])

    def token_text(self, token: int) -> str:
        """A token's text: its decoding, or ``bytes:<id>`` where that is not printable or an earlier id's."""
        table = getattr(self, "_texts", None)
        if table is None:
            table, seen = [], set()
            for i in range(len(self.tokenizer)):
                text = self.tokenizer.decode([i])
                table.append(f"bytes:{i}" if text in seen or "\ufffd" in text or not text else text)
                seen.add(text)
            self._texts = table
        return table[token]

    def next_token_logprobs(self, ids: List[int]) -> List[float]:
        """log p(token | ids) for every token of the vocabulary (float32 log-softmax)."""
        torch = self.torch
        with self.lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
            return torch.log_softmax(logits, dim=-1).tolist()

    def top_list(self, ids: List[int], k: int) -> List[Tuple[str, float]]:
        """The k most likely next tokens after ``ids``: (text, log-probability), most likely first."""
        values = self.next_token_logprobs(ids)
        order = sorted(range(len(values)), key=lambda i: (-values[i], i))[:k]
        return [(self.token_text(i), values[i]) for i in order]

    def _token_logprobs(self, ids: List[int]) -> List[Any]:
        """[None, log p(ids[1] | ids[:1]), ...]: one forward pass, float32 log-softmax."""
        torch = self.torch
        with self.lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            picked = logprobs[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].tolist()
        return [None] + picked

    def _generate(self, ids: List[int], max_tokens: int) -> List[int]:
        torch = self.torch
        out: List[int] = []
        with self.lock, torch.inference_mode():
            for _ in range(max_tokens):
                logits = self.model(input_ids=torch.tensor([ids + out])).logits[0, -1]
                token = int(torch.argmax(logits))
                if token == self.tokenizer.eos_token_id:
                    break
                out.append(token)
        return out


def _main() -> None:  # pragma: no cover - manual use
    import argparse
    import sys
    import os
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from backend_helpers import tiny_pair
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    port = parser.parse_args().port
    model, tokenizer = tiny_pair()
    server = ReferenceServer(model, tokenizer, port=port)
    print(f"serving the tiny model as 'tiny' at {server.base_url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":  # pragma: no cover
    _main()


__all__: Tuple[str, ...] = ("ReferenceServer",)
