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
from .base import (EmbedFn, Progress, Retriever, _best_positions, _check_pool, check_order, check_parameter,
                   resolve_backend)
from .embedding import EmbeddingSpace
from .reference_embedder import reference_embedder


def nearest_others(vectors: List[List[float]], votek_k: int, backend: str,
                   progress: Optional[bool] = False) -> List[List[int]]:
    """Per demonstration, its ``votek_k`` most similar others (dot products of unit vectors), ties to the lower index.

    ``backend="numpy"`` computes the N x N similarities as one matrix product and sorts
    them with a stable sort (the same ties rule); the Python path scans each row, and
    shows its progress (see :class:`~StaICC.retrieval.base.Progress`).
    """
    n = len(vectors)
    count = min(votek_k, n - 1)
    if backend == "numpy" and n:
        numpy = require("numpy", "backend='numpy' of the Vote-k retriever")
        matrix = numpy.asarray(vectors, dtype=float)
        similarity = matrix @ matrix.T
        numpy.fill_diagonal(similarity, -numpy.inf)
        return numpy.argsort(-similarity, axis=1, kind="stable")[:, :count].tolist()
    neighbours = []
    bar = Progress(n, "Vote-k: similarities of demonstration", progress)
    for i, a in enumerate(vectors):
        row = [sum(map(mul, a, b)) for b in vectors]
        row[i] = float("-inf")
        neighbours.append(_best_positions(row, count))
        bar.update()
    bar.close()
    return neighbours


def vote_graph(neighbours: List[List[int]]) -> List[Set[int]]:
    """voters[j]: the demonstrations i having j among their nearest others."""
    voters: List[Set[int]] = [set() for _ in neighbours]
    for i, row in enumerate(neighbours):
        for j in row:
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
    demonstrations: ``backend="auto"`` (the default) computes them with NumPy where it is
    installed (``"numpy"``), in pure Python elsewhere (``"python"``, which shows its
    progress on a terminal; ``progress=`` True/False forces it).
    """

    def __init__(self, embed_fn: Optional[EmbedFn] = None, votek_k: int = 3, overlap_threshold: float = 1.0, *,
                 seed: int = 1, backend: str = "auto", order: str = "ascending", dedup: bool = True,
                 progress: Optional[bool] = None) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        self.progress = progress
        self.space = EmbeddingSpace(embed_fn or reference_embedder(), "cosine", backend=resolve_backend(backend, owner),
                                    owner=owner)
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
        neighbours = nearest_others(self.space.vectors, self.votek_k, self.space.backend, self.progress)
        return votek_ranking(vote_graph(neighbours), self.overlap_threshold, self.seed)

    def _select(self, demo_texts, _demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        ranking = self.ranking(demo_texts)
        rows = []
        for q, ban in enumerate(banned):
            _check_pool(k, len(ranking) - len(ban), q)
            best = [d for d in ranking if d not in ban][:k] if ban else ranking[:k]
            rows.append(best[::-1] if self.order == "ascending" else best)
        return rows


