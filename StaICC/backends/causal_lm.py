"""A batched causal-LM scorer: the fast replacement of the §9.2–9.4 kernels.

``CausalLMScorer`` is an inference function for StaICC in both call styles:

* batched: ``bench(scorer, batched_inference=True)`` calls
  ``scorer(prompt=[...all prompts...], label_space=[...])`` and gets one
  probability list per prompt;
* per prompt: ``scorer(prompt="...", label_space=[...])`` returns one list.

Why it is fast: prompts are tokenized together, sorted by length (longest
first, so an out-of-memory error shows up on the first batch) and run in real
padded batches sized by a token budget; only the logits of the positions that
are read are computed (``logits_to_keep``); no hidden states unless asked;
``torch.inference_mode``; bf16/fp16 on GPU.  A CUDA out-of-memory error halves
the batch and retries.

Scoring modes (``scoring=``):

* ``"last_token"`` (default): the standard's rule (§9.2).  Each label is
  tokenized alone with the tokenizer's default special tokens and only its
  last token id is scored at the prompt's last position.  Numbers match
  ``model_kernel.standard_ICL_inference_with_torch_Causal_LM``.
* ``"first_token"``: the label's first token *as a continuation of the
  prompt*: prompt + label are tokenized jointly and split at the character
  boundary, so a label that merges with the prompt's trailing space
  (" positive") is scored by the merged token given the shortened context.
* ``"sequence"``: the sum of log-probabilities of every token of the label
  continuation (same joint tokenization), all labels of all prompts scored
  in the same batches.

Noisy-channel prompts (one prompt per label, §9.4) are scored in batches too:
score_ℓ = loss₀ − loss_ℓ with loss the mean next-token loss of prompt ℓ.

Every method returns Python lists of Python floats.
"""
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..extras import require
from ..metrics import softmax
from ..validation import check_int, check_label_space
from .kernels import label_token_ids, model_device

SCORING_MODES = ("last_token", "first_token", "sequence")
PADDING_SIDES = ("left", "right")

#: tokens per batch (rows × padded length) when no budget is given
DEFAULT_TOKEN_BUDGET_CPU = 4096
DEFAULT_TOKEN_BUDGET_GPU = 65536
#: bytes of float32 logits that one batch may materialise (the kept positions × vocabulary)
DEFAULT_LOGITS_BUDGET_BYTES = 1 << 30
#: output_hidden_states keeps all layers' activations: batches asking for them use budget / this
HIDDEN_STATE_BUDGET_DIVISOR = 4


@dataclass
class _Sequence:
    """One model input: token ids and the positions whose next-token logits are read."""

    ids: List[int]
    read_from: int  # first position whose logits are read
    read_to: int  # one past the last position read

    @property
    def reads(self) -> int:
        return self.read_to - self.read_from


@dataclass
class _JointSplit:
    """A prompt + label tokenized jointly and split at the character boundary."""

    context: List[int]
    continuation: List[int]


