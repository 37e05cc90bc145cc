"""The tree-packed forward under :class:`CausalLMScorer`: shared prefixes computed once, no KV copies.

:mod:`.tree_pack` lays a group of sequences out as one flat row with per-token
positions and a tree mask; this module runs those rows.  A model takes them
when its forward accepts ``position_ids`` and a ready 4-D attention mask
(transformers' models built on ``masking_utils`` return such a mask as is) and
every layer attends to all earlier positions (a sliding window is measured in
flat indices, which a tree layout changes).  Whether a model honours the mask
is not guessed from its class: a probe packs two short sequences that share a
prefix and compares the logits with the two rows run separately, once per scorer.
A model that fails the probe is scored by the prefix-tree engine instead.

On CUDA the mask is a FlexAttention ``BlockMask`` (only tiles holding ancestors
are computed) and each pack, filled up to the token budget, is one forward with
no padding; the model runs with ``attn_implementation="flex_attention"`` for the
call and gets its own implementation back afterwards.  Elsewhere the mask is
dense (boolean for SDPA, additive for eager attention), so every pair of a pack
costs attention work: the cost model keeps packs to prompts that share enough,
and packs run as left-padded batches within the token budget, like rows.
"""
import contextlib
import dataclasses
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import error_name
from . import invariant, tree_pack
from .kv_cache import full_attention

TREE_ATTENTION = ("auto", "flex", "dense")


@dataclasses.dataclass
class Reads:
    """Per sequence and read: the gathered values (float32 NumPy arrays), optional states."""

    values: List[List[Any]]
    full: Optional[List[List[Any]]] = None  # full-vocabulary logits at the read position
    hidden: Optional[List[List[Any]]] = None  # last-layer hidden state at the read position


