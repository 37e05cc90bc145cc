"""Surprise calibration as a built-in method: each query's class prior from its own demonstrations' surprise.

Its requests (:func:`surprise`'s ``requests``) are label-score prompts through the one runner and
the cache: per calibration query (k demonstrations and one query row of the calibration set, drawn
as :mod:`.calibration.labelled` draws them), its prompt and its k prefix prompts (demonstrations
1 .. j − 1, then demonstration j's input as the query); then, per test query of the work, the k
prefix prompts of its own demonstrations (one pass's queries: every pass of a work shares them).
``train`` fits :class:`~StaICC.methods.calibration.surprise.surprise_calibration` and computes each
test query's accumulated surprise; ``apply`` divides each prediction by its query's prior.  The
prefix prompts are written in the template without label noise (a GLER pass's flipped labels are
not re-read): the surprise is that of the demonstrations' true labels.
"""
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import InvalidValueError
from ..requests import LABELS
from ..validation import check_int
from .calibration import DEFAULT_CALIBRATION_NUMBER
from .calibration.base import _label_index, _sample_indexes
from .calibration.surprise import DEFAULT_DECAYS, surprise_calibration
from .protocol import Method, MethodData

Context = Tuple[List[Any], List[int]]  # (prefix prompts, demonstration label indexes) of one query


def _context(data: MethodData, rows: Sequence[Any], table: Any) -> Context:
    """The prefix prompts of demonstrations ``rows`` ((input texts, label text) each) and their label indexes."""
    prompts = [data.write_prompt(list(rows[:j]), rows[j][0]) for j in range(len(rows))]
    return prompts, [_label_index(table, label, list(data.label_space), "surprise") for _inputs, label in rows]


def calibration_queries(data: MethodData, number: int) -> List[Tuple[Any, int, Context]]:
    """(prompt, query label, context) per calibration query, drawn as the labelled calibrations draw theirs."""
    table, k = data.calibration_set, data.k
    indexes = _sample_indexes(number * (k + 1), len(table))
    out = []
    for i in range(number):
        chunk = indexes[i * (k + 1):(i + 1) * (k + 1)]
        rows = [table[j] for j in chunk[:k]]
        inputs, label = table[chunk[k]]
        out.append((data.write_prompt(rows, inputs), _label_index(table, label, list(data.label_space), "surprise"),
                    _context(data, rows, table)))
    return out


def test_contexts(data: MethodData) -> List[Context]:
    """The context of each test query of a pass: its own demonstrations' prefix prompts and labels."""
    table = data.demonstration_set
    return [_context(data, [table[j] for j in demos], table) for demos in data.demonstrations]


def surprise(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 1e-3,
             decays: Sequence[float] = DEFAULT_DECAYS) -> Method:
    check_int(calibration_number, "calibration_number", minimum=1, at=" in the surprise method")
    try:
        surprise_calibration(["a", "b"], l2, decays)  # the options checked now, before any inference
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"method 'surprise': {exc}") from None

    def requests(data: MethodData) -> List[Any]:
        out: List[Any] = []
        for prompt, _label, (prefixes, _labels) in calibration_queries(data, calibration_number):
            out += [prompt, *prefixes]
        return out + [p for prefixes, _labels in test_contexts(data) for p in prefixes]

    def train(data: MethodData, answers: List[Any]) -> Any:
        waiting = iter(answers)
        probabilities, labels, contexts = [], [], []
        for _prompt, label, (prefixes, demo_labels) in calibration_queries(data, calibration_number):
            probabilities.append(next(waiting))
            labels.append(label)
            contexts.append(([next(waiting) for _ in prefixes], demo_labels))
        calibration = surprise_calibration(data.label_space, l2, decays)
        calibration.fit(probabilities, labels, contexts)
        tests = [([next(waiting) for _ in prefixes], demo_labels) for prefixes, demo_labels in test_contexts(data)]
        return calibration, calibration.histories(tests, calibration.decay)

    def apply(state: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        calibration, histories = state
        rows = answers[LABELS]
        return calibration.transform(rows, histories[:len(rows)])
    parameters = {"calibration_number": calibration_number, "l2": l2, "decays": list(decays) if
                  isinstance(decays, (list, tuple)) else decays}
    return Method("surprise", "surprise calibration (Tan et al. 2025): each query's class prior from the surprise "
                  "of its demonstrations' labels after their prefixes", requests=requests, train=train, apply=apply,
                  test_kinds=(LABELS,), parameters=tuple(sorted(parameters.items())))
