"""A batch-invariant forward for Llama-family models: a token's numbers depend on its own prompt only.

A library forward pass reduces sums in an order chosen for the shape of the whole call: a
matrix product of 7 rows and one of 2,048 rows split their reductions differently, and an
attention over a padded row or a packed tree adds its terms in another order than over the
prompt alone.  So the last bits of a prompt's scores move with the batch, the packing and
what else is in the call.  This forward fixes every reduction order to depend on the
token's own prompt only:

* **matrix products** run on whole row tiles (:data:`TILE_ROWS`, the last one padded with
  zeros), [tiles, 64, in] x [in, out]: PyTorch folds the tiles into one product of 64·tiles
  rows, and a kernel whose row blocking divides 64 computes every row alike whatever the
  count (measured on CPU: a plain product of 7 rows and one of 300 rows differ, padded to
  whole tiles they do not; on a GPU ``benchmarks/gpu_invariance.sh`` checks it);
* **row-wise reductions** (the RMS norm, the softmax and the log-softmax over the
  vocabulary, attention's dot products and weighted sums) are explicit halving trees
  (:func:`tree_sum`) over the row, padded with zeros to a power of two: a term's place in
  the tree depends on its index alone, and an added zero leaves a sum unchanged bit for bit;
* **attention** is position-aligned: each query gathers the keys of its own root-to-leaf
  path, position 0 to its own position, whether they sit in a padded row, a tree pack or
  another prompt's shared prefix; beyond its position the terms are exact zeros.  So a row
  is a pack of one, and every packing runs this one attention path;
* the rotary tables are computed once per model, in fixed chunks of positions.

Element-wise operations compute each element alone.  The forward reads the weights of the
Hugging Face model it is given (no copy) and computes what its forward computes (RMS norm in
float32, rotary embeddings, grouped-query attention, SiLU MLP), rounding where it rounds.
"""
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

#: rows per matrix-product tile: every product is [TILE_ROWS, in] x [in, out]
TILE_ROWS = 64
#: positions per chunk of the rotary table (each chunk computed with the same shape)
ROPE_CHUNK = 1024
#: elements of a gathered attention block (queries x path x heads x head size) per step: bounds memory only
ATTENTION_ELEMENTS = 1 << 24
#: key positions per attention block: every attention product has this many keys
KEY_BLOCK = 64
#: queries per attention tile (of one path): every attention product has this many query rows per head
QUERY_TILE = 32
#: the numerics a scorer can run: batch-invariant (this module) or the library's own forward
NUMERICS = ("invariant", "fast")
#: model types whose forward this module reproduces
FAMILIES = ("llama", "mistral", "qwen2")


def why_not_invariant(model: Any) -> Optional[str]:
    """None when this forward can compute ``model``; else why not (one phrase)."""
    reason = config_reason(getattr(model, "config", None))
    inner = getattr(model, "model", None)
    if reason is None and (inner is None or not hasattr(inner, "layers") or not hasattr(inner, "rotary_emb")):
        reason = f"{type(model).__name__} has no model.layers and model.rotary_emb"
    return reason


def config_reason(config: Any) -> Optional[str]:
    """What in a model's config (an object, or config.json as a dict) keeps this forward from computing it."""
    def get(name: str, default: Any = None) -> Any:
        return config.get(name, default) if isinstance(config, dict) else getattr(config, name, default)
    kind = get("model_type")
    if kind not in FAMILIES:
        return f"the model type {kind!r} is not of a family the invariant forward computes ({', '.join(FAMILIES)})"
    if get("hidden_act", "silu") != "silu":
        return f"the model uses the activation {get('hidden_act')!r}, not silu"
    if get("sliding_window") and get("use_sliding_window", kind == "mistral"):
        return "the model has a sliding window"
    scaling = get("rope_scaling") or get("rope_parameters") or {}
    rope = scaling.get("rope_type", scaling.get("type", "default")) if isinstance(scaling, dict) else "default"
    if rope in ("dynamic", "longrope"):
        return f"the model's rotary embedding ({rope}) changes with the sequence length"
    return None


def tree_sum(torch: Any, x: Any, dim: int) -> Any:
    """The sum over ``dim`` as a halving tree: zeros pad it to a power of two, then the upper half is added
    to the lower half until one slice is left.  Term ``j`` meets the same partners in the same order for every
    length its row is padded to, so the sum depends on the row's values only (an added zero changes no bit)."""
    dim = dim % x.dim()
    n = x.shape[dim]
    width = 1 << max(0, (n - 1).bit_length())
    if width != n:
        shape = list(x.shape)
        shape[dim] = width - n
        x = torch.cat([x, x.new_zeros(shape)], dim=dim)
    while width > 1:
        width //= 2
        x = x.narrow(dim, 0, width) + x.narrow(dim, width, width)
    return x.squeeze(dim)


