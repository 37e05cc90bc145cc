"""What a run would feed its model, counted before it runs: tokens given, after prefix sharing, read, generated.

A dry run hands each batch of requests it would ask to a counter
(:class:`~StaICC.engine.selection.Nothing` ``measure``): the distinct requests the cache does
not answer, batched as the run batches them.  The counter cuts each batch into the backend
calls the run would make (``requests_per_call``) and counts, per call:

- **tokens**: the tokens of the sequences the model is given.  For the ``hf`` backend these
  are exactly the scorer's (:class:`HFTokenCounter`: the model's own tokenizer, loaded from
  the model folder without the weights; the sequences built as
  :class:`~StaICC.backends.causal_lm.CausalLMScorer` builds them for the scoring mode: the
  prompt for ``last_token``, prompt + label continuation per label for ``first_token`` and
  ``sequence``, each per-label prompt but its last token for noisy-channel prompts, the
  prompt for ``generate``).  Without a tokenizer (an HTTP model, vLLM, a function) they are
  approximated as characters / 4 of what the backend sends (:class:`ApproximateTokenCounter`);
- **tokens after prefix sharing**: what the ``hf`` engine computes: the prefix tree of each
  call's sequences (:mod:`.prefix_tree`, the engine's own code), planned with the engine's
  settings (a shared prefix is computed once where that saves at least 64 tokens on a CPU,
  2,048 on a GPU, and 5 % of its subtree; ``packing=rows``: each distinct sequence once;
  ``packing=tree``: the engine's tree packs, :mod:`.tree_pack`).  Unknown without a tokenizer;
- **read positions**: where the logits are read (one per prompt for ``last_token``, one per
  label token for the joint modes); with generation, each generated token at most;
- **output tokens**: what a server bills as output: ``max_new_tokens`` (plus a thinking
  budget) per prompt as an upper bound in ``generate`` mode, one per request an echo
  log-probability request generates.

The ``hf`` backend's :meth:`~StaICC.backends.hf.HFBackend.usage` reports the same counts for
what it really computed, so the estimate can be checked against a run.
"""
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..requests import Request
from . import prefix_tree

#: characters per token of the approximation (English text under the common BPE vocabularies)
CHARS_PER_TOKEN = 4


@dataclass
class TokenCount:
    """What a run would feed its model (see the module docstring)."""

    method: str
    exact: bool
    requests: int = 0
    calls: int = 0
    tokens: int = 0
    shared: Optional[int] = None  # tokens after prefix sharing; None: not known without a tokenizer
    reads: int = 0
    output_tokens: int = 0  # an upper bound when ``generates``
    generates: bool = False
    characters: int = 0  # the approximation's input

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class ModelShape:
    """What the FLOP bound needs of a model: parameters outside the input embedding and output head, sizes."""

    nonembedding: int
    hidden: int
    vocab: int
    layers: int

    def flops(self, tokens: int, reads: int) -> int:
        from .tree_pack import forward_flops
        return forward_flops(self.nonembedding, self.hidden, self.vocab, tokens, reads)


def _say_nothing(_message: str) -> None:
    """The counter's status line when nobody is shown one."""


class _Counter:
    """A dry run's ``measure``: each batch cut into the backend calls the run would make, each call counted."""

    def __init__(self, count: TokenCount, call_size: int) -> None:
        self.count, self.call_size = count, max(1, call_size)
        #: told what is being counted (a status line: tokenizing a suite takes a while)
        self.say: Callable[[str], None] = _say_nothing

    def __call__(self, backend: Any, requests: Sequence[Request]) -> None:  # noqa: ARG002 (the runner's hook)
        if requests:
            self.say(f"counting the tokens of {len(requests)} prompts of {requests[0].dataset}")
        for start in range(0, len(requests), self.call_size):
            chunk = requests[start:start + self.call_size]
            self.count.calls += 1
            self.count.requests += len(chunk)
            self.call(chunk)

    def call(self, requests: Sequence[Request]) -> None:
        raise NotImplementedError


