"""The reference embedder: a deterministic hashed bag-of-words vector, standard library only.

The embedding retrievers (TopK, MMR, VoteK, DPP, MDL) take any ``embed_fn``; this one
needs no model and no download, so the retrievers run in tests, from the CLI and on a
machine without sentence-transformers.  It captures lexical overlap only: for semantic
similarity pass a sentence-transformers embedder
(:func:`~StaICC.retrieval.embedding.sentence_transformers_embedder`).
"""
import math
import zlib
from typing import Callable, List

from ..errors import InvalidTypeError
from ..validation import check_int
from .lexical import default_tokenizer

#: the dimension of the reference embedding
REFERENCE_DIMENSION = 256


def reference_embedder(dimension: int = REFERENCE_DIMENSION) -> Callable[[str], List[float]]:
    """``embed(text)``: token counts hashed into ``dimension`` buckets, each token's sign and bucket from CRC-32.

    CRC-32 of the UTF-8 token (not Python's ``hash``, which changes with every process)
    picks the bucket and, from a second bit, the sign, so collisions cancel on average
    (the "hashing trick").  Counts are damped as 1 + log(count); the vector is not
    normalised (the cosine metric normalises it).
    """
    dimension = check_int(dimension, "dimension", minimum=1, at=" in reference_embedder")

    def embed(text: str) -> List[float]:
        if not isinstance(text, str):
            raise InvalidTypeError(f"reference_embedder embeds a str, got {type(text).__name__}")
        counts: dict = {}
        for token in default_tokenizer(text):
            counts[token] = counts.get(token, 0) + 1
        vector = [0.0] * dimension
        for token, count in counts.items():
            code = zlib.crc32(token.encode("utf-8"))
            vector[code % dimension] += (1.0 + math.log(count)) * (1.0 if (code >> 16) & 1 else -1.0)
        return vector

    embed.__qualname__ = f"reference_embedder({dimension})"
    return embed
