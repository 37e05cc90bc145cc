"""Linear-probe calibration, LinC (Abbas et al. 2024): an affine map of the label probabilities.

    q(y | x) = softmax(A p(x) + b)_y
    (A, b) = argmin (1/n) Σᵢ −log q(yᵢ | xᵢ) + l2 · (‖A − I‖² + ‖b‖²)

fitted on the labelled calibration queries (:mod:`.labelled`), starting from A = I, b = 0 as
the paper does.  The paper runs a few hundred gradient-descent epochs; here the same convex
objective is minimised by Newton steps (plus the stated L2 pull toward the start, which keeps
the parameters a probability vector cannot identify where they start).
"""
from typing import Any

from ...extras import require
from .labelled import affine_calibration


class linc_calibration(affine_calibration):
    """softmax(A p + b): θ = (A row by row, b), from (I, 0)."""

    def design(self, probabilities: Any) -> Any:
        np = require("numpy", "StaICC calibrations")
        n, count = probabilities.shape
        design = np.zeros((n, count, count * count + count))
        for label in range(count):  # logit y reads row y of A (y·K … y·K + K − 1) and b_y
            design[:, label, label * count:(label + 1) * count] = probabilities
            design[:, label, count * count + label] = 1.0
        return design

    def start(self) -> Any:
        np = require("numpy", "StaICC calibrations")
        count = len(self.label_space)
        return np.concatenate([np.eye(count).ravel(), np.zeros(count)])
