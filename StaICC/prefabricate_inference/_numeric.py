"""Numeric helpers shared by the kernels and the calibrations.

Why not ``StaICC.metrics.softmax``?  The standard (§9.2) fixes a *mixed*
precision for the prefab kernel: the maximum is subtracted in the element type
of the logits (float32 for a model), then exp, sum and division run in double.
The helper below does exactly §6.3's steps on whatever element type it is
given, so it equals the core softmax on Python floats and reproduces §9.2 on
NumPy float32 scalars.  Sums are explicit left-to-right loops because
CPython >= 3.12's ``sum()`` compensates float rounding (§11.6).
"""
import math
from typing import Any, List, Sequence

from ._deps import require_numpy


def sequential_sum(values: Sequence[Any]) -> Any:
    """Left-to-right sum starting from 0, like CPython 3.11's ``sum()``."""
    total: Any = 0
    for value in values:
        total = total + value
    return total


def softmax(values: Sequence[Any]) -> List[float]:
    """§6.3 softmax: subtract the max in the element type, exp/sum/divide in double."""
    if len(values) == 0:
        raise ValueError("softmax needs at least one value, got an empty sequence")
    peak = max(values)
    exps = [math.exp(value - peak) for value in values]
    total = sequential_sum(exps)
    return [e / total for e in exps]


def as_vector(value: Any, where: str) -> Any:
    """A 1-D NumPy array from a list, tuple, array or torch tensor, keeping float32 as float32.

    Python floats become float64, so arithmetic on them is the standard's double
    arithmetic; float32 arrays (the prefab kernel's hidden states and logits)
    stay float32 as §9.8 requires.
    """
    np = require_numpy("StaICC calibrations")
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        tensor = value.detach().cpu()
        if not tensor.is_floating_point() or str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()  # NumPy has no bfloat16
        value = tensor.numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"{where}: expected a vector of numbers, got dtype {array.dtype}")
    if array.dtype.kind in "iu":
        array = array.astype(np.float64)
    if array.ndim == 2 and array.shape[0] == 1:  # a batch of one, as a model returns it
        array = array[0]
    if array.ndim != 1:
        raise ValueError(f"{where}: expected a 1-D vector, got shape {tuple(array.shape)}")
    return array


def sequential_l2(anchors: Any, vector: Any, chunk: int = 16) -> List[Any]:
    """L2 distance from ``vector`` to each row of ``anchors``: (Σ→(aᵢ−vᵢ)²)^0.5.

    The sum runs left to right in the arrays' element type (``cumsum`` is a
    sequential accumulation), so the values equal a pure-Python loop over the
    elements while running in C (fixes §11.4.8).  Returns NumPy scalars.
    """
    np = require_numpy("StaICC calibrations")
    out: List[Any] = []
    for start in range(0, anchors.shape[0], chunk):
        diff = anchors[start:start + chunk] - vector
        totals = np.cumsum(diff * diff, axis=1)[:, -1]
        out.extend(total ** 0.5 for total in totals)
    return out


def first_argmin(values: Sequence[Any]) -> int:
    """Index of the first minimum."""
    best = 0
    for index in range(1, len(values)):
        if values[index] < values[best]:
            best = index
    return best
