"""Vote-k (Su et al. 2022, as in OpenICL): representative, mutually different demonstrations for every query.

Every demonstration votes for its ``votek_k`` nearest neighbours (cosine of the
embeddings, itself excluded); demonstrations are ranked by the number of votes they
receive, and taken greedily unless the set of demonstrations voting for a candidate
overlaps too much with the voters of one already taken.  The choice does not depend on
the query: it is a *selective annotation* method (pick the few examples worth
labelling), so every query gets the same demonstrations.
"""
import random
from operator import mul
from typing import Any, Dict, List, Optional, Set

from ..extras import require
from ..validation import check_int
from .base import EmbedFn, Retriever, _best_positions, _check_pool, check_order, check_parameter
from .embedding import EmbeddingSpace
from .reference_embedder import reference_embedder


def pairwise_similarities(vectors: List[List[float]], backend: str) -> List[List[float]]:
    """The matrix of dot products between the (unit) vectors; ``backend="numpy"`` for large pools."""
    if backend == "numpy" and vectors:
        numpy = require("numpy", "backend='numpy' of the Vote-k retriever")
        matrix = numpy.asarray(vectors, dtype=float)
        return (matrix @ matrix.T).tolist()
    return [[sum(map(mul, a, b)) for b in vectors] for a in vectors]


def vote_graph(similarity: List[List[float]], votek_k: int) -> List[Set[int]]:
    """voters[j]: the demonstrations i != j having j among their ``votek_k`` most similar others.

    Ties go to the lower index, so the graph depends only on the similarities.
    """
    n = len(similarity)
    voters: List[Set[int]] = [set() for _ in range(n)]
    for i, row in enumerate(similarity):
        others = list(row)
        others[i] = float("-inf")
        for j in _best_positions(others, min(votek_k, n - 1)):
            voters[j].add(i)
    return voters


def votek_ranking(voters: List[Set[int]], overlap_threshold: float, seed: int) -> List[int]:
    """Every demonstration index, best first: the Vote-k picks, then the rest in a seeded random order.

    Candidates are visited by decreasing vote count (ties: lower index); a candidate
    with at least one vote is picked unless, for some demonstration already picked,
    |voters(candidate) & voters(picked)| >= overlap_threshold * |voters(candidate)|.
    The remaining demonstrations follow in the order of ``random.Random(seed)`` shuffling.
    """
    order = sorted(range(len(voters)), key=lambda j: (-len(voters[j]), j))
    picked: List[int] = []
    for j in order:
        if not voters[j]:
            break
        limit = overlap_threshold * len(voters[j])
        if all(len(voters[j] & voters[p]) < limit for p in picked):
            picked.append(j)
    taken = set(picked)
    rest = [j for j in range(len(voters)) if j not in taken]
    random.Random(seed).shuffle(rest)
    return picked + rest


class VoteKRetriever(Retriever):
    """Vote-k selective annotation: the same k representative demonstrations for every query.

    ``embed_fn`` maps a text to a vector (default: :func:`reference_embedder`).
    ``votek_k`` is the number of neighbours each demonstration votes for (OpenICL: 3);
    ``overlap_threshold`` (OpenICL: 1.0) skips a candidate when that share of its voters
    also voted for a demonstration already picked.  Demonstrations left unpicked are
    filled in a ``seed``-ed random order.  A query whose text equals a picked
    demonstration (dedup) gets the next one of the ranking instead.  In prompt order the
    first pick is last with ``order="ascending"`` (next to the query), first with
    ``"descending"`` (OpenICL's order).  The pairwise similarities cost O(N^2) for N
    demonstrations: pass ``backend="numpy"`` for pools of more than a few hundred.
    """

    def __init__(self, embed_fn: Optional[EmbedFn] = None, votek_k: int = 3, overlap_threshold: float = 1.0, *,
                 seed: int = 1, backend: str = "python", order: str = "ascending", dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        self.space = EmbeddingSpace(embed_fn or reference_embedder(), "cosine", backend=backend, owner=owner)
        self.votek_k = check_int(votek_k, "votek_k", minimum=1, at=self._at())
        self.overlap_threshold = check_parameter(overlap_threshold, "overlap_threshold", owner, 0.0, 1.0)
        self.seed = check_int(seed, "seed", at=self._at())
        self.order = check_order(order, owner)

    def _parameters(self) -> Dict[str, Any]:
        return {**self.space.describe(), "votek_k": self.votek_k, "overlap_threshold": self.overlap_threshold,
                "seed": self.seed, "order": self.order, **super()._parameters()}

    def ranking(self, demo_texts: List[str]) -> List[int]:
        """Every demonstration index, best first (see :func:`votek_ranking`)."""
        self.space.index(demo_texts)
        similarity = pairwise_similarities(self.space.vectors, self.space.backend)
        return votek_ranking(vote_graph(similarity, self.votek_k), self.overlap_threshold, self.seed)

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        ranking = self.ranking(demo_texts)
        rows = []
        for q, ban in enumerate(banned):
            _check_pool(k, len(ranking) - len(ban), q)
            best = [d for d in ranking if d not in ban][:k] if ban else ranking[:k]
            rows.append(best[::-1] if self.order == "ascending" else best)
        return rows


