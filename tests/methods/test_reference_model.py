"""The lexical reference model: the label prefix found by scanning from the end gives the old results.

The previous implementation searched the regex ``(\\S+\\s*)$`` from the start of the prompt,
which backtracks over the whole prompt; it is kept here as the oracle.
"""
import os
import re
import warnings

import pytest

from StaICC import Contextual_bias, Normal
from StaICC.backends.reference_model import last_token, lexical_icl, lexical_scores, parse_direct, parse_noisy_channel

_OLD_LAST_TOKEN = re.compile(r"(\S+\s*)$")


def _old_leading_label(segment, label_space):
    best = None
    for i, label in enumerate(label_space):
        if label and segment.startswith(label) and (best is None or len(label) > len(label_space[best])):
            best = i
    if best is None:
        return None, segment
    return best, segment[len(label_space[best]):]


def old_parse_direct(prompt, label_space):
    match = _OLD_LAST_TOKEN.search(prompt)
    if not match:
        return [], prompt
    segments = prompt.split(match.group(1))
    demos, text = [], segments[0]
    for segment in segments[1:-1]:
        label, rest = _old_leading_label(segment, label_space)
        if label is not None:
            demos.append((text, label))
        text = rest
    return demos, text


def old_parse_noisy_channel(prompts, label_space):
    first = prompts[0]
    start = len(os.path.commonprefix(list(prompts)))
    while start > 0 and not all(p[start:].startswith(label) for p, label in zip(prompts, label_space)):
        start -= 1
    query = first[start + len(label_space[0]):]
    match = _OLD_LAST_TOKEN.search(first[:start])
    if not match:
        return [], query
    head = first[:start - len(match.group(1))]
    demos = []
    for segment in head.split(match.group(1))[1:]:
        label, rest = _old_leading_label(segment, label_space)
        if label is not None:
            demos.append((rest, label))
    return demos, query


def old_lexical_icl(prompt, label_space):
    if isinstance(prompt, (list, tuple)):
        demos, query = old_parse_noisy_channel(prompt, label_space)
    else:
        demos, query = old_parse_direct(prompt, label_space)
    return lexical_scores(demos, query, label_space)


@pytest.mark.parametrize("text", ["", " ", "\n\t", "a", "a ", " a", "ab cd", "ab cd \n", "x\u00a0y", "x\u2003y\u3000",
                                  "sentiment: ", "a\tb\n\n", "abc\u00a0", "\u00a0", "one two  three   "])
def test_last_token_equals_the_regex(text):
    match = _OLD_LAST_TOKEN.search(text)
    assert last_token(text) == (match.group(1) if match else None)


@pytest.mark.parametrize("cls, options", [
    (Normal, {"datasets": ["rotten_tomatoes", "financial_phrasebank", "TREC"]}),
    (Normal, {"datasets": ["SST5"], "noisy_channel": True}),
    (Contextual_bias, {"datasets": ["Subjective"]}),
])
def test_scores_identical_to_the_old_implementation_on_standard_prompts(cls, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench = cls(**options)
    for experimentor in bench.get_experimentors():
        label_space = experimentor.get_label_space()
        for prompt in experimentor.prompt_set():
            if isinstance(prompt, (list, tuple)):
                assert parse_noisy_channel(prompt, label_space) == old_parse_noisy_channel(prompt, label_space)
            else:
                assert parse_direct(prompt, label_space) == old_parse_direct(prompt, label_space)
            assert lexical_icl(prompt, label_space) == old_lexical_icl(prompt, label_space)
