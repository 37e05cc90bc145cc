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
from .labelled import LinearMap, affine_calibration


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

    def linear_map(self, probabilities: Any) -> LinearMap:
        """M(p) through the features x = (p, 1) every logit shares: logit y is W_y · x with W_y = (row y of A, b_y),
        so Mᵢᵀ rᵢ is rᵢ ⊗ xᵢ and Σᵢ Mᵢᵀ diag(qᵢ) Mᵢ is block-diagonal (block y: Σᵢ qᵢ_y xᵢ xᵢᵀ): K (K + 1)²
        products per row where the design's (K² + K)² · K (the fit's cost for ten labels and more)."""
        np = require("numpy", "StaICC calibrations")
        n, count = probabilities.shape
        width = count + 1
        features = np.hstack([probabilities, np.ones((n, 1))])
        label, feature = np.divmod(np.arange(count * width), width)
        order = np.where(feature < count, label * count + feature, count * count + label)  # (y, a) -> θ's index
        to_theta = np.argsort(order)

        def transposed(rows: Any) -> Any:
            return (rows[:, :, None] * features[:, None, :]).reshape(n, count * width)[:, to_theta]

        def gram(q: Any) -> Any:
            blocks = np.matmul((q[:, :, None] * features[:, None, :]).transpose(1, 2, 0), features)
            full = np.zeros((count * width, count * width))
            for y in range(count):
                full[y * width:(y + 1) * width, y * width:(y + 1) * width] = blocks[y]
            return full[np.ix_(to_theta, to_theta)]
        return LinearMap(lambda theta: features @ theta[order].reshape(count, width).T, transposed, gram)
