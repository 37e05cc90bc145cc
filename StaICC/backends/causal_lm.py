"""A batched causal-LM scorer: the fast replacement of the one-prompt kernels.

``CausalLMScorer`` is an inference function for StaICC in both call styles:

* batched: ``bench(scorer, batched_inference=True)`` calls
  ``scorer(prompt=[...all prompts...], label_space=[...])`` and gets one
  probability list per prompt;
* per prompt: ``scorer(prompt="...", label_space=[...])`` returns one list.

Why it is fast (see :mod:`.lm_engine`): prompts are tokenized together and run
in padded batches sized by a token budget, longest first; a prefix shared by
several sequences (the prompt before each label continuation, demonstrations
before each query, the common start of noisy-channel prompts) is computed once
and continued from its KV cache where a cost model says it pays; only the
logits of read positions are computed and they are gathered on the device;
``torch.inference_mode``; bf16/fp16 on GPU.  An out-of-memory error halves
the batch and retries.

Scoring modes (``scoring=``):

* ``"last_token"`` (default): the standard's rule.  Each label is tokenized
  alone with the tokenizer's default special tokens and only its last token
  id is scored at the prompt's last position.  Numbers match
  ``standard_ICL_inference_with_torch_Causal_LM``.
* ``"first_token"``: the label's first token *as a continuation of the
  prompt*: prompt + label are tokenized jointly and split at the character
  boundary, so a label that merges with the prompt's trailing space
  (" positive") is scored by the merged token given the shortened context.
* ``"sequence"``: the sum of log-probabilities of every token of the label
  continuation (same joint tokenization).  The prompt is computed once per
  query; the label tokens continue from its KV cache.

Noisy-channel prompts (one prompt per label) are scored in batches too:
score_ℓ = loss₀ − loss_ℓ with loss the mean next-token loss of prompt ℓ.

Every method returns Python lists of Python floats.
"""
import warnings
from typing import Any, Callable, List, Optional, Sequence

from ..errors import InvalidValueError
from ..extras import require
from ..numeric import softmax
from ..validation import check, check_bool, check_int, check_label_space, Options
from . import prefix_tree
from .joint_tokens import JointSplit, split_joint
from .kernels import label_token_ids, model_device
from .lm_engine import PACKING_MODES, SHARE_MODES, ForwardEngine
from .invariant import NUMERICS
from .hf_runtime import _pad_token_id, _prepared_model, _vocab_size_of_model
from .tree_forward import TREE_ATTENTION

__all__ = ["CausalLMScorer", "SCORING_MODES", "PADDING_SIDES"]

SCORING_MODES = ("last_token", "first_token", "sequence")
PADDING_SIDES = ("left", "right")

#: tokens per batch (rows × padded length) when no budget is given
DEFAULT_TOKEN_BUDGET_CPU = 4096
DEFAULT_TOKEN_BUDGET_GPU = 65536
#: packing="auto" (see the class docstring); a mode is the default only where it was measured faster
DEFAULT_PACKING_CPU = "prefix"
DEFAULT_PACKING_GPU = "tree"
#: bytes of float32 logits that one batch may materialise (the kept positions × vocabulary)
DEFAULT_LOGITS_BUDGET_BYTES = 1 << 30


def _checked_arguments(scoring: str, padding_side: str, share_prefixes: Any, packing: str, tree_attention: str,
                       batch_size: Optional[int], rows_per_forward: Optional[int], token_budget: Optional[int],
                       prefix_overhead_tokens: Optional[int], pack_tokens: Optional[int], logits_budget_bytes: int,
                       noisy_channel: bool, compile_model: bool) -> Optional[int]:
    """CausalLMScorer's settings checked before a model is touched; returns the rows per forward
    (``rows_per_forward``, or its older name ``batch_size``)."""
    for name, value, options in (("scoring", scoring, SCORING_MODES), ("padding_side", padding_side, PADDING_SIDES),
                                 ("packing", packing, ("auto",) + PACKING_MODES),
                                 ("tree_attention", tree_attention, TREE_ATTENTION)):
        check(value, Options(options, text=f"one of {options}"), f"CausalLMScorer: {name}")
    check(share_prefixes, Options(SHARE_MODES, text="'auto', True or False"), "CausalLMScorer: share_prefixes")
    if batch_size is not None and rows_per_forward is not None:
        raise InvalidValueError("CausalLMScorer: give rows_per_forward or its older name batch_size, not both")
    rows_per_forward = rows_per_forward if rows_per_forward is not None else batch_size
    for name, value in (("rows_per_forward", rows_per_forward), ("token_budget", token_budget),
                        ("prefix_overhead_tokens", prefix_overhead_tokens), ("pack_tokens", pack_tokens)):
        if value is not None:
            check_int(value, name, minimum=0 if name == "prefix_overhead_tokens" else 1, at=" in CausalLMScorer")
    check_int(logits_budget_bytes, "logits_budget_bytes", minimum=1, at=" in CausalLMScorer")
    check_bool(noisy_channel, "noisy_channel", at=" in CausalLMScorer")
    check_bool(compile_model, "compile_model", at=" in CausalLMScorer")
    return rows_per_forward


