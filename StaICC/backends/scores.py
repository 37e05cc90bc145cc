"""Per-label log-probabilities -> :class:`Answer`: the rule shared by the backends that score over an API or engine.

A request asks for one score per label.  Direct prompts give the log-probability of
each label after the prompt; noisy-channel requests carry one prompt per label and
give each prompt's mean token log-probability, i.e. minus its loss.  The answer is
the softmax of the scores; for noisy-channel requests the scores are first shifted by
the first label's, softmax(loss_0 - loss_l) (a shift the softmax ignores in exact
arithmetic, kept because it fixes the last bits of the recorded numbers).
"""
import math
from typing import List, Sequence

from ..requests import Answer, Request


def softmax_fsum(values: Sequence[float]) -> List[float]:
    """exp(v - max v) / fsum of those exponentials: the backends' softmax of label scores."""
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = math.fsum(exps)
    return [e / total for e in exps]


def answers_from_scores(requests: Sequence[Request], values: Sequence[float]) -> List[Answer]:
    """One :class:`Answer` per request from ``values``: each request's ``len(label_space)`` scores, in order."""
    answers, cursor = [], 0
    for r in requests:
        n = len(r.label_space)
        scores = values[cursor:cursor + n]
        cursor += n
        if r.noisy_channel:
            scores = [s - scores[0] for s in scores]
        answers.append(Answer(softmax_fsum(scores)))
    return answers
