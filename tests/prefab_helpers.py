"""Tiny offline models and tokenizers for the prefabricate_inference tests (cached per process).

Nothing is downloaded: the tokenizer is trained on bundled benchmark texts and
the models are random (see StaICC.prefabricate_inference.tiny_models).
"""
import functools
import gzip
import json
from importlib import resources
from typing import List, Tuple

TEMPLATE_WORDS = ("negative positive neutral very positive sports business world technology "
                  "review: sentence: sentiment: text: label:\n")


@functools.lru_cache(maxsize=None)
def corpus(datasets: Tuple[str, ...] = ("rotten_tomatoes", "sst2", "agnews"), per_dataset: int = 1500) -> List[str]:
    """The first texts of some bundled tables, plus the template words of the prompts."""
    texts: List[str] = []
    for name in datasets:
        data = resources.files("StaICC.data").joinpath(f"{name}.jsonl.gz").read_bytes()
        lines = [line for line in gzip.decompress(data).decode("utf-8").split("\n") if line.strip()]
        for line in lines[:per_dataset]:
            texts.extend(json.loads(line)[1])
    return texts + [TEMPLATE_WORDS] * 20


@functools.lru_cache(maxsize=None)
def tiny_tokenizer(bos: bool = True, vocab_size: int = 4096):
    from StaICC.prefabricate_inference.tiny_models import tiny_tokenizer as build
    return build(corpus(), bos=bos, vocab_size=vocab_size)


@functools.lru_cache(maxsize=None)
def tiny_model(family: str = "llama", vocab_size: int = 4096, seed: int = 0):
    from StaICC.prefabricate_inference.tiny_models import tiny_causal_lm
    return tiny_causal_lm(family, vocab_size=vocab_size, seed=seed)
