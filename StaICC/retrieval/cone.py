"""ConE (Peng et al. 2024, "Revisiting demonstration selection strategies in in-context learning").

A demonstration helps when the model understands the test input better after reading
it: ConE scores each of the query's ``candidates`` nearest demonstrations by the
conditional entropy of the *query text* given that demonstration, estimated as the
language model's cross-entropy -log p(query block | demonstration block), and keeps the
k lowest.  This needs the log-likelihood of arbitrary text, which the package's
label-score model interface does not give: the user passes ``loglik_fn``;
:func:`causal_lm_loglik` builds one from a HuggingFace causal LM.
"""
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import InvalidValueError
from ..validation import check_int
from .base import EmbedFn, Retriever, _check_pool, _top_k, callable_name, check_callable, check_order
from .embedding import EmbeddingSpace
from .reference_embedder import reference_embedder

#: ``loglik_fn(context, continuation) -> log p(continuation | context)`` in nats, summed over its tokens
LoglikFn = Callable[[str, str], float]


def default_blocks(demonstration: Tuple[str, str], query: str) -> Tuple[str, str]:
    """(context, continuation): "Input: <text>\\nLabel: <label>\\n\\n" and "Input: <query>\\nLabel:"."""
    text, label = demonstration
    return f"Input: {text}\nLabel: {label}\n\n", f"Input: {query}\nLabel:"


def causal_lm_loglik(model: Any, tokenizer: Any) -> LoglikFn:
    """log p(continuation | context) under a HuggingFace causal LM (torch and transformers needed).

    The context is tokenized as the tokenizer does by default (BOS included where the
    model uses one), the continuation without special tokens, and the two id lists are
    concatenated, so the continuation's tokens are the same whatever the context.
    """
    from ..extras import require
    torch = require("torch", "causal_lm_loglik")

    def loglik(context: str, continuation: str) -> float:
        head = tokenizer(context)["input_ids"]
        tail = tokenizer(continuation, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([head + tail])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].double()
        logprobs = torch.log_softmax(logits[len(head) - 1:-1], dim=-1)
        return float(logprobs.gather(1, torch.tensor(tail).unsqueeze(1)).sum())

    loglik.__qualname__ = f"causal_lm_loglik({getattr(model, 'name_or_path', type(model).__name__)})"
    return loglik


class ConERetriever(Retriever):
    """Per query, the k demonstrations after which the model finds the query text most likely.

    Among the query's ``candidates`` nearest demonstrations by ``embed_fn`` (default
    :func:`reference_embedder`; default max(4k, 30) candidates), each is scored alone by
    CE = -loglik_fn(context, continuation) with ``blocks_fn(demonstration, query)``
    giving (context, continuation) (default :func:`default_blocks`); the k lowest are
    kept, ties to the more similar.  In prompt order the lowest CE is last with
    ``order="ascending"`` (next to the query).  Costs ``candidates`` log-likelihood calls
    per query.  Deterministic.
    """

    def __init__(self, loglik_fn: LoglikFn, embed_fn: Optional[EmbedFn] = None, candidates: Optional[int] = None, *,
                 blocks_fn: Optional[Callable[[Tuple[str, str], str], Tuple[str, str]]] = None,
                 backend: str = "python", order: str = "ascending", dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        check_callable(loglik_fn, "loglik_fn", "context, continuation -> log-likelihood", owner)
        self.loglik_fn = loglik_fn
        self.blocks_fn = blocks_fn or default_blocks
        check_callable(self.blocks_fn, "blocks_fn", "demonstration, query -> (context, continuation)", owner)
        self.space = EmbeddingSpace(embed_fn or reference_embedder(), "cosine", backend=backend, owner=owner)
        self.candidates = None if candidates is None else check_int(candidates, "candidates", minimum=1,
                                                                    at=self._at())
        self.order = check_order(order, owner)

    def _parameters(self) -> Dict[str, Any]:
        return {"loglik_fn": callable_name(self.loglik_fn), "blocks_fn": callable_name(self.blocks_fn),
                **self.space.describe(), "candidates": self.candidates, "order": self.order,
                **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        self.space.index(demo_texts)
        size = max(self.candidates or max(4 * k, 30), k)
        rows = []
        for q, (similarities, ban) in enumerate(zip(self.space.similarities(query_texts), banned)):
            available = len(similarities) - len(ban)
            _check_pool(k, available, q)
            pool = _top_k(similarities, min(size, available), q, ban, {})  # most similar first
            scored: List[Tuple[float, int, int]] = []
            for rank, d in enumerate(pool):
                context, continuation = self.blocks_fn((demo_texts[d], demo_labels[d] or ""), query_texts[q])
                value = float(self.loglik_fn(context, continuation))
                if value != value:
                    raise InvalidValueError(f"ConERetriever: loglik_fn returned NaN for query {q}, demonstration {d}")
                scored.append((-value, rank, d))
            best = [d for _, _, d in sorted(scored)[:k]]
            rows.append(best[::-1] if self.order == "ascending" else best)
        return rows
