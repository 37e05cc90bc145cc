"""``vllm``: the offline ``vllm.LLM`` engine, imported only when this backend is built.

``staicc run --model vllm --model-args pretrained=/models/llama,tensor_parallel_size=4``.
Engine arguments (``tensor_parallel_size``, ``dtype``, ``max_model_len``,
``gpu_memory_utilization``, ``enable_prefix_caching``, ``seed``, ...) pass through to
``vllm.LLM``.  Every log-probability mode is computed from prompt log-probabilities
(``SamplingParams(prompt_logprobs=1)``): vLLM returns, for every prompt position after
the first, the log-probability of the token that is there.

* ``last_token`` (the standard): the prompt's token ids followed by the label's last
  token id (the label tokenized alone, default special tokens); that token's prompt
  log-probability is its next-token log-probability after the prompt.  The softmax of
  those over the labels equals the softmax of the labels' logits.
* ``first_token`` / ``sequence``: prompt + label tokenized jointly and split at the
  first token that covers label text, as the ``hf`` backend does.
* noisy channel: the mean prompt log-probability of each per-label prompt.
* ``generate``: ``LLM.generate`` (``LLM.chat`` with ``chat=true``), greedy, parsed to a label.

Prefix caching (on by default in recent vLLM) makes the per-label requests of a prompt
share its KV cache.
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..requests import Answer, Request
from . import _args
from .base import Backend
from .generative import (AnswerMapper, ScoringModes, answer_instruction, check_unparsed_policy, default_messages,
                         parse_aliases)
from .hf import tokenizer_digest, weights_digest
from .joint_tokens import split_joint
from .scores import answers_from_scores

SCORING = ("last_token", "first_token", "sequence", "generate")
_OWN_ARGS = ("pretrained", "scoring", "max_new_tokens", "chat", "system", "unparsed", "aliases", "postprocess",
             "answer_hook", "message_builder", "model_id", "requests_per_call", "revision")
#: engine arguments converted from CLI strings; any other engine argument passes through as given
_ENGINE_INTS = ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "seed", "max_num_seqs",
                "max_num_batched_tokens", "swap_space")
_ENGINE_FLOATS = ("gpu_memory_utilization",)
_ENGINE_BOOLS = ("enable_prefix_caching", "trust_remote_code", "enforce_eager", "enable_chunked_prefill")


def vllm_backend(**arguments: Any) -> "VLLMBackend":
    """The registry's ``vllm`` factory: converts the arguments, then imports vLLM and loads the engine."""
    own = {k: arguments.pop(k) for k in list(arguments) if k in _OWN_ARGS}
    pretrained = _args.as_str(own.pop("pretrained", None), "pretrained")
    revision = _args.as_str(own.pop("revision", None), "revision", optional=True)
    engine = engine_arguments(arguments)
    options = _options(own)  # checked before the heavy import
    from ..extras import require
    vllm = require("vllm", "the vllm backend")
    llm = vllm.LLM(model=pretrained, revision=revision, **engine)
    return VLLMBackend(llm, vllm.SamplingParams, pretrained=pretrained, revision=revision, engine=engine, **options)


