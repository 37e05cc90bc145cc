"""Embedding retrieval: the embedding space (checked vectors) and the embedding TopK retriever."""
import math
from operator import mul
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

from ..errors import InvalidTypeError, InvalidValueError, MissingExtraError
from ..extras import require
from ..validation import check_bool, check_choice, is_real
from .base import METRICS, EmbedFn, Retriever, _in_prompt_order, _top_k, callable_name, check_callable, check_order
from ..numeric import sequential_sum

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
        self.space = EmbeddingSpace(embed_fn, metric, batched=batched, backend=backend, owner=type(self).__name__)
        self.order = check_order(order, type(self).__name__)

    def _parameters(self):
        return {**self.space.describe(), "order": self.order, **super()._parameters()}

    def _select(self, demo_texts, _demo_labels, query_texts, k, banned):
        if not k:
            return [[] for _ in query_texts]
        self.space.index(demo_texts)
        rows = []
        for q, (similarities, ban) in enumerate(zip(self.space.similarities(query_texts), banned)):
            rows.append(_in_prompt_order(_top_k(similarities, k, q, ban, {}), self.order))
        return rows


class EmbeddingSpace:
    """Embeds demonstrations once and scores queries against them.

    Every vector is checked: a list (or array) of finite real numbers, of one dimension for
    all texts; a string is refused (iterating "12" would read the vector [1, 2]).  Errors
    name the retriever (``owner``), the text (demonstration or query index) and the position.
    """

    def __init__(self, embed_fn: EmbedFn, metric: str = "cosine", *, batched: Optional[bool] = None,
                 backend: str = "python", owner: str = "EmbeddingSpace") -> None:
        self.owner = owner
        at = f" in {owner}"
        check_callable(embed_fn, "embed_fn", "text -> vector", owner)
        self.embed_fn = embed_fn
        self.metric = check_choice(metric, "metric", METRICS, at=at)
        self.batched = bool(getattr(embed_fn, "batched", False)) if batched is None else \
            check_bool(batched, "batched", at=at)
        self.backend = check_choice(backend, "backend", ("python", "numpy"), at=at)
        self._texts: Optional[List[str]] = None
        self.vectors: List[List[float]] = []

    def describe(self) -> Dict[str, Any]:
        return {"embed_fn": callable_name(self.embed_fn), "metric": self.metric, "backend": self.backend}

    def index(self, texts: List[str]) -> None:
        if texts != self._texts:
            self.vectors = self.embed(texts, "demonstration")
            self._texts = list(texts)

    def embed(self, texts: List[str], what: str) -> List[List[float]]:
        """Vectors for texts, checked for a common dimension; normalised for cosine."""
        raw = self.embed_fn(list(texts)) if self.batched else [self.embed_fn(text) for text in texts]
        raw = _to_list(raw)
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise InvalidTypeError(f"{self.owner}: the batched embed_fn must return a list of vectors, got "
                                   f"{type(raw).__name__} for the {what} texts")
        if len(raw) != len(texts):
            raise InvalidValueError(f"{self.owner}: embed_fn returned {len(raw)} vectors for {len(texts)} {what} texts")
        vectors = []
        for i, vector in enumerate(raw):
            vector = self._checked_vector(vector, what, i)
            if vectors and len(vector) != len(vectors[0]):
                raise InvalidValueError(f"{self.owner}: embed_fn returned dimension {len(vector)} for {what} {i}, "
                                        f"expected {len(vectors[0])}")
            vectors.append(_unit(vector) if self.metric == "cosine" else vector)
        return vectors

    def _checked_vector(self, vector: Any, what: str, i: int) -> List[float]:
        """A non-empty list of finite floats; anything else raises naming the text and position."""
        vector = _to_list(vector)
        if isinstance(vector, (str, bytes, bytearray)) or not isinstance(vector, (list, tuple)):
            raise InvalidTypeError(f"{self.owner}: embed_fn returned a {type(vector).__name__} for {what} {i}, "
                                   f"expected a list of numbers: {vector!r:.60}")
        if not vector:
            raise InvalidValueError(f"{self.owner}: embed_fn returned an empty vector for {what} {i}")
        if all(type(x) is float for x in vector) and math.isfinite(sum(vector)):  # the usual case, at C speed
            return list(vector)
        checked = []
        for position, x in enumerate(vector):
            if not is_real(x):
                raise InvalidTypeError(f"{self.owner}: embed_fn returned a non-numeric value for {what} {i} at position "
                                       f"{position}: {type(x).__name__} {x!r:.40}")
            x = float(x)
            if not math.isfinite(x):
                raise InvalidValueError(f"{self.owner}: embed_fn returned a non-finite value for {what} {i} at position "
                                        f"{position}: {x}")
            checked.append(x)
        return checked

    def similarities(self, texts: List[str]) -> List[List[float]]:
        """One row of similarities to every indexed demonstration per text."""
        return list(self.similarity_rows(texts))

    def similarity_rows(self, texts: List[str]) -> Iterator[List[float]]:
        """The rows of :meth:`similarities`, one at a time: the texts are embedded at once, and the Python
        path computes each row when it is asked for (so that a long loop can show its progress)."""
        queries = self.embed(texts, "query")
        if queries and self.vectors and len(queries[0]) != len(self.vectors[0]):
            raise InvalidValueError(f"{self.owner}: query vectors have dimension {len(queries[0])}, "
                                    f"demonstration vectors {len(self.vectors[0])}")
        if self.backend == "numpy":
            numpy = require("numpy", f"backend='numpy' of {self.owner}")
            if not queries or not self.vectors:
                rows: Iterable[List[float]] = [[0.0] * len(self.vectors) for _ in queries]
            else:
                rows = (numpy.asarray(queries) @ numpy.asarray(self.vectors).T).tolist()
        else:
            rows = ([sequential_sum(map(mul, query, vector)) for vector in self.vectors] for query in queries)
        for q, row in enumerate(rows):
            if not math.isfinite(sum(row)) and not all(map(math.isfinite, row)):
                raise InvalidValueError(f"{self.owner}: the similarities of query {q} overflow (embeddings too large "
                                        "for metric='dot'; scale them down or use metric='cosine')")
            yield row


def sentence_transformers_embedder(model_name_or_path: str, *, batch_size: int = 64,
                                   device: Optional[str] = None) -> EmbedFn:
    """A batched embed_fn backed by sentence-transformers (imported only here)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise MissingExtraError("sentence_transformers_embedder needs the optional 'sentence-transformers' package: "
                                "pip install StaICC[embeddings]  (or: pip install sentence-transformers)") from error
    model = SentenceTransformer(model_name_or_path, device=device)

    def embed(texts: Union[str, List[str]]) -> Any:
        if isinstance(texts, str):
            return model.encode([texts], batch_size=batch_size)[0].tolist()
        return model.encode(list(texts), batch_size=batch_size).tolist()

    embed.batched = True  # type: ignore[attr-defined]
    embed.__qualname__ = f"sentence_transformers_embedder({model_name_or_path!r})"
    return embed


def _unit(vector: List[float]) -> List[float]:
    """The vector scaled to length 1 (a zero vector stays zero).

    ``sqrt(sum(x * x))`` is kept for the usual range; ``hypot`` takes over where the sum of
    squares overflows or underflows, which would otherwise zero a valid vector.
    """
    norm = math.sqrt(sequential_sum(x * x for x in vector))
    if math.isinf(norm) or (not norm and any(vector)):
        norm = math.hypot(*vector)
    return [x / norm for x in vector] if norm else vector


def _to_list(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value
