"""Demonstration retrievers: choose which demonstrations each query sees.

A retriever produces a *demonstration sampler*: one list of demonstration indexes per
query, in prompt order.  Any retriever makes a run non-standard; the core records
``describe()`` in the result metadata.  See :mod:`StaICC.retrieval.base` for the
conventions every retriever shares.
"""
from typing import Any

from ..errors import InvalidTypeError, InvalidValueError
from ..registry import Described, Registry
from ..validation import check_k
from .base import METRICS, ORDERS, EmbedFn, Retriever, Sampler, Tokenizer, callable_name, normalise_text  # noqa: F401
from .embedding import EmbeddingSpace, EmbeddingTopKRetriever, sentence_transformers_embedder
from .lexical import K1_MAX, BM25Index, BM25Retriever, TopKRetriever, default_tokenizer
from .cone import ConERetriever, causal_lm_loglik
from .dpp import DPPRetriever
from .mdl import MDLRetriever
from .mmr import MMRRetriever
from .reference_embedder import reference_embedder
from .simple import FixKRetriever, RandomRetriever, ZeroRetriever
from .votek import VoteKRetriever

__all__ = ["Retriever", "ZeroRetriever", "FixKRetriever", "RandomRetriever", "BM25Retriever", "TopKRetriever",
           "BM25Index", "EmbeddingTopKRetriever", "EmbeddingSpace", "MMRRetriever", "sentence_transformers_embedder",
           "default_tokenizer", "normalise_text", "check_k", "retriever_from_name", "RETRIEVERS", "ORDERS",
           "METRICS", "K1_MAX", "VoteKRetriever", "DPPRetriever", "MDLRetriever", "reference_embedder",
           "ConERetriever", "causal_lm_loglik"]

#: the retrievers ``--retriever NAME`` names, in the order help texts list them; a new one is one
#: ``RETRIEVERS.register(name, cls, info=Described(help))`` (a name registered twice is refused).  MDL needs
#: the model, so it is built in Python only; the embedding retrievers use the reference embedder unless built
#: in Python with an ``embed_fn``
RETRIEVERS: Registry[type] = Registry("retriever", ordered=True)
for _name, _cls, _help in (
        ("zero", ZeroRetriever, "no demonstration: zero-shot"),
        ("fixk", FixKRetriever, "the same demonstrations, in the given order, for every query"),
        ("random", RandomRetriever, "k random distinct demonstrations per query, reproducible by seed"),
        ("bm25", BM25Retriever, "the top k by Okapi BM25 score against the query"),
        ("topk", TopKRetriever, "bm25's other name"),
        ("mmr", MMRRetriever, "maximal marginal relevance: relevant and mutually different demonstrations"),
        ("embedding", EmbeddingTopKRetriever, "the top k by embedding similarity (OpenICL's TopK)"),
        ("votek", VoteKRetriever, "vote-k: the same k representative demonstrations for every query"),
        ("dpp", DPPRetriever, "per query, k demonstrations by a DPP over its nearest candidates")):
    RETRIEVERS.register(_name, _cls, info=Described(_help))


def retriever_from_name(name: str, **kwargs: Any) -> Retriever:
    """Build a retriever from its short name, e.g. for a ``--retriever`` CLI option."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"retriever name must be a str, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "").replace("_", "")
    if key not in RETRIEVERS:
        raise InvalidValueError(f"unknown retriever {name!r}; valid names: {', '.join(RETRIEVERS)}")
    return RETRIEVERS[key](**kwargs)
