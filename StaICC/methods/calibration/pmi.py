"""Domain-conditional PMI (Holtzman et al. 2021): each label scored against its premise-free probability.

    score(y | x) = log P(y | demonstrations, x) − log P(y | demonstrations, the template without x)
    q(y | x) = softmax(score(· | x))_y = (P(y | x) / P(y | ∅)) / Σ_y' (P(y' | x) / P(y' | ∅))

The premise-free prompt of a query is the query's own prompt with its input texts emptied: the
same demonstrations and template (the "domain premise", what the answer follows), as lm-eval's
``acc_mutual_info`` scores the answer after the bare question prefix.  One extra prompt per test
query; nothing is trained.  Where a probability is 0 it is floored at 1e-12 first.
"""
import math
from typing import Any, List, Sequence

from ...errors import InvalidValueError

FLOOR = 1e-12


def pmi_row(probabilities: Sequence[Any], premise_free: Sequence[Any]) -> List[float]:
    """softmax(log p − log p∅) of one query: the normalised ratio of its probabilities to its premise-free ones."""
    if len(probabilities) != len(premise_free):
        raise InvalidValueError(f"pmi: {len(probabilities)} label probabilities against {len(premise_free)} premise-free ones")
    scores = [math.log(max(float(p), FLOOR)) - math.log(max(float(f), FLOOR)) for p, f in zip(probabilities, premise_free)]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = math.fsum(exps)
    return [e / total for e in exps]


def pmi_rows(rows: Sequence[Sequence[Any]], premise_free: Sequence[Sequence[Any]]) -> List[List[float]]:
    """:func:`pmi_row` of each query, against its own premise-free prompt's answer."""
    if len(rows) != len(premise_free):
        raise InvalidValueError(f"pmi: {len(rows)} queries against {len(premise_free)} premise-free prompts")
    return [pmi_row(row, free) for row, free in zip(rows, premise_free)]
