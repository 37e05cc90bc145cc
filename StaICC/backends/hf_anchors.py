"""Label-word anchors: the attention hook that re-weights what the last position reads from the demonstrations' labels.

Wang et al. (EMNLP 2023, "Label Words are Anchors", arXiv 2305.14160) find that the
prediction at the last position reads the demonstrations' label words (the anchors), and
calibrate by re-weighting that attention, per layer l, head h and class c:

    Â⁽ˡʰ⁾(q, p) = exp(β⁽ˡʰᶜ⁾) · A⁽ˡʰ⁾(q, p)   for every position p of a label word of class c,

q the last position, A the softmax attention (not renormalised after the scaling, as in the
paper), every other weight unchanged.  :func:`anchor_answer` computes, for one prompt, the
label log-probabilities at β = 0 and their Jacobian d log q_k / d β (the answer of a request of
kind ``"anchors"``); :func:`reweighted_log_probs` the exact re-weighted forward for a given β.
Both run the model in eager attention through :func:`reweighting`, the documented hook: a
context manager that registers an attention function (``transformers``' ``AttentionInterface``)
computing eager attention and multiplying the anchor weights, and restores the model's own
attention implementation on exit.  It serves the model families whose attention layers call that
interface and know their ``layer_idx`` (Llama, Qwen, Mistral, GPT-2 ... in ``transformers`` 5), one
prompt at a time.

The anchors are the last token of every whole-word occurrence of a label word before the last
position (the demonstrations' labels; a query whose text contains a label word adds that
occurrence too).  The label scores are the standard kernel's: the label words' token ids
(:func:`~StaICC.backends.kernels.label_token_ids`) at the last position, log-softmaxed over the
label space.
"""
import contextlib
import re
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from .kernels import label_token_ids

#: the attention implementation the hook registers (eager attention with the anchors re-weighted)
HOOK_NAME = "staicc_anchors"
_ACTIVE: List[Any] = []  # the (β, positions) of the forward in progress: a stack, one entry per open hook


def anchor_positions(tokenizer: Any, prompt: str, labels: Sequence[str]) -> List[List[int]]:
    """Per label: the token index of the last token of each whole-word occurrence of the label in ``prompt``
    (the encoding with the tokenizer's special tokens, as the scorer encodes), the last position excluded."""
    encoded = tokenizer(prompt, return_offsets_mapping=True)
    ends = [end for _start, end in encoded["offset_mapping"]]
    last = len(encoded["input_ids"]) - 1
    out = []
    for label in labels:
        positions = []
        for match in re.finditer(r"(?<!\w)" + re.escape(label) + r"(?!\w)", prompt):
            token = next((i for i, end in enumerate(ends) if end >= match.end() and end > 0), None)
            if token is not None and token < last and token not in positions:
                positions.append(token)
        out.append(positions)
    return out


def _attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float,
               dropout: float = 0.0, **_kwargs: Any) -> Tuple[Any, Any]:  # noqa: ARG001  (the interface's signature; a scorer runs in eval mode)
    """Eager attention, then the last query position's weights on each class's anchors times exp(β[l, h, c])."""
    import torch
    groups = query.shape[1] // key.shape[1]
    key = key.repeat_interleave(groups, dim=1)
    value = value.repeat_interleave(groups, dim=1)
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask[:, :, :, : key.shape[-2]]
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.promote_types(query.dtype, torch.float32))
    weights = weights.to(query.dtype)  # eager attention's softmax, in float32 at least
    beta, positions = _ACTIVE[-1]
    factor = torch.ones_like(weights)
    for c, anchors in enumerate(positions):
        if anchors:
            scale = torch.exp(beta[module.layer_idx, :, c]).to(weights.dtype)
            factor[0, :, -1, anchors] = scale[:, None].expand(-1, len(anchors))
    output = torch.matmul(weights * factor, value).transpose(1, 2).contiguous()
    return output, weights


@contextlib.contextmanager
def reweighting(model: Any, beta: Any, positions: Sequence[Sequence[int]]) -> Iterator[None]:
    """Within the block, ``model``'s attention is eager with the anchors re-weighted by exp(``beta``)
    (``beta``: a layers × heads × classes tensor; ``positions``: per class, its anchors' token indexes)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask
    AttentionInterface.register(HOOK_NAME, _attention)
    AttentionMaskInterface.register(HOOK_NAME, eager_mask)
    config = model.config
    before = config._attn_implementation
    _ACTIVE.append((beta, [list(p) for p in positions]))
    config._attn_implementation = HOOK_NAME
    try:
        yield
    finally:
        config._attn_implementation = before
        _ACTIVE.pop()


def _shape(model: Any) -> Tuple[int, int]:
    config = model.config
    return int(config.num_hidden_layers), int(config.num_attention_heads)


def reweighted_log_probs(model: Any, tokenizer: Any, prompt: str, labels: Sequence[str],
                         beta: Optional[Any] = None) -> Any:
    """log q_k(β): the label log-probabilities of ``prompt`` with the anchors re-weighted by ``beta``
    (layers × heads × classes; zeros when None), a tensor that carries β's gradient."""
    import torch
    layers, heads = _shape(model)
    if beta is None:
        beta = torch.zeros(layers, heads, len(labels), dtype=torch.float32)
    device = next(model.parameters()).device
    ids = torch.tensor([tokenizer(prompt)["input_ids"]], device=device)
    positions = anchor_positions(tokenizer, prompt, labels)
    with reweighting(model, beta.to(device), positions):
        logits = model(input_ids=ids).logits[0, -1]
    chosen = logits[torch.tensor(label_token_ids(tokenizer, list(labels)), device=device)]
    chosen = chosen.to(torch.promote_types(chosen.dtype, torch.float32))
    return torch.log_softmax(chosen, dim=0)


def anchor_answer(model: Any, tokenizer: Any, prompt: str, labels: Sequence[str]) -> Any:
    """The answer of an ``"anchors"`` request: [log q (K values), then d log q_k / d β for k = 1..K, each
    flattened layers × heads × classes], float32 (a NumPy vector); β = 0."""
    import torch
    layers, heads = _shape(model)
    beta = torch.zeros(layers, heads, len(labels), dtype=torch.float32, requires_grad=True)
    with torch.enable_grad():
        log_q = reweighted_log_probs(model, tokenizer, prompt, labels, beta)
        rows = [torch.autograd.grad(log_q[k], beta, retain_graph=k + 1 < len(labels))[0].reshape(-1)
                for k in range(len(labels))]
    return torch.cat([log_q.detach(), *rows]).float().cpu().numpy()
