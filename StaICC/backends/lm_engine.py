"""The forward engine under :class:`CausalLMScorer`: budgeted batches, prefix KV reuse, reads gathered on device.

Every scoring mode reduces to *reads*: for a token sequence, the logits (or
log-probabilities) of some token ids at some positions.  The engine

* folds the sequences into a prefix tree (:mod:`.prefix_tree`), so a prefix that
  several sequences share (the prompt before each label continuation, the
  demonstrations before each query) is computed once and its children continue
  from its KV cache (``past_key_values``), where the cost model says it pays;
* runs each tree level in batches sorted by length (longest first, so an
  out-of-memory error shows up on the first batch) and bounded by a token budget,
  a row limit and a logits budget; an out-of-memory error halves the batch;
* keeps only the logits of read positions (``logits_to_keep``), gathers the
  requested values on the device and copies them to the host once per batch.

A shared prefix gives the same numbers as the unshared computation up to float
rounding (the matrix shapes differ): identical argmax and |Δp| <= 1e-5 in float32
in the tests.
"""
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..errors import OperationError, StaICCWarning
from ..extras import require
from . import prefix_tree
from .invariant import log_softmax as invariant_log_softmax
from .kv_cache import CACHE_ARGUMENTS, output_cache, selected_cache, why_no_prefix_sharing
from .prefix_tree import Node
from .tree_forward import Reads, TreeForward, _is_out_of_memory, _kept_count

#: output_hidden_states keeps all layers' activations: batches asking for them use budget / this
HIDDEN_STATE_BUDGET_DIVISOR = 4
#: a cached prefix token held for a row costs about this fraction of a computed token's memory
CACHED_TOKEN_WEIGHT = 0.5
SHARE_MODES = ("auto", True, False)
#: tree: each group of prompts as one flat row with a tree mask (:mod:`.tree_forward`); prefix: the prefix
#: tree's levels continued from KV caches; rows: one padded row per distinct sequence
PACKING_MODES = ("tree", "prefix", "rows")


@dataclass
class EngineStats:
    """What the engine did, cumulatively (the benchmark prints it)."""

    forward_calls: int = 0
    rows: int = 0
    tokens_requested: int = 0  # tokens of the sequences as given
    tokens_computed: int = 0  # tokens actually run through the model (after prefix sharing)
    reads: int = 0  # positions whose logits were asked for
    logit_positions: int = 0  # positions where the output head ran (read positions and what came along)
    padded_tokens: int = 0  # rows × width over all batches
    largest_batch_rows: int = 0
    largest_batch_tokens: int = 0  # the token budget a batch used: rows × (width + CACHED_TOKEN_WEIGHT × cached width)


@dataclass
class _Parent:
    """A computed batch whose rows have children: its KV cache and what positions it covers."""

    cache: Any
    mask: Any  # [rows, cached width] attention mask
    count: Any  # [rows] real tokens per row: the next position id


@dataclass
class _Batch:
    """Statistics of a batch being filled."""

    rows: int = 0
    longest: int = 0
    deepest: int = 1  # longest suffix of a row that holds reads (left padding keeps that many logits)
    positions: set = field(default_factory=set)  # read columns (right padding)


