"""Demonstration retrievers: choose which demonstrations each query sees.

A retriever produces a *demonstration sampler*: one list of demonstration indexes per
query, in prompt order.  Any retriever makes a run non-standard; the core records
``describe()`` in the result metadata.  See :mod:`StaICC.retrieval.base` for the
conventions every retriever shares.
"""
from typing import Any, Dict

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

RETRIEVERS: Dict[str, type] = {
    "zero": ZeroRetriever,
    "fixk": FixKRetriever,
    "random": RandomRetriever,
    "bm25": BM25Retriever,
    "topk": TopKRetriever,
    "mmr": MMRRetriever,
    "embedding": EmbeddingTopKRetriever,
    # embeddings from the reference embedder unless built in Python with an embed_fn; MDL needs the
    # model, so it is built in Python only
    "votek": VoteKRetriever,
    "dpp": DPPRetriever,
}


def retriever_from_name(name: str, **kwargs: Any) -> Retriever:
    """Build a retriever from its short name, e.g. for a ``--retriever`` CLI option."""
    if not isinstance(name, str):
        raise TypeError(f"retriever name must be a str, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "").replace("_", "")
    if key not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; valid names: {', '.join(RETRIEVERS)}")
    return RETRIEVERS[key](**kwargs)
