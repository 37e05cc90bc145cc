"""``hf``: a local HuggingFace causal LM, scored in batches by ``CausalLMScorer``.

``staicc run --model hf --model-args pretrained=/models/llama,dtype=bfloat16`` or
``make_backend("hf", pretrained="/models/llama")``.  Scoring modes:

* ``last_token`` (the standard): each label tokenized alone, its last token read at
  the prompt's last position;
* ``first_token`` / ``sequence``: the label's first token / all its tokens as a
  continuation of the prompt (joint tokenization);
* ``generate``: greedy generation (through the chat template with ``chat=true``),
  mapped to a label by :mod:`StaICC.backends.generative`, a reasoning model's thinking
  section cut off first and its generated tokens counted (:mod:`StaICC.backends.thinking`).

``chat=true`` (lm-eval's name: ``apply_chat_template``) wraps every prompt in the
tokenizer's chat template, with ``system`` (``system_instruction``) as the system
message, in the log-probability modes too: the label is then scored after the
template's generation prompt.  ``fewshot_as_multiturn=true`` (with ``chat``) writes each
demonstration as a user turn and its label as the assistant's turn, the query as the last
user turn.  Any chat template makes a run non-standard.

``packing=tree|prefix|rows`` picks how prompts that share prefixes are computed
(see ``CausalLMScorer``); every packing gives the same numbers up to float rounding.

Noisy-channel prompts are scored by the mean LM loss in every log-probability mode.
"""
import hashlib
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError, InvalidValueError
from ..requests import ANCHORS, FULL_VOCAB, HIDDEN, LABELS, Answer, Request, state_vector
from . import _args
from .base import Backend
from .hf_identity import in_memory_digest, tokenizer_digest, weights_digest  # noqa: F401  (re-exported)
from .invariant import NUMERICS
from .hf_runtime import check_pretrained, choose_threads, load_pretrained, runtime
from .generative import (AnswerMapper, ScoringModes, answer_instruction, check_unparsed_policy, default_messages,
                         multiturn_messages, parse_aliases)
from .thinking import THINKING_ARGS, ThinkingRule

SCORING = ("last_token", "first_token", "sequence", "generate")
DTYPES = ("auto", "float32", "float16", "bfloat16")
#: requests per ``score`` call: the run commits answers to its cache after each call.  On a
#: GPU a call of 2,048 prompts is a few seconds of work and keeps the device busy (with 256
#: per call, the host's work between calls made the full suite on a 1B model 1.57x slower)
DEFAULT_REQUESTS_PER_CALL = 256
DEFAULT_REQUESTS_PER_CALL_GPU = 2048
#: files that decide the weights and the architecture, hashed whole (they are small)
_HF_ARGS = ("pretrained", "dtype", "device", "scoring", "token_budget", "batch_size", "revision",
            "trust_remote_code", "requests_per_call", "max_new_tokens", "chat", "system", "unparsed", "aliases",
            "postprocess", "answer_hook", "message_builder", "model_id", "weights_hash", "apply_chat_template",
            "system_instruction", "fewshot_as_multiturn", "threads", "packing", "numerics") + THINKING_ARGS
#: lm-evaluation-harness's names for two arguments
_ALIASES = {"apply_chat_template": "chat", "system_instruction": "system"}
#: how the weights of a model directory are hashed into the identity (see weights_digest)
WEIGHTS_HASHES = ("sampled", "full")
#: how prompts that share prefixes are computed (see CausalLMScorer); batch-invariant scores unless numerics=fast
PACKING, DEFAULT_NUMERICS = ("auto", "tree", "prefix", "rows"), "invariant"


def hf_backend(**arguments: Any) -> "HFBackend":
    """The registry's ``hf`` factory: checks every argument, then loads the model."""
    checked = checked_arguments(arguments)
    if checked["threads"] is not None:
        from ..extras import require
        require("torch", "the hf backend").set_num_threads(checked["threads"])
    model, tokenizer = load_pretrained(checked["pretrained"], revision=checked["revision"],
                                       trust_remote_code=checked["trust_remote_code"], dtype=checked["dtype"],
                                       device=checked["device"])
    backend = HFBackend(model, tokenizer, pretrained=checked["pretrained"], revision=checked["revision"],
                        dtype=checked["dtype"], **checked["options"])
    backend.runtime = runtime(*choose_threads(model, checked["threads"]))
    return backend


