"""``vllm``: the offline ``vllm.LLM`` engine, imported only when this backend is built.

``staicc run --model vllm --model-args pretrained=/models/llama,tensor_parallel_size=4``.
Engine arguments (``tensor_parallel_size``, ``data_parallel_size``, ``dtype``,
``max_model_len``, ``gpu_memory_utilization``, ``enable_prefix_caching``, ``seed``, ...)
pass through to ``vllm.LLM``.

* ``last_token`` (the standard): the label's last token id (the label tokenized alone,
  default special tokens) after the prompt's token ids.  One engine request per prompt
  reads every label token's next-token log-probability (see
  :mod:`StaICC.backends.vllm_inputs` for how, per vLLM version: ``label_logprobs=``).
  The softmax of those over the labels equals the softmax of the labels' logits.
* ``first_token`` / ``sequence``: prompt + label tokenized jointly and split at the
  first token that covers label text, as the ``hf`` backend does; when the labels share
  one context and are one token each, one request per prompt as above, otherwise prompt
  log-probabilities per label.
* noisy channel: the mean prompt log-probability of each per-label prompt.
* ``generate``: ``LLM.generate`` (``LLM.chat`` with ``chat=true``), greedy, parsed to a label
  after a reasoning model's thinking section, whose generated tokens are counted
  (:mod:`StaICC.backends.thinking`).

Engine requests are sent sorted by token ids, so that prompts sharing demonstrations are
scheduled together and automatic prefix caching computes their common blocks once.  The
identity records the vLLM version, the label log-probability source and whether
``VLLM_BATCH_INVARIANT`` is set (batch-invariant kernels make a prompt's numbers
independent of what else is in the batch).
"""
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError, InvalidValueError, OperationError
from ..requests import Answer, Request
from . import _args
from .base import Backend
from .generative import (AnswerMapper, ScoringModes, answer_instruction, check_unparsed_policy, default_messages,
                         parse_aliases)
from .hf import tokenizer_digest, weights_digest
from .joint_tokens import split_joint
from .scores import answers_from_scores
from .thinking import THINKING_ARGS, ThinkingRule
from .vllm_inputs import (LABEL_LOGPROBS, EngineInput, read_value, resolve_label_logprobs, sampling_for_inputs,
                          text_order)

SCORING = ("last_token", "first_token", "sequence", "generate")
_OWN_ARGS = ("pretrained", "scoring", "max_new_tokens", "chat", "system", "unparsed", "aliases", "postprocess",
             "answer_hook", "message_builder", "model_id", "requests_per_call", "revision", "label_logprobs") + THINKING_ARGS
#: engine arguments converted from CLI strings; any other engine argument passes through as given
_ENGINE_INTS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_model_len", "seed", "max_num_seqs",
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
    return VLLMBackend(llm, vllm.SamplingParams, pretrained=pretrained, revision=revision, engine=engine,
                       vllm_version=getattr(vllm, "__version__", "unknown"), **options)


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
        "label_logprobs": _args.as_choice(arguments.get("label_logprobs", "auto"), "label_logprobs", LABEL_LOGPROBS),
        "thinking": ThinkingRule.from_arguments({k: v for k, v in arguments.items() if k in THINKING_ARGS}),
    }


