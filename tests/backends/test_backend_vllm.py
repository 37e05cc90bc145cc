"""The vllm backend against a stand-in engine with vLLM's documented output shapes.

No GPU and no vLLM here: ``FakeLLM`` mimics ``vllm.LLM``'s ``generate``/``chat``/
``get_tokenizer`` and returns objects shaped like ``vllm.RequestOutput`` (``prompt_token_ids``,
``prompt_logprobs``: a list with None first, then ``{token_id: Logprob}`` holding the prompt's
token and the top-k), ``CompletionOutput`` (``text``, ``token_ids``, ``logprobs``) and
``Logprob`` (``logprob``, ``rank``, ``decoded_token``).  Its numbers come from the tiny HF
model, so the backend's scores are compared with the hf backend's.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.hf import HFBackend  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.backends.vllm import VLLMBackend, engine_arguments  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import tiny_pair  # noqa: E402


@dataclass
class Logprob:
    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[list]
    finish_reason: Optional[str] = "length"


@dataclass
class RequestOutput:
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    prompt_logprobs: Optional[List[Optional[Dict[int, Logprob]]]]
    outputs: List[CompletionOutput]
    finished: bool = True


@dataclass
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 1.0
    prompt_logprobs: Optional[int] = None
    logprobs: Optional[int] = None


@dataclass
class FakeLLM:
    calls: List[Any] = field(default_factory=list)

    def get_tokenizer(self):
        return tiny_pair()[1]

    def generate(self, prompts, sampling_params, use_tqdm=True):
        import torch
        model, tokenizer = tiny_pair()
        self.calls.append(("generate", len(prompts), sampling_params))
        outputs = []
        every = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        for n, (prompt, sampling_params) in enumerate(zip(prompts, every)):
            ids = list(prompt["prompt_token_ids"]) if isinstance(prompt, dict) else list(tokenizer(prompt)["input_ids"])
            with torch.inference_mode():
                logprobs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
            prompt_logprobs = None
            if sampling_params.prompt_logprobs is not None:
                prompt_logprobs = [None]
                for position in range(1, len(ids)):
                    row = logprobs[position - 1]
                    top = torch.topk(row, max(1, sampling_params.prompt_logprobs))
                    entry = {int(i): Logprob(float(row[i]), rank=r + 1) for r, i in enumerate(top.indices)}
                    entry.setdefault(ids[position], Logprob(float(row[ids[position]]),
                                                            rank=int((row > row[ids[position]]).sum()) + 1))
                    prompt_logprobs.append(entry)
            generated = []
            with torch.inference_mode():
                for _ in range(sampling_params.max_tokens):
                    token = int(torch.argmax(model(input_ids=torch.tensor([ids + generated])).logits[0, -1]))
                    generated.append(token)
            text = tokenizer.decode(generated, skip_special_tokens=True)
            outputs.append(RequestOutput(str(n), prompt if isinstance(prompt, str) else None, ids, prompt_logprobs,
                                         [CompletionOutput(0, text, generated, None, None)]))
        return outputs

    def chat(self, messages, sampling_params, use_tqdm=True):
        self.calls.append(("chat", messages))
        return self.generate(["\n".join(m["content"] for m in conversation) for conversation in messages],
                             sampling_params)


LABELS = ("negative", "positive")
PROMPTS = ["Review: a gripping, funny film. Sentiment:", "Review: dull and slow. Sentiment: "]


def requests():
    out = [Request(p, LABELS) for p in PROMPTS]
    out.append(Request(PROMPTS[0], ("sports", "business", "world")))
    out.append(Request(tuple(f"Review: fine. Sentiment: {label}" for label in LABELS), LABELS))
    return out


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_vllm_scores_match_hf(scoring):
    model, tokenizer = tiny_pair()
    engine = FakeLLM()
    backend = VLLMBackend(engine, SamplingParams, scoring=scoring, model_id="tiny", label_logprobs="prompt_logprobs")
    remote = backend.score(requests())
    local = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny").score(requests())
    for a, b in zip(remote, local):
        assert a.prediction == pytest.approx(b.prediction, abs=1e-5)
    assert len(engine.calls) == 1  # one engine call per score(): vLLM batches it
    assert all(params.prompt_logprobs == 1 for params in engine.calls[0][2])
    assert backend.non_standard == ([] if scoring == "last_token" else [f"scoring={scoring}"])


def test_vllm_generate_and_chat():
    engine = FakeLLM()
    backend = VLLMBackend(engine, SamplingParams, scoring="generate", max_new_tokens=3, chat=True, system="labels")
    answers = backend.score(requests()[:2])
    assert all(isinstance(a.text, str) for a in answers)
    assert engine.calls[0][0] == "chat"
    assert engine.calls[0][1][0][0] == {"role": "system", "content": "Answer with exactly one of: negative, positive."}
    assert backend.non_standard == ["generative answers (scoring=generate)", "chat template (chat=true)"]
    assert backend.identity()["chat"] is True and backend.identity()["unparsed"] == "uniform"


def test_missing_prompt_logprobs_is_a_clear_error():
    class NoLogprobs(FakeLLM):
        def generate(self, prompts, sampling_params, use_tqdm=True):
            outputs = super().generate(prompts, SamplingParams(max_tokens=1))
            return outputs
    backend = VLLMBackend(NoLogprobs(), SamplingParams, model_id="tiny", label_logprobs="prompt_logprobs")
    with pytest.raises(RuntimeError, match="no prompt log-probabilities"):
        backend.score(requests()[:1])


def test_engine_arguments_are_converted_and_checked_before_importing_vllm():
    assert engine_arguments({"tensor_parallel_size": "2", "gpu_memory_utilization": "0.8", "dtype": "bfloat16",
                             "enable_prefix_caching": "true"}) == {
        "tensor_parallel_size": 2, "gpu_memory_utilization": 0.8, "dtype": "bfloat16", "enable_prefix_caching": True}
    with pytest.raises(ValueError, match="model argument gpu_memory_utilization must be <= 1"):
        make_backend("vllm", pretrained="/m", gpu_memory_utilization="1.5")
    with pytest.raises(ValueError, match="model argument tensor_parallel_size must be an integer"):
        make_backend("vllm", pretrained="/m", tensor_parallel_size="two")
    with pytest.raises(ValueError, match="model argument scoring"):
        make_backend("vllm", pretrained="/m", scoring="best")


def test_without_vllm_the_error_names_the_extra():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r'pip install "StaICC\[vllm\]"'):
        make_backend("vllm", pretrained="/m")
