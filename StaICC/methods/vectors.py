"""NumPy helpers for the calibrations and prompt edits: vectors from tensors, sequential L2 distances.

The plain-Python arithmetic (softmax, left-to-right sums, argmin) lives in
:mod:`StaICC.metrics`; its softmax subtracts the maximum in the element type it
is given and does exp, sum and division in double, so it equals the core
softmax on Python floats and keeps the kernels' float32 maximum subtraction on
NumPy float32 scalars.  What is here needs NumPy.
"""
from typing import Any, List

from ..errors import InvalidTypeError, InvalidValueError
from ..extras import require


def as_vector(value: Any, where: str) -> Any:
    """A 1-D NumPy array from a list, tuple, array or torch tensor, keeping float32 as float32.

    Python floats become float64, so arithmetic on them is double arithmetic;
    float32 arrays (a model's hidden states and logits) stay float32, so
    distances between them are computed in float32 as the original did.
    """
    np = require("numpy", "StaICC calibrations")
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        tensor = value.detach().cpu()
        if not tensor.is_floating_point() or str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()  # NumPy has no bfloat16
        value = tensor.numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise InvalidTypeError(f"{where}: expected a vector of numbers, got dtype {array.dtype}")
    if array.dtype.kind in "iu":
        array = array.astype(np.float64)
    if array.ndim == 2 and array.shape[0] == 1:  # a batch of one, as a model returns it
        array = array[0]
    if array.ndim != 1:
        raise InvalidValueError(f"{where}: expected a 1-D vector, got shape {tuple(array.shape)}")
    return array


def sequential_l2(anchors: Any, vector: Any, chunk: int = 16) -> List[Any]:
    """L2 distance from ``vector`` to each row of ``anchors``: (Σ→(aᵢ−vᵢ)²)^0.5.

    The sum runs left to right in the arrays' element type (``cumsum`` is a
    sequential accumulation), so the values equal a pure-Python loop over the
    elements while running in C.  Returns NumPy scalars.
    """
    np = require("numpy", "StaICC calibrations")
    out: List[Any] = []
    for start in range(0, anchors.shape[0], chunk):
        diff = anchors[start:start + chunk] - vector
        totals = np.cumsum(diff * diff, axis=1)[:, -1]
        out.extend(total ** 0.5 for total in totals)
    return out
