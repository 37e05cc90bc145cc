"""A dependency-free reference inference: a lexical in-context learner.

It really reads the prompt.  It finds the label prefix (the prompt's last word, e.g.
"sentiment: "), splits the prompt at it to recover each demonstration's text and label,
and scores every label by how much the query's words overlap with the texts of the
demonstrations carrying that label (cosine of word sets, template words removed), plus a
bonus when the label word itself appears in the query.  Noisy-channel prompt lists are
parsed the same way.  It is a baseline for the pipeline, not a language model: numbers
near chance on hard datasets are expected (docs/standard.md lists them).
"""
import math
import os
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

_WORD = re.compile(r"\w+")


def last_token(text: str) -> Optional[str]:
    """The last whitespace-delimited word of ``text`` with the whitespace after it, or None if there is none.

    Scans back from the end, so it costs the length of the last word; a regex searched
    from the start (``(\\S+\\s*)$``) gives the same string but retries at every
    position of the prompt.  Whitespace is Unicode whitespace (``str.isspace``).
    """
    end = len(text.rstrip())
    if end == 0:
        return None
    start = end - 1
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:]


def _words(text: str) -> Set[str]:
    return set(_WORD.findall(text.lower()))


def _leading_label(segment: str, label_space: Sequence[str]) -> Tuple[Optional[int], str]:
    """The label a segment starts with (longest match) and the text after it."""
    best = None
    for i, label in enumerate(label_space):
        if label and segment.startswith(label) and (best is None or len(label) > len(label_space[best])):
            best = i
    if best is None:
        return None, segment
    return best, segment[len(label_space[best]):]


def parse_direct(prompt: str, label_space: Sequence[str]) -> Tuple[List[Tuple[str, int]], str]:
    """(demonstrations as (text, label index), query text) of a direct ICL prompt."""
    label_prefix = last_token(prompt)
    if label_prefix is None:
        return [], prompt
    segments = prompt.split(label_prefix)
    demos = []
    text = segments[0]
    for segment in segments[1:-1]:
        label, rest = _leading_label(segment, label_space)
        if label is not None:
            demos.append((text, label))
        text = rest
    return demos, text


def parse_noisy_channel(prompts: Sequence[str], label_space: Sequence[str]) -> Tuple[List[Tuple[str, int]], str]:
    """Demonstrations and query of a noisy-channel prompt list (one prompt per label)."""
    first = prompts[0]
    start = len(os.path.commonprefix(list(prompts)))
    while start > 0 and not all(p[start:].startswith(label) for p, label in zip(prompts, label_space)):
        start -= 1
    query = first[start + len(label_space[0]):]
    label_prefix = last_token(first[:start])
    if label_prefix is None:
        return [], query
    head = first[:start - len(label_prefix)]
    demos = []
    for segment in head.split(label_prefix)[1:]:
        label, rest = _leading_label(segment, label_space)
        if label is not None:
            demos.append((rest, label))
    return demos, query


def lexical_scores(demos: Sequence[Tuple[str, int]], query: str, label_space: Sequence[str]) -> List[float]:
    """Label probabilities from word overlap with each label's demonstrations."""
    n = len(label_space)
    query_words = _words(query)
    demo_words = [(_words(text), label) for text, label in demos]
    if demo_words:  # words every demonstration and the query share are template, not content
        common = set.intersection(query_words, *(w for w, _ in demo_words))
        query_words -= common
        demo_words = [(w - common, label) for w, label in demo_words]
    scores = [0.1] * n
    for words, label in demo_words:
        if words and query_words:
            scores[label] += len(words & query_words) / math.sqrt(len(words) * len(query_words))
    for i, label in enumerate(label_space):
        if _words(label) & query_words:
            scores[i] += 0.5
    total = sum(scores)
    return [s / total for s in scores]


def lexical_icl(prompt, label_space: Sequence[str]) -> List[float]:
    """Inference function ``f(prompt, label_space) -> probabilities`` for any StaICC prompt."""
    if isinstance(prompt, (list, tuple)):
        demos, query = parse_noisy_channel(prompt, label_space)
    else:
        demos, query = parse_direct(prompt, label_space)
    return lexical_scores(demos, query, label_space)


def uniform(prompt, label_space: Sequence[str]) -> List[float]:  # noqa: ARG001  (a model function's signature: f(prompt, label_space))
    """The chance baseline: every label equally likely."""
    return [1 / len(label_space)] * len(label_space)


#: how much more probability chance puts on its drawn label: enough to decide the argmax, too little to move
#: the likelihood or the bias metrics beyond the sixth decimal
CHANCE_TILT = 1e-6


def chance(prompt, label_space: Sequence[str]) -> List[float]:
    """The chance baseline a researcher expects: a label drawn per prompt, near-uniform probabilities.

    Exactly equal probabilities would all be read as label 0 (the standard's argmax takes
    the first maximum), so accuracy would be label 0's frequency, not chance.  Here a label
    is drawn from the SHA-256 of the prompt (the same prompt always gets the same label, on
    every machine) and gets ``CHANCE_TILT`` more probability than the others.
    """
    import hashlib
    text = "\x00".join(prompt) if isinstance(prompt, (list, tuple)) else prompt
    width = len(label_space)
    drawn = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % width
    rest = (1 - CHANCE_TILT) / width
    return [rest + CHANCE_TILT if i == drawn else rest for i in range(width)]


#: the built-in models by name: "uniform" is chance (a drawn label, near-uniform probabilities)
REFERENCE_MODELS: Dict[str, object] = {"lexical": lexical_icl, "uniform": chance}
