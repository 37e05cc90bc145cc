"""The openai backend against ``transformers serve``, a third-party OpenAI-compatible server.

The test starts HuggingFace transformers' own server (``transformers serve``, from
``pip install "transformers[serving]"``) on 127.0.0.1 as a subprocess, offline, serving
the tiny random Llama saved to a temporary directory, and compares the openai backend's
answers with the hf backend's on the same directory:

* ``scoring=generate`` over ``/v1/completions`` (the prompt as is, BOS added by the
  tokenizer) and over ``/v1/chat/completions`` with ``chat=true`` (the chat template
  saved with the tokenizer): greedy on both sides (the backend sends ``temperature=0``,
  which the server turns into ``do_sample=False``; ``max_tokens`` becomes
  ``max_new_tokens``), so the generated texts must be identical, and so the parsed
  labels, the predictions and the metrics.
* The log-probability modes (``sequence``, ``first_token``) cannot be compared: the
  server accepts ``echo`` and ``logprobs`` but ignores them (it logs "Ignoring
  unsupported fields") and returns ``logprobs: null``.  The backend must say so, naming
  the missing piece and ``scoring=generate``, rather than produce a number.

Skipped when the serving extra (fastapi, uvicorn, pydantic, openai) is not installed.
"""
import os
import sys
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
try:
    from transformers.utils.import_utils import is_serve_available  # noqa: E402
except ImportError:  # transformers before 5: no such check (and a different serve command)
    pytest.skip("this transformers has no is_serve_available (transformers serve is tested with transformers 5)",
                allow_module_level=True)

if not is_serve_available():  # transformers' own test of what `transformers serve` imports
    pytest.skip("transformers serve needs fastapi, uvicorn, pydantic and openai: "
                "pip install \"transformers[serving]\"", allow_module_level=True)

from StaICC import Normal  # noqa: E402
from StaICC.backends.openai import APIError, MissingLogprobsError  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.errors import TamperingWarning  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import ServerProcess, free_port, save_tiny  # noqa: E402

#: a plain chat template (the tiny tokenizer has none); it writes its own BOS
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
LABELS = ("negative", "positive")
PROMPTS = ["Review: a gripping, funny film. Sentiment:", "Review: dull, slow and far too long. Sentiment: ",
           "Text: stocks rose.\nLabel:", "Review: the story is fresh. Sentiment: "]
MAX_TOKENS = 8


class TransformersServe(ServerProcess):
    """``transformers serve MODEL_DIR`` on 127.0.0.1, offline, CPU, float32; a context manager."""

    def __init__(self, model_dir: str, home: str, startup_seconds: float = 120.0) -> None:
        self.model = model_dir  # the server is pinned to it; requests must name it exactly
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model_dir,
                   "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu", "--dtype", "float32"]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_UPDATE_CHECK="1",
                   HF_HUB_DISABLE_TELEMETRY="1", HF_HOME=home, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        self._start("transformers serve", command, os.path.join(home, "server.log"),
                    f"http://127.0.0.1:{self.port}/health", startup_seconds, env)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    directory = save_tiny(str(tmp_path_factory.mktemp("tiny-llama")))
    with open(os.path.join(directory, "chat_template.jinja"), "w", encoding="utf-8") as handle:
        handle.write(CHAT_TEMPLATE)
    return directory


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    with TransformersServe(model_dir, str(tmp_path_factory.mktemp("hf-home"))) as running:
        yield running


def remote(server: TransformersServe, **arguments: Any):
    return make_backend("openai", base_url=server.base_url, model=server.model, retries="0", concurrency="2",
                        **arguments)


def local(model_dir: str, **arguments: Any):
    return make_backend("hf", pretrained=model_dir, device="cpu", dtype="float32", **arguments)


def requests():
    return [Request(p, LABELS, dataset="toy", query_index=i) for i, p in enumerate(PROMPTS)]


def test_generate_over_completions_equals_hf_on_a_benchmark(server, model_dir):
    bench = Normal(datasets=["financial_phrasebank"])
    with pytest.warns(TamperingWarning, match="limited to the first 8 test items"):
        bench.limit_test_items(8)
    backend = remote(server, scoring="generate", max_tokens=str(MAX_TOKENS))
    try:
        served = bench(backend)
    finally:
        backend.close()
    reference = bench(local(model_dir, scoring="generate", max_new_tokens=str(MAX_TOKENS)))
    served_records, reference_records = served.records, reference.records
    assert len(served_records) == len(reference_records) == 16  # 8 test items x 2 repeats
    for a, b in zip(served_records, reference_records):
        assert a["prompt_sha256"] == b["prompt_sha256"]
        assert a["text"] == b["text"], (a["test_index"], a["text"], b["text"])
        assert (a["parsed"], a["prediction"], a["predicted"]) == (b["parsed"], b["prediction"], b["predicted"])
    assert served["Divided results"] == reference["Divided results"]
    assert served["Averaged results"] == reference["Averaged results"]
    assert any(r["text"] for r in served_records)  # the server really generated something


def test_generate_over_chat_completions_equals_hf(server, model_dir):
    # The random model never writes a label; two words it does write are made aliases so that
    # the parser's matches (and the one-hot predictions) are compared too, not only the fallbacks.
    arguments = {"scoring": "generate", "chat": "true", "system": "labels", "aliases": "positive:stock;negative:not"}
    backend = remote(server, max_tokens=str(MAX_TOKENS), **arguments)
    try:
        served = backend.score(requests())
    finally:
        backend.close()
    reference = local(model_dir, max_new_tokens=str(MAX_TOKENS), **arguments).score(requests())
    for r, a, b in zip(requests(), served, reference):
        assert (a.text, a.parsed, a.prediction) == (b.text, b.parsed, b.prediction), r.prompt
    assert any(a.parsed for a in served) and any(a.text for a in served)


@pytest.mark.parametrize("scoring", ["sequence", "first_token"])
def test_log_probability_modes_are_refused_clearly(server, scoring):
    backend = remote(server, scoring=scoring)
    try:
        with pytest.raises(MissingLogprobsError, match=r"no logprobs object.*echo=true.*scoring=generate"):
            backend.score(requests()[:1])
    finally:
        backend.close()


def test_another_model_name_is_a_clear_error(server):
    backend = make_backend("openai", base_url=server.base_url, model="meta-llama/Llama-3.1-8B", scoring="generate",
                           retries="0")
    with pytest.raises(APIError, match="HTTP 400.*pinned to"):
        backend.score(requests()[:1])
