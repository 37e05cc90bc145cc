"""The logit maps of temperature, Platt and per-class affine calibration: a slope and a bias on log p.

    logit_y(θ) = s_y · log p_y + b_y

with one slope for every label (temperature, Platt) or one per label (the per-class affine map), and
a bias per label (Platt, per-class) or none (temperature).  θ is the slopes, then the biases, as the
design arrays of :mod:`.temperature`, :mod:`.platt` and :mod:`.supervised` order them.

The fit (:func:`~.labelled.fit_linear_softmax`) reads M(p) through a :class:`~.labelled.LinearMap`.
Built from the design array, its three parts are matrix products over the n × K × P array, most of
whose entries are zero: M θ, Mᵢᵀ rᵢ and Σᵢ Mᵢᵀ diag(qᵢ) Mᵢ cost n·K·P, n·K·P and n·K·P² products, and a
cross-fit computes them at every Newton step of every fold.  :func:`slope_bias_map` computes the
same three from log p alone, n × K element-wise operations each, since a logit reads one slope and
one bias: Mᵢᵀ rᵢ is (Σ_y r_y log p_y | r ⊙ log p) and r, and the Gram sum's entries are the column
sums of q (log p)², q log p and q on the diagonals (and, for a shared slope, in its row and column).
The same values as the design's up to the order of the floating-point sums
(``tests/methods/test_fitted_calibrations.py`` checks them against the design's).
"""
from typing import Any

from ...extras import require
from ...numeric import row_sum
from .labelled import LinearMap


def slope_bias_map(log_p: Any, shared: bool, biases: bool) -> LinearMap:
    """The :class:`~.labelled.LinearMap` of s ⊙ log p + b over the rows ``log_p`` (n × K): ``shared``, one
    slope (θ₀) for every label, else one per label; ``biases``, a bias per label after the slopes."""
    np = require("numpy", "StaICC calibrations")
    n, count = log_p.shape
    slopes = 1 if shared else count
    size = slopes + (count if biases else 0)
    slope_at = np.zeros(count, dtype=np.int64) if shared else np.arange(count)  # each label's slope in θ
    bias_at = slopes + np.arange(count)
    ones = np.ones(n)  # a sum over the rows as a matrix-vector product (BLAS), not a column reduction

    def logits(theta: Any) -> Any:
        scaled = log_p * (theta[0] if shared else theta[:count])
        return scaled + theta[slopes:] if biases else scaled

    def transposed(rows: Any) -> Any:
        out = np.empty((n, size))
        if shared:
            out[:, :1] = row_sum(rows * log_p)
        else:
            np.multiply(rows, log_p, out=out[:, :count])
        if biases:
            out[:, slopes:] = rows
        return out

    def gram(q: Any, mq: Any = None) -> Any:  # noqa: ARG001  (the sums it needs are not in mq)
        weighted = q * log_p
        out = np.zeros((size, size))
        squares = ones @ (weighted * log_p)
        if shared:
            out[0, 0] = squares.sum()
        else:
            out[slope_at, slope_at] = squares
        if biases:
            cross = ones @ weighted
            out[slope_at, bias_at] = cross
            out[bias_at, slope_at] = cross
            out[bias_at, bias_at] = ones @ q
        return out
    return LinearMap(logits, transposed, gram)