class CausalLMScorer:
    """Batched label scoring with a HuggingFace causal LM (see the module docstring).

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``).
        tokenizer: its tokenizer; a fast tokenizer is needed for the joint
            tokenization of the "first_token" and "sequence" modes, otherwise a
            common-prefix fallback is used.
        label_space: default labels, used when a call passes none.
        scoring: "last_token" (standard), "first_token" or "sequence".
        batch_size: at most this many sequences per batch (None: only the budgets limit).
        token_budget: at most this many (padded) tokens per batch.
        padding_side: "left" (default, cheapest logits selection) or "right".
        device: move the model there first (None: leave it where it is).
        dtype: cast the model to this torch dtype first.  None casts a float32
            model on CUDA to bfloat16 (float16 without bf16 support) and leaves
            CPU models alone; pass ``torch.float32`` to keep full precision.
        noisy_channel: treat a ``list[str]`` prompt as the per-label prompts of
            one query (noisy-channel experimentors) instead of a batch of queries.
        logits_budget_bytes: bound on the float32 logits one batch may hold.
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
    ) -> None:
        self._torch = require("torch", "CausalLMScorer")
        if scoring not in SCORING_MODES:
            raise ValueError(f"CausalLMScorer: scoring must be one of {SCORING_MODES}, got {scoring!r}")
        if padding_side not in PADDING_SIDES:
            raise ValueError(f"CausalLMScorer: padding_side must be one of {PADDING_SIDES}, got {padding_side!r}")
        for name, value in (("batch_size", batch_size), ("token_budget", token_budget)):
            if value is not None:
                check_int(value, name, minimum=1, at=" in CausalLMScorer")
        if label_space is not None:
            label_space = _checked_labels(label_space, "CausalLMScorer(label_space=...)")
        self.model = _prepared_model(self._torch, model, device, dtype)
        self.tokenizer = tokenizer
        self.label_space = label_space
        self.scoring = scoring
        self.padding_side = padding_side
        self.noisy_channel = noisy_channel
        self.batch_size = batch_size
        self.device = model_device(self.model)
        default_budget = DEFAULT_TOKEN_BUDGET_GPU if self.device.type == "cuda" else DEFAULT_TOKEN_BUDGET_CPU
        self.token_budget = token_budget if token_budget is not None else default_budget
        self.logits_budget_bytes = logits_budget_bytes
        self._pad_id = _pad_token_id(tokenizer)
        self._special_ids = set(getattr(tokenizer, "all_special_ids", []) or [])
        parameters = inspect.signature(self.model.forward).parameters
        self._takes_position_ids = "position_ids" in parameters
        self._keep_argument = next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in parameters), None)
        self._label_id_cache: Dict[Tuple[str, ...], List[int]] = {}
        self._warned_shared_ids: set = set()
        self._vocab = self._vocab_size_of_model()

    # ------------------------------------------------------------------ calls
    def __call__(self, prompt: Any, label_space: Optional[Sequence[str]] = None) -> Any:
        """StaICC inference entry point, per prompt or batched (see the class docstring)."""
        labels = self._labels(label_space)
        if isinstance(prompt, str):
            if self.noisy_channel:
                raise ValueError("CausalLMScorer(noisy_channel=True) expects the list of per-label prompts "
                                 "of a query, got a single string")
            return self.score(prompt=[prompt], label_space=labels)[0]
        if not isinstance(prompt, (list, tuple)) or len(prompt) == 0:
            raise ValueError(f"CausalLMScorer: prompt must be a string or a non-empty list, got {prompt!r:.200}")
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
            rows = self._last_position(self._encode(prompts), self._last_token_ids(labels))
            return [softmax(list(row.label_logits)) for row in rows]
        return self._score_joint(prompts, labels)

    def score_noisy_channel(self, prompt_lists: Sequence[Sequence[str]],
                            label_space: Optional[Sequence[str]] = None) -> List[List[float]]:
        """§9.4 in batches: per query, softmax([loss₀ − loss_ℓ]) over its per-label prompts."""
        labels = self._labels(label_space)
        flat: List[str] = []
        for query, prompts in enumerate(prompt_lists):
            if isinstance(prompts, str) or len(prompts) != len(labels):
                raise ValueError(f"CausalLMScorer.score_noisy_channel: query {query} must give one prompt per "
                                 f"label ({len(labels)}), got {prompts!r:.200}")
            flat.extend(_checked_prompts(prompts, f"CausalLMScorer.score_noisy_channel query {query}"))
        encoded = self._encode(flat)
        for position, ids in enumerate(encoded):
            if len(ids) < 2:
                raise ValueError(f"CausalLMScorer: noisy-channel prompt {flat[position]!r} has fewer than 2 tokens; "
                                 "its mean next-token loss is undefined")
        sums, counts = self._continuation_logprobs([_Sequence(ids, 0, len(ids) - 1) for ids in encoded])
        losses = [-total / count for total, count in zip(sums, counts)]
        n = len(labels)
        return [softmax([losses[q * n] - losses[q * n + l] for l in range(n)]) for q in range(len(prompt_lists))]

    def with_states(self, prompt: Any, label_space: Optional[Sequence[str]] = None,
                    hidden_state: bool = True, full_vocab: bool = True) -> Any:
        """Probabilities plus the prompt's last-position states, for the calibrations.

        Returns ``(probs, hidden, full_vocab_logits)`` per prompt (a list of them
        for a list of prompts); the states are float32 NumPy arrays, or None when
        not asked.  Like §9.2 with both flags set.
        """
        labels = self._labels(label_space)
        single = isinstance(prompt, str)
        prompts = _checked_prompts([prompt] if single else prompt, "CausalLMScorer.with_states")
        ids = self._last_token_ids(labels) if self.scoring == "last_token" else []
        rows = self._last_position(self._encode(prompts), ids, want_full=full_vocab, want_hidden=hidden_state)
        if self.scoring == "last_token":
            probs = [softmax(list(row.label_logits)) for row in rows]
        else:
            probs = self._score_joint(prompts, labels)
        out = [(p, row.hidden, row.full_vocab) for p, row in zip(probs, rows)]
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
        trained calibration's ``inference`` (standard_calibration).
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
                raise ValueError("CausalLMScorer: no label_space given, neither in the call nor at construction")
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
        """Token ids with the tokenizer's default special tokens (BOS etc.), as §9.2 does."""
        encoded = self.tokenizer(list(texts))["input_ids"]
        for text, ids in zip(texts, encoded):
            if len(ids) == 0:
                raise ValueError(f"CausalLMScorer: the prompt {text!r:.100} tokenizes to no token")
        return [list(ids) for ids in encoded]

    def _score_joint(self, prompts: List[str], labels: List[str]) -> List[List[float]]:
        """first_token / sequence modes: label continuations after a joint tokenization."""
        flat = self._split_joint_many([(p, label) for p in prompts for label in labels])
        n = len(labels)
        splits = [flat[i * n:(i + 1) * n] for i in range(len(prompts))]
        shared: List[int] = []  # prompts whose labels all share one context: one forward reads all
        separate: List[int] = []
        for index, prompt_splits in enumerate(splits):
            same_context = all(s.context == prompt_splits[0].context for s in prompt_splits)
            (shared if self.scoring == "first_token" and same_context else separate).append(index)
        results: List[Optional[List[float]]] = [None] * len(prompts)
        if shared:
            contexts = [splits[i][0].context for i in shared]
            rows = self._last_position_many(contexts, [[s.continuation[0] for s in splits[i]] for i in shared])
            for i, row in zip(shared, rows):
                results[i] = softmax(list(row.label_logits))
        if separate:
            sequences = []
            for i in separate:
                for s in splits[i]:
                    continuation = s.continuation[:1] if self.scoring == "first_token" else s.continuation
                    ids = s.context + continuation
                    sequences.append(_Sequence(ids, len(s.context) - 1, len(ids) - 1))
            sums, _ = self._continuation_logprobs(sequences)
            for j, i in enumerate(separate):
                results[i] = softmax(sums[j * n:(j + 1) * n])
        return results  # type: ignore[return-value]

    def _split_joint(self, prompt: str, label: str) -> _JointSplit:
        """Tokenize prompt + label together and split at the first token that covers label text."""
        return self._split_joint_many([(prompt, label)])[0]

    def _split_joint_many(self, pairs: List[Tuple[str, str]]) -> List[_JointSplit]:
        """Joint tokenization of every (prompt, label) in one tokenizer call, split at the boundary.

        A token that straddles the boundary (the label merged with the
        prompt's last characters, e.g. " positive") belongs to the
        continuation, so no label ever scores zero tokens.  Trailing special
        tokens (EOS) are dropped.  Slow tokenizers have no offsets: the
        boundary is then the common prefix with the prompt tokenized alone.
        """
        for _, label in pairs:
            if label == "":
                raise ValueError("CausalLMScorer: an empty label cannot be scored as a continuation")
        texts = [prompt + label for prompt, label in pairs]
        if getattr(self.tokenizer, "is_fast", False):
            encoded = self.tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
            bounds = [_offset_boundary(offsets, special, len(prompt)) for (prompt, _), offsets, special
                      in zip(pairs, encoded["offset_mapping"], encoded["special_tokens_mask"])]
        else:
            encoded = self.tokenizer(texts)
            alone = self.tokenizer([prompt for prompt, _ in pairs])["input_ids"]
            bounds = [_prefix_boundary(list(ids), list(own), self._special_ids)
                      for ids, own in zip(encoded["input_ids"], alone)]
        splits = []
        for (prompt, label), ids, (boundary, end) in zip(pairs, encoded["input_ids"], bounds):
            if boundary is None or boundary >= end:
                raise ValueError(f"CausalLMScorer: the label {label!r} adds no token after the prompt "
                                 f"ending {prompt[-30:]!r}; it cannot be scored as a continuation")
            if boundary == 0:
                raise ValueError(f"CausalLMScorer: the label {label!r} merges with the whole prompt "
                                 f"{prompt[-30:]!r}; no context token is left to condition on")
            splits.append(_JointSplit(list(ids[:boundary]), list(ids[boundary:end])))
        return splits

    # --------------------------------------------------------- model engine
    def _last_position(self, encoded: List[List[int]], label_ids: List[int],
                       want_full: bool = False, want_hidden: bool = False) -> List["_Row"]:
        return self._last_position_many(encoded, [label_ids] * len(encoded), want_full, want_hidden)

    def _last_position_many(self, encoded: List[List[int]], label_ids: List[List[int]],
                            want_full: bool = False, want_hidden: bool = False) -> List["_Row"]:
        """Per sequence: the float32 logits of its label ids at its last position (+ states)."""
        torch = self._torch
        np = require("numpy", "CausalLMScorer")
        sequences = [_Sequence(ids, len(ids) - 1, len(ids)) for ids in encoded]
        rows: List[Optional[_Row]] = [None] * len(sequences)

        def consume(batch: List[int], logits: Any, hidden: Any) -> None:
            width = max(len(label_ids[i]) for i in batch)
            index = torch.tensor([label_ids[i] + [0] * (width - len(label_ids[i])) for i in batch],
                                 device=logits.device, dtype=torch.long)
            picked = logits.gather(1, index).float().cpu().numpy()
            full = logits.float().cpu().numpy() if want_full else None
            states = hidden.float().cpu().numpy() if want_hidden else None
            for j, i in enumerate(batch):
                rows[i] = _Row(picked[j, :len(label_ids[i])].astype(np.float32),
                               full[j] if full is not None else None,
                               states[j] if states is not None else None)

        self._run(sequences, consume, want_hidden)
        return rows  # type: ignore[return-value]

    def _continuation_logprobs(self, sequences: List[_Sequence]) -> Tuple[List[float], List[int]]:
        """Per sequence: Σ log p(ids[t+1] | ids[..t]) over its read positions, and their count."""
        torch = self._torch
        sums: List[float] = [0.0] * len(sequences)
        counts = [s.reads for s in sequences]

        def consume(batch: List[int], logits: Any, hidden: Any) -> None:
            targets = [sequences[i].ids[t + 1] for i in batch for t in range(sequences[i].read_from, sequences[i].read_to)]
            owner = [j for j, i in enumerate(batch) for _ in range(sequences[i].reads)]
            target = torch.tensor(targets, device=logits.device, dtype=torch.long)
            logprob = torch.log_softmax(logits.float(), dim=-1).gather(1, target[:, None])[:, 0]
            totals = torch.zeros(len(batch), dtype=torch.float64, device=logits.device)
            totals.index_add_(0, torch.tensor(owner, device=logits.device), logprob.double())
            for j, value in enumerate(totals.cpu().tolist()):
                sums[batch[j]] = value

        self._run(sequences, consume, want_hidden=False)
        return sums, counts

    def _run(self, sequences: List[_Sequence], consume: Callable[[List[int], Any, Any], None],
             want_hidden: bool) -> None:
        """Forward all sequences in length-sorted batches; ``consume`` gets the read rows.

        ``consume(batch, logits, hidden)`` receives the batch's sequence indexes
        and, stacked in (sequence, position) order, the logits [P, V] of every
        read position and the last hidden states [P, H] (or None).
        """
        torch = self._torch
        order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i].ids))
        pending = list(self._batches(order, sequences, want_hidden))
        pending.reverse()  # pop() from the end: longest batch first
        with torch.inference_mode():
            while pending:
                batch = pending.pop()
                try:
                    logits, hidden = self._forward_batch([sequences[i] for i in batch], want_hidden)
                except Exception as error:  # only out-of-memory is retried
                    if not _is_out_of_memory(torch, error) or len(batch) == 1:
                        raise
                    self._after_out_of_memory(len(batch))
                    half = len(batch) // 2
                    pending.extend([batch[half:], batch[:half]])
                    continue
                consume(batch, logits, hidden)

    def _batches(self, order: List[int], sequences: List[_Sequence], want_hidden: bool) -> Iterator[List[int]]:
        """Greedy consecutive batches within the row, token and logits budgets.

        Hidden states keep every layer's activations, so they get a quarter of the token budget.
        """
        tokens = max(1, self.token_budget // HIDDEN_STATE_BUDGET_DIVISOR) if want_hidden else self.token_budget
        batch: List[int] = []
        state: Tuple[int, int, frozenset] = (0, 0, frozenset())  # longest, deepest read, read positions
        for i in order:
            candidate = _grown(state, sequences[i])
            if batch and not self._fits(len(batch) + 1, candidate, tokens):
                yield batch
                batch, candidate = [], _grown((0, 0, frozenset()), sequences[i])
            batch.append(i)
            state = candidate
        if batch:
            yield batch

    def _fits(self, rows: int, state: Tuple[int, int, frozenset], token_budget: int) -> bool:
        longest, deepest, positions = state
        if self._keep_argument is None:
            kept = longest  # the model computes every position's logits
        elif self.padding_side == "right" and self._keep_argument == "logits_to_keep":
            kept = len(positions)
        else:
            kept = deepest if self.padding_side == "left" else longest
        return (rows * longest <= token_budget
                and (self.batch_size is None or rows <= self.batch_size)
                and rows * kept * self._vocab_size() * 4 <= self.logits_budget_bytes)

    def _forward_batch(self, batch: List[_Sequence], want_hidden: bool) -> Tuple[Any, Any]:
        """Pad, run the model once and return the logits (and last hidden states) at the read positions."""
        torch = self._torch
        width = max(len(s.ids) for s in batch)
        input_ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        starts = []  # column of each sequence's first token
        for row, s in enumerate(batch):
            start = width - len(s.ids) if self.padding_side == "left" else 0
            input_ids[row, start:start + len(s.ids)] = torch.tensor(s.ids, dtype=torch.long)
            attention[row, start:start + len(s.ids)] = 1
            starts.append(start)
        rows_index = [row for row, s in enumerate(batch) for _ in range(s.reads)]
        columns = [starts[row] + t for row, s in enumerate(batch) for t in range(s.read_from, s.read_to)]
        kwargs: Dict[str, Any] = {
            "input_ids": input_ids.to(self.device),
            "attention_mask": attention.to(self.device),
            "use_cache": False,
        }
        if self._takes_position_ids:  # absolute positions must skip the left padding
            kwargs["position_ids"] = (attention.cumsum(-1) - 1).clamp(min=0).to(self.device)
        if want_hidden:
            kwargs["output_hidden_states"] = True
        kept_columns = self._kept_columns(columns, width)
        if kept_columns is not None:
            kwargs[self._keep_argument] = kept_columns[0]
        output = self.model(**kwargs)
        logits = output.logits
        if kept_columns is not None:
            column_of = kept_columns[1]
            if logits.shape[1] != len(column_of):
                raise RuntimeError(f"CausalLMScorer: the model ignored {self._keep_argument}= "
                                   f"(expected {len(column_of)} positions, got {logits.shape[1]})")
            local = [column_of[c] for c in columns]
        else:
            local = columns
        rows_tensor = torch.tensor(rows_index, device=logits.device)
        picked = logits[rows_tensor, torch.tensor(local, device=logits.device)]
        hidden = None
        if want_hidden:
            last_layer = output.hidden_states[-1]
            hidden = last_layer[rows_tensor, torch.tensor(columns, device=last_layer.device)]
        return picked, hidden

    def _kept_columns(self, columns: List[int], width: int) -> Optional[Tuple[Any, Dict[int, int]]]:
        """What to pass as ``logits_to_keep`` and where each kept column lands, or None for all."""
        if self._keep_argument is None:
            return None
        first = min(columns)
        if self.padding_side == "left" or self._keep_argument == "num_logits_to_keep":
            keep = width - first  # a suffix of the sequence
            return keep, {c: c - first for c in range(first, width)}
        unique = sorted(set(columns))
        return self._torch.tensor(unique, device=self.device), {c: k for k, c in enumerate(unique)}

    def _vocab_size(self) -> int:
        return self._vocab

    def _vocab_size_of_model(self) -> int:
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if head is not None and hasattr(head, "weight"):
            return int(head.weight.shape[0])
        return int(getattr(getattr(self.model, "config", None), "vocab_size", 0) or 32000)

    def _after_out_of_memory(self, rows: int) -> None:
        """Shrink the budgets for the rest of the run and free the cache."""
        self.token_budget = max(1, self.token_budget // 2)
        self.batch_size = max(1, rows // 2)
        if self.device.type == "cuda":
            self._torch.cuda.empty_cache()
        warnings.warn(f"CausalLMScorer: out of memory with {rows} sequences; retrying with at most "
                      f"{self.batch_size} per batch", stacklevel=4)


def _grown(state: Tuple[int, int, frozenset], sequence: _Sequence) -> Tuple[int, int, frozenset]:
    """Batch statistics after adding ``sequence`` (right padding keeps positions as they are)."""
    longest, deepest, positions = state
    return (max(longest, len(sequence.ids)), max(deepest, len(sequence.ids) - sequence.read_from),
            positions | frozenset(range(sequence.read_from, sequence.read_to)))


@dataclass
class _Row:
    """What the scorer reads at a prompt's last position."""

    label_logits: Any  # float32 NumPy array, one entry per label
    full_vocab: Any  # float32 NumPy array over the vocabulary, or None
    hidden: Any  # float32 NumPy array, or None


def _offset_boundary(offsets: Sequence[Tuple[int, int]], special: Sequence[int],
                     prompt_length: int) -> Tuple[Optional[int], int]:
    """(first non-special token ending past the prompt, one past the last non-special token)."""
    real = [i for i in range(len(offsets)) if not special[i]]
    boundary = next((i for i in real if offsets[i][1] > prompt_length), None)
    return boundary, (real[-1] + 1 if real else 0)


def _prefix_boundary(joint: List[int], alone: List[int], special_ids: set) -> Tuple[Optional[int], int]:
    """Slow-tokenizer fallback: the common prefix of joint and prompt-alone ids (trailing specials dropped)."""
    while alone and alone[-1] in special_ids:
        alone.pop()
    end = len(joint)
    while end > 0 and joint[end - 1] in special_ids:
        end -= 1
    boundary = 0
    while boundary < min(len(alone), end) and joint[boundary] == alone[boundary]:
        boundary += 1
    return (boundary if boundary < end else None), end


def _checked_labels(label_space: Sequence[str], where: str) -> List[str]:
    return check_label_space(label_space, at=f" in {where}", name="label_space")


def _checked_prompts(prompts: Any, where: str) -> List[str]:
    if isinstance(prompts, str) or not isinstance(prompts, (list, tuple)):
        raise ValueError(f"{where}: expected a list of prompt strings, got {type(prompts).__name__}")
    for index, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise ValueError(f"{where}: prompt {index} must be a string, got {type(prompt).__name__}")
    return list(prompts)


def _pad_token_id(tokenizer: Any) -> int:
    """Any valid id works: padded positions are masked out and never read."""
    for name in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tokenizer, name, None)
        if isinstance(value, int):
            return value
    return 0


def _prepared_model(torch: Any, model: Any, device: Any, dtype: Any) -> Any:
    """Move/cast the model as asked, put it in eval mode and return it."""
    if device is not None:
        model = model.to(device)
    current = next(model.parameters()).dtype if any(True for _ in model.parameters()) else torch.float32
    on_cuda = model_device(model).type == "cuda"
    if dtype is None and on_cuda and current == torch.float32:
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype is not None:
        model = model.to(dtype)
    model.eval()
    return model


def _is_out_of_memory(torch: Any, error: Exception) -> bool:
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)) if t)
    return isinstance(error, oom_types) or "out of memory" in str(error).lower()