def log_softmax(torch: Any, x: Any) -> Any:
    """Row-wise log-softmax over the last axis with a tree-summed normaliser (float32 in, float32 out)."""
    top = x.amax(dim=-1, keepdim=True)
    shifted = x - top
    extra = -x.shape[-1] % 64  # whole vectors per row: every element's exp takes the same code path
    padded = torch.cat([shifted, shifted.new_full((*x.shape[:-1], extra), float("-inf"))], dim=-1) if extra else shifted
    return shifted - torch.log(tree_sum(torch, torch.exp(padded), -1)).unsqueeze(-1)


@dataclass(frozen=True)
class AttentionChunk:
    """Query tiles that attend together: per tile, :data:`QUERY_TILE` flat query indices of one path and
    that path's keys, position-aligned (column j: the key at position j); ``n`` pads both."""

    queries: Any  # [tiles, QUERY_TILE] flat indices (n: padding)
    positions: Any  # [tiles, QUERY_TILE] the queries' positions
    keys: Any  # [tiles, width] flat index of the path's key at each position (n: none)


def attention_plan(positions: Sequence[int], budget: int) -> List[Tuple[Any, Any, Any]]:
    """Numpy arrays (queries, positions, keys) per chunk for :class:`AttentionChunk` (see :meth:`InvariantForward.plan`).

    The tokens are packs laid out depth first one after another (a row is a pack of one).  A token's parent
    is the latest earlier token one position up (the ancestor whose subtree it is in); a leaf is a token
    that is no token's parent, and every token attends along the path of the first leaf at or after it
    (its own subtree's).  Each leaf's tokens since the previous leaf are cut into tiles of
    :data:`QUERY_TILE`; tiles of similar path length are chunked within ``budget`` tile-keys.
    """
    import numpy as np
    depth = np.asarray(positions, dtype=np.int64)
    n = len(depth)
    index = np.arange(n)
    parent = np.full(n, -1, dtype=np.int64)
    previous = index[depth == 0]
    for level in range(1, int(depth.max()) + 1 if n else 0):
        rows = index[depth == level]
        parent[rows] = previous[np.searchsorted(previous, rows) - 1]
        previous = rows
    leaves = index[np.append(parent[1:] != index[:-1], True)]
    longest = int(depth[leaves].max()) + 1
    paths = np.full((len(leaves), longest), n, dtype=np.int64)
    current = leaves.copy()
    alive = np.ones(len(leaves), dtype=bool)
    while alive.any():  # walk every leaf up to its root, writing each ancestor at its position
        paths[alive, depth[current[alive]]] = current[alive]
        alive &= parent[current] >= 0
        current = np.where(alive, parent[current], current)
    first = np.concatenate([[0], leaves[:-1] + 1])  # each leaf's tokens: first[r] .. leaves[r]
    counts = leaves - first + 1
    tiles = -(-counts // QUERY_TILE)
    tile_leaf = np.repeat(np.arange(len(leaves)), tiles)
    tile_start = first[tile_leaf] + QUERY_TILE * (np.arange(tiles.sum()) - np.repeat(np.cumsum(tiles) - tiles, tiles))
    queries = tile_start[:, None] + np.arange(QUERY_TILE)[None, :]
    queries = np.where(queries <= leaves[tile_leaf][:, None], queries, n)
    last = np.minimum(tile_start + QUERY_TILE - 1, leaves[tile_leaf])  # a tile needs keys up to its last query
    widths = -(-(depth[last] + 1) // KEY_BLOCK) * KEY_BLOCK
    order = np.argsort(widths, kind="stable")
    chunks, start = [], 0
    while start < len(order):
        step = max(1, budget // int(widths[order[min(len(order), start + max(1, budget // int(widths[order[start]]))) - 1]]))
        chunk = order[start:start + step]
        width = int(widths[chunk[-1]])
        keys = paths[tile_leaf[chunk], :width] if width <= longest else np.pad(
            paths[tile_leaf[chunk]], ((0, 0), (0, width - longest)), constant_values=n)
        place = np.where(queries[chunk] < n, np.append(depth, 0)[queries[chunk]], 0)
        chunks.append((queries[chunk], place, keys))
        start += step
    return chunks


class InvariantForward:
    """The model's forward with fixed reduction orders; ``forward(tokens, positions, reads)``."""

    def __init__(self, torch: Any, model: Any) -> None:
        self.torch, self.model = torch, model
        config = model.config
        self.layers = list(model.model.layers)
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self.heads)
        self.scaling = self.head_dim ** -0.5
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        rotary = model.model.rotary_emb
        self._inv_freq = rotary.inv_freq.to(device=self.device, dtype=torch.float32)
        self._rope_scale = float(getattr(rotary, "attention_scaling", 1.0))
        self._cos: Optional[Any] = None
        self._sin: Optional[Any] = None

    # ------------------------------------------------------------ pieces
    def linear(self, x: Any, module: Any) -> Any:
        """``module(x)`` for x [rows, in] in fixed tiles of :data:`TILE_ROWS` rows."""
        torch = self.torch
        rows = x.shape[0]
        tiles = -(-rows // TILE_ROWS)
        if tiles * TILE_ROWS != rows:
            x = torch.cat([x, x.new_zeros(tiles * TILE_ROWS - rows, x.shape[1])])
        out = torch.matmul(x.view(tiles, TILE_ROWS, x.shape[1]), module.weight.t())
        out = out.reshape(tiles * TILE_ROWS, -1)[:rows]
        bias = getattr(module, "bias", None)
        return out + bias if bias is not None else out

    def norm(self, x: Any, module: Any) -> Any:
        """RMS norm in float32 with a tree-summed mean square, as the model's norm rounds."""
        torch = self.torch
        wide = x.to(torch.float32)
        mean_square = tree_sum(torch, wide * wide, -1) / wide.shape[-1]
        eps = getattr(module, "variance_epsilon", None) or getattr(module, "eps", 1e-6)
        return module.weight * (wide * torch.rsqrt(mean_square + eps).unsqueeze(-1)).to(x.dtype)

    def rope(self, positions: Any) -> Tuple[Any, Any]:
        """cos and sin [tokens, head_dim] in the model's dtype, from tables grown in fixed chunks."""
        torch = self.torch
        need = int(positions.max()) + 1 if positions.numel() else 1
        have = 0 if self._cos is None else self._cos.shape[0]
        if need > have:
            chunks_cos, chunks_sin = [], []
            for start in range(have, -(-need // ROPE_CHUNK) * ROPE_CHUNK, ROPE_CHUNK):
                place = torch.arange(start, start + ROPE_CHUNK, device=self.device, dtype=torch.float32)
                freqs = place[:, None] * self._inv_freq[None, :]
                angle = torch.cat((freqs, freqs), dim=-1)
                chunks_cos.append((angle.cos() * self._rope_scale).to(self.dtype))
                chunks_sin.append((angle.sin() * self._rope_scale).to(self.dtype))
            self._cos = torch.cat(([self._cos] if have else []) + chunks_cos)
            self._sin = torch.cat(([self._sin] if have else []) + chunks_sin)
        return self._cos[positions], self._sin[positions]

    def plan(self, positions: Sequence[int]) -> List[AttentionChunk]:
        """The call's attention tiles (:func:`attention_plan`), on the device; chunks bound memory only."""
        budget = max(1, ATTENTION_ELEMENTS // (QUERY_TILE * self.heads))
        move = lambda array: self.torch.from_numpy(array).to(self.device)  # noqa: E731
        return [AttentionChunk(move(q), move(p), move(k)) for q, p, k in attention_plan(positions, budget)]

    def attention(self, q: Any, k: Any, v: Any, plan: List[AttentionChunk]) -> Any:
        """Each query over the keys of its own path (q [n, heads, d], k and v [n, kv_heads, d]).

        Per tile of :data:`QUERY_TILE` queries of one path: the dot products with the path's keys
        (position-aligned, masked after each query's own position) reduce over the head size; the
        weighted sum runs in blocks of :data:`KEY_BLOCK` positions, products of one fixed shape, whose
        partial sums meet in a halving tree (blocks past a query's position are exact zeros).
        """
        torch = self.torch
        n = q.shape[0]
        zero_kv = k.new_zeros(1, self.kv_heads, self.head_dim)
        # [kv, n + 1, d]: index n is the empty slot
        keys = torch.cat([k, zero_kv]).float().transpose(0, 1).contiguous()
        values = torch.cat([v, zero_kv]).float().transpose(0, 1).contiguous()
        queries = torch.cat([q, q.new_zeros(1, self.heads, self.head_dim)]).float()
        out = q.new_empty(n + 1, self.heads * self.head_dim)
        for chunk in plan:
            out[chunk.queries.reshape(-1)] = self._attend(queries, keys, values, chunk).to(q.dtype)
        return out[:n]

    def _attend(self, queries: Any, keys: Any, values: Any, chunk: AttentionChunk) -> Any:
        torch = self.torch
        tiles, width = chunk.keys.shape
        kv, group, d = self.kv_heads, self.heads // self.kv_heads, self.head_dim
        rows, blocks = QUERY_TILE * group, width // KEY_BLOCK
        query = queries[chunk.queries].view(tiles, QUERY_TILE, kv, group, d).permute(2, 0, 1, 3, 4)
        path_keys = keys[:, chunk.keys].view(kv * tiles, width, d)
        scores = torch.matmul(query.reshape(kv * tiles, rows, d), path_keys.transpose(1, 2)) * self.scaling
        later = torch.arange(width, device=chunk.keys.device)[None, None, :] > chunk.positions[:, :, None]
        scores = scores.view(kv, tiles, QUERY_TILE, group, width).masked_fill(later[None, :, :, None, :],
                                                                             float("-inf"))
        weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        total = tree_sum(torch, tree_sum(torch, weights.view(*weights.shape[:-1], blocks, KEY_BLOCK), -1), -1)
        blocked = weights.view(kv * tiles, rows, blocks, KEY_BLOCK).transpose(1, 2).reshape(-1, rows, KEY_BLOCK)
        partial = torch.matmul(blocked, values[:, chunk.keys].view(-1, KEY_BLOCK, d))  # [kv·tiles·blocks, rows, d]
        summed = tree_sum(torch, partial.view(kv, tiles, blocks, rows, d), 2).view(kv, tiles, QUERY_TILE, group, d)
        return (summed / total.unsqueeze(-1)).permute(1, 2, 0, 3, 4).reshape(tiles * QUERY_TILE, self.heads * d)

    # ------------------------------------------------------------ the model
    def forward(self, tokens: List[int], positions: List[int], reads: List[int], want_hidden: bool = False
                ) -> Tuple[Any, Optional[Any]]:
        """Float32 logits [reads, vocab] at the flat indices ``reads`` (and the last hidden state there).

        ``tokens`` and ``positions`` are packs laid out depth first, one after another (:func:`token_paths`).
        """
        torch = self.torch
        device = self.device
        ids = torch.tensor(tokens, dtype=torch.long, device=device)
        place = torch.tensor(positions, dtype=torch.long, device=device)
        plan = self.plan(positions)
        cos, sin = self.rope(place)
        hidden = self.model.get_input_embeddings()(ids)
        for layer in self.layers:
            hidden = self._layer(layer, hidden, cos, sin, plan)
        picked = self.norm(hidden[torch.tensor(reads, dtype=torch.long, device=device)], self.model.model.norm)
        logits = self.linear(picked, self.model.get_output_embeddings()).float()
        return logits, (picked.float() if want_hidden else None)

    def _layer(self, layer: Any, hidden: Any, cos: Any, sin: Any, plan: List[AttentionChunk]) -> Any:
        attention, mlp = layer.self_attn, layer.mlp
        n = hidden.shape[0]
        x = self.norm(hidden, layer.input_layernorm)
        q = self.linear(x, attention.q_proj).view(n, self.heads, self.head_dim)
        k = self.linear(x, attention.k_proj).view(n, self.kv_heads, self.head_dim)
        v = self.linear(x, attention.v_proj).view(n, self.kv_heads, self.head_dim)
        q, k = _rotated(q, cos, sin), _rotated(k, cos, sin)
        hidden = hidden + self.linear(self.attention(q, k, v, plan), attention.o_proj)
        x = self.norm(hidden, layer.post_attention_layernorm)
        gate = self.linear(x, mlp.gate_proj)
        return hidden + self.linear(self.torch.nn.functional.silu(gate) * self.linear(x, mlp.up_proj), mlp.down_proj)


def _rotated(x: Any, cos: Any, sin: Any) -> Any:
    """Rotary embedding of x [n, heads, d] as the model applies it: x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    rotated = x.new_empty(x.shape)
    rotated[..., :half] = -x[..., half:]
    rotated[..., half:] = x[..., :half]
    return x * cos[:, None, :] + rotated * sin[:, None, :]
