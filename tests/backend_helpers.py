"""Helpers for the backend tests: a tiny model on disk, its GGUF twin, real HTTP servers on 127.0.0.1.

* ``tiny_pair()``: a random-weight Llama and a byte-level BPE tokenizer trained here.
* ``write_gguf()``: the same weights and tokenizer as a float32 GGUF file for llama.cpp
  (Q/K rows permuted as llama.cpp's converter does; GPT-2 pre-tokenizer, which is the
  regex of the tokenizer's ByteLevel pre-tokenizer).
* ``LlamaCppServer``: ``python -m llama_cpp.server`` serving that file (llama-cpp-python).
* ``ScriptedServer``: an ``http.server`` that answers each POST with the next scripted
  response (status, body, delay) — for the error paths only.
"""
import functools
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any, List, Optional, Tuple

CORPUS = [
    "Review: a gripping, funny and moving film. Sentiment: positive",
    "Review: dull, slow and far too long. Sentiment: negative",
    "Review: the actors are wonderful and the story is fresh. Sentiment: positive",
    "Review: a tired plot with nothing new to say. Sentiment: negative",
    "Text: stocks rose after the report. Label: business",
    "Text: the team won the final match. Label: sports",
    "Sentence: it was neither good nor bad. Sentiment: neutral",
] * 4


@functools.lru_cache(maxsize=None)
def tiny_pair(family: str = "llama", seed: int = 0) -> Tuple[Any, Any]:
    """(model, tokenizer): random float32 weights, a 512-token BPE with "<s>" prepended."""
    import torch

    from StaICC.prefabricate_inference.tiny_models import tiny_causal_lm, tiny_tokenizer
    torch.set_num_threads(1)
    tokenizer = tiny_tokenizer(CORPUS, bos=True, vocab_size=512)
    model = tiny_causal_lm(family, vocab_size=len(tokenizer), hidden_size=64, layers=2, seed=seed)
    return model, tokenizer


def save_tiny(directory: str, family: str = "llama", seed: int = 0) -> str:
    model, tokenizer = tiny_pair(family, seed)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _permute(weights: Any, n_head: int) -> Any:
    """llama.cpp's rotary layout: HF's halves become interleaved pairs (its converter's LlamaModel.permute)."""
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def write_gguf(path: str, family: str = "llama", seed: int = 0) -> str:
    """The tiny Llama and its tokenizer as a float32 GGUF file."""
    import gguf
    import numpy as np

    model, tokenizer = tiny_pair(family, seed)
    config = model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = config.hidden_size // heads
    rope = getattr(config, "rope_theta", None) or (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("staicc-tiny-llama")
    writer.add_context_length(512)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(rope))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    vocab = tokenizer.get_vocab()
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        tokens[index] = token
    special = set(tokenizer.all_special_ids)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_vocab_size(len(tokens))
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
                            for i in range(len(tokens))])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        writer.add_tensor(f"blk.{i}.attn_norm.weight", state[p + "input_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.attn_q.weight", np.ascontiguousarray(_permute(state[p + "self_attn.q_proj.weight"], heads)))
        writer.add_tensor(f"blk.{i}.attn_k.weight", np.ascontiguousarray(_permute(state[p + "self_attn.k_proj.weight"], kv_heads)))
        writer.add_tensor(f"blk.{i}.attn_v.weight", state[p + "self_attn.v_proj.weight"])
        writer.add_tensor(f"blk.{i}.attn_output.weight", state[p + "self_attn.o_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", state[p + "post_attention_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", state[p + "mlp.gate_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_up.weight", state[p + "mlp.up_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_down.weight", state[p + "mlp.down_proj.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    writer.add_tensor("output.weight", state["lm_head.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 with a GGUF model; a context manager."""

    def __init__(self, model_path: str, alias: str = "tiny", startup_seconds: float = 120.0) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.alias = alias
        command = [sys.executable, "-m", "llama_cpp.server", "--model", model_path, "--model_alias", alias,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "512", "--n_threads", "1",
                   "--n_batch", "512", "--logits_all", "true", "--verbose", "false"]
        self.log = open(os.path.join(os.path.dirname(model_path), "server.log"), "wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + startup_seconds
        while True:
            if self.process.poll() is not None:
                self.log.close()
                with open(self.log.name, "rb") as handle:
                    raise RuntimeError("llama_cpp.server exited: " + handle.read()[-2000:].decode("utf-8", "replace"))
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"llama_cpp.server did not answer within {startup_seconds}s")
            time.sleep(0.2)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def __enter__(self) -> "LlamaCppServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ScriptedServer:
    """An HTTP server on 127.0.0.1 answering POSTs with scripted ``(status, body, delay, headers)``.

    ``body``: JSON-able, raw bytes, or a function of the request's JSON body.

    The last script entry repeats.  ``requests`` records each request's path, headers and JSON body.
    """

    def __init__(self, script: List[Tuple[int, Any, float]]) -> None:
        self.script = list(script)
        self.requests: List[dict] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                entry = owner.script[min(len(owner.requests), len(owner.script)) - 1]
                status, payload, delay = entry[:3]
                headers = entry[3] if len(entry) > 3 else {}
                if callable(payload):
                    payload = payload(owner.requests[-1]["body"])
                if delay:
                    time.sleep(delay)
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def completion_with_logprobs(text: str, pieces: List[Tuple[str, Optional[float]]]) -> dict:
    """A /v1/completions answer that echoes ``text`` cut into ``pieces`` (token, logprob)."""
    offsets, position = [], 0
    for token, _ in pieces:
        offsets.append(position)
        position += len(token)
    return {"id": "x", "object": "text_completion", "model": "m",
            "choices": [{"index": 0, "text": text, "finish_reason": "length",
                         "logprobs": {"tokens": [t for t, _ in pieces], "token_logprobs": [lp for _, lp in pieces],
                                      "text_offset": offsets, "top_logprobs": None}}]}
