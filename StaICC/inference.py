"""The inference contract (spec §6.2, §6.3), checked at the boundary.

A user's function returns, per prompt, either a vector aligned with the label space
(probabilities or logits; lists, tuples, NumPy arrays and tensors are accepted) or
an int label index.  Everything else is refused with an error that names the
dataset and the query index.  Int predictions become one-hot rows as wide as the
label space (the original used max(prediction) + 1 and crashed).
"""
import math
import numbers
from typing import Any, Callable, Iterable, List, Optional, Sequence, Union

from .errors import InferenceError, where
from .progress import progress_bar

Prediction = Union[int, List[float]]


def check_output(output: Any, label_count: int, dataset: Optional[str], query_index: Optional[int]) -> Prediction:
    """One prediction, validated: an int in range, or a finite vector of the right length.

    Every refusal is a TypeError (wrong kind of value) or ValueError (right kind, bad
    value) naming the dataset and the query, raised here so that no bad value reaches
    the metrics.  Scores must convert to finite floats; a huge int that does not fit a
    float is refused rather than overflowing later.
    """
    from .validation import is_int, is_real
    at = where(dataset, query_index)
    if hasattr(output, "tolist") and not isinstance(output, (list, tuple)):
        try:
            output = output.tolist()  # NumPy arrays and scalars, torch tensors
        except Exception as exc:
            raise TypeError(f"the inference returned {type(output).__name__}{at}, whose tolist() raised "
                            f"{type(exc).__name__}: {exc}; expected a list of {label_count} scores or an int label index") from None
    if isinstance(output, bool):
        raise TypeError(f"the inference returned a bool{at}; expected a list of {label_count} scores or an int label index")
    if is_int(output):
        if not 0 <= output < label_count:
            shown = output if abs(output) < 10 ** 30 else f"{str(output)[:12]}... ({len(str(abs(output)))} digits)"
            raise ValueError(f"the inference returned label index {shown}{at}; expected an int in [0, {label_count})")
        return int(output)
    if isinstance(output, (str, bytes)):
        raise TypeError(f"the inference returned a string {output[:40]!r}{at}; expected a list of "
                        f"{label_count} scores or an int label index")
    if not isinstance(output, (list, tuple)):
        raise TypeError(f"the inference returned {type(output).__name__}{at}; expected a list of "
                        f"{label_count} scores (probabilities or logits) or an int label index")
    if len(output) != label_count:
        raise ValueError(f"the inference returned {len(output)} scores{at}; expected {label_count}, "
                         f"one per label of the label space")
    row = []
    for value in output:
        if not is_real(value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise TypeError(f"the inference returned a non-numeric score {shown}{at}; expected real numbers")
        try:
            value = float(value)
        except OverflowError:
            raise ValueError(f"the inference returned a score too large for a float{at} "
                             f"(a number of about {len(str(int(value)))} digits); return floats") from None
        if not math.isfinite(value):
            raise ValueError(f"the inference returned a non-finite score {value}{at}; NaN and inf are not allowed")
        row.append(value)
    if -label_count <= min(row) < 0 and max(row) <= 1 and abs(math.fsum(row) - 1) <= 1e-6:
        # a row in [-n, 1] cannot overflow fsum; a more negative entry cannot sum to 1 with entries <= 1
        raise ValueError(f"the inference returned {row}{at}: it sums to 1 like probabilities but has a "
                         "negative entry; return probabilities in [0, 1] or unnormalised logits")
    return row


def expand(predictions: Sequence[Prediction], label_count: int, dataset: Optional[str]) -> List[list]:
    """Rows the metrics read: vectors as they are, ints as one-hot rows of the label count."""
    if not predictions:
        return []
    int_kind = isinstance(predictions[0], int)
    for i, p in enumerate(predictions):
        if isinstance(p, int) != int_kind:
            raise TypeError(f"the inference mixed int labels and score vectors{where(dataset, i)}: "
                            f"query 0 returned {'an int' if int_kind else 'a vector'}; return one kind throughout")
    if not int_kind:
        return list(predictions)
    return [[1 if c == p else 0 for c in range(label_count)] for p in predictions]


def predicted_labels(predictions: Sequence[Prediction]) -> List[int]:
    """The original's "predicted" output: argmax of each raw row, or the ints themselves."""
    from .metrics import argmax
    return [p if isinstance(p, int) else argmax(p) for p in predictions]


def run_inference(forward_inference: Callable, prompts: Iterable, count: int, label_space: List[str],
                  batched: bool, dataset: str, progress=None, offset: int = 0) -> List[Prediction]:
    """Call the user's function on every prompt (or once on all of them) and validate the outputs.

    ``offset`` numbers the queries of later passes (GLER, Template_sens) after earlier ones
    so that error messages point at the prompt's position in ``prompt_set()``.
    """
    if not callable(forward_inference):
        raise TypeError(f"forward_inference must be callable, got {type(forward_inference).__name__}")
    label_count = len(label_space)
    if batched:
        prompt_list = list(prompts)
        try:
            outputs = forward_inference(prompt=prompt_list, label_space=list(label_space))
        except Exception as exc:
            raise InferenceError(f"the batched inference raised {type(exc).__name__}: {exc}"
                                 f"{where(dataset)} (prompts {offset}..{offset + count - 1})",
                                 dataset, None) from exc
        if hasattr(outputs, "tolist") and not isinstance(outputs, list):
            outputs = outputs.tolist()
        if isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__len__"):
            raise TypeError(f"the batched inference returned {type(outputs).__name__}{where(dataset)}; "
                            f"expected a list of {count} predictions")
        if len(outputs) != count:
            raise ValueError(f"the batched inference returned {len(outputs)} predictions{where(dataset)}; "
                             f"expected {count}, one per prompt")
        return [check_output(o, label_count, dataset, offset + i) for i, o in enumerate(outputs)]
    bar = progress_bar(count, dataset, progress)
    results: List[Prediction] = []
    try:
        for i, prompt in enumerate(prompts):
            try:
                output = forward_inference(prompt=prompt, label_space=list(label_space))
            except Exception as exc:
                raise InferenceError(f"the inference function raised {type(exc).__name__}: {exc}"
                                     f"{where(dataset, offset + i)}", dataset, offset + i, results) from exc
            results.append(check_output(output, label_count, dataset, offset + i))
            bar.update()
    finally:
        bar.close()
    return results


def check_preentered(predictions: Any, count: int, label_space: List[str], dataset: str) -> List[Prediction]:
    """Predictions made elsewhere, aligned with ``prompt_set()``: count and content checked up front."""
    if hasattr(predictions, "tolist") and not isinstance(predictions, list):
        predictions = predictions.tolist()
    if isinstance(predictions, (str, bytes)) or not hasattr(predictions, "__len__"):
        raise TypeError(f"preentered predictions must be a list{where(dataset)}, got {type(predictions).__name__}")
    if len(predictions) != count:
        raise ValueError(f"{len(predictions)} preentered predictions{where(dataset)}; expected {count}, "
                         "one per prompt of prompt_set(), in its order")
    return [check_output(p, len(label_space), dataset, i) for i, p in enumerate(predictions)]
