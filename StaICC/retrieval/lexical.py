"""Lexical retrieval: the BM25 index and the BM25 (lexical TopK) retriever."""
import math
import re
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError
from ..validation import check_bool
from .base import (Retriever, Tokenizer, _in_prompt_order, _label_groups, _top_k, callable_name, check_callable,
                   check_order, check_parameter)

_WORD = re.compile(r"\w+")


def default_tokenizer(text: str) -> List[str]:
    """Lowercased ``\\w+`` words: simple, language-agnostic, no dependencies."""
    return _WORD.findall(text.lower())


default_tokenizer.staicc_description = "default (lowercase \\w+ words)"  # type: ignore[attr-defined]

#: the largest k1 accepted: BM25 saturates long before, and larger values overflow the scores
K1_MAX = 1e6


def bm25_settings(k1: Any, b: Any, tokenizer: Any, owner: str) -> Tuple[float, float, Tokenizer]:
    """The checked (k1, b, tokenizer) of a retriever that ranks by BM25 (BM25 and MMR)."""
    k1 = check_parameter(k1, "k1", owner, 0.0, K1_MAX)
    b = check_parameter(b, "b", owner, 0.0, 1.0)
    if tokenizer is None:
        return k1, b, default_tokenizer
    check_callable(tokenizer, "tokenizer", "str -> list of str", owner)
    return k1, b, _checked_tokenizer(tokenizer, owner)


def _checked_tokenizer(tokenizer: Tokenizer, owner: str) -> Tokenizer:
    """The user's tokenizer, its output checked: a string would be counted character by character."""
    def tokenize(text: str) -> List[str]:
        tokens = tokenizer(text)
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (list, tuple)) \
                or not all(type(token) is str for token in tokens):
            raise InvalidTypeError(f"tokenizer {callable_name(tokenizer)} must return a list of str in {owner}, got "
                                   f"{type(tokens).__name__} {tokens!r:.80} for the text {text!r:.60}")
        return tokens
    tokenize.staicc_description = callable_name(tokenizer)  # type: ignore[attr-defined]
    return tokenize


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
        self.k1, self.b, self.tokenizer = bm25_settings(k1, b, tokenizer, type(self).__name__)
        self.order = check_order(order, type(self).__name__)
        self.balanced = check_bool(balanced, "balanced", at=self._at())

    def _parameters(self):
        return {"k1": self.k1, "b": self.b, "tokenizer": callable_name(self.tokenizer), "order": self.order,
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
        k1 = check_parameter(k1, "k1", "BM25Index", 0.0, K1_MAX)
        b = check_parameter(b, "b", "BM25Index", 0.0, 1.0)
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
