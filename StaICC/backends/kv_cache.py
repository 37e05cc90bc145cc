"""The KV cache across transformers releases: which argument carries it, and why a model cannot reuse one.

transformers 5.24 renamed the forward's KV-cache argument and output field from ``past_key_values``
to ``cache``; the engine reads the model's forward signature and uses whichever it takes
(:data:`CACHE_ARGUMENTS`), so prefix sharing works with every release the ``[hf]`` extra allows.
A model that cannot continue a shared prefix from its cache gets a reason
(:func:`why_no_prefix_sharing`), which the engine says in one line and records.
"""
from typing import Any, Optional, Sequence

from ..errors import OperationError
from ..extras import require

#: the forward argument (and output field) that carries the KV cache: transformers < 5.24, then >= 5.24
CACHE_ARGUMENTS = ("past_key_values", "cache")


def output_cache(output: Any) -> Any:
    """The KV cache a forward returned, under either name (``past_key_values`` before transformers 5.24, ``cache`` since)."""
    for name in CACHE_ARGUMENTS:
        cache = output.get(name) if hasattr(output, "get") else getattr(output, name, None)
        if cache is not None:
            return cache
    raise OperationError(f"CausalLMScorer: the model returned no KV cache (no {' or '.join(CACHE_ARGUMENTS)} in its "
                         "output) although use_cache=True; pass share_prefixes=False")


def why_no_prefix_sharing(model: Any, takes_position_ids: bool, cache_argument: Optional[str]) -> Optional[str]:
    """Why a model cannot continue a shared prefix from its KV cache (None: it can)."""
    name = type(model).__name__
    if not takes_position_ids:
        return f"{name}.forward takes no position_ids, so a continuation cannot start at the prefix's length"
    if cache_argument is None:
        return (f"{name}.forward takes no KV cache argument (looked for {' or '.join(CACHE_ARGUMENTS)}); "
                "each prompt is computed whole")
    if not full_attention(model):
        return f"{name} has sliding-window layers, which would drop part of a cached prefix"
    return None


def selected_cache(cache: Any, rows: Sequence[int], select: Any) -> Any:
    """A new DynamicCache holding the given rows of a batch's cache (a view when all rows are one)."""
    transformers = require("transformers", "CausalLMScorer prefix sharing")
    layers = getattr(cache, "layers", None)
    if layers is None or not all(hasattr(layer, "keys") and hasattr(layer, "values") for layer in layers):
        raise OperationError(f"CausalLMScorer: cannot reuse this model's KV cache ({type(cache).__name__}) for "
                             "shared prefixes; pass share_prefixes=False")
    if len(set(rows)) == 1:
        row, count = rows[0], len(rows)
        data = [(layer.keys[row:row + 1].expand(count, -1, -1, -1), layer.values[row:row + 1].expand(count, -1, -1, -1))
                for layer in layers]
    else:
        data = [(layer.keys.index_select(0, select), layer.values.index_select(0, select)) for layer in layers]
    return transformers.DynamicCache(ddp_cache_data=data)


def full_attention(model: Any) -> bool:
    """Whether every layer attends to all earlier positions (sliding windows would drop a cached prefix)."""
    config = getattr(model, "config", None)
    if config is None:
        return False
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    layer_types = getattr(config, "layer_types", None)
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        return False
    return not (getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True))
