"""MDL retrieval (Wu et al. 2023, "self-adaptive in-context learning", as in OpenICL).

Per query: take its ``candidates`` nearest demonstrations, draw ``select_time``
candidate sets of k of them (the first is the k nearest, the others random), ask the
model for its label distribution of the query after each set, and keep the set under
which the model is most certain (the smallest entropy: the shortest code length of the
labels, the minimum-description-length principle).  The model is queried here, while
the demonstrations are chosen, so MDL costs ``select_time`` extra calls per query.
"""
import math
import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..validation import check_int
from .base import EmbedFn, Retriever, _check_pool, _top_k, callable_name, check_callable, check_order
from .embedding import EmbeddingSpace
from .reference_embedder import reference_embedder
from ..numeric import sequential_sum

#: ``model(prompt, label_space) -> one score per label``: the package's model interface
ModelFn = Callable[[str, List[str]], Sequence[float]]
#: ``prompt_fn(demonstrations as (text, label), query text) -> prompt``
PromptFn = Callable[[List[Tuple[str, str]], str], str]


def default_prompt(demonstrations: List[Tuple[str, str]], query: str) -> str:
    """"Input: <text>\\nLabel: <label>\\n\\n" per demonstration, then "Input: <query>\\nLabel: "."""
    return "".join(f"Input: {text}\nLabel: {label}\n\n" for text, label in demonstrations) + f"Input: {query}\nLabel: "


def label_entropy(scores: Sequence[float]) -> float:
    """Entropy (nats) of the scores read as probabilities when they are, as logits (softmaxed) otherwise."""
    values = [float(v) for v in scores]
    if any(not math.isfinite(v) for v in values):
        raise InvalidValueError(f"the MDL model returned a non-finite score: {values}")
    total = sequential_sum(values)
    if all(v >= 0 for v in values) and abs(total - 1.0) < 1e-6:
        probabilities = [v / total for v in values]
    else:
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        total = sequential_sum(exps)
        probabilities = [e / total for e in exps]
    return -math.fsum(p * math.log(p) for p in probabilities if p > 0)


class MDLRetriever(Retriever):
    """Per query, the candidate set of k demonstrations that minimises the model's label entropy.

    ``model`` is any function the package can evaluate (``model(prompt, label_space)
    -> one score per label``).  ``prompt_fn`` writes the scored prompt (default
    :func:`default_prompt`; pass one that mirrors your benchmark's template).  The label
    space is every distinct demonstration label, in order of first appearance.
    ``candidates`` (default max(4k, 30)) nearest demonstrations by ``embed_fn``
    (default :func:`reference_embedder`) are the pool; ``select_time`` (OpenICL: 5)
    sets are scored, the first the k nearest, the others drawn by
    ``random.Random(f"{seed}/{query index}")``, so a query's choice does not depend on
    the other queries.  Entropy ties keep the earlier set.  The chosen set is put in
    prompt order by similarity, most similar last with ``order="ascending"``, and the
    prompt scored is written in that order.
    """

    def __init__(self, model: ModelFn, embed_fn: Optional[EmbedFn] = None, candidates: Optional[int] = None,
                 select_time: int = 5, *, prompt_fn: Optional[PromptFn] = None, seed: int = 1,
                 backend: str = "python", order: str = "ascending", dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        check_callable(model, "model", "prompt, label_space -> scores", owner)
        self.model = model
        self.prompt_fn = prompt_fn or default_prompt
        check_callable(self.prompt_fn, "prompt_fn", "demonstrations, query -> prompt", owner)
        self.space = EmbeddingSpace(embed_fn or reference_embedder(), "cosine", backend=backend, owner=owner)
        self.candidates = None if candidates is None else check_int(candidates, "candidates", minimum=1,
                                                                    at=self._at())
        self.select_time = check_int(select_time, "select_time", minimum=1, at=self._at())
        self.seed = check_int(seed, "seed", at=self._at())
        self.order = check_order(order, owner)

    def _parameters(self) -> Dict[str, Any]:
        return {"model": callable_name(self.model), "prompt_fn": callable_name(self.prompt_fn),
                **self.space.describe(), "candidates": self.candidates, "select_time": self.select_time,
                "seed": self.seed, "order": self.order, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        for i, label in enumerate(demo_labels):
            if label is None:
                raise InvalidValueError(f"MDLRetriever needs labelled demonstrations; demonstrations[{i}] has none")
        label_space = list(dict.fromkeys(demo_labels))
        self.space.index(demo_texts)
        size = max(self.candidates or max(4 * k, 30), k)
        rows = []
        for q, (similarities, ban) in enumerate(zip(self.space.similarities(query_texts), banned)):
            relevance = list(similarities)
            available = len(similarities) - len(ban)
            _check_pool(k, available, q)
            pool = _top_k(similarities, min(size, available), q, ban, {})
            rng = random.Random(f"{self.seed}/{q}")
            best: Optional[List[int]] = None
            best_entropy = math.inf
            for t in range(self.select_time):
                chosen = pool[:k] if t == 0 else rng.sample(pool, k)
                ordered = sorted(chosen, key=lambda d: (-relevance[d], d))
                if self.order == "ascending":
                    ordered.reverse()
                prompt = self.prompt_fn([(demo_texts[d], demo_labels[d]) for d in ordered], query_texts[q])
                entropy = label_entropy(self.model(prompt, list(label_space)))
                if entropy < best_entropy:
                    best, best_entropy = ordered, entropy
            rows.append(best if best is not None else ordered)
        return rows