class CausalLMScorer(ForwardEngine):
    """Batched label scoring with a HuggingFace causal LM (see the module docstring).

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``).
        tokenizer: its tokenizer; a fast tokenizer is needed for the joint
            tokenization of the "first_token" and "sequence" modes, otherwise a
            common-prefix fallback is used.
        label_space: default labels, used when a call passes none.
        scoring: "last_token" (standard), "first_token" or "sequence".
        rows_per_forward: at most this many sequences per forward pass (None: only the budgets
            limit); ``batch_size`` is its older name (not to be confused with a backend's
            ``requests_per_call``).
        token_budget: at most this many (padded) tokens per batch.
        padding_side: "left" (default, cheapest logits selection) or "right".
        device: move the model there first (None: leave it where it is).
        dtype: cast the model to this torch dtype first.  None casts a float32
            model on CUDA to bfloat16 (float16 without bf16 support) and leaves
            CPU models alone; pass ``torch.float32`` to keep full precision.
        noisy_channel: treat a ``list[str]`` prompt as the per-label prompts of
            one query (noisy-channel experimentors) instead of a batch of queries.
        logits_budget_bytes: bound on the float32 logits one batch may hold.

    Keyword-only options:
        share_prefixes: "auto" (default) computes a prefix shared by several
            sequences once where the cost model says it saves work; True shares
            every common prefix; False runs one row per distinct sequence.
        prefix_overhead_tokens: tokens a shared prefix must save to be worth one
            more forward call (default 64 on CPU, 2048 on GPU).
        compile_model: run the model through ``torch.compile`` (dynamic shapes).
        packing: "tree" runs each group of prompts that share prefixes as one
            flat row, every shared token once, with a tree attention mask and no
            padding (:mod:`.tree_forward`); "prefix" runs the prefix tree's levels
            as padded batches continued from KV caches (``share_prefixes`` decides
            which prefixes); "rows" one padded row per distinct sequence.  "auto"
            (default): see ``DEFAULT_PACKING_CPU`` / ``DEFAULT_PACKING_GPU``
            ("rows" when ``share_prefixes=False``).  A model that cannot take a
            tree mask is scored with "prefix".
        pack_tokens: at most this many tokens per tree pack (None: the token
            budget); within it the cost model of :func:`.tree_pack.plan_packs`
            decides where a pack ends.
        tree_attention: "auto" (FlexAttention on CUDA, a dense mask elsewhere),
            "flex" or "dense".
        numerics: "fast" (default here: the model's own forward, whose last bits move with the
            batch and the packing) or "invariant" (:mod:`.invariant`: a prompt's scores depend on
            its own tokens only, whatever the batch, packing or call; every packing then runs
            packs through one position-aligned forward).  A model the invariant forward cannot
            compute runs "fast", and ``switched_off`` says why.

    After a run, ``stats`` (an :class:`~StaICC.backends.lm_engine.EngineStats`)
    and ``largest_batch`` say how many rows and tokens the batches held.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        label_space: Optional[Sequence[str]] = None,
        scoring: str = "last_token",
        batch_size: Optional[int] = None,
        token_budget: Optional[int] = None,
        padding_side: str = "left",
        device: Any = None,
        dtype: Any = None,
        noisy_channel: bool = False,
        logits_budget_bytes: int = DEFAULT_LOGITS_BUDGET_BYTES,
        *,
        share_prefixes: Any = "auto",
        prefix_overhead_tokens: Optional[int] = None,
        compile_model: bool = False,
        rows_per_forward: Optional[int] = None,
        packing: str = "auto",
        pack_tokens: Optional[int] = None,
        tree_attention: str = "auto",
        numerics: str = "fast",
    ) -> None:
        torch = require("torch", "CausalLMScorer")
        rows_per_forward = _checked_arguments(scoring, padding_side, share_prefixes, packing, tree_attention,
                                              batch_size, rows_per_forward, token_budget, prefix_overhead_tokens,
                                              pack_tokens, logits_budget_bytes, noisy_channel, compile_model)
        check(numerics, Options(NUMERICS, text=f"one of {NUMERICS}"), "CausalLMScorer: numerics")
        if label_space is not None:
            label_space = _checked_labels(label_space, "CausalLMScorer(label_space=...)")
        self.numerics = numerics
        self.model = _prepared_model(torch, model, device, dtype)
        self.tokenizer = tokenizer
        self.label_space = label_space
        self.scoring = scoring
        self.padding_side = padding_side
        self.noisy_channel = noisy_channel
        self.rows_per_forward = rows_per_forward
        self.device = model_device(self.model)
        on_gpu = self.device.type == "cuda"
        self.token_budget = token_budget if token_budget is not None else (
            DEFAULT_TOKEN_BUDGET_GPU if on_gpu else DEFAULT_TOKEN_BUDGET_CPU)
        self.logits_budget_bytes = logits_budget_bytes
        self.share_prefixes = share_prefixes
        self.prefix_overhead_tokens = prefix_overhead_tokens if prefix_overhead_tokens is not None else (
            prefix_tree.DEFAULT_OVERHEAD_TOKENS_GPU if on_gpu else prefix_tree.DEFAULT_OVERHEAD_TOKENS_CPU)
        self.packing_asked = packing != "auto"
        self.packing = packing if packing != "auto" else "rows" if share_prefixes is False else (
            DEFAULT_PACKING_GPU if on_gpu else DEFAULT_PACKING_CPU)
        self.pack_tokens = pack_tokens
        self.tree_attention = tree_attention
        self._pad_id = _pad_token_id(tokenizer)
        self._special_ids = set(getattr(tokenizer, "all_special_ids", []) or [])
        self._label_id_cache: dict = {}
        self._warned_shared_ids: set = set()
        self._vocab = _vocab_size_of_model(self.model)
        self._init_engine(torch)
        if compile_model:
            self.model = torch.compile(self.model, dynamic=True)

    # ------------------------------------------------------------------ calls
    def __call__(self, prompt: Any, label_space: Optional[Sequence[str]] = None) -> Any:
        """StaICC inference entry point, per prompt or batched (see the class docstring)."""
        labels = self._labels(label_space)
        if isinstance(prompt, str):
            if self.noisy_channel:
                raise InvalidValueError("CausalLMScorer(noisy_channel=True) expects the list of per-label prompts "
                                        "of a query, got a single string")
            return self.score(prompt=[prompt], label_space=labels)[0]
        if not isinstance(prompt, (list, tuple)) or len(prompt) == 0:
            raise InvalidValueError(f"CausalLMScorer: prompt must be a string or a non-empty list, got {prompt!r:.200}")
        if all(isinstance(item, (list, tuple)) for item in prompt):
            return self.score_noisy_channel(prompt_lists=prompt, label_space=labels)
        if self.noisy_channel:
            return self.score_noisy_channel(prompt_lists=[prompt], label_space=labels)[0]
        return self.score(prompt=prompt, label_space=labels)

    def score(self, prompt: Sequence[str], label_space: Optional[Sequence[str]] = None) -> List[List[float]]:
        """One probability list per prompt, in the given order."""
        labels = self._labels(label_space)
        prompts = _checked_prompts(prompt, "CausalLMScorer.score")
        if self.scoring == "last_token":
            return [softmax(list(row)) for row in self._last_position(self._encode(prompts), self._last_token_ids(labels))[0]]
        return self._score_joint(prompts, labels)

    def score_noisy_channel(self, prompt_lists: Sequence[Sequence[str]],
                            label_space: Optional[Sequence[str]] = None) -> List[List[float]]:
        """Per query, softmax([loss₀ − loss_ℓ]) over its per-label prompts, all queries batched."""
        labels = self._labels(label_space)
        flat: List[str] = []
        for query, prompts in enumerate(prompt_lists):
            if isinstance(prompts, str) or len(prompts) != len(labels):
                raise InvalidValueError(f"CausalLMScorer.score_noisy_channel: query {query} must give one prompt per "
                                        f"label ({len(labels)}), got {prompts!r:.200}")
            flat.extend(_checked_prompts(prompts, f"CausalLMScorer.score_noisy_channel query {query}"))
        encoded = self._encode(flat)
        for position, ids in enumerate(encoded):
            if len(ids) < 2:
                raise InvalidValueError(f"CausalLMScorer: noisy-channel prompt {flat[position]!r} has fewer than 2 tokens; "
                                        "its mean next-token loss is undefined")
        # the loss reads every position but the last, whose logits predict nothing: it is not fed
        sums = self._logprob_sums([ids[:-1] for ids in encoded], [0] * len(encoded), [ids[1:] for ids in encoded])
        losses = [-total / (len(ids) - 1) for total, ids in zip(sums, encoded)]
        n = len(labels)
        return [softmax([losses[q * n] - losses[q * n + l] for l in range(n)]) for q in range(len(prompt_lists))]

    def with_states(self, prompt: Any, label_space: Optional[Sequence[str]] = None,
                    hidden_state: bool = True, full_vocab: bool = True) -> Any:
        """Probabilities plus the prompt's last-position states, for the calibrations.

        Returns ``(probs, hidden, full_vocab_logits)`` per prompt (a list of them
        for a list of prompts); the states are float32 NumPy arrays, or None when
        not asked.  Like the one-prompt kernel with both state flags set.
        """
        labels = self._labels(label_space)
        single = isinstance(prompt, str)
        prompts = _checked_prompts([prompt] if single else prompt, "CausalLMScorer.with_states")
        ids = self._last_token_ids(labels) if self.scoring == "last_token" else []
        values, full, hidden = self._last_position(self._encode(prompts), ids, want_full=full_vocab,
                                                   want_hidden=hidden_state)
        if self.scoring == "last_token":
            probs = [softmax(list(row)) for row in values]
        else:
            probs = self._score_joint(prompts, labels)
        out = [(p, hidden[i] if hidden else None, full[i] if full else None) for i, p in enumerate(probs)]
        return out[0] if single else out

    def feedforward_with_hidden_state(self, prompt: Any, label_space: Optional[Sequence[str]] = None) -> Any:
        """``(probs, hidden)``: the feedforward the hidden calibration expects (element [1])."""
        result = self.with_states(prompt, label_space, hidden_state=True, full_vocab=False)
        return result[:2] if isinstance(prompt, str) else [r[:2] for r in result]

    def feedforward_with_full_vocab(self, prompt: Any, label_space: Optional[Sequence[str]] = None) -> Any:
        """``(probs, full_vocab_logits)``: the feedforward kNN prompting expects (element [-1])."""
        result = self.with_states(prompt, label_space, hidden_state=False, full_vocab=True)
        return (result[0], result[2]) if isinstance(prompt, str) else [(r[0], r[2]) for r in result]

    def calibrated(self, calibration_function: Callable[..., Any]) -> Callable[..., Any]:
        """An inference function returning ``calibration_function(probs, full_vocab, hidden)`` per prompt.

        Works per prompt and batched, like the scorer itself; use it with any
        trained calibration's ``inference`` (:mod:`StaICC.methods.calibration`).
        """
        def calibrated_inference(prompt: Any, label_space: Optional[Sequence[str]] = None) -> Any:
            result = self.with_states(prompt, label_space)
            if isinstance(prompt, str):
                return calibration_function(result[0], result[2], result[1])
            return [calibration_function(p, full, hidden) for p, hidden, full in result]
        return calibrated_inference

    # -------------------------------------------------------- label handling
    def _labels(self, label_space: Optional[Sequence[str]]) -> List[str]:
        if label_space is None:
            if self.label_space is None:
                raise InvalidValueError("CausalLMScorer: no label_space given, neither in the call nor at construction")
            return list(self.label_space)
        return _checked_labels(label_space, "CausalLMScorer")

    def _last_token_ids(self, labels: List[str]) -> List[int]:
        key = tuple(labels)
        if key not in self._label_id_cache:
            ids = label_token_ids(self.tokenizer, labels)
            if len(set(ids)) < len(ids) and key not in self._warned_shared_ids:
                self._warned_shared_ids.add(key)
                warnings.warn(f"CausalLMScorer(scoring='last_token'): labels {labels} share a last token "
                              f"(ids {ids}), so they always get equal probabilities; consider scoring='sequence'",
                              stacklevel=3)
            self._label_id_cache[key] = ids
        return self._label_id_cache[key]

    def _encode(self, texts: List[str]) -> List[List[int]]:
        """Token ids with the tokenizer's default special tokens (BOS etc.), as the one-prompt kernel has them."""
        encoded = self.tokenizer(list(texts))["input_ids"]
        for text, ids in zip(texts, encoded):
            if len(ids) == 0:
                raise InvalidValueError(f"CausalLMScorer: the prompt {text!r:.100} tokenizes to no token")
        return [list(ids) for ids in encoded]

    def _score_joint(self, prompts: List[str], labels: List[str]) -> List[List[float]]:
        """first_token / sequence: Σ log p(continuation token) after the joint split, softmaxed per prompt.

        Row (prompt, label) feeds context + continuation[:-1] (the last token's
        logits predict nothing) and reads the continuation's tokens; the rows of
        one prompt share their context, which the prefix tree computes once.
        """
        n = len(labels)
        splits = self._split_joint_many([(p, label) for p in prompts for label in labels])
        feeds, starts, targets = [], [], []
        for split in splits:
            continuation = split.continuation[:1] if self.scoring == "first_token" else split.continuation
            feeds.append(split.context + continuation[:-1])
            starts.append(len(split.context) - 1)
            targets.append(continuation)
        sums = self._logprob_sums(feeds, starts, targets)
        return [softmax(sums[q * n:(q + 1) * n]) for q in range(len(prompts))]

    def _split_joint(self, prompt: str, label: str) -> JointSplit:
        """Tokenize prompt + label together and split at the first token that covers label text."""
        return self._split_joint_many([(prompt, label)])[0]

    def _split_joint_many(self, pairs: List[Any]) -> List[JointSplit]:
        return split_joint(self.tokenizer, pairs, self._special_ids, "CausalLMScorer")

    # ------------------------------------------------------ reads for the modes
    def _last_position(self, encoded: List[List[int]], label_ids: List[int], want_full: bool = False,
                       want_hidden: bool = False) -> Any:
        """Per sequence: float32 logits of ``label_ids`` at its last position, full logits, hidden state."""
        reads = self._run_reads(encoded, [[len(ids) - 1] for ids in encoded], [[label_ids]] * len(encoded),
                                log_softmax=False, want_full=want_full, want_hidden=want_hidden)
        values = [row[0] for row in reads.values]
        full = [row[0] for row in reads.full] if reads.full is not None else None
        hidden = [row[0] for row in reads.hidden] if reads.hidden is not None else None
        return values, full, hidden

    def _logprob_sums(self, feeds: List[List[int]], starts: List[int], targets: List[List[int]]) -> List[float]:
        """Per row: Σ→ log p(targets[t] | feed[..starts + t]), summed left to right in double."""
        positions = [[start + t for t in range(len(target))] for start, target in zip(starts, targets)]
        ids = [[[token] for token in target] for target in targets]
        reads = self._run_reads(feeds, positions, ids, log_softmax=True)
        sums = []
        for row in reads.values:
            total = 0.0
            for value in row:
                total += float(value[0])
            sums.append(total)
        return sums


def _checked_prompts(prompts: Any, where: str) -> List[str]:
    if isinstance(prompts, str) or not isinstance(prompts, (list, tuple)):
        raise InvalidValueError(f"{where}: expected a list of prompt strings, got {type(prompts).__name__}")
    for index, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise InvalidValueError(f"{where}: prompt {index} must be a string, got {type(prompt).__name__}")
    return list(prompts)


def _checked_labels(label_space: Sequence[str], where: str) -> List[str]:
    return check_label_space(label_space, at=f" in {where}", name="label_space")
