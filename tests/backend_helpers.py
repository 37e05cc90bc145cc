"""Helpers for the backend tests: a tiny model on disk, its GGUF twin, real HTTP servers on 127.0.0.1.

* ``tiny_pair()``: a random-weight Llama and a byte-level BPE tokenizer trained here.
* ``write_gguf()``: the same weights and tokenizer as a float32 GGUF file for llama.cpp
  (Q/K rows permuted as llama.cpp's converter does; GPT-2 pre-tokenizer, which is the
  regex of the tokenizer's ByteLevel pre-tokenizer).
* ``ThreadedServer``: the base of the servers run in this process (an ``http.server``
  on a daemon thread); ``ServerProcess``: the base of the servers run as a subprocess
  (started, waited for until a URL answers, stopped).
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


def write_gguf(path: str, family: str = "llama", seed: int = 0, pair: Optional[Tuple[Any, Any]] = None) -> str:
    """The tiny Llama and its tokenizer (or ``pair``, another (model, tokenizer) of the same kind) as a float32 GGUF file."""
    import gguf
    import numpy as np

    model, tokenizer = pair if pair is not None else tiny_pair(family, seed)
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


class Closing:
    """A context manager whose exit calls ``close()``: the test servers' common shape."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ThreadedServer(Closing):
    """An ``http.server`` on 127.0.0.1 served from a daemon thread of this process; ``base_url`` ends in /v1."""

    def _serve(self, handler: type, port: int = 0) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # serve_forever notices shutdown() only between polls: its default 0.5 s interval was
        # paid by every test that closes a server, so poll every 10 ms instead.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def answers_200(url: str) -> bool:
    """Whether a GET of ``url`` answers with status 200 within 2 seconds."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


class ServerProcess(Closing):
    """A server run as a subprocess, its output written to a log file; stopped by ``close()``.

    ``_start`` returns once ``ready_url`` answers 200; if the process exits first, or
    ``startup_seconds`` pass, it stops the process and raises RuntimeError with the end
    of the log.
    """

    def _start(self, name: str, command: List[str], log_path: str, ready_url: str, startup_seconds: float,
               env: Optional[dict] = None) -> None:
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + startup_seconds
        while not answers_200(ready_url):
            if self.process.poll() is not None:
                raise RuntimeError(f"{name} exited with status {self.process.returncode}: "
                                   + self._close_and_read_log())
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer {ready_url} within {startup_seconds}s: "
                                   + self._close_and_read_log())
            time.sleep(0.2)

    def _close_and_read_log(self) -> str:
        self.close()
        with open(self.log.name, "rb") as handle:
            return handle.read()[-2000:].decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class LlamaCppServer(ServerProcess):
    """``python -m llama_cpp.server`` on 127.0.0.1 with a GGUF model; a context manager."""

    def __init__(self, model_path: str, alias: str = "tiny", startup_seconds: float = 120.0) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.alias = alias
        command = [sys.executable, "-m", "llama_cpp.server", "--model", model_path, "--model_alias", alias,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "512", "--n_threads", "1",
                   "--n_batch", "512", "--logits_all", "true", "--verbose", "false"]
        self._start("llama_cpp.server", command, os.path.join(os.path.dirname(model_path), "server.log"),
                    self.base_url + "/models", startup_seconds)


class ScriptedServer(ThreadedServer):
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

        self._serve(Handler)


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
