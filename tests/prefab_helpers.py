"""Tiny offline models and tokenizers for the prefabricate_inference tests (cached per process).

Nothing is downloaded: the tokenizer is trained on bundled benchmark texts and
the models are random (see StaICC.prefabricate_inference.tiny_models).
"""
import functools
from typing import List, Tuple

TEMPLATE_WORDS = ("negative positive neutral very positive sports business world technology "
                  "review: sentence: sentiment: text: label:\n")


@functools.lru_cache(maxsize=None)
def corpus(datasets: Tuple[str, ...] = ("rotten_tomatoes", "GLUE-SST2", "agnews"), per_dataset: int = 1500) -> List[str]:
    """The first demonstration texts of some benchmark datasets, plus the template words of the prompts."""
    from StaICC import Normal

    bench = Normal(k=0, datasets=list(datasets))
    texts: List[str] = []
    for i in range(len(bench)):
        demonstrations = bench[i].demonstration_set()
        for row in range(min(per_dataset, len(demonstrations))):
            texts.extend(demonstrations[row][0])
    return texts + [TEMPLATE_WORDS] * 20


@functools.lru_cache(maxsize=None)
def tiny_tokenizer(bos: bool = True, vocab_size: int = 4096):
    from StaICC.backends.tiny_models import tiny_tokenizer as build
    return build(corpus(), bos=bos, vocab_size=vocab_size)


@functools.lru_cache(maxsize=None)
def tiny_model(family: str = "llama", vocab_size: int = 4096, seed: int = 0):
    import torch

    from StaICC.backends.tiny_models import tiny_causal_lm
    # one intra-op thread: these models are too small to gain from more, and on a
    # shared 2-core runner competing OpenMP threads made the suite several times slower
    torch.set_num_threads(1)
    return tiny_causal_lm(family, vocab_size=vocab_size, seed=seed)


# -- prompts that share demonstrations, and how two scorings of them are compared --------
LABELS = ["negative", "positive", "very positive"]
FAMILIES = [("llama", True), ("gpt2", False)]


def shared_demo_prompts(count=6, queries_per_demo=3):
    """GLER-like prompts: a few demonstration blocks, each followed by several queries."""
    texts = corpus()
    prompts = []
    for block in range(count // queries_per_demo):
        demos = "".join(f"review: {texts[block * 11 + j]} sentiment: {LABELS[j % 2]}\n" for j in range(3))
        prompts.extend(demos + f"review: {texts[200 + block * 5 + q]} sentiment: " for q in range(queries_per_demo))
    return prompts


def compare(a, b):
    """Assert the same argmax row by row; return the largest absolute difference."""
    top = [max(range(len(r)), key=r.__getitem__) for r in a]
    assert top == [max(range(len(r)), key=r.__getitem__) for r in b]
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