class TreeForward:
    """Mixin of ForwardEngine: needs ``model``, ``device``, the budgets, ``_store_reads`` and ``_record``."""

    model: Any
    device: Any
    token_budget: int
    logits_budget_bytes: int
    tree_attention: str
    pack_tokens: Optional[int]
    numerics: str

    def _init_tree(self) -> None:
        self._tree_ok: Optional[bool] = None  # decided by the probe on first use
        self._flex = self.tree_attention == "flex" or (
            self.tree_attention == "auto" and self.device.type == "cuda" and _has_flex())
        self._shape: Optional[Tuple[int, int, int]] = None  # for the cost model, read on first use
        self._invariant: Optional[invariant.InvariantForward] = None
        if self.numerics == "invariant":
            reason = invariant.why_not_invariant(self.model)
            if reason is None:
                self._invariant = invariant.InvariantForward(self._torch, self.model)
            else:
                self.numerics = "fast"
                self.switch_off(f"invariant numerics: {reason}; the library's forward runs instead (numerics=fast)")

    def _tree_usable(self) -> bool:
        """Whether this model takes tree packs; probed once.  When it does not, one line says why and
        the prefix-tree engine runs instead."""
        if self._tree_ok is None:
            reason = self._why_no_tree()
            self._tree_ok = reason is None
            if reason is not None:
                self.switch_off(f"tree packing: {reason}; its prompts run through the prefix-tree engine instead")
        return self._tree_ok

    def _why_no_tree(self) -> Optional[str]:
        name = type(self.model).__name__
        if not self._takes_position_ids:
            return f"{name}.forward takes no position_ids"
        if not full_attention(self.model):
            return f"{name} has sliding-window layers (a window counts flat positions, which a pack changes)"
        return self._probe()

    # ------------------------------------------------------------ the run
    def _run_tree(self, sequences: List[List[int]], read_positions: List[List[int]], read_ids: List[List[List[int]]],
                  out: Any, log_softmax: bool, want_hidden: bool) -> None:
        """Plan packs, run them in batches within the budgets; an out-of-memory error halves the batch, then the pack."""
        budget = self.token_budget // 4 if want_hidden else self.token_budget
        max_tokens = min(self.pack_tokens or budget, budget)
        max_reads = max(1, self.logits_budget_bytes // (4 * self._vocab))
        self._shape = self._shape or model_shape(self.model)
        # the invariant forward's attention reads each query's own path: a pack adds no pair cost
        cost = tree_pack.pair_cost(nonembedding_parameters=self._shape[0], hidden_size=self._shape[1],
                                   layers=self._shape[2], block_sparse=self._flex or self._invariant is not None)
        if self._invariant is not None and self.packing == "rows":  # every distinct sequence whole, nothing shared
            same: Dict[Tuple[int, ...], List[int]] = {}
            for i, ids in enumerate(sequences):
                same.setdefault(tuple(ids), []).append(i)
            packs = [tree_pack.pack_of(sequences, read_positions, group, range(len(sequences)))
                     for group in same.values()]
        else:
            packs = tree_pack.plan_packs(sequences, read_positions, max_tokens=max_tokens,
                                         max_read_positions=max_reads, pair_cost=cost)
        self.stats.tokens_requested += sum(len(ids) for ids in sequences)
        pending = list(reversed(self._pack_batches(packs, budget, max_reads)))
        with self._attention_for_packs():
            while pending:
                batch = pending.pop()
                try:
                    self._forward_packs(batch, read_ids, out, log_softmax, want_hidden)
                except Exception as error:  # only out-of-memory is retried, with half the batch or half the pack
                    if not _is_out_of_memory(self._torch, error) or (len(batch) == 1 and len(batch[0].members) == 1):
                        raise
                    if self.device.type == "cuda":
                        self._torch.cuda.empty_cache()
                    if len(batch) > 1:
                        pending.extend([batch[len(batch) // 2:], batch[:len(batch) // 2]])
                        continue
                    pack = batch[0]
                    self.pack_tokens = max_tokens = max(1, len(pack.tokens) // 2)
                    halves = tree_pack.plan_packs(
                        [sequences[i] for i in pack.members], [read_positions[i] for i in pack.members],
                        max_tokens=max_tokens, max_read_positions=max_reads, members=pack.members, pair_cost=cost)
                    pending.extend([half] for half in reversed(halves))

    def _pack_batches(self, packs: List[tree_pack.Pack], budget: int, max_reads: int) -> List[List[tree_pack.Pack]]:
        """Packs grouped, longest first, into left-padded batches of at most ``budget`` tokens (rows × width).

        A block-sparse mask runs one pack per forward (packs fill the budget).  A
        dense mask batches the small packs a cost model keeps apart (prompts that
        share little), so they run like today's rows; the left padding puts each
        pack's last token in the last column, where most reads are.
        """
        if self._invariant is not None:
            return _consecutive(packs, budget, max_reads)
        if self._flex:
            return [[pack] for pack in packs]
        batches: List[List[tree_pack.Pack]] = []
        width = reads = 0
        for pack in sorted(packs, key=lambda p: -len(p.tokens)):
            count = len({flat for flat, _, _ in pack.reads})
            if batches and batches[-1] and ((len(batches[-1]) + 1) * width <= budget
                                            and (len(batches[-1]) + 1) * (reads + count) <= max_reads):
                batches[-1].append(pack)
                reads += count
                continue
            batches.append([pack])
            width, reads = len(pack.tokens), count
        return batches

    def _forward_packs(self, batch: List[tree_pack.Pack], read_ids: List[List[List[int]]], out: Any,
                       log_softmax: bool, want_hidden: bool) -> None:
        """One forward over the packs of ``batch`` (one row each, left-padded); reads stored in ``out``."""
        if self._invariant is not None:
            self._forward_invariant(batch, read_ids, out, log_softmax, want_hidden)
            return
        torch = self._torch
        width = max(len(pack.tokens) for pack in batch)
        offsets = [width - len(pack.tokens) for pack in batch]
        tokens = [[self._pad_id] * o + p.tokens for p, o in zip(batch, offsets)]
        positions = [[0] * o + p.positions for p, o in zip(batch, offsets)]
        # a padding token sees itself only (end = its index + 1), so no real token sees it
        ends = [list(range(1, o + 1)) + [e + o for e in p.ends] for p, o in zip(batch, offsets)]
        if self._flex:
            mask = tree_pack.flex_block_mask(torch, ends[0], self.device)
        else:
            sdpa = getattr(self.model.config, "_attn_implementation", None) == "sdpa"
            mask = tree_pack.dense_mask(torch, ends, self.device, None if sdpa else self.model.dtype)
        kwargs: Dict[str, Any] = {"input_ids": torch.tensor(tokens, dtype=torch.long, device=self.device),
                                  "position_ids": torch.tensor(positions, dtype=torch.long, device=self.device),
                                  "attention_mask": mask, "use_cache": False}
        if want_hidden:
            kwargs["output_hidden_states"] = True
        slots: Dict[Tuple[int, int], int] = {}
        entries = [(slots.setdefault((row, o + flat), len(slots)), i, r)
                   for row, (pack, o) in enumerate(zip(batch, offsets)) for flat, i, r in pack.reads]
        kept = self._pack_kept([column for _, column in slots], width)
        if kept is not None:
            kwargs[self._keep_argument] = kept[0]
        output = self.model(**kwargs)
        self.stats.tokens_computed += sum(len(pack.tokens) for pack in batch)
        self._record(len(batch), width, 0)
        self.stats.logit_positions += len(batch) * _kept_count(kept, width)
        if slots:
            self._store_reads(output, slots, entries, kept, read_ids, out, log_softmax, want_hidden)

    def _forward_invariant(self, batch: List[tree_pack.Pack], read_ids: List[List[List[int]]], out: Any,
                           log_softmax: bool, want_hidden: bool) -> None:
        """The packs of ``batch`` one after another, no padding, through the batch-invariant forward."""
        tokens: List[int] = []
        positions: List[int] = []
        slots: Dict[int, int] = {}  # flat index -> read slot
        entries = []
        for pack in batch:
            offset = len(tokens)
            tokens.extend(pack.tokens)
            positions.extend(pack.positions)
            entries.extend((slots.setdefault(offset + flat, len(slots)), i, r) for flat, i, r in pack.reads)
        self.stats.tokens_computed += len(tokens)
        self._record(len(batch), len(tokens), 0)
        self.stats.logit_positions += len(slots)
        if slots:
            logits, hidden = self._invariant.forward(tokens, positions, list(slots), want_hidden)
            self._store_picked(logits, hidden, entries, read_ids, out, log_softmax)

    def _pack_kept(self, columns: List[int], n: int) -> Optional[Tuple[Any, Dict[int, int]]]:
        """``logits_to_keep`` for a pack: the read positions only (a suffix for the older integer argument)."""
        if self._keep_argument is None or not columns:
            return None
        if self._keep_argument == "num_logits_to_keep":
            first = min(columns)
            return n - first, {c: c - first for c in range(first, n)}
        unique = sorted(set(columns))
        return self._torch.tensor(unique, device=self.device), {c: k for k, c in enumerate(unique)}

    @contextlib.contextmanager
    def _attention_for_packs(self) -> Iterator[None]:
        """FlexAttention for the packs' forwards, the model's own implementation again afterwards."""
        config = getattr(self.model, "config", None)
        own = getattr(config, "_attn_implementation", None)
        if not self._flex or own == "flex_attention" or self._invariant is not None:
            yield
            return
        self.model.set_attn_implementation("flex_attention")
        try:
            yield
        finally:
            self.model.set_attn_implementation(own)

    # ------------------------------------------------------------ the probe
    def _probe(self) -> Optional[str]:
        """Two sequences sharing five tokens, packed and unpacked: equal logits when the mask is honoured.

        None when they agree, else why the model cannot take tree packs.
        """
        torch, vocab = self._torch, self._vocab
        ids = [(3 + 13 * k) % vocab for k in range(9)]
        rows = [ids[:7], ids[:5] + ids[7:9]]
        positions = [list(range(7)), list(range(7))]
        read_ids = [[list(range(min(vocab, 64)))] * 7 for _ in rows]
        out, saved = Reads([[None] * 7 for _ in rows]), dataclasses.replace(self.stats)
        try:
            with torch.inference_mode():
                expected = self.model(input_ids=torch.tensor(rows, device=self.device), use_cache=False).logits
                pack = tree_pack.plan_packs(rows, positions, max_tokens=64, max_read_positions=64)[0]
                with self._attention_for_packs():
                    self._forward_packs([pack], read_ids, out, False, False)
        except Exception as error:  # a model that refuses a 4-D mask or position ids: not usable, say why
            return f"the packing probe failed ({error_name(error)}: {str(error).splitlines()[0] if str(error) else ''})"
        finally:
            self.stats = saved  # the probe is not part of the work
        expected = expected[..., :len(read_ids[0][0])].float().cpu().numpy()
        got = self._np.array(out.values)
        scale = 1.0 + float(abs(expected).max())
        tolerance = 1e-4 if self.model.dtype == torch.float32 else 5e-2
        difference = float(abs(got - expected).max())
        if difference <= tolerance * scale:
            return None
        return (f"{type(self.model).__name__} does not honour a tree attention mask with position ids here "
                f"(packed and unpacked logits differ by {difference:.3g} in the probe)")


def model_shape(model: Any) -> Tuple[int, int, int]:
    """(parameters outside the input embedding and the output head, hidden size, layers)."""
    seen = {}
    for parameter in model.parameters():
        seen[parameter.data_ptr()] = parameter.numel()
    total = sum(seen.values())
    for module in (model.get_input_embeddings(), model.get_output_embeddings()):
        weight = getattr(module, "weight", None)
        if weight is not None and weight.data_ptr() in seen:
            total -= seen.pop(weight.data_ptr())
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return total, int(config.hidden_size), int(config.num_hidden_layers)


def _consecutive(packs: List[tree_pack.Pack], budget: int, max_reads: int) -> List[List[tree_pack.Pack]]:
    """Packs in order, grouped while their tokens fit ``budget`` and their reads ``max_reads`` (a pack
    larger than either runs alone): the invariant forward concatenates them, no padding."""
    batches: List[List[tree_pack.Pack]] = []
    tokens = reads = 0
    for pack in packs:
        count = len({flat for flat, _, _ in pack.reads})
        if batches and tokens + len(pack.tokens) <= budget and reads + count <= max_reads:
            batches[-1].append(pack)
            tokens, reads = tokens + len(pack.tokens), reads + count
            continue
        batches.append([pack])
        tokens, reads = len(pack.tokens), count
    return batches


def _has_flex() -> bool:
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def _kept_count(kept: Any, width: int) -> int:
    """Positions per row where the output head runs, for a ``_kept_columns`` answer."""
    if kept is None:
        return width
    return kept[0] if isinstance(kept[0], int) else int(kept[0].numel())


def _is_out_of_memory(torch: Any, error: Exception) -> bool:
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)) if t)
    return isinstance(error, oom_types) or "out of memory" in str(error).lower()

