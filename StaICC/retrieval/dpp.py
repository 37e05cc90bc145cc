"""DPP retrieval (Ye et al. 2023, as in OpenICL): relevant demonstrations that are diverse as a set.

Per query, the ``candidates`` most similar demonstrations form a determinantal point
process with kernel L_ij = r_i * s_ij * r_j: r_i = exp((cos(q, d_i) + 1) / 2 - max) /
(2 * scale_factor)) rewards relevance to the query, s_ij = (cos(d_i, d_j) + 1) / 2
penalises demonstrations similar to each other.  The greedy MAP inference of Chen et
al. (2018) adds, k times, the candidate that increases log det(L_S) the most.
"""
import math
from operator import mul
from typing import Any, Dict, List, Optional

from ..extras import require
from ..validation import check_int
from .base import EmbedFn, Progress, Retriever, _check_pool, _top_k, check_order, check_parameter, resolve_backend
from .embedding import EmbeddingSpace
from .reference_embedder import reference_embedder
from ..numeric import sequential_sum


def dpp_kernel(relevance: List[float], vectors: List[List[float]], scale_factor: float,
               backend: str = "python") -> List[List[float]]:
    """L_ij = r_i * (cos_ij + 1) / 2 * r_j with r_i = exp(((rel_i + 1) / 2 - max_j (rel_j + 1) / 2) / (2 * scale)).

    ``backend="numpy"`` computes the cosines as one matrix product (rounding may differ
    in the last bits, and so may near-ties of the greedy choice).
    """
    shifted = [(r + 1) / 2 for r in relevance]
    top = max(shifted)
    weight = [math.exp((s - top) / (2 * scale_factor)) for s in shifted]
    if backend == "numpy":
        numpy = require("numpy", "backend='numpy' of the DPP retriever")
        matrix = numpy.asarray(vectors, dtype=float)
        w = numpy.asarray(weight)
        return (w[:, None] * ((matrix @ matrix.T + 1) / 2) * w[None, :]).tolist()
    return [[weight[i] * ((sequential_sum(map(mul, vectors[i], vectors[j])) + 1) / 2) * weight[j]
             for j in range(len(vectors))] for i in range(len(vectors))]


def greedy_map_dpp(kernel: List[List[float]], k: int) -> List[int]:
    """k positions chosen greedily by the largest gain in log det (Chen et al. 2018's incremental Cholesky).

    d2[i] is the squared residual of candidate i against the span of the chosen ones;
    the next pick is the unchosen candidate with the largest d2 (ties: lower position).
    Unlike OpenICL's copy, a chosen candidate is never chosen again when every residual
    is ~0 (a kernel of rank below k): the next pick is then the best remaining residual.
    """
    n = len(kernel)
    d2 = [kernel[i][i] for i in range(n)]
    rows: List[List[float]] = []  # rows[t][i]: the t-th Cholesky coefficient of candidate i
    chosen: List[int] = []
    taken = [False] * n
    while len(chosen) < k:
        best = max((i for i in range(n) if not taken[i]), key=lambda i: (d2[i], -i))
        chosen.append(best)
        taken[best] = True
        if len(chosen) == k:
            break
        d = math.sqrt(d2[best]) if d2[best] > 0 else 0.0
        if d == 0.0:
            e = [0.0] * n
        else:
            e = [(kernel[best][i] - sequential_sum(row[best] * row[i] for row in rows)) / d for i in range(n)]
        rows.append(e)
        d2 = [d2[i] - e[i] * e[i] for i in range(n)]
    return chosen


class DPPRetriever(Retriever):
    """Per query, k demonstrations by greedy MAP inference of a DPP over its ``candidates`` nearest ones.

    ``embed_fn`` maps a text to a vector (default: :func:`reference_embedder`);
    ``candidates`` (default max(4k, 50), never fewer than k) bounds the DPP to the
    most similar demonstrations; ``scale_factor`` (OpenICL: 0.1) trades relevance
    (small) against diversity (large).  The picks are ordered by relevance (OpenICL's
    order): most relevant last with ``order="ascending"`` (next to the query), first
    with ``"descending"``.  Deterministic: no randomness is involved.  ``backend="auto"``
    (the default) uses NumPy where it is installed, pure Python elsewhere; the queries'
    progress is shown on a terminal (``progress=`` True/False forces it).
    """

    def __init__(self, embed_fn: Optional[EmbedFn] = None, candidates: Optional[int] = None,
                 scale_factor: float = 0.1, *, backend: str = "auto", order: str = "ascending",
                 dedup: bool = True, progress: Optional[bool] = None) -> None:
        super().__init__(dedup=dedup)
        owner = type(self).__name__
        self.progress = progress
        self.space = EmbeddingSpace(embed_fn or reference_embedder(), "cosine", backend=resolve_backend(backend, owner),
                                    owner=owner)
        self.candidates = None if candidates is None else check_int(candidates, "candidates", minimum=1,
                                                                    at=self._at())
        self.scale_factor = check_parameter(scale_factor, "scale_factor", owner, 1e-6, 1e6)
        self.order = check_order(order, owner)

    def _parameters(self) -> Dict[str, Any]:
        return {**self.space.describe(), "candidates": self.candidates, "scale_factor": self.scale_factor,
                "order": self.order, **super()._parameters()}

    def _select(self, demo_texts, _demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        self.space.index(demo_texts)
        vectors = self.space.vectors
        size = max(self.candidates or max(4 * k, 50), k)
        rows = []
        bar = Progress(len(query_texts), "DPP: query", self.progress)
        for q, (similarities, ban) in enumerate(zip(self.space.similarity_rows(query_texts), banned)):
            bar.update()
            relevance = list(similarities)  # _top_k scores the banned ones -inf in its own copy
            available = len(similarities) - len(ban)
            _check_pool(k, available, q)
            pool = _top_k(similarities, min(size, available), q, ban, {})
            kernel = dpp_kernel([relevance[d] for d in pool], [vectors[d] for d in pool], self.scale_factor,
                                self.space.backend)
            picks = [pool[p] for p in greedy_map_dpp(kernel, k)]
            picks.sort(key=lambda d: (-relevance[d], d))
            rows.append(picks[::-1] if self.order == "ascending" else picks)
        bar.close()
        return rows
