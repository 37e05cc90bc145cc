"""The vllm backend's label-token scoring against a stand-in engine, and against vLLM's own SamplingParams.

vLLM cannot run here (no GPU).  ``LabelEngine`` follows vLLM's documented behaviour for
what the backend relies on: ``generate(prompts, [SamplingParams per prompt])`` returns
``RequestOutput``-shaped objects; with ``logprob_token_ids`` (or ``logprobs`` +
``allowed_token_ids`` computed after the logits processors) the generated position's
``outputs[0].logprobs[0]`` maps token id -> ``Logprob``; with ``prompt_logprobs`` the
request skips prefix-cache reads (``SamplingParams.__post_init__`` sets
``skip_reading_prefix_cache``).  It counts the prompt tokens it must compute under a
block prefix cache, so the tests see what the engine would recompute.  Its numbers come
from the tiny HF model, so answers are compared with the ``hf`` backend's.
"""
import dataclasses
from typing import Any, Dict, List, Optional

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.hf import HFBackend  # noqa: E402
from StaICC.backends.vllm import VLLMBackend  # noqa: E402
from StaICC.backends.vllm_inputs import EngineInput, sampling_arguments, supports_field, text_order  # noqa: E402
from StaICC.requests import Request  # noqa: E402

from backend_helpers import tiny_pair  # noqa: E402

BLOCK = 4  # tokens per KV block of the stand-in prefix cache


@dataclasses.dataclass
class Logprob:
    logprob: float
    rank: Optional[int] = None


@dataclasses.dataclass
class Params:
    """The SamplingParams fields the backend may set (a current vLLM has them all)."""
    max_tokens: int = 16
    temperature: float = 1.0
    logprobs: Optional[int] = None
    prompt_logprobs: Optional[int] = None
    logprob_token_ids: Optional[List[int]] = None
    allowed_token_ids: Optional[List[int]] = None


@dataclasses.dataclass
class OldParams:
    """An older vLLM: no logprob_token_ids."""
    max_tokens: int = 16
    temperature: float = 1.0
    logprobs: Optional[int] = None
    prompt_logprobs: Optional[int] = None
    allowed_token_ids: Optional[List[int]] = None


@dataclasses.dataclass
class Completion:
    token_ids: List[int]
    logprobs: Optional[List[Dict[int, Logprob]]]
    text: str = ""


@dataclasses.dataclass
class Output:
    prompt_token_ids: List[int]
    prompt_logprobs: Optional[List[Optional[Dict[int, Logprob]]]]
    outputs: List[Completion]


class LabelEngine:
    def __init__(self, processed: bool = True) -> None:
        self.processed = processed  # logprobs after the logits processors (allowed_token_ids renormalises)
        self.cached: set = set()  # prefix blocks in the cache, as tuples of token ids
        self.computed = 0  # prompt tokens computed (not read from the cache)
        self.sent: List[List[int]] = []
        self.params: List[Any] = []

    def get_tokenizer(self):
        return tiny_pair()[1]

    def _prefill(self, ids: List[int], read_cache: bool) -> None:
        hit = 0
        if read_cache:
            while hit + BLOCK <= len(ids) - 1 and tuple(ids[:hit + BLOCK]) in self.cached:
                hit += BLOCK
        self.computed += len(ids) - hit
        for end in range(BLOCK, len(ids) + 1, BLOCK):
            self.cached.add(tuple(ids[:end]))

    def generate(self, prompts, sampling_params, use_tqdm=True):
        import torch
        model, _ = tiny_pair()
        assert isinstance(sampling_params, list) and len(sampling_params) == len(prompts)
        outputs = []
        for prompt, params in zip(prompts, sampling_params):
            ids = list(prompt["prompt_token_ids"])
            self.sent.append(ids)
            self.params.append(params)
            self._prefill(ids, read_cache=params.prompt_logprobs is None)
            with torch.inference_mode():
                rows = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
            prompt_logprobs = None
            if params.prompt_logprobs is not None:
                prompt_logprobs = [None] + [{ids[p]: Logprob(float(rows[p - 1, ids[p]]))} for p in range(1, len(ids))]
            last = rows[-1]
            allowed = getattr(params, "allowed_token_ids", None)
            if allowed and self.processed:
                masked = torch.full_like(last, float("-inf"))
                masked[allowed] = last[allowed]
                last = torch.log_softmax(masked, -1)
            sampled = int(torch.argmax(last if not allowed else torch.where(
                torch.isin(torch.arange(len(last)), torch.tensor(allowed)), last, torch.tensor(float("-inf")))))
            table = {sampled: Logprob(float(last[sampled]))}
            wanted = getattr(params, "logprob_token_ids", None)
            if wanted:
                table.update({t: Logprob(float(rows[-1][t])) for t in wanted})
            elif params.logprobs:
                for t in torch.topk(last, params.logprobs).indices.tolist():
                    table[t] = Logprob(float(last[t]))
            logprobs = [table] if (params.logprobs or wanted) else None
            outputs.append(Output(ids, prompt_logprobs, [Completion([sampled], logprobs)]))
        return outputs


