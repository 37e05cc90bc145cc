"""Demonstration retrievers: choose which demonstrations each query sees.

The StaICC standard draws demonstrations at random with its stable generator.
Users of AISBench / OpenICL / LLMeBench also know *retrievers* (zero-shot,
fixed, random, BM25 "TopK", embedding TopK, MMR).  A retriever here produces a
*demonstration sampler*: one list of demonstration indexes per query, in prompt
order (the first index is the first demonstration of the prompt).  Any
retriever makes a run non-standard; the core records ``describe()`` in the
result metadata.

Conventions shared by every retriever:

* ``demonstrations`` are ``(inputs, label_text)`` rows, ``queries`` are
  ``(inputs, label_text_or_None)`` rows; multi-input rows are joined with " ".
  Query labels are never read (no label leakage).
* ``dedup=True`` (default): per query, a demonstration whose normalised text
  (lowercase, whitespace collapsed, stripped) equals the query's is never chosen.
* Asking for more demonstrations than a query can get raises ``ValueError``
  (``RandomRetriever(allow_repetition=True)`` excepted).
* Ranked retrievers break score ties by the lower demonstration index and, with
  the default ``order="ascending"``, put the most similar demonstration LAST,
  next to the query; ``order="descending"`` puts it first (OpenICL's order).

Only the standard library is imported; sentence-transformers is imported
lazily by :func:`sentence_transformers_embedder`.
"""
import heapq
import math
import re
from collections import Counter
from operator import itemgetter, mul
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from .rng import StableRandom
from .standard import LCG_MODULUS, SEED

Sampler = List[List[int]]
Tokenizer = Callable[[str], List[str]]
EmbedFn = Callable[[Any], Any]

ORDERS = ("ascending", "descending")
METRICS = ("cosine", "dot")
_NO_BAN: Set[int] = frozenset()  # type: ignore[assignment]
_SCAN_TOP_K = 8  # up to this k, _best_positions locates values by scanning


# --------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------
class Retriever:
    """Base class: validates the inputs once, applies dedup, delegates the choice.

    Subclasses implement :meth:`_select`, which receives demonstration texts and
    labels, query texts, a validated ``k`` and, per query, the set of banned
    (duplicated) demonstration indexes.
    """

    def __init__(self, *, dedup: bool = True) -> None:
        self.dedup = _check_bool(dedup, "dedup")

    def build_sampler(self, demonstrations: Sequence[Any], queries: Sequence[Any], k: int) -> Sampler:
        """One list of demonstration indexes per query, in prompt order."""
        k = check_k(k)
        demo_texts, demo_labels = _read_rows(demonstrations, "demonstrations")
        query_texts, _ = _read_rows(queries, "queries")
        banned = _banned_per_query(demo_texts, query_texts) if self.dedup else [_NO_BAN] * len(query_texts)
        return self._select(demo_texts, demo_labels, query_texts, k, banned)

    def describe(self) -> Dict[str, Any]:
        """JSON-serialisable record of the retriever for result metadata."""
        return {"retriever": type(self).__name__, "parameters": self._parameters()}

    def _parameters(self) -> Dict[str, Any]:
        return {"dedup": self.dedup}

    def _select(self, demo_texts: List[str], demo_labels: List[Optional[str]], query_texts: List[str],
                k: int, banned: List[Set[int]]) -> Sampler:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self._parameters().items())
        return f"{type(self).__name__}({params})"


# --------------------------------------------------------------------------
# zero, fixed, random
# --------------------------------------------------------------------------
class ZeroRetriever(Retriever):
    """Zero-shot: every query gets no demonstration.

    ``k`` is validated but ignored, so the retriever plugs into an experiment
    whatever its configured k.
    """

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        return [[] for _ in query_texts]