class ForwardEngine(TreeForward):
    """Mixin of CausalLMScorer: needs ``model``, ``device``, the budgets and the model's arguments."""

    model: Any
    device: Any
    token_budget: int
    rows_per_forward: Optional[int]
    padding_side: str
    logits_budget_bytes: int
    share_prefixes: Any
    prefix_overhead_tokens: int
    packing: str
    packing_asked: bool  # the user named the packing (a fallback from tree then warns)

    @property
    def batch_size(self) -> Optional[int]:
        """The older name of ``rows_per_forward`` (sequences per forward pass)."""
        return self.rows_per_forward

    @batch_size.setter
    def batch_size(self, value: Optional[int]) -> None:
        self.rows_per_forward = value

    def _init_engine(self, torch: Any) -> None:
        self._torch = torch
        self._np = require("numpy", "CausalLMScorer")
        parameters = self._forward_parameters()
        self._takes_position_ids = "position_ids" in parameters
        self._keep_argument = next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in parameters), None)
        self._cache_argument = next((name for name in CACHE_ARGUMENTS if name in parameters), None)
        self.switched_off: List[str] = []  # optimisations this model cannot take, and why (provenance records them)
        self.stats = EngineStats()
        self._init_tree()  # decides the numerics: the invariant forward shares prefixes in packs, with no KV cache
        reason = why_no_prefix_sharing(self.model, self._takes_position_ids, self._cache_argument)
        self._can_share = reason is None
        if reason is not None and self.packing != "rows" and self.share_prefixes is not False \
                and self._invariant is None:
            self.switch_off(f"prefix sharing: {reason}")

    def _forward_parameters(self) -> Any:
        import inspect
        return inspect.signature(self.model.forward).parameters

    def switch_off(self, what: str) -> None:
        """Record an optimisation this model cannot take, and say so once: one warning line per reason.

        The reasons land in ``switched_off`` (the ``hf`` backend's provenance records them): a
        run that computed every prompt whole, or through the prefix engine instead of tree packs,
        is never silently slower or differently rounded.
        """
        if what not in self.switched_off:
            self.switched_off.append(what)
            warnings.warn(f"CausalLMScorer: {what}", StaICCWarning, stacklevel=4)

    @property
    def largest_batch(self) -> int:
        """The most rows one successful forward call held so far."""
        return self.stats.largest_batch_rows

    # ------------------------------------------------------------ the entry point
    def _run_reads(self, sequences: List[List[int]], read_positions: List[List[int]], read_ids: List[List[List[int]]],
                   *, log_softmax: bool, want_full: bool = False, want_hidden: bool = False) -> Reads:
        """Values of ``read_ids[i][r]`` at position ``read_positions[i][r]`` of sequence i.

        ``log_softmax``: log-probabilities instead of raw logits.  The position's
        full-vocabulary logits and last hidden state come along when asked.
        """
        out = Reads([[None] * len(p) for p in read_positions],
                    [[None] * len(p) for p in read_positions] if want_full else None,
                    [[None] * len(p) for p in read_positions] if want_hidden else None)
        self.stats.reads += sum(len(p) for p in read_positions)
        if self._invariant is not None or self.packing == "tree" and self._tree_usable():
            with self._torch.inference_mode():
                self._run_tree(sequences, read_positions, read_ids, out, log_softmax, want_hidden)
            return out
        share = self.share_prefixes if self._can_share and self.packing != "rows" else False
        if share is False:
            settings = {"overhead_tokens": 0, "min_saved_fraction": 0.0, "max_depth": 0}
        elif share is True:
            settings = {"overhead_tokens": 0, "min_saved_fraction": 0.0, "max_depth": prefix_tree.DEFAULT_MAX_DEPTH}
        else:
            settings = {"overhead_tokens": self.prefix_overhead_tokens,
                            "min_saved_fraction": prefix_tree.DEFAULT_MIN_SAVED_FRACTION,
                            "max_depth": prefix_tree.DEFAULT_MAX_DEPTH}
        nodes = prefix_tree.plan(prefix_tree.build(sequences, read_positions), **settings)
        self.stats.tokens_requested += sum(len(ids) for ids in sequences)
        self.stats.tokens_computed += prefix_tree.count_tokens(nodes)
        with self._torch.inference_mode():
            self._evaluate([(node, -1) for node in nodes], None, read_ids, out, log_softmax, want_hidden)
        return out

    # --------------------------------------------------------------- one level
    def _evaluate(self, items: List[Tuple[Node, int]], parent: Optional[_Parent], read_ids: List[List[List[int]]],
                  out: Reads, log_softmax: bool, want_hidden: bool) -> None:
        """Compute ``items`` (node, row of the parent batch) level by level, depth first."""
        items = sorted(items, key=lambda item: -len(item[0].tokens))
        cached = int(parent.mask.shape[1]) if parent is not None else 0
        pending = list(self._batches(items, cached, want_hidden))
        pending.reverse()  # pop() from the end: longest batch first
        while pending:
            batch = pending.pop()
            try:
                state = self._forward_and_read(batch, parent, read_ids, out, log_softmax, want_hidden)
            except Exception as error:  # only out-of-memory is retried
                if not _is_out_of_memory(self._torch, error) or len(batch) == 1:
                    raise
                self._after_out_of_memory(len(batch))
                half = len(batch) // 2
                pending.extend([batch[half:], batch[:half]])
                continue
            if state is not None:
                children = [(child, row) for row, (node, _) in enumerate(batch) for child in node.children]
                self._evaluate(children, state, read_ids, out, log_softmax, want_hidden)

    def _batches(self, items: List[Tuple[Node, int]], cached: int, want_hidden: bool) -> Any:
        """Greedy consecutive batches within the row, token and logits budgets.

        A row costs its width plus a share of the cached prefix it attends to;
        hidden states keep every layer's activations, so they get a quarter of the budget.
        """
        budget = max(1, self.token_budget // HIDDEN_STATE_BUDGET_DIVISOR) if want_hidden else self.token_budget
        batch: List[Tuple[Node, int]] = []
        stats = _Batch()
        for item in items:
            grown = _grown(stats, item[0])
            if batch and not self._fits(grown, cached, budget):
                yield batch
                batch, grown = [], _grown(_Batch(), item[0])
            batch.append(item)
            stats = grown
        if batch:
            yield batch

    def _fits(self, stats: _Batch, cached: int, budget: int) -> bool:
        if self._keep_argument is None:
            kept = stats.longest  # the model computes every position's logits
        elif self.padding_side == "right" and self._keep_argument == "logits_to_keep":
            kept = max(1, len(stats.positions))
        else:
            kept = stats.deepest if self.padding_side == "left" else stats.longest
        return (stats.rows * (stats.longest + CACHED_TOKEN_WEIGHT * cached) <= budget
                and (self.rows_per_forward is None or stats.rows <= self.rows_per_forward)
                and stats.rows * kept * self._vocab * 4 <= self.logits_budget_bytes)

    # ------------------------------------------------------------ one forward
    def _forward_and_read(self, batch: List[Tuple[Node, int]], parent: Optional[_Parent],
                          read_ids: List[List[List[int]]], out: Reads, log_softmax: bool,
                          want_hidden: bool) -> Optional[_Parent]:
        """Run one batch, store its reads in ``out``; the batch's cache if some row has children."""
        torch = self._torch
        width = max(len(node.tokens) for node, _ in batch)
        left = self.padding_side == "left"
        starts = [width - len(node.tokens) if left else 0 for node, _ in batch]
        ids_rows, mask_rows = [], []
        for node, _ in batch:
            pad = width - len(node.tokens)
            ids_rows.append([self._pad_id] * pad + node.tokens if left else node.tokens + [self._pad_id] * pad)
            mask_rows.append([0] * pad + [1] * len(node.tokens) if left else [1] * len(node.tokens) + [0] * pad)
        input_ids = torch.tensor(ids_rows, dtype=torch.long, device=self.device)
        own = torch.tensor(mask_rows, dtype=torch.long, device=self.device)
        need_cache = any(node.children for node, _ in batch)
        kwargs: Dict[str, Any] = {"input_ids": input_ids, "use_cache": need_cache or parent is not None}
        if parent is not None:
            rows_of_parent = [row for _, row in batch]
            select = torch.tensor(rows_of_parent, device=self.device)
            kwargs[self._cache_argument] = selected_cache(parent.cache, rows_of_parent, select)
            mask = torch.cat([parent.mask.index_select(0, select), own], dim=1)
            base = parent.count.index_select(0, select)
        else:
            mask, base = own, torch.zeros(len(batch), dtype=torch.long, device=self.device)
        kwargs["attention_mask"] = mask
        if self._takes_position_ids:  # absolute positions skip padding and continue the cached prefix
            kwargs["position_ids"] = base[:, None] + (own.cumsum(-1) - 1).clamp(min=0)
        if want_hidden:
            kwargs["output_hidden_states"] = True
        slots: Dict[Tuple[int, int], int] = {}  # (row, column) -> index of the kept position
        entries: List[Tuple[int, int, int]] = []  # (slot, sequence, read)
        for row, ((node, _), start) in enumerate(zip(batch, starts)):
            for local, i, r in node.reads:
                entries.append((slots.setdefault((row, start + local), len(slots)), i, r))
        columns = [column for _, column in slots] or [width - 1]
        kept = self._kept_columns(columns, width)
        if kept is not None:
            kwargs[self._keep_argument] = kept[0]
        output = self.model(**kwargs)
        self._record(len(batch), width, int(mask.shape[1]) - width)
        self.stats.logit_positions += len(batch) * _kept_count(kept, width)
        if slots:
            self._store_reads(output, slots, entries, kept, read_ids, out, log_softmax, want_hidden)
        if not need_cache:
            return None
        return _Parent(output_cache(output), mask, base + own.sum(dim=1))

    def _store_reads(self, output: Any, slots: Dict[Tuple[int, int], int], entries: List[Tuple[int, int, int]],
                     kept: Any, read_ids: List[List[List[int]]], out: Reads, log_softmax: bool,
                     want_hidden: bool) -> None:
        """Gather every read of the batch on the device; one copy to the host."""
        torch = self._torch
        logits = output.logits
        rows = torch.tensor([row for row, _ in slots], device=logits.device)
        columns = [column for _, column in slots]
        if kept is not None:
            if logits.shape[1] != len(kept[1]):
                raise OperationError(f"CausalLMScorer: the model ignored {self._keep_argument}= "
                                     f"(expected {len(kept[1])} positions, got {logits.shape[1]})")
            local = [kept[1][c] for c in columns]
        else:
            local = columns
        picked = logits[rows, torch.tensor(local, device=logits.device)].float()  # [slots, vocab]
        hidden = None
        if want_hidden:
            last_layer = output.hidden_states[-1]
            hidden = last_layer[rows.to(last_layer.device), torch.tensor(columns, device=last_layer.device)]
        self._store_picked(picked, hidden, entries, read_ids, out, log_softmax)

    def _store_picked(self, picked: Any, hidden: Any, entries: List[Tuple[int, int, int]],
                      read_ids: List[List[List[int]]], out: Reads, log_softmax: bool) -> None:
        """The reads of float32 logits ``picked`` [slots, vocab] (and hidden states [slots, hidden]) into ``out``."""
        torch = self._torch
        if not log_softmax:
            source = picked
        elif self._invariant is not None:
            source = invariant_log_softmax(torch, picked)
        else:
            source = torch.log_softmax(picked, dim=-1)
        flat_slots: List[int] = []
        flat_ids: List[int] = []
        for slot, i, r in entries:
            ids = read_ids[i][r]
            flat_slots.extend([slot] * len(ids))
            flat_ids.extend(ids)
        values = source[torch.tensor(flat_slots, device=picked.device, dtype=torch.long),
                        torch.tensor(flat_ids, device=picked.device, dtype=torch.long)].cpu().numpy()
        full = picked.cpu().numpy() if out.full is not None else None
        if hidden is not None:
            hidden = hidden.float().cpu().numpy()
        offset = 0
        for slot, i, r in entries:
            n = len(read_ids[i][r])
            out.values[i][r] = values[offset:offset + n]
            offset += n
            if full is not None:
                out.full[i][r] = full[slot]
            if hidden is not None:
                out.hidden[i][r] = hidden[slot]

    def _kept_columns(self, columns: List[int], width: int) -> Optional[Tuple[Any, Dict[int, int]]]:
        """What to pass as ``logits_to_keep`` and where each kept column lands, or None for all."""
        if self._keep_argument is None:
            return None
        first = min(columns)
        if self.padding_side == "left" or self._keep_argument == "num_logits_to_keep":
            return width - first, {c: c - first for c in range(first, width)}  # a suffix of the row
        unique = sorted(set(columns))
        return self._torch.tensor(unique, device=self.device), {c: k for k, c in enumerate(unique)}

    def _record(self, rows: int, width: int, cached: int) -> None:
        stats = self.stats
        stats.forward_calls += 1
        stats.rows += rows
        stats.padded_tokens += rows * width
        stats.largest_batch_rows = max(stats.largest_batch_rows, rows)
        stats.largest_batch_tokens = max(stats.largest_batch_tokens, int(rows * (width + CACHED_TOKEN_WEIGHT * cached)))

    def _after_out_of_memory(self, rows: int) -> None:
        """Shrink the budgets for the rest of the run and free the cache."""
        self.token_budget = max(1, self.token_budget // 2)
        self.rows_per_forward = max(1, rows // 2)
        if self.device.type == "cuda":
            self._torch.cuda.empty_cache()
        warnings.warn(f"CausalLMScorer: out of memory with {rows} sequences; retrying with at most "
                      f"{self.rows_per_forward} per batch", stacklevel=5)


def _grown(stats: _Batch, node: Node) -> _Batch:
    """Batch statistics after adding ``node``."""
    length = len(node.tokens)
    first_read = min((local for local, _, _ in node.reads), default=length - 1)
    return _Batch(stats.rows + 1, max(stats.longest, length), max(stats.deepest, length - first_read),
                  stats.positions | {local for local, _, _ in node.reads})