LABELS = ("negative", "positive")
PROMPTS = ["Review: a gripping, funny film. Sentiment:", "Review: dull and slow. Sentiment: ",
           "Review: dull and slow. Sentiment: positive\nReview: fine. Sentiment:"]


def requests():
    out = [Request(p, LABELS) for p in PROMPTS]
    out.append(Request(PROMPTS[0], ("sports", "business", "world")))
    out.append(Request(tuple(f"Review: fine. Sentiment: {label}" for label in LABELS), LABELS))
    return out


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
@pytest.mark.parametrize("params", [Params, OldParams])
def test_one_request_per_prompt_matches_hf(scoring, params):
    model, tokenizer = tiny_pair()
    engine = LabelEngine()
    backend = VLLMBackend(engine, params, scoring=scoring, model_id="tiny")
    assert backend.label_logprobs == ("token_ids" if params is Params else "allowed_tokens")
    got = backend.score(requests())
    want = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny").score(requests())
    for a, b in zip(got, want):
        assert a.prediction == pytest.approx(b.prediction, abs=1e-5)
    direct = [p for p in engine.params if p.prompt_logprobs is None]
    if scoring == "last_token":  # the standard: every direct prompt is one engine request
        assert len(direct) == 4 and len(engine.sent) == 4 + 2
    for p in direct:
        assert p.max_tokens == 1 and p.temperature == 0.0 and p.allowed_token_ids
        assert (p.logprob_token_ids == p.allowed_token_ids) if params is Params else True
    assert engine.sent == sorted(engine.sent)  # sent in token order: shared prefixes meet


def test_label_tokens_read_the_prefix_cache_prompt_logprobs_do_not():
    shared = [Request(PROMPTS[1] + "\n" + p, LABELS) for p in PROMPTS]
    computed = {}
    for mode in ("token_ids", "prompt_logprobs"):
        engine = LabelEngine()
        VLLMBackend(engine, Params, model_id="tiny", label_logprobs=mode).score(shared)
        computed[mode] = engine.computed
    prompt_tokens = sum(len(tiny_pair()[1](r.prompt)["input_ids"]) for r in shared)
    assert computed["prompt_logprobs"] > 2 * prompt_tokens  # every label recomputes its whole prompt
    assert computed["token_ids"] < prompt_tokens  # one request per prompt, common blocks computed once


def test_an_engine_that_drops_a_label_token_is_a_clear_error():
    backend = VLLMBackend(LabelEngine(processed=False), OldParams, model_id="tiny")
    with pytest.raises(RuntimeError, match="logprobs_mode=processed_logprobs"):
        backend.score([Request(PROMPTS[0], ("sports", "business", "world", "negative", "positive"))])


def test_identity_records_the_logprob_source_version_and_batch_invariance(monkeypatch):
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    backend = VLLMBackend(LabelEngine(), Params, model_id="tiny", vllm_version="0.99.0")
    identity = backend.identity()
    assert identity["label_logprobs"] == "token_ids" and identity["vllm_version"] == "0.99.0"
    assert identity["batch_invariant"] is True
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")
    other = VLLMBackend(LabelEngine(), Params, model_id="tiny", vllm_version="0.99.0")
    assert other.fingerprint() != backend.fingerprint()
    with pytest.raises(ValueError, match="label_logprobs=token_ids needs"):
        VLLMBackend(LabelEngine(), OldParams, model_id="tiny", label_logprobs="token_ids")


def test_text_order_and_arguments_are_pure():
    inputs = [EngineInput((5, 6, 7), label_ids=(9, 9, 3)), EngineInput((1, 2), start=1, end=2)]
    assert text_order(inputs) == [1, 0]
    assert sampling_arguments("token_ids", inputs[0]) == {
        "max_tokens": 1, "temperature": 0.0, "logprobs": 2, "allowed_token_ids": [3, 9], "logprob_token_ids": [3, 9]}
    assert sampling_arguments("allowed_tokens", inputs[1]) == {"max_tokens": 1, "temperature": 0.0,
                                                               "prompt_logprobs": 1}


def test_against_vllms_own_sampling_params():
    """Build the backend's arguments into vLLM's SamplingParams class (only where vLLM is installed)."""
    try:
        from vllm import SamplingParams
    except ImportError as error:
        pytest.skip(f"vLLM is not importable here ({error}); the request logic is tested with the stand-in engine")
    assert supports_field(SamplingParams, "prompt_logprobs")
    for mode in ("token_ids", "allowed_tokens"):
        if mode == "token_ids" and not supports_field(SamplingParams, "logprob_token_ids"):
            continue
        params = SamplingParams(**sampling_arguments(mode, EngineInput((1, 2, 3), label_ids=(7, 8))))
        assert params.max_tokens == 1 and params.allowed_token_ids == [7, 8]
        assert not params.skip_reading_prefix_cache  # label-token requests read the prefix cache
    with_prompt = SamplingParams(**sampling_arguments("token_ids", EngineInput((1, 2), start=1, end=2)))
    assert with_prompt.prompt_logprobs == 1