class FixKRetriever(Retriever):
    """The same demonstrations, in the given order, for every query.

    ``k`` is validated but ignored: rows have ``len(fix_id_list)`` entries.
    Repeated indexes are kept as given.  With ``dedup=True`` a fixed
    demonstration equal to the query is dropped from that query's row only
    (that row is one shorter); pass ``dedup=False`` to keep rows identical.
    """

    def __init__(self, fix_id_list: Sequence[int], *, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        if isinstance(fix_id_list, (str, bytes)) or not isinstance(fix_id_list, Sequence):
            raise TypeError(f"fix_id_list must be a sequence of ints, got {type(fix_id_list).__name__}")
        for position, index in enumerate(fix_id_list):
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"fix_id_list[{position}] must be an int, got {index!r}")
            if index < 0:
                raise ValueError(f"fix_id_list[{position}] = {index} is negative; indexes start at 0")
        self.fix_id_list = list(fix_id_list)

    def _parameters(self):
        return {"fix_id_list": list(self.fix_id_list), **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        for position, index in enumerate(self.fix_id_list):
            if index >= len(demo_texts):
                raise ValueError(f"fix_id_list[{position}] = {index} is out of range: "
                                 f"expected 0 <= index < {len(demo_texts)} (number of demonstrations)")
        return [[i for i in self.fix_id_list if i not in ban] for ban in banned]


class RandomRetriever(Retriever):
    """k random distinct demonstrations per query, reproducible by ``seed``.

    One stable-generator stream seeded with ``seed`` draws the rows in query
    order (same inputs and seed, same sampler).  The stream is built without
    StableRandom's tampering warning: using a retriever already makes the run
    non-standard and the seed is recorded by :meth:`describe`.
    ``ice_num`` (OpenICL's name), when set, replaces the ``k`` of build_sampler.
    ``allow_repetition=True`` draws with replacement, so k may exceed the pool.
    ``balanced=True`` spreads k over labels (see :func:`_slot_labels`); the row
    follows the label slots, each label's picks in draw order.
    """

    def __init__(self, ice_num: Optional[int] = None, seed: int = SEED, *, allow_repetition: bool = False,
                 balanced: bool = False, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        self.ice_num = None if ice_num is None else check_k(ice_num, "ice_num")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self.seed = seed
        self.allow_repetition = _check_bool(allow_repetition, "allow_repetition")
        self.balanced = _check_bool(balanced, "balanced")

    def _parameters(self):
        return {"ice_num": self.ice_num, "seed": self.seed, "allow_repetition": self.allow_repetition,
                "balanced": self.balanced, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        k = k if self.ice_num is None else self.ice_num
        stream = StableRandom.__new__(StableRandom)  # no tampering warning, see class docstring
        stream.state = self.seed % LCG_MODULUS
        groups = _label_groups(demo_labels) if self.balanced and k else {}
        rows = []
        for q, ban in enumerate(banned):
            if groups:
                rows.append(self._balanced_row(stream, groups, k, q, ban))
            else:
                pool = _allowed(range(len(demo_texts)), ban)
                if not self.allow_repetition:
                    _check_pool(k, len(pool), q)
                elif k and not pool:
                    _check_pool(k, 0, q)
                rows.append(stream.n_elements(pool, k, self.allow_repetition))
        return rows

    def _balanced_row(self, stream: StableRandom, groups: Dict[str, List[int]], k: int, q: int,
                      ban: Set[int]) -> List[int]:
        if not self.allow_repetition:
            _check_pool(k, sum(len(members) for members in groups.values()) - len(ban), q)
        slots = _slot_labels(list(groups), k, q)
        picks = {}
        for label, quota in Counter(slots).items():
            pool = _allowed(groups[label], ban)
            if not self.allow_repetition or not pool:
                _check_pool(quota, len(pool), q, label)
            picks[label] = iter(stream.n_elements(pool, quota, self.allow_repetition))
        return [next(picks[label]) for label in slots]


# --------------------------------------------------------------------------
# BM25 (lexical TopK)
# --------------------------------------------------------------------------
_WORD = re.compile(r"\w+")


def default_tokenizer(text: str) -> List[str]:
    """Lowercased ``\\w+`` words: simple, language-agnostic, no dependencies."""
    return _WORD.findall(text.lower())


class BM25Retriever(Retriever):
    """Top-k demonstrations by Okapi BM25 score against the query.

    score(q, d) = sum over query terms t (repeats counted) of
    idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl)),
    idf(t) = log(1 + (N - n(t) + 0.5) / (n(t) + 0.5))  (Lucene's non-negative idf).
    Ties go to the lower index.  ``order="ascending"`` (default) puts the best
    demonstration last, next to the query.  ``balanced=True`` takes each label's
    quota (see :func:`_slot_labels`) of its best-scoring demonstrations, then
    orders the row by score as usual.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, tokenizer: Optional[Tokenizer] = None, *,
                 order: str = "ascending", balanced: bool = False, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        self.k1 = _check_number(k1, "k1", low=0.0)
        self.b = _check_number(b, "b", low=0.0, high=1.0)
        if tokenizer is not None and not callable(tokenizer):
            raise TypeError(f"tokenizer must be callable (str -> list of str), got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer or default_tokenizer
        self.order = _check_choice(order, "order", ORDERS)
        self.balanced = _check_bool(balanced, "balanced")

    def _parameters(self):
        return {"k1": self.k1, "b": self.b, "tokenizer": _callable_name(self.tokenizer), "order": self.order,
                "balanced": self.balanced, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        index = BM25Index([self.tokenizer(text) for text in demo_texts], self.k1, self.b)
        groups = _label_groups(demo_labels) if self.balanced else {}
        rows = []
        for q, (text, ban) in enumerate(zip(query_texts, banned)):
            best = _top_k(index.scores(self.tokenizer(text)), k, q, ban, groups)
            rows.append(_in_prompt_order(best, self.order))
        return rows


TopKRetriever = BM25Retriever  # lexical TopK; OpenICL's embedding TopK is EmbeddingTopKRetriever


class BM25Index:
    """Inverted index (term -> doc ids and precomputed weights) for fast BM25.

    Each posting stores idf * tf * (k1 + 1) / (tf + k1 * length_norm), so a
    query only adds numbers for the documents that share one of its terms.
    """

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.size = len(documents)
        lengths = [len(doc) for doc in documents]
        average = (sum(lengths) / self.size) if self.size and sum(lengths) else 1.0
        counts: Dict[str, Tuple[List[int], List[int]]] = {}
        for doc_id, doc in enumerate(documents):
            for term, tf in Counter(doc).items():
                docs, tfs = counts.setdefault(term, ([], []))
                docs.append(doc_id)
                tfs.append(tf)
        norms = [k1 * (1.0 - b + b * length / average) for length in lengths]
        self.idf: Dict[str, float] = {}
        self.postings: Dict[str, Tuple[List[int], List[float]]] = {}
        for term, (docs, tfs) in counts.items():
            idf = math.log(1.0 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
            self.idf[term] = idf
            self.postings[term] = (docs, [idf * tf * (k1 + 1.0) / (tf + norms[d]) for d, tf in zip(docs, tfs)])

    def scores(self, query_tokens: Sequence[str]) -> List[float]:
        """BM25 score of every document (0.0 where no term is shared)."""
        scores = [0.0] * self.size
        for term, qtf in Counter(query_tokens).items():
            posting = self.postings.get(term)
            if posting is None:
                continue
            docs, weights = posting
            if qtf == 1:
                for d, w in zip(docs, weights):
                    scores[d] += w
            else:
                for d, w in zip(docs, weights):
                    scores[d] += qtf * w
        return scores


# --------------------------------------------------------------------------
# embedding TopK
# --------------------------------------------------------------------------
class EmbeddingTopKRetriever(Retriever):
    """Top-k demonstrations by embedding similarity (OpenICL's TopK).

    ``embed_fn`` maps a text to a vector (a list of floats or anything with
    ``tolist``).  With ``batched=True`` (or an ``embed_fn.batched`` attribute,
    as set by :func:`sentence_transformers_embedder`) it receives a list of
    texts and returns a list of vectors.  Demonstrations are embedded once per
    build_sampler call (and reused while the demonstration texts do not change).
    ``metric`` is "cosine" (default) or "dot".  Similarities use pure Python
    by default; ``backend="numpy"`` is faster on large embeddings (float
    rounding may reorder near-ties).  Ties go to the lower index.
    """

    def __init__(self, embed_fn: EmbedFn, metric: str = "cosine", *, batched: Optional[bool] = None,
                 backend: str = "python", order: str = "ascending", dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        self.space = EmbeddingSpace(embed_fn, metric, batched=batched, backend=backend)
        self.order = _check_choice(order, "order", ORDERS)

    def _parameters(self):
        return {**self.space.describe(), "order": self.order, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        self.space.index(demo_texts)
        rows = []
        for q, (similarities, ban) in enumerate(zip(self.space.similarities(query_texts), banned)):
            rows.append(_in_prompt_order(_top_k(similarities, k, q, ban, {}), self.order))
        return rows


class EmbeddingSpace:
    """Embeds demonstrations once and scores queries against them."""

    def __init__(self, embed_fn: EmbedFn, metric: str = "cosine", *, batched: Optional[bool] = None,
                 backend: str = "python") -> None:
        if not callable(embed_fn):
            raise TypeError(f"embed_fn must be callable (text -> vector), got {type(embed_fn).__name__}")
        self.embed_fn = embed_fn
        self.metric = _check_choice(metric, "metric", METRICS)
        self.batched = bool(getattr(embed_fn, "batched", False)) if batched is None else _check_bool(batched, "batched")
        self.backend = _check_choice(backend, "backend", ("python", "numpy"))
        self._texts: Optional[List[str]] = None
        self.vectors: List[List[float]] = []

    def describe(self) -> Dict[str, Any]:
        return {"embed_fn": _callable_name(self.embed_fn), "metric": self.metric, "backend": self.backend}

    def index(self, texts: List[str]) -> None:
        if texts != self._texts:
            self.vectors = self.embed(texts, "demonstration")
            self._texts = list(texts)

    def embed(self, texts: List[str], what: str) -> List[List[float]]:
        """Vectors for texts, checked for a common dimension; normalised for cosine."""
        raw = self.embed_fn(list(texts)) if self.batched else [self.embed_fn(text) for text in texts]
        raw = _to_list(raw)
        if len(raw) != len(texts):
            raise ValueError(f"embed_fn returned {len(raw)} vectors for {len(texts)} {what} texts")
        vectors = []
        for i, vector in enumerate(raw):
            try:
                vector = [float(x) for x in _to_list(vector)]
            except (TypeError, ValueError) as error:
                raise TypeError(f"embed_fn returned a non-numeric vector for {what} {i}: {error}") from None
            if vectors and len(vector) != len(vectors[0]):
                raise ValueError(f"embed_fn returned dimension {len(vector)} for {what} {i}, "
                                 f"expected {len(vectors[0])}")
            vectors.append(_unit(vector) if self.metric == "cosine" else vector)
        return vectors

    def similarities(self, texts: List[str]) -> List[List[float]]:
        """One row of similarities to every indexed demonstration per text."""
        queries = self.embed(texts, "query")
        if queries and self.vectors and len(queries[0]) != len(self.vectors[0]):
            raise ValueError(f"query vectors have dimension {len(queries[0])}, "
                             f"demonstration vectors {len(self.vectors[0])}")
        if self.backend == "numpy":
            numpy = _import_numpy()
            if not queries or not self.vectors:
                return [[0.0] * len(self.vectors) for _ in queries]
            return (numpy.asarray(queries) @ numpy.asarray(self.vectors).T).tolist()
        return [[sum(map(mul, query, vector)) for vector in self.vectors] for query in queries]


def sentence_transformers_embedder(model_name_or_path: str, *, batch_size: int = 64,
                                   device: Optional[str] = None) -> EmbedFn:
    """A batched embed_fn backed by sentence-transformers (imported only here)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError("sentence_transformers_embedder needs the optional 'sentence-transformers' package: "
                          "pip install StaICC[embeddings]  (or: pip install sentence-transformers)") from error
    model = SentenceTransformer(model_name_or_path, device=device)

    def embed(texts: Union[str, List[str]]) -> Any:
        if isinstance(texts, str):
            return model.encode([texts], batch_size=batch_size)[0].tolist()
        return model.encode(list(texts), batch_size=batch_size).tolist()

    embed.batched = True  # type: ignore[attr-defined]
    embed.__qualname__ = f"sentence_transformers_embedder({model_name_or_path!r})"
    return embed


# --------------------------------------------------------------------------
# maximal marginal relevance
# --------------------------------------------------------------------------
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
        self.lambda_ = _check_number(lambda_, "lambda_", low=0.0, high=1.0)
        if candidates is not None:
            candidates = check_k(candidates, "candidates")
            if candidates == 0:
                raise ValueError("candidates must be at least 1 (or None for max(4k, 50))")
        self.candidates = candidates
        if isinstance(similarity, str):
            _check_choice(similarity, "similarity", ("bm25",))
            self.space: Optional[EmbeddingSpace] = None
        else:
            self.space = EmbeddingSpace(similarity, "cosine", backend=backend)
        self.k1 = _check_number(k1, "k1", low=0.0)
        self.b = _check_number(b, "b", low=0.0, high=1.0)
        if tokenizer is not None and not callable(tokenizer):
            raise TypeError(f"tokenizer must be callable (str -> list of str), got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer or default_tokenizer
        self.order = _check_choice(order, "order", ORDERS)
        self.balanced = _check_bool(balanced, "balanced")

    def _parameters(self):
        if self.space is None:
            similarity: Dict[str, Any] = {"similarity": "bm25", "k1": self.k1, "b": self.b,
                                          "tokenizer": _callable_name(self.tokenizer)}
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
            return self.space.similarities(query_texts), lambda i, j: sum(map(mul, vectors[i], vectors[j]))
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


# --------------------------------------------------------------------------
# by name (CLI)
# --------------------------------------------------------------------------
RETRIEVERS: Dict[str, type] = {
    "zero": ZeroRetriever,
    "fixk": FixKRetriever,
    "random": RandomRetriever,
    "bm25": BM25Retriever,
    "topk": TopKRetriever,
    "mmr": MMRRetriever,
    "embedding": EmbeddingTopKRetriever,
}


def retriever_from_name(name: str, **kwargs: Any) -> Retriever:
    """Build a retriever from its short name, e.g. for a ``--retriever`` CLI option."""
    if not isinstance(name, str):
        raise TypeError(f"retriever name must be a str, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "").replace("_", "")
    if key not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; valid names: {', '.join(RETRIEVERS)}")
    return RETRIEVERS[key](**kwargs)


# --------------------------------------------------------------------------
# validation and shared helpers
# --------------------------------------------------------------------------
def check_k(k: Any, name: str = "k") -> int:
    """k must be a non-negative int (bool rejected: True is not a count)."""
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"{name} must be a non-negative int, got {type(k).__name__} {k!r}")
    if k < 0:
        raise ValueError(f"{name} must be a non-negative int (number of demonstrations per query), got {k}")
    return k


def normalise_text(text: str) -> str:
    """Dedup key: lowercase, whitespace collapsed, stripped."""
    return " ".join(text.lower().split())


def _read_rows(rows: Sequence[Any], what: str) -> Tuple[List[str], List[Optional[str]]]:
    """Texts (inputs joined with " ") and labels of a dataset-like sequence of rows."""
    try:
        size = len(rows)
    except TypeError:
        rows = list(rows)
        size = len(rows)
    texts: List[str] = []
    labels: List[Optional[str]] = []
    for i in range(size):
        row = rows[i]
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or not 1 <= len(row) <= 2:
            raise TypeError(f"{what}[{i}] must be an (inputs, label_text) pair, got {type(row).__name__}")
        inputs = row[0]
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, Sequence) or not all(isinstance(part, str) for part in inputs):
            raise TypeError(f"{what}[{i}] inputs must be a list of str, got {inputs!r:.80}")
        texts.append(" ".join(inputs))
        labels.append(row[1] if len(row) == 2 else None)
    return texts, labels


def _banned_per_query(demo_texts: List[str], query_texts: List[str]) -> List[Set[int]]:
    """Per query, the demonstrations whose normalised text equals the query's."""
    by_text: Dict[str, Set[int]] = {}
    for i, text in enumerate(demo_texts):
        by_text.setdefault(normalise_text(text), set()).add(i)
    return [by_text.get(normalise_text(text), _NO_BAN) for text in query_texts]


def _check_pool(k: int, available: int, q: int, label: Optional[str] = None) -> None:
    if k > available:
        of = f" with label {label!r}" if label is not None else ""
        raise ValueError(f"query {q} needs {k} demonstrations{of} but only {available} are available "
                         f"(after dedup); lower k, add demonstrations or pass dedup=False")


def _allowed(indexes: Sequence[int], ban: Set[int]) -> Sequence[int]:
    return [i for i in indexes if i not in ban] if ban else indexes


def _label_groups(labels: List[Optional[str]]) -> Dict[str, List[int]]:
    """Demonstration indexes per label, labels in order of first appearance."""
    groups: Dict[str, List[int]] = {}
    for i, label in enumerate(labels):
        if label is None:
            raise ValueError(f"balanced=True needs labelled demonstrations; demonstrations[{i}] has none")
        groups.setdefault(label, []).append(i)
    return groups


def _slot_labels(order: List[str], k: int, q: int) -> List[str]:
    """Label of each of the k slots: round-robin over labels starting at label q mod L.

    Rotating the start per query means that, over many queries, every label
    gets the same share even when k is not a multiple of the label count.
    """
    start = q % len(order)
    return [order[(start + j) % len(order)] for j in range(k)]


def _top_k(scores: List[float], k: int, q: int, ban: Set[int], groups: Dict[str, List[int]]) -> List[int]:
    """Indexes of the k best scores, best first, ties to the lower index.

    Banned demonstrations are scored -inf in place (``scores`` belongs to this
    query).  With ``groups`` (balanced), each label's quota is taken from that
    label's demonstrations, then the picks are sorted by score.
    """
    for i in ban:
        scores[i] = -math.inf
    _check_pool(k, len(scores) - len(ban), q)
    if not groups:
        return _best_positions(scores, k)
    best: List[int] = []
    for label, quota in Counter(_slot_labels(list(groups), k, q)).items():
        members = groups[label]
        _check_pool(quota, len(members) - sum(1 for i in members if i in ban) if ban else len(members), q, label)
        best += [members[p] for p in _best_positions(_pick(scores, members), quota)]
    best.sort(key=lambda d: (-scores[d], d))
    return best


def _candidate_pool(relevance: List[float], k: int, q: int, ban: Set[int], groups: Dict[str, List[int]],
                    quotas: Optional[Counter], size: int) -> List[int]:
    """MMR candidates, most relevant first: the top ``size``, or each label's top share of it."""
    available = len(relevance) - len(ban)
    _check_pool(k, available, q)
    if quotas is None:
        return _top_k(relevance, min(size, available), q, ban, {})
    for i in ban:
        relevance[i] = -math.inf
    share = -(-size // len(groups))  # ceil: the pool stays about ``size`` in total
    pool: List[int] = []
    for label, quota in quotas.items():
        members = groups[label]
        available = len(members) - sum(1 for i in members if i in ban) if ban else len(members)
        _check_pool(quota, available, q, label)
        pool += [members[p] for p in _best_positions(_pick(relevance, members), min(max(share, quota), available))]
    pool.sort(key=lambda d: (-relevance[d], d))
    return pool


def _best_positions(values: Sequence[float], k: int) -> List[int]:
    """Positions of the k largest values, largest first, equal values by lower position.

    heapq.nlargest is documented as sorted(..., reverse=True)[:k], which is
    stable, so ties keep ascending positions.  For small k (the usual 1-8
    demonstrations) it is about twice as fast to find the k values with
    C-level comparisons and locate them with ``index`` scans, which also
    return the lowest position first for tied values.
    """
    if k > _SCAN_TOP_K:
        return heapq.nlargest(k, range(len(values)), key=values.__getitem__)
    positions: List[int] = []
    previous, start = None, 0
    for value in heapq.nlargest(k, values):
        start = start if value == previous else 0
        start = values.index(value, start) + 1
        positions.append(start - 1)
        previous = value
    return positions


def _pick(values: List[float], positions: List[int]) -> Sequence[float]:
    """values[p] for p in positions, gathered at C speed."""
    if len(positions) == 1:
        return [values[positions[0]]]
    return itemgetter(*positions)(values) if positions else []


def _in_prompt_order(best_first: List[int], order: str) -> List[int]:
    return best_first[::-1] if order == "ascending" else best_first


def _unit(vector: List[float]) -> List[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def _to_list(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def _import_numpy() -> Any:
    try:
        import numpy
    except ImportError as error:
        raise ImportError("backend='numpy' needs numpy: pip install numpy") from error
    return numpy


def _callable_name(fn: Callable) -> str:
    if fn is default_tokenizer:
        return "default (lowercase \\w+ words)"
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _check_number(value: Any, name: str, low: Optional[float] = None, high: Optional[float] = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be in {bounds}, got {value}")
    return float(value)


def _check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value
