"""Tree packing: prompts that share prefixes laid out as one flat sequence, each shared token once, no padding.

A causal LM's output at a position depends only on the tokens before it, so a
group of sequences can run as *one* row: the trie of the group (:mod:`.prefix_tree`)
is written out in depth-first order, every token gets its depth in its own
sequence as position id, and an attention mask lets a token see only its
ancestors in the trie.  A shared prefix is then computed once inside the same
forward as everything that continues from it: no extra tree levels, no KV-cache
copies, no padding.

Depth-first order makes the mask cheap to describe: a node's subtree is a
contiguous range of the flat sequence, so key token ``j`` is visible from query
token ``i`` exactly when ``j <= i < end[j]``, with ``end[j]`` one past the last
token of the subtree of ``j``'s node.  One integer per token is the whole mask,
whether it is materialised as a dense boolean matrix (SDPA / eager attention,
the CPU path) or as FlexAttention's block-sparse ``BlockMask`` (CUDA), whose
blocks are derived from the same integers without evaluating every pair.

Grouping (:func:`plan_packs`) is standard library only: sequences are sorted, so
that neighbours share the longest prefixes, and cut greedily into packs bounded
by the tokens one forward computes and by the logits positions it reads.
"""
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from . import prefix_tree

#: (flat index of the read position, sequence index, read index of that sequence)
FlatRead = Tuple[int, int, int]
#: FlexAttention's tile (queries and keys); block-sparsity is decided per tile
FLEX_BLOCK = 128


@dataclass(frozen=True)
class Pack:
    """One forward's input: the flat tokens of a trie and what to read from them."""

    tokens: List[int]  # the trie's tokens in depth-first order
    positions: List[int]  # each token's position in its own sequence (its depth): the rope / absolute position
    ends: List[int]  # per token: one past the flat index of the last token of its node's subtree
    reads: List[FlatRead]
    given: int  # tokens of the packed sequences as given (each sequence in full)
    members: List[int]  # the packed sequences' indices


# ------------------------------------------------------------------ grouping
def plan_packs(sequences: Sequence[Sequence[int]], read_positions: Sequence[Sequence[int]], *,
               max_tokens: int, max_read_positions: int, pair_cost: float = 0.0,
               members: Optional[Sequence[int]] = None) -> List[Pack]:
    """The sequences cut into packs, each one row of a forward.

    Sorted order puts each sequence next to the one it shares the longest
    prefix with, so the tokens a sequence adds to the current pack are its
    length minus its common prefix with the previous sequence, and the reads it
    adds are those at or after that prefix.  With a block-sparse mask
    (``pair_cost`` 0) a pack costs what its rows would, so packs simply fill the
    bounds.  With a dense mask a pack of c computed tokens costs
    c + ``pair_cost`` · c² (its matrix products, plus the attention over every
    pair, in tokens' worth), and a sequence joins the current pack only while
    that keeps the pack's cost per *given* token from rising: sharing lowers
    it, the pairs raise it, so a pack of k sequences sharing s tokens, each
    adding x, stops near the k that minimises (s + kx + pair_cost·(s + kx)²) / k,
    and a sequence that shares nothing starts its own pack.  ``max_tokens`` (activation
    memory) and ``max_read_positions`` (logits memory) are hard bounds; a
    sequence longer than ``max_tokens`` runs alone.  ``members`` names the
    sequences in the reads (default: their indices here).
    """
    order = sorted(range(len(sequences)), key=lambda i: list(sequences[i]))
    groups: List[List[int]] = []
    tokens = given = reads = 0
    previous: Sequence[int] = ()
    for i in order:
        ids, positions = sequences[i], read_positions[i]
        shared = _common_prefix(previous, ids) if groups else 0
        added = len(ids) - shared
        added_reads = sum(1 for p in positions if p >= shared) if shared else len(positions)
        now = (tokens + pair_cost * tokens ** 2) * (given + len(ids))  # cost per given token, cross-multiplied
        joined = (tokens + added + pair_cost * (tokens + added) ** 2) * max(1, given)
        if not groups or tokens + added > max_tokens or reads + added_reads > max_read_positions \
                or (pair_cost > 0 and joined > now):
            groups.append([])
            tokens = given = reads = 0
            added, added_reads = len(ids), len(positions)
        groups[-1].append(i)
        tokens += added
        given += len(ids)
        reads += added_reads
        previous = ids
    names = list(range(len(sequences))) if members is None else list(members)
    return [pack_of(sequences, read_positions, group, names) for group in groups]


def pack_of(sequences: Sequence[Sequence[int]], read_positions: Sequence[Sequence[int]],
            group: Sequence[int], names: Sequence[int]) -> Pack:
    """The flat layout of the trie of ``sequences[group]``; a read names its sequence by ``names[index]``."""
    nodes = prefix_tree.build([sequences[i] for i in group], [read_positions[i] for i in group])
    tokens: List[int] = []
    positions: List[int] = []
    ends: List[int] = []
    reads: List[FlatRead] = []
    # (node, its depth) to lay out, or None: the most recently opened node's subtree is complete
    stack: List[Any] = [(node, 0) for node in reversed(nodes)]
    open_nodes: List[Tuple[int, int]] = []  # (first flat index, token count) of nodes whose subtree is open
    while stack:
        item = stack.pop()
        if item is None:
            start, count = open_nodes.pop()
            ends[start:start + count] = [len(tokens)] * count
            continue
        node, depth = item
        start = len(tokens)
        tokens.extend(node.tokens)
        positions.extend(range(depth, depth + len(node.tokens)))
        ends.extend([0] * len(node.tokens))
        reads.extend((start + local, names[group[i]], r) for local, i, r in node.reads)
        open_nodes.append((start, len(node.tokens)))
        stack.append(None)
        stack.extend((child, depth + len(node.tokens)) for child in reversed(node.children))
    return Pack(tokens, positions, ends, reads, sum(len(sequences[i]) for i in group), [names[i] for i in group])


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n, limit = 0, min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n