def checked_arguments(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Every argument of :func:`hf_backend` checked and converted, nothing loaded (a CUDA device is looked for):
    ``pretrained`` (an absolute path for a local directory), ``revision``, ``trust_remote_code``, ``device``,
    ``dtype``, ``threads`` and the scoring ``options``."""
    arguments = dict(arguments)
    _args.no_unknown("hf", arguments, _HF_ARGS)
    pretrained = _args.as_str(arguments.pop("pretrained", None), "pretrained")
    options = _options(arguments)
    revision = _args.as_str(arguments.pop("revision", None), "revision", optional=True)
    trust = _args.as_bool(arguments.pop("trust_remote_code", False), "trust_remote_code")
    device = _args.as_str(arguments.pop("device", None), "device", optional=True)
    dtype = _args.as_choice(arguments.pop("dtype", "auto"), "dtype", DTYPES)
    threads = _args.as_int(arguments.pop("threads", None), "threads", minimum=1, optional=True)
    pretrained = check_pretrained(pretrained, revision, trust)
    check_device(device)
    return {"pretrained": pretrained, "revision": revision, "trust_remote_code": trust, "device": device,
            "dtype": dtype, "threads": threads, "options": options}


def check_device(device: Optional[str]) -> None:
    """A CUDA device asked for on a machine where torch sees none is an argument error, before loading."""
    if device is None or not device.startswith("cuda"):
        return
    from ..extras import require
    torch = require("torch", "the hf backend")
    if not torch.cuda.is_available():
        raise InvalidValueError(f"model argument device={device}: torch {torch.__version__} sees no CUDA device on this "
                                "machine; use device=cpu or leave device out")


def _options(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """The scoring and generation options shared by ``hf_backend`` and ``HFBackend``, converted."""
    for alias, name in _ALIASES.items():
        if alias in arguments:
            if name in arguments:
                raise InvalidValueError(f"model arguments {alias} and {name} are the same setting; give one")
            arguments[name] = arguments.pop(alias)
    out: Dict[str, Any] = {
        "scoring": _args.as_choice(arguments.pop("scoring", "last_token"), "scoring", SCORING),
        "token_budget": _args.as_int(arguments.pop("token_budget", None), "token_budget", minimum=1, optional=True),
        "batch_size": _args.as_int(arguments.pop("batch_size", None), "batch_size", minimum=1, optional=True),
        "requests_per_call": _args.as_int(arguments.pop("requests_per_call", None), "requests_per_call",
                                          minimum=1, optional=True),
        "max_new_tokens": _args.as_int(arguments.pop("max_new_tokens", 8), "max_new_tokens", minimum=1),
        "chat": _args.as_bool(arguments.pop("chat", False), "chat"),
        "system": _args.as_str(arguments.pop("system", None), "system", optional=True),
        "fewshot_as_multiturn": _args.as_bool(arguments.pop("fewshot_as_multiturn", False), "fewshot_as_multiturn"),
        "unparsed": check_unparsed_policy(arguments.pop("unparsed", "uniform")),
        "aliases": parse_aliases(arguments.pop("aliases", None)),
        "postprocess": arguments.pop("postprocess", None),
        "answer_hook": arguments.pop("answer_hook", None),
        "message_builder": arguments.pop("message_builder", None),
        "model_id": _args.as_str(arguments.pop("model_id", None), "model_id", optional=True),
        "weights_hash": _args.as_choice(arguments.pop("weights_hash", "sampled"), "weights_hash", WEIGHTS_HASHES),
        "packing": _args.as_choice(arguments.pop("packing", "auto"), "packing", PACKING),
        "numerics": _args.as_choice(arguments.pop("numerics", DEFAULT_NUMERICS), "numerics", NUMERICS),
        "thinking": ThinkingRule.from_arguments(arguments),
    }
    if out["fewshot_as_multiturn"] and not out["chat"]:
        raise InvalidValueError("model argument fewshot_as_multiturn=true needs apply_chat_template=true (chat=true)")
    if out["fewshot_as_multiturn"] and out["message_builder"] is not None:
        raise InvalidValueError("model arguments fewshot_as_multiturn and message_builder both build the chat; give one")
    return out


class HFBackend(ScoringModes, Backend):
    """A loaded ``transformers`` causal LM and its tokenizer as a backend.

    Build it from objects (``HFBackend(model, tokenizer, scoring="sequence")``) or by path
    through :func:`hf_backend`.  ``model_id`` names an in-memory model in the identity;
    without it and without ``pretrained`` the identity hashes the config and every
    parameter and buffer (:func:`in_memory_digest`).
    """

    name = "hf"
    #: how it runs here, for provenance (:func:`~StaICC.backends.hf_runtime.runtime`; set by ``hf_backend``)
    runtime: Optional[Dict[str, Any]] = None

    def __init__(self, model: Any, tokenizer: Any, *, pretrained: Optional[str] = None,
                 revision: Optional[str] = None, dtype: str = "auto", **options: Any) -> None:
        options = dict(options)
        _args.no_unknown("hf", options, _HF_ARGS)
        options = _options(options)
        from .causal_lm import CausalLMScorer
        self._describe(options, pretrained, revision, dtype)
        if self.chat and getattr(tokenizer, "chat_template", None) is None:  # said before any prompt is scored
            raise InvalidValueError("model argument chat=true (apply_chat_template): the tokenizer has no chat template; "
                                    "use chat=false for a base model")
        torch_dtype = None if dtype == "auto" else _torch_dtype(dtype)
        self.scorer = CausalLMScorer(model, tokenizer, scoring="last_token" if self.scoring == "generate" else self.scoring,
                                     rows_per_forward=options["batch_size"], token_budget=options["token_budget"],
                                     dtype=torch_dtype, packing=options["packing"], numerics=options["numerics"])
        self.model, self.tokenizer = self.scorer.model, tokenizer
        self.requests_per_call = options["requests_per_call"] or (
            DEFAULT_REQUESTS_PER_CALL_GPU if self.scorer.device.type == "cuda" else DEFAULT_REQUESTS_PER_CALL)
        self._identity = self._build_identity()

    def _describe(self, options: Dict[str, Any], pretrained: Optional[str], revision: Optional[str],
                  dtype: str) -> None:
        """What the backend is from its converted options alone, no model: its scoring, chat and answer settings."""
        self.scoring = options["scoring"]
        self.chat = options["chat"]
        self.system = options["system"]
        self.fewshot_as_multiturn = self.needs_segments = options["fewshot_as_multiturn"]
        self.max_new_tokens = options["max_new_tokens"]
        self.shares_prefixes = self.scoring != "generate"  # the scorer's prefix tree; generation runs row by row
        # a prompt's last-position logits and hidden state, read as the standard's kernel reads them
        # and the attention hook of label-word anchors (hf_anchors)
        self.request_kinds = (LABELS,) if self.scoring == "generate" else (LABELS, FULL_VOCAB, HIDDEN, ANCHORS)
        self.model_id = options["model_id"]
        self.weights_hash = options["weights_hash"]
        self.message_builder = options["message_builder"]
        if self.message_builder is not None and not callable(self.message_builder):
            raise InvalidTypeError("model argument message_builder must be callable (request -> messages)")
        self.mapper = AnswerMapper(options["unparsed"], options["aliases"], options["postprocess"],
                                   options["answer_hook"], options["thinking"])
        self.mapper.thinking.check_scoring(self.scoring)
        self.pretrained, self.revision, self.dtype = pretrained, revision, dtype

    # ---------------------------------------------------------------- scoring
    def score(self, requests: Sequence[Request]) -> List[Answer]:
        if self.scoring == "generate":
            generated = self.generate_counted(requests)
            return [self.mapper.answer(r, text, tokens) for r, (text, tokens) in zip(requests, generated)]
        answers: List[Optional[Answer]] = [None] * len(requests)
        for (labels, noisy, kind), positions in _groups(requests).items():
            if kind != LABELS:
                for i, vector in zip(positions, self._states([requests[i] for i in positions], kind)):
                    answers[i] = Answer(vector)
                continue
            if noisy:
                if self.fewshot_as_multiturn:
                    raise InvalidValueError("fewshot_as_multiturn cannot split noisy-channel prompts (one prompt per "
                                            "label); use fewshot_as_multiturn=false")
                if self.chat:
                    raise InvalidValueError("a chat template cannot wrap noisy-channel prompts (one prompt per label); "
                                            "use chat=false")
                rows = self.scorer.score_noisy_channel([list(requests[i].prompt) for i in positions], list(labels))
            else:
                prompts = [self.scored_text(requests[i]) for i in positions]
                rows = self.scorer.score(prompts, list(labels))
            for i, row in zip(positions, rows):
                answers[i] = Answer(row)
        return answers  # type: ignore[return-value]

    def _states(self, requests: Sequence[Request], kind: str) -> List[Any]:
        """Each prompt's full-vocabulary logits or hidden state at its last position, float32 (the scorer's
        ``with_states``, which the calibrations' feedforwards read too)."""
        if any(r.noisy_channel for r in requests):
            raise InvalidValueError("noisy-channel prompts (one prompt per label) have no single hidden state or "
                                    "full-vocabulary logits; run the calibrations without --noisy-channel")
        if kind == ANCHORS:  # one prompt at a time: a forward and a gradient per label through the hook
            from .hf_anchors import anchor_answer
            return [state_vector(anchor_answer(self.model, self.tokenizer, self.scored_text(r), r.label_space))
                    for r in requests]
        rows = self.scorer.with_states([self.scored_text(r) for r in requests], list(requests[0].label_space),
                                       hidden_state=kind == HIDDEN, full_vocab=kind == FULL_VOCAB)
        return [state_vector(hidden if kind == HIDDEN else full) for _probs, hidden, full in rows]

    def chat_text(self, request: Request) -> str:
        """The prompt as the model sees it in generate mode (chat template applied with ``chat``)."""
        if not self.chat:
            if request.noisy_channel:
                raise InvalidValueError("scoring=generate cannot answer noisy-channel prompts (one prompt per label)")
            return request.prompt  # type: ignore[return-value]
        system = answer_instruction(request.label_space) if self.system == "labels" else self.system
        builder = self.message_builder or (lambda r: (multiturn_messages if self.fewshot_as_multiturn
                                                      else default_messages)(r, system))
        messages = builder(request)
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise InvalidValueError("chat=true but the tokenizer has no chat template; use chat=false for a base model")
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def scored_text(self, request: Request) -> str:
        """The prompt a log-probability mode scores the labels after: with ``chat``, the chat text
        without its leading BOS, which the scorer's tokenizer adds itself (one BOS, as without chat)."""
        if not self.chat:
            return request.prompt  # type: ignore[return-value]
        text = self.chat_text(request)
        if self.mapper.thinking.opens_in_prompt(text):
            raise InvalidValueError(f"the chat template opens a thinking section at the end of the prompt "
                                    f"({self.mapper.thinking.start!r}), so scoring={self.scoring} would score the labels "
                                    "inside the model's thinking; use scoring=generate, or a template that does not think")
        bos = getattr(self.tokenizer, "bos_token", None)
        if bos and text.startswith(bos) and self._adds_bos():
            text = text[len(bos):]
        return text

    def _adds_bos(self) -> bool:
        if not hasattr(self, "_bos_added"):
            ids = self.tokenizer("x")["input_ids"]
            self._bos_added = bool(ids) and ids[0] == self.tokenizer.bos_token_id
        return self._bos_added

    def generate(self, requests: Sequence[Request]) -> List[str]:
        """Greedy answers, ``max_new_tokens`` at most (plus the thinking budget), one left-padded batch at a time."""
        return [text for text, _ in self.generate_counted(requests)]

    def generate_counted(self, requests: Sequence[Request]) -> List[Tuple[str, Optional[int]]]:
        """Each greedy answer with the tokens of its thinking section (None: it has none)."""
        torch = self.scorer._torch
        texts = [self.chat_text(r) for r in requests]
        step = self.scorer.rows_per_forward or 16
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        out: List[Tuple[str, Optional[int]]] = []
        add_special = not self.chat  # a chat template writes its own BOS
        with torch.inference_mode():
            for start in range(0, len(texts), step):
                encoded = [self.tokenizer(t, add_special_tokens=add_special)["input_ids"] for t in texts[start:start + step]]
                width = max(len(ids) for ids in encoded)
                input_ids = torch.full((len(encoded), width), pad if pad is not None else 0, dtype=torch.long)
                mask = torch.zeros((len(encoded), width), dtype=torch.long)
                for row, ids in enumerate(encoded):
                    input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
                    mask[row, width - len(ids):] = 1
                generated = self.model.generate(input_ids=input_ids.to(self.scorer.device),
                                                attention_mask=mask.to(self.scorer.device), do_sample=False,
                                                max_new_tokens=self.generation_limit(self.max_new_tokens),
                                                pad_token_id=pad)
                out.extend(self._counted(row, pad) for row in generated[:, width:].tolist())
        return out

    def _counted(self, row: List[int], pad: Optional[int]) -> Tuple[str, Optional[int]]:
        """A generated row's text and thinking tokens; the row ends at its end-of-sequence token (its padding
        after it is not generated text)."""
        eos = self.tokenizer.eos_token_id
        if eos in row:
            row = row[:row.index(eos) + 1]
        while row and pad is not None and row[-1] == pad and pad != eos:
            row.pop()

        def decode(ids: Sequence[int]) -> str:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True)
        return decode(row), self.mapper.thinking.section_tokens(row, decode)

    # --------------------------------------------------------------- identity
    def identity(self) -> Dict[str, Any]:
        return dict(self._identity)

    def _model_dtype(self) -> str:
        return str(next(self.model.parameters()).dtype).replace("torch.", "")

    def _tokenizer_sha256(self) -> str:
        return tokenizer_digest(self.tokenizer, self.pretrained)

    def _commit_hash(self) -> Optional[str]:
        return getattr(self.model.config, "_commit_hash", None)

    def _numerics(self) -> str:
        return self.scorer.numerics  # the numerics the scorer runs (fast where the invariant forward cannot)

    def _build_identity(self) -> Dict[str, Any]:
        identity: Dict[str, Any] = {"backend": "hf", "scoring": self.scoring, "dtype": self._model_dtype(),
                                    "tokenizer_sha256": self._tokenizer_sha256(), "numerics": self._numerics()}
        if self.model_id is not None:
            identity["model_id"] = self.model_id
        if self.pretrained is not None:
            identity["model"] = self.pretrained
            identity["revision"] = self.revision or self._commit_hash()
            if os.path.isdir(self.pretrained):
                full = self.weights_hash == "full"
                identity["weights_sha256"] = weights_digest(self.pretrained, full=full)
                if full:
                    identity["weights_hash"] = "full"
        elif self.model_id is None:
            identity["model"] = "in-memory " + type(self.model).__name__
            identity["weights_sha256"] = in_memory_digest(self.model)
        if self.chat and self.scoring != "generate":  # the template, the system message and a builder change the scored text
            identity.update({"chat": True, "system": self.system,
                             "chat_template_sha256": hashlib.sha256(str(self.tokenizer.chat_template).encode()).hexdigest()})
            if self.message_builder is not None:
                from .base import code_digest, function_name
                identity["message_builder"] = {"function": function_name(self.message_builder),
                                               "code_sha256": code_digest(self.message_builder)}
        if self.fewshot_as_multiturn:  # demonstrations as chat turns: another text, in every mode
            identity["fewshot_as_multiturn"] = True
        return self.with_generation_identity(identity, max_new_tokens=self.max_new_tokens)

    @property
    def non_standard(self) -> List[str]:
        departures = super().non_standard
        if self.chat and self.scoring != "generate":
            departures.append(f"chat template (chat=true) in scoring={self.scoring}")
        if self.fewshot_as_multiturn:
            departures.append("demonstrations as chat turns (fewshot_as_multiturn=true)")
        return departures

    def numerics(self) -> Dict[str, Any]:
        """What the answers' last bits depend on besides the identity (device, numerics, packing, budgets,
        attention, what the model could not take) and the canary certificate (kept after :meth:`close`)."""
        if self.scorer is None:
            return dict(getattr(self, "_closed_numerics", {}))
        from .hf_numerics import certified_numerics
        return certified_numerics(self)

    def usage(self) -> Dict[str, Any]:
        """What the scoring engine computed so far: the tokens of the sequences it was given, the tokens it ran
        after prefix sharing, the read positions and the forward calls (a dry run's token count estimates the
        same, :mod:`StaICC.backends.token_counts`); generation is not counted.  Kept after :meth:`close`."""
        if self.scorer is None:
            return dict(getattr(self, "_closed_usage", {}))
        stats = self.scorer.stats
        return {"tokens": stats.tokens_requested, "tokens_after_sharing": stats.tokens_computed, "reads": stats.reads,
                "forward_calls": stats.forward_calls}

    def close(self) -> None:
        if self.scorer is not None:
            self._closed_numerics = self.numerics()
            self._closed_usage = self.usage()
        self.model = self.scorer = None  # type: ignore[assignment]


def _groups(requests: Sequence[Request]) -> Dict[Tuple[Tuple[str, ...], bool, str], List[int]]:
    """Request positions grouped by label space, prompt form and what is asked, in order: one scorer call per group."""
    groups: Dict[Tuple[Tuple[str, ...], bool, str], List[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault((tuple(r.label_space), r.noisy_channel, r.kind), []).append(i)
    return groups


def _torch_dtype(name: str) -> Any:
    from ..extras import require
    return getattr(require("torch", "the hf backend"), name)
