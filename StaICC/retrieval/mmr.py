"""Maximal marginal relevance: relevant and mutually different demonstrations."""
import math
from collections import Counter
from operator import mul
from typing import Any, Callable, Dict, List, Optional, Set, Union

from ..validation import check, check_bool, check_choice, Integer, Location
from .base import (EmbedFn, Retriever, Tokenizer, _candidate_pool, _label_groups, _slot_labels, callable_name,
                   check_order, check_parameter)
from .embedding import EmbeddingSpace
from .lexical import BM25Index, bm25_settings
from ..numeric import sequential_sum

class MMRRetriever(Retriever):
    """Maximal marginal relevance: relevant AND mutually different demonstrations.

    Greedily picks argmax  lambda_ * rel(d, q) - (1 - lambda_) * max_{s selected} sim(d, s)
    (the first pick is the most relevant).  With ``similarity="bm25"``, rel is
    the BM25 score divided by the query's best score (in [0, 1]) and sim is the
    cosine between term-frequency vectors; with an embed_fn both are cosines of
    embeddings (``backend`` as in :class:`EmbeddingTopKRetriever`).  Only the
    top-``candidates`` demonstrations by relevance are considered (default
    max(4k, 50), never fewer than k), which keeps 1024 queries over 4096
    demonstrations to about a second.  Ties go to the more relevant, then
    lower-index candidate.  The row is in selection order, reversed for
    ``order="ascending"`` (default: the first pick is last, next to the query).
    ``balanced=True`` gives each label its quota (see :func:`_slot_labels`);
    the pool is then each quota label's top ceil(candidates / labels) (at least
    its quota), so it stays about ``candidates`` in total.
    """

    def __init__(self, lambda_: float = 0.5, candidates: Optional[int] = None,
                 similarity: Union[str, EmbedFn] = "bm25", *, k1: float = 1.5, b: float = 0.75,
                 tokenizer: Optional[Tokenizer] = None, backend: str = "python", order: str = "ascending",
                 balanced: bool = False, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        self.lambda_ = check_parameter(lambda_, "lambda_", owner, 0.0, 1.0)
        if candidates is not None:
            candidates = check(candidates, Integer(1, kind="an int", text="at least 1 (or None for max(4k, 50))"),
                               Location("candidates", self._at()))
        self.candidates = candidates
        if isinstance(similarity, str):
            check_choice(similarity, "similarity", ("bm25",), at=self._at())
            self.space: Optional[EmbeddingSpace] = None
        else:
            self.space = EmbeddingSpace(similarity, "cosine", backend=backend, owner=owner)
        self.k1, self.b, self.tokenizer = bm25_settings(k1, b, tokenizer, owner)
        self.order = check_order(order, owner)
        self.balanced = check_bool(balanced, "balanced", at=self._at())

    def _parameters(self):
        if self.space is None:
            similarity: Dict[str, Any] = {"similarity": "bm25", "k1": self.k1, "b": self.b,
                                          "tokenizer": callable_name(self.tokenizer)}
        else:
            similarity = {"similarity": "embedding", **self.space.describe()}
        return {"lambda_": self.lambda_, "candidates": self.candidates, **similarity, "order": self.order,
                "balanced": self.balanced, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        relevance_rows, pair_similarity = self._relevance_and_similarity(demo_texts, query_texts)
        groups = _label_groups(demo_labels) if self.balanced else {}
        pool_size = max(self.candidates or max(4 * k, 50), k)
        rows = []
        for q, (relevance, ban) in enumerate(zip(relevance_rows, banned)):
            picks = self._greedy(relevance, pair_similarity, demo_labels, k, q, ban, groups, pool_size)
            rows.append(picks[::-1] if self.order == "ascending" else picks)
        return rows

    def _relevance_and_similarity(self, demo_texts: List[str], query_texts: List[str]):
        """Per-query relevance rows, and sim(i, j) between demonstrations."""
        if self.space is not None:
            self.space.index(demo_texts)
            vectors = self.space.vectors
            return self.space.similarities(query_texts), lambda i, j: sequential_sum(map(mul, vectors[i], vectors[j]))
        tokenize = self.tokenizer
        documents = [tokenize(text) for text in demo_texts]
        index = BM25Index(documents, self.k1, self.b)
        term_counts = [Counter(doc) for doc in documents]
        norms = [math.sqrt(sum(c * c for c in counts.values())) for counts in term_counts]

        def tf_cosine(i: int, j: int) -> float:
            a, b = term_counts[i], term_counts[j]
            shared = a.keys() & b.keys()
            return sum(a[t] * b[t] for t in shared) / (norms[i] * norms[j]) if shared else 0.0

        return (index.scores(tokenize(text)) for text in query_texts), tf_cosine

    def _greedy(self, relevance: List[float], similarity: Callable[[int, int], float],
                labels: List[Optional[str]], k: int, q: int, ban: Set[int], groups: Dict[str, List[int]],
                pool_size: int) -> List[int]:
        quotas = Counter(_slot_labels(list(groups), k, q)) if groups else None
        pool = _candidate_pool(relevance, k, q, ban, groups, quotas, pool_size)
        if self.space is None:
            top = max((relevance[d] for d in pool), default=0.0)
            rel = [relevance[d] / top if top > 0 else 0.0 for d in pool]
        else:
            rel = [relevance[d] for d in pool]
        penalty = [0.0] * len(pool)
        taken = [False] * len(pool)
        picks: List[int] = []
        for _ in range(k):
            best, best_value = -1, -math.inf
            for j, d in enumerate(pool):
                if taken[j] or (quotas is not None and not quotas[labels[d]]):
                    continue
                value = self.lambda_ * rel[j] - (1.0 - self.lambda_) * penalty[j]
                if value > best_value:
                    best, best_value = j, value
            taken[best] = True
            chosen = pool[best]
            picks.append(chosen)
            if quotas is not None:
                quotas[labels[chosen]] -= 1
            if len(picks) == k:
                break
            for j, d in enumerate(pool):
                if not taken[j]:
                    s = similarity(d, chosen)
                    penalty[j] = s if len(picks) == 1 else max(penalty[j], s)
        return picks
