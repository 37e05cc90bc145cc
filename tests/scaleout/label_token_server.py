"""An OpenAI-protocol server on 127.0.0.1 that also offers vLLM's ``/tokenize`` and label-token logprobs.

It extends ``tests/openai_reference_server.py``'s ``ReferenceServer`` (same tiny HF model,
its own forward pass) with what a vLLM server offers beyond the OpenAI protocol:

* ``POST /tokenize`` (at the server root) ``{"model", "prompt", "add_special_tokens"}`` ->
  ``{"tokens": [...], "count": N}``;
* ``POST /v1/completions`` with ``prompt`` as token ids, ``logprob_token_ids`` and
  ``return_tokens_as_token_ids``: ``choices[0].logprobs.top_logprobs[0]`` maps
  ``"token_id:N"`` to the log-probability of token N at the next position.

Every POST is counted by path (``calls``), so tests see how many requests a run sends.
"""
import json
import threading
from collections import Counter
from typing import Any, Dict

from openai_reference_server import JSONHandler, ReferenceServer


class LabelTokenServer(ReferenceServer):
    def __init__(self, model: Any, tokenizer: Any, name: str = "tiny") -> None:
        import torch
        self.torch, self.model, self.tokenizer, self.name = torch, model.eval(), tokenizer, name
        self.lock = threading.Lock()
        self.calls: Counter = Counter()
        owner = self

        class Handler(JSONHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                owner.calls[self.path] += 1
                try:
                    if self.path == "/tokenize":
                        return self._send(200, owner.tokenize(body))
                    if self.path == "/v1/completions":
                        if "logprob_token_ids" in body:
                            return self._send(200, owner.label_tokens(body))
                        return self._send(200, owner.completion(body))
                except (KeyError, TypeError, ValueError) as error:
                    return self._send(400, {"error": {"message": str(error)}})
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        self._serve(Handler, 0)

    def tokenize(self, body: Dict[str, Any]) -> Dict[str, Any]:
        ids = self.tokenizer(body["prompt"], add_special_tokens=body.get("add_special_tokens", True))["input_ids"]
        return {"tokens": list(ids), "count": len(ids), "max_model_len": 4096}

    def label_tokens(self, body: Dict[str, Any]) -> Dict[str, Any]:
        ids = body["prompt"]
        if not isinstance(ids, list) or not body.get("return_tokens_as_token_ids"):
            raise ValueError("this server scores label tokens for token-id prompts with return_tokens_as_token_ids")
        torch = self.torch
        with self.lock, torch.inference_mode():
            row = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0, -1].float(), -1)
        allowed = body.get("allowed_token_ids") or list(range(len(row)))
        sampled = max(allowed, key=lambda t: float(row[t]))
        table = {f"token_id:{t}": float(row[t]) for t in body["logprob_token_ids"]}
        table[f"token_id:{sampled}"] = float(row[sampled])
        choice = {"index": 0, "text": f"token_id:{sampled}", "finish_reason": "length",
                  "logprobs": {"tokens": [f"token_id:{sampled}"], "token_logprobs": [float(row[sampled])],
                               "text_offset": [0], "top_logprobs": [table]}}
        return {"id": "cmpl-label", "object": "text_completion", "model": self.name, "choices": [choice]}