def engine_arguments(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Engine keyword arguments with known numeric/boolean ones converted from strings."""
    engine: Dict[str, Any] = {}
    for key, value in arguments.items():
        if key in _ENGINE_INTS:
            engine[key] = _args.as_int(value, key, minimum=0)
        elif key in _ENGINE_FLOATS:
            engine[key] = _args.as_float(value, key, minimum=0.0, maximum=1.0)
        elif key in _ENGINE_BOOLS:
            engine[key] = _args.as_bool(value, key)
        else:
            engine[key] = value
    return engine


def _options(arguments: Dict[str, Any]) -> Dict[str, Any]:
    _args.no_unknown("vllm", arguments, _OWN_ARGS)
    return {
        "scoring": _args.as_choice(arguments.get("scoring", "last_token"), "scoring", SCORING),
        "max_new_tokens": _args.as_int(arguments.get("max_new_tokens", 8), "max_new_tokens", minimum=1),
        "chat": _args.as_bool(arguments.get("chat", False), "chat"),
        "system": _args.as_str(arguments.get("system"), "system", optional=True),
        "unparsed": check_unparsed_policy(arguments.get("unparsed", "uniform")),
        "aliases": parse_aliases(arguments.get("aliases")),
        "postprocess": arguments.get("postprocess"),
        "answer_hook": arguments.get("answer_hook"),
        "message_builder": arguments.get("message_builder"),
        "model_id": _args.as_str(arguments.get("model_id"), "model_id", optional=True),
        "requests_per_call": _args.as_int(arguments.get("requests_per_call", 1024), "requests_per_call", minimum=1),
    }


class VLLMBackend(ScoringModes, Backend):
    """A ``vllm.LLM`` (or any object with its ``generate``/``chat``/``get_tokenizer`` API) as a backend.

    ``sampling_params`` is the ``vllm.SamplingParams`` class (injected so that the
    backend can be built around an existing engine).
    """

    name = "vllm"

    def __init__(self, llm: Any, sampling_params: Callable[..., Any], *, pretrained: Optional[str] = None,
                 revision: Optional[str] = None, engine: Optional[Dict[str, Any]] = None, **options: Any) -> None:
        options = _options(options)
        self.llm = llm
        self.sampling_params = sampling_params
        self.tokenizer = llm.get_tokenizer()
        self.scoring = options["scoring"]
        self.max_new_tokens = options["max_new_tokens"]
        self.chat, self.system = options["chat"], options["system"]
        self.message_builder = options["message_builder"]
        if self.message_builder is not None and not callable(self.message_builder):
            raise TypeError("model argument message_builder must be callable (request -> messages)")
        self.model_id = options["model_id"]
        self.requests_per_call = options["requests_per_call"]
        self.mapper = AnswerMapper(options["unparsed"], options["aliases"], options["postprocess"],
                                   options["answer_hook"])
        self.pretrained, self.revision, self.engine = pretrained, revision, dict(engine or {})
        self._special = set(getattr(self.tokenizer, "all_special_ids", []) or [])

    # --------------------------------------------------------------- scoring
    def score(self, requests: Sequence[Request]) -> List[Answer]:
        if self.scoring == "generate":
            return [self.mapper.answer(r, t) for r, t in zip(requests, self.generate(requests))]
        inputs: List[List[int]] = []
        reads: List[Tuple[int, int, bool]] = []  # (from position, to position, mean instead of sum)
        for r in requests:
            if r.noisy_channel:
                for prompt in r.prompt:
                    ids = self._ids(prompt)
                    if len(ids) < 2:
                        raise ValueError(f"vllm backend: the noisy-channel prompt {prompt!r:.80} has fewer than 2 "
                                         "tokens; its mean log-probability is undefined")
                    inputs.append(ids)
                    reads.append((1, len(ids), True))
            else:
                for ids, start, end in self._label_inputs(r.prompt, r.label_space):  # type: ignore[arg-type]
                    inputs.append(ids)
                    reads.append((start, end, False))
        params = self.sampling_params(max_tokens=1, temperature=0.0, prompt_logprobs=1)
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in inputs], params, use_tqdm=False)
        if len(outputs) != len(inputs):
            raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(inputs)} prompts")
        values = [self._read(out, ids, *read) for out, ids, read in zip(outputs, inputs, reads)]
        return answers_from_scores(requests, values)

    def _ids(self, text: str) -> List[int]:
        return list(self.tokenizer(text)["input_ids"])

    def _label_inputs(self, prompt: str, labels: Sequence[str]) -> List[Tuple[List[int], int, int]]:
        """Per label: the token ids to send and the positions whose log-probabilities are read."""
        if self.scoring == "last_token":
            context = self._ids(prompt)
            out = []
            for label in labels:
                label_ids = self._ids(label)
                if not label_ids:
                    raise ValueError(f"vllm backend: the label {label!r} tokenizes to no token")
                out.append((context + [label_ids[-1]], len(context), len(context) + 1))
            return out
        out = []
        for split in split_joint(self.tokenizer, [(prompt, label) for label in labels], self._special, "vllm backend"):
            boundary = len(split.context)
            read_end = boundary + 1 if self.scoring == "first_token" else boundary + len(split.continuation)
            out.append((split.context + split.continuation, boundary, read_end))
        return out

    def _read(self, output: Any, ids: List[int], start: int, end: int, mean: bool) -> float:
        prompt_logprobs = getattr(output, "prompt_logprobs", None)
        if prompt_logprobs is None or len(prompt_logprobs) != len(ids):
            raise RuntimeError("vllm returned no prompt log-probabilities (RequestOutput.prompt_logprobs) "
                               f"for a prompt of {len(ids)} tokens; the engine must support prompt_logprobs")
        values = []
        for position in range(start, end):
            entry = prompt_logprobs[position]
            if entry is None or ids[position] not in entry:
                raise RuntimeError(f"vllm returned no log-probability for prompt position {position} (token "
                                   f"{ids[position]})")
            value = entry[ids[position]]
            values.append(float(getattr(value, "logprob", value)))
        return math.fsum(values) / len(values) if mean else math.fsum(values)

    def generate(self, requests: Sequence[Request]) -> List[str]:
        params = self.sampling_params(max_tokens=self.max_new_tokens, temperature=0.0)
        if self.chat:
            builder = self.message_builder or (lambda r: default_messages(
                r, answer_instruction(r.label_space) if self.system == "labels" else self.system))
            outputs = self.llm.chat([builder(r) for r in requests], params, use_tqdm=False)
        else:
            for r in requests:
                if r.noisy_channel:
                    raise ValueError("scoring=generate cannot answer noisy-channel prompts (one prompt per label)")
            outputs = self.llm.generate([r.prompt for r in requests], params, use_tqdm=False)
        return [out.outputs[0].text for out in outputs]

    # -------------------------------------------------------------- identity
    def identity(self) -> Dict[str, Any]:
        identity: Dict[str, Any] = {"backend": "vllm", "scoring": self.scoring,
                                    "tokenizer_sha256": tokenizer_digest(self.tokenizer, self.pretrained)}
        if self.model_id is not None:
            identity["model_id"] = self.model_id
        else:
            identity.update({"model": self.pretrained, "revision": self.revision})
            if self.pretrained is not None:
                import os
                if os.path.isdir(self.pretrained):
                    identity["weights_sha256"] = weights_digest(self.pretrained)
        for key in ("dtype", "quantization", "max_model_len", "tokenizer", "seed"):
            if key in self.engine:
                identity[key] = str(self.engine[key])
        return self.with_generation_identity(identity, max_new_tokens=self.max_new_tokens)

    def close(self) -> None:
        self.llm = None