class VLLMBackend(ScoringModes, Backend):
    """A ``vllm.LLM`` (or any object with its ``generate``/``chat``/``get_tokenizer`` API) as a backend.

    ``sampling_params`` is the ``vllm.SamplingParams`` class (injected so that the
    backend can be built around an existing engine).
    """

    name = "vllm"
    shares_prefixes = True  # automatic prefix caching: the suite sends each dataset's prompts in text order

    def __init__(self, llm: Any, sampling_params: Callable[..., Any], *, pretrained: Optional[str] = None,
                 revision: Optional[str] = None, engine: Optional[Dict[str, Any]] = None,
                 vllm_version: Optional[str] = None, **options: Any) -> None:
        options = _options(options)
        self.label_logprobs = resolve_label_logprobs(options["label_logprobs"], sampling_params)
        self.vllm_version = vllm_version
        self.batch_invariant = os.environ.get("VLLM_BATCH_INVARIANT", "0") not in ("", "0")
        self.llm = llm
        self.sampling_params = sampling_params
        self.tokenizer = llm.get_tokenizer()
        self.scoring = options["scoring"]
        self.max_new_tokens = options["max_new_tokens"]
        self.chat, self.system = options["chat"], options["system"]
        self.message_builder = options["message_builder"]
        if self.message_builder is not None and not callable(self.message_builder):
            raise InvalidTypeError("model argument message_builder must be callable (request -> messages)")
        self.model_id = options["model_id"]
        self.requests_per_call = options["requests_per_call"]
        self.mapper = AnswerMapper(options["unparsed"], options["aliases"], options["postprocess"],
                                   options["answer_hook"], options["thinking"])
        self.mapper.thinking.check_scoring(self.scoring)
        self.pretrained, self.revision, self.engine = pretrained, revision, dict(engine or {})
        self._special = set(getattr(self.tokenizer, "all_special_ids", []) or [])

    # --------------------------------------------------------------- scoring
    def score(self, requests: Sequence[Request]) -> List[Answer]:
        if self.scoring == "generate":
            generated = self.generate_counted(requests)
            return [self.mapper.answer(r, text, tokens) for r, (text, tokens) in zip(requests, generated)]
        inputs = [i for r in requests for i in self.engine_inputs(r)]
        order = text_order(inputs)
        sent = [inputs[i] for i in order]
        params = sampling_for_inputs(self.sampling_params, self.label_logprobs, sent)
        outputs = self.llm.generate([{"prompt_token_ids": list(i.ids)} for i in sent], params, use_tqdm=False)
        if len(outputs) != len(sent):
            raise OperationError(f"vllm returned {len(outputs)} outputs for {len(sent)} prompts")
        read: List[List[float]] = [[] for _ in inputs]
        for position, output in zip(order, outputs):
            read[position] = read_value(output, inputs[position])
        return answers_from_scores(requests, [v for values in read for v in values])

    def engine_inputs(self, r: Request) -> List[EngineInput]:
        """The engine requests that score ``r``: one per prompt where the labels are single next tokens."""
        if r.noisy_channel:
            out = []
            for prompt in r.prompt:
                ids = self._ids(prompt)
                if len(ids) < 2:
                    raise InvalidValueError(f"vllm backend: the noisy-channel prompt {prompt!r:.80} has fewer than 2 "
                                            "tokens; its mean log-probability is undefined")
                out.append(EngineInput(tuple(ids), start=1, end=len(ids), mean=True))
            return out
        per_label = self._label_inputs(r.prompt, r.label_space)  # type: ignore[arg-type]
        context = per_label[0][0][:per_label[0][1]]
        one_token = all(end - start == 1 and ids[:start] == context for ids, start, end in per_label)
        if one_token and self.label_logprobs != "prompt_logprobs":
            return [EngineInput(tuple(context), label_ids=tuple(ids[start] for ids, start, _ in per_label))]
        return [EngineInput(tuple(ids), start=start, end=end) for ids, start, end in per_label]

    def _ids(self, text: str) -> List[int]:
        return list(self.tokenizer(text)["input_ids"])

    def _label_inputs(self, prompt: str, labels: Sequence[str]) -> List[Tuple[List[int], int, int]]:
        """Per label: context + label token ids and the positions whose log-probabilities score it."""
        if self.scoring == "last_token":
            context = self._ids(prompt)
            out = []
            for label in labels:
                label_ids = self._ids(label)
                if not label_ids:
                    raise InvalidValueError(f"vllm backend: the label {label!r} tokenizes to no token")
                out.append((context + [label_ids[-1]], len(context), len(context) + 1))
            return out
        out = []
        for split in split_joint(self.tokenizer, [(prompt, label) for label in labels], self._special, "vllm backend"):
            boundary = len(split.context)
            read_end = boundary + 1 if self.scoring == "first_token" else boundary + len(split.continuation)
            out.append((split.context + split.continuation, boundary, read_end))
        return out

    def generate(self, requests: Sequence[Request]) -> List[str]:
        return [text for text, _ in self.generate_counted(requests)]

    def generate_counted(self, requests: Sequence[Request]) -> List[Tuple[str, Optional[int]]]:
        """Each greedy answer with the generated tokens of its thinking section (None: it has none)."""
        params = self.sampling_params(max_tokens=self.generation_limit(self.max_new_tokens), temperature=0.0)
        if self.chat:
            builder = self.message_builder or (lambda r: default_messages(
                r, answer_instruction(r.label_space) if self.system == "labels" else self.system))
            outputs = self.llm.chat([builder(r) for r in requests], params, use_tqdm=False)
        else:
            for r in requests:
                if r.noisy_channel:
                    raise InvalidValueError("scoring=generate cannot answer noisy-channel prompts (one prompt per label)")
            outputs = self.llm.generate([r.prompt for r in requests], params, use_tqdm=False)
        return [self._counted(out.outputs[0]) for out in outputs]

    def _counted(self, completion: Any) -> Tuple[str, Optional[int]]:
        ids = list(getattr(completion, "token_ids", None) or ())
        if not ids:
            return completion.text, None
        def decode(part: Sequence[int]) -> str:
            return self.tokenizer.decode(list(part), skip_special_tokens=True)
        return completion.text, self.mapper.thinking.section_tokens(ids, decode)

    # -------------------------------------------------------------- identity
    def identity(self) -> Dict[str, Any]:
        identity: Dict[str, Any] = {"backend": "vllm", "scoring": self.scoring,
                                    "tokenizer_sha256": tokenizer_digest(self.tokenizer, self.pretrained),
                                    "batch_invariant": self.batch_invariant}
        if self.scoring != "generate":
            identity["label_logprobs"] = self.label_logprobs
        if self.vllm_version is not None:
            identity["vllm_version"] = self.vllm_version
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