class HFTokenCounter(_Counter):
    """The ``hf`` backend's sequences, tokenized with its tokenizer, and its engine's prefix plan."""

    def __init__(self, tokenizer: Any, scoring: str, *, call_size: int, packing: str = "prefix", on_gpu: bool = False,
                 output_limit: int = 8, text_of: Optional[Callable[[Request], str]] = None,
                 generated_text_of: Optional[Callable[[Request], str]] = None, special_tokens: bool = True,
                 pack_settings: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(TokenCount("the model's tokenizer", True, shared=0, generates=scoring == "generate"),
                         call_size)
        self.tokenizer, self.scoring, self.packing, self.on_gpu = tokenizer, scoring, packing, on_gpu
        self.output_limit = output_limit
        self.text_of = text_of or (lambda request: request.prompt)
        self.generated_text_of = generated_text_of or self.text_of
        self.special_tokens = special_tokens  # generate mode: the tokenizer's BOS unless a chat template writes it
        self.pack_settings = pack_settings or {}
        self.special_ids = set(getattr(tokenizer, "all_special_ids", []) or [])

    def call(self, requests: Sequence[Request]) -> None:
        from .hf import _groups  # the backend's own grouping: one scorer call per label space, form and kind
        if self.scoring == "generate":
            self._generated(requests)
            return
        for (labels, noisy, kind), positions in _groups(requests).items():
            members = [requests[i] for i in positions]
            if noisy:
                encoded = self._encode([prompt for r in members for prompt in r.prompt])
                feeds = [ids[:-1] for ids in encoded]
                reads = [list(range(len(ids) - 1)) for ids in encoded]
            elif self.scoring in ("first_token", "sequence") and kind == "labels":
                feeds, reads = self._joint([self.text_of(r) for r in members], list(labels))
            else:
                feeds = self._encode([self.text_of(r) for r in members])
                reads = [[len(ids) - 1] for ids in feeds]
            self._add(feeds, reads)

    def _encode(self, texts: List[str]) -> List[List[int]]:
        return [list(ids) for ids in self.tokenizer(list(texts))["input_ids"]]

    def _joint(self, prompts: List[str], labels: List[str]) -> Tuple[List[List[int]], List[List[int]]]:
        """Context + continuation but its last token per (prompt, label); reads at the continuation's tokens."""
        from .joint_tokens import split_joint
        feeds, reads = [], []
        for split in split_joint(self.tokenizer, [(p, label) for p in prompts for label in labels], self.special_ids,
                                 "the token count"):
            continuation = split.continuation[:1] if self.scoring == "first_token" else split.continuation
            feeds.append(split.context + continuation[:-1])
            reads.append([len(split.context) - 1 + t for t in range(len(continuation))])
        return feeds, reads

    def _add(self, feeds: List[List[int]], reads: List[List[int]]) -> None:
        count = self.count
        count.tokens += sum(len(ids) for ids in feeds)
        count.reads += sum(len(r) for r in reads)
        count.shared += self._computed(feeds, reads)  # type: ignore[operator]

    def _computed(self, feeds: List[List[int]], reads: List[List[int]]) -> int:
        """Tokens the engine computes for one scorer call (see ``CausalLMScorer``'s packing)."""
        if self.packing == "tree":
            from .tree_pack import plan_packs
            return sum(len(pack.tokens) for pack in plan_packs(feeds, reads, **self.pack_settings))
        if self.packing == "rows":
            settings = {"overhead_tokens": 0, "min_saved_fraction": 0.0, "max_depth": 0}
        else:
            settings = {"overhead_tokens": prefix_tree.DEFAULT_OVERHEAD_TOKENS_GPU if self.on_gpu
                        else prefix_tree.DEFAULT_OVERHEAD_TOKENS_CPU,
                        "min_saved_fraction": prefix_tree.DEFAULT_MIN_SAVED_FRACTION,
                        "max_depth": prefix_tree.DEFAULT_MAX_DEPTH}
        return prefix_tree.count_tokens(prefix_tree.plan(prefix_tree.build(feeds, reads), **settings))

    def _generated(self, requests: Sequence[Request]) -> None:
        """Generation runs row by row: every prompt token computed, then at most the limit of new tokens."""
        count = self.count
        for request in requests:
            ids = self.tokenizer(self.generated_text_of(request), add_special_tokens=self.special_tokens)["input_ids"]
            count.tokens += len(ids)
            count.shared += len(ids)  # type: ignore[operator]
        count.output_tokens += self.output_limit * len(requests)
        count.reads += self.output_limit * len(requests)


class ApproximateTokenCounter(_Counter):
    """Characters / 4 of the text a backend without a tokenizer here sends, per sequence it sends."""

    def __init__(self, backend: Any, call_size: int) -> None:
        scoring = getattr(backend, "scoring", None)
        limit = getattr(backend, "max_new_tokens", None) or getattr(backend, "max_tokens", None) or 8
        generation_limit = getattr(backend, "generation_limit", None)
        super().__init__(TokenCount(f"approximated as characters / {CHARS_PER_TOKEN}: no tokenizer for this backend here", False,
                                    generates=scoring == "generate"), call_size)
        self.scoring = scoring
        self.output_limit = generation_limit(limit) if callable(generation_limit) else limit
        self.bills_output = callable(generation_limit)  # a model behind an API or an engine: it generates tokens

    def call(self, requests: Sequence[Request]) -> None:
        count = self.count
        for request in requests:
            if request.noisy_channel:
                texts = list(request.prompt)
            elif self.scoring in ("sequence", "first_token"):
                texts = [request.prompt + label for label in request.label_space]  # type: ignore[operator]
            else:
                texts = [request.prompt]  # type: ignore[list-item]
            count.characters += sum(len(text) for text in texts)
            count.reads += 1 if not request.noisy_channel else len(texts)
            if self.scoring == "generate":
                count.output_tokens += self.output_limit
            elif self.bills_output:
                count.output_tokens += len(texts)  # a log-probability request generates one token
        count.tokens = math.ceil(count.characters / CHARS_PER_TOKEN)


# ---------------------------------------------------------------------------------------------- the hf backend
@dataclass
class HFDescription:
    """What the hf backend's counter and FLOP bound need, read from its arguments and files (no weights)."""

    counter: HFTokenCounter
    shape: Optional[ModelShape] = field(default=None)


def hf_token_counter(arguments: Dict[str, Any], backend: Any, requests_per_call: Optional[int] = None,
                     with_shape: bool = False) -> HFDescription:
    """The counter of an ``hf`` backend made from ``arguments``: its tokenizer loaded from the model folder
    (a backend already loaded lends its own), never the weights; ``with_shape``: also the model's shape for
    the FLOP bound, from its config.json on the meta device."""
    from .hf import DEFAULT_REQUESTS_PER_CALL, DEFAULT_REQUESTS_PER_CALL_GPU, checked_arguments
    checked = checked_arguments(dict(arguments))
    options = checked["options"]
    loaded = getattr(backend, "tokenizer", None) is not None and getattr(backend, "scorer", None) is not None
    tokenizer = backend.tokenizer if loaded else _tokenizer(checked)
    on_gpu = _on_gpu(checked["device"])
    call_size = requests_per_call or options["requests_per_call"] or (
        DEFAULT_REQUESTS_PER_CALL_GPU if on_gpu else DEFAULT_REQUESTS_PER_CALL)
    packing = options["packing"] if options["packing"] != "auto" else "prefix"
    invariant = backend.scorer.numerics == "invariant" if loaded else _invariant(checked)
    if invariant and packing != "rows":
        packing = "tree"  # the invariant forward shares prefixes in packs, whatever the packing
    shape = None
    if with_shape or packing == "tree":
        shape = model_shape_of(backend.model) if loaded else config_shape(checked)
    limit = options["max_new_tokens"] + options["thinking"].extra_tokens()
    counter = HFTokenCounter(tokenizer, options["scoring"], call_size=call_size, packing=packing, on_gpu=on_gpu,
                             output_limit=limit, text_of=backend.scored_text if loaded else None,
                             generated_text_of=backend.chat_text if loaded else None,
                             special_tokens=not options["chat"],
                             pack_settings=_pack_settings(options, on_gpu, shape, invariant) if packing == "tree"
                             else None)
    return HFDescription(counter, shape)


def _tokenizer(checked: Dict[str, Any]) -> Any:
    from ..extras import require
    transformers = require("transformers", "the hf backend's token count")
    return transformers.AutoTokenizer.from_pretrained(checked["pretrained"], revision=checked["revision"],
                                                      trust_remote_code=checked["trust_remote_code"])


def _on_gpu(device: Optional[str]) -> bool:
    """Where the model would run: the device argument, else CUDA when torch sees it (as the backend decides)."""
    if device is not None:
        return device.startswith("cuda")
    from ..extras import require
    return bool(require("torch", "the hf backend").cuda.is_available())


def _invariant(checked: Dict[str, Any]) -> bool:
    """Whether the scorer will run the invariant forward: asked, and the model's config.json allows it."""
    if checked["options"]["numerics"] != "invariant":
        return False
    import json
    import os
    from .invariant import config_reason
    path = os.path.join(checked["pretrained"], "config.json")
    if not os.path.isfile(path):
        return True  # a model named on the Hub: the count assumes the family the default is for
    with open(path, encoding="utf-8") as handle:
        return config_reason(json.load(handle)) is None


def _pack_settings(options: Dict[str, Any], on_gpu: bool, shape: ModelShape, invariant: bool = False
                   ) -> Dict[str, Any]:
    """The bounds and cost model the tree engine plans its packs with (``CausalLMScorer`` defaults); the
    invariant forward's attention reads each query's own path, so its packs add no pair cost."""
    from .causal_lm import DEFAULT_LOGITS_BUDGET_BYTES, DEFAULT_TOKEN_BUDGET_CPU, DEFAULT_TOKEN_BUDGET_GPU
    from .tree_pack import pair_cost
    from .tree_forward import _has_flex
    budget = options["token_budget"] or (DEFAULT_TOKEN_BUDGET_GPU if on_gpu else DEFAULT_TOKEN_BUDGET_CPU)
    from ..extras import require
    flex = on_gpu and _has_flex(require("torch", "the hf backend"))
    return {"max_tokens": budget, "max_read_positions": max(1, DEFAULT_LOGITS_BUDGET_BYTES // (4 * shape.vocab)),
            "pair_cost": pair_cost(nonembedding_parameters=shape.nonembedding, hidden_size=shape.hidden,
                                   layers=shape.layers, block_sparse=flex or invariant)}


def config_shape(checked: Dict[str, Any]) -> ModelShape:
    """The model's shape from its config.json: the model built on PyTorch's meta device (no weights read, no
    memory taken), its parameters counted."""
    from ..extras import require
    torch = require("torch", "the FLOP bound")
    transformers = require("transformers", "the FLOP bound")
    config = transformers.AutoConfig.from_pretrained(checked["pretrained"], revision=checked["revision"],
                                                     trust_remote_code=checked["trust_remote_code"])
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, trust_remote_code=checked["trust_remote_code"])
    return model_shape_of(model)


def model_shape_of(model: Any) -> ModelShape:
    """Parameters outside the input embedding and the output head (a tied head counted once), and sizes."""
    parameters = {id(p): p.numel() for p in model.parameters()}
    total = sum(parameters.values())
    for module in {id(m): m for m in (model.get_input_embeddings(), model.get_output_embeddings()) if m is not None}.values():
        weight = getattr(module, "weight", None)
        if weight is not None:
            total -= parameters.pop(id(weight), 0)
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    head = model.get_output_embeddings()
    vocab = int(head.weight.shape[0]) if head is not None and hasattr(head, "weight") else int(config.vocab_size)
    return ModelShape(total, int(config.hidden_size), vocab, int(config.num_hidden_layers))