# --------------------------------------------------------------- cost model
def pair_cost(*, nonembedding_parameters: int, hidden_size: int, layers: int, block_sparse: bool) -> float:
    """What one (query, key) pair of a dense mask costs, in computed tokens.

    Attention computes Q·Kᵀ and the weighted sum of V: 4·hidden FLOPs per pair
    and layer, against 2·params per token for the matrix products, so a pair
    costs 2·hidden·layers / params tokens.  A dense mask pays it for every pair
    of the pack, ancestors or not, which is what limits a pack's size on CPU.
    A block-sparse mask (FlexAttention) skips the tiles without ancestors, so
    what a token attends to costs what it costs in its own row: packing adds
    nothing, and the pack grows to the token bound.
    """
    if block_sparse:
        return 0.0
    return 2 * hidden_size * layers / max(1, nonembedding_parameters)


def forward_flops(nonembedding_parameters: int, hidden_size: int, vocab: int, tokens: int, reads: int) -> int:
    """The multiplied matrices' FLOPs: 2·params per computed token, 2·hidden·vocab per read position.

    The input embedding is a lookup, not a product; the output head runs only at
    the positions whose logits are read.  Attention scores are left out (they
    depend on the mask, and are small next to the products at these lengths).
    """
    return 2 * nonembedding_parameters * tokens + 2 * hidden_size * vocab * reads


# ------------------------------------------------------------------ masks
def dense_mask(torch: Any, ends: Sequence[Any], device: Any, dtype: Any = None) -> Any:
    """The tree mask as a [rows, 1, N, N] tensor: boolean (True = attend), or additive in ``dtype`` when given.

    ``ends`` is one row's ends (a [1, 1, N, N] mask) or a list of rows of equal length.
    """
    rows = [list(row) for row in ends] if ends and isinstance(ends[0], (list, tuple)) else [list(ends)]
    end = torch.tensor(rows, dtype=torch.long, device=device)[:, None, None, :]  # keys along the last axis
    index = torch.arange(end.shape[-1], device=device)
    visible = (index[None, :] <= index[:, None]) & (index[:, None] < end)
    if dtype is None:
        return visible
    zero = torch.zeros((), dtype=dtype, device=device)
    return torch.where(visible, zero, torch.finfo(dtype).min)


def flex_block_mask(torch: Any, ends: Sequence[int], device: Any, block: int = FLEX_BLOCK) -> Any:
    """The tree mask as a FlexAttention ``BlockMask``, tiles derived from ``ends`` (no N² evaluation).

    A (query tile, key tile) pair holds a visible pair when the key tile starts
    before the query tile ends and some key's subtree reaches into the query
    tile (max end > first query); it is full when every key precedes every query
    and every key's subtree covers the whole query tile (min end >= last query + 1).
    Partial tiles are refined by the mask function ``kv <= q < end[kv]``.
    """
    from torch.nn.attention.flex_attention import BlockMask
    n = len(ends)
    tiles = -(-n // block)
    end = torch.tensor(list(ends), dtype=torch.long, device=device)
    padded = torch.cat([end, end.new_full((tiles * block - n,), -1)]).view(tiles, block)
    reach = padded.max(dim=1).values  # per key tile: the furthest query any of its keys is visible from
    floor = torch.where(padded < 0, padded.new_full((), n), padded).min(dim=1).values
    start = torch.arange(tiles, device=device) * block
    last = torch.clamp(start + block, max=n)  # one past each tile's last index
    q_first, q_last = start[:, None], last[:, None]
    k_first, k_last = start[None, :], last[None, :]
    any_visible = (k_first < q_last) & (reach[None, :] > q_first)
    full = any_visible & (k_last - 1 <= q_first) & (floor[None, :] >= q_last)
    partial = any_visible & ~full

    def indices(flags: Any) -> Tuple[Any, Any]:
        counts = flags.sum(dim=1, dtype=torch.int32)
        order = torch.argsort((~flags).to(torch.int8), dim=1, stable=True).to(torch.int32)
        return counts[None, None], order[None, None]

    keys_end = torch.cat([end, end.new_zeros(tiles * block - n)])  # a padding key (end 0) is never visible

    def mask_mod(batch: Any, head: Any, q: Any, kv: Any) -> Any:  # noqa: ARG001  (flex attention's mask_mod signature)
        return (kv <= q) & (q < keys_end[kv])

    kv_num, kv_index = indices(partial)
    full_num, full_index = indices(full)
    return BlockMask.from_kv_blocks(kv_num, kv_index, full_num, full_index, BLOCK_SIZE=block,
                                    mask_mod=mask_mod, seq_lengths=(n, n))
