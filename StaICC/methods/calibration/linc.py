"""Linear-probe calibration, LinC (Abbas et al. 2024): an affine map of the label probabilities.

    q(y | x) = softmax(A p(x) + b)_y
    (A, b) = argmin (1/n) Σᵢ −log q(yᵢ | xᵢ) + l2 · (‖A − I‖² + ‖b‖²)

fitted on the labelled calibration queries (:mod:`.labelled`), starting from A = I, b = 0 as
the paper does.  The paper runs a few hundred gradient-descent epochs; here the same convex
objective is minimised by Newton steps (plus the stated L2 pull toward the start, which keeps
the parameters a probability vector cannot identify where they start).
"""
from typing import Any, Sequence

from ...extras import require
from .labelled import LinearMap, affine_calibration, as_matrix, fit_linear_softmax


def _orders(count: int) -> Any:
    """θ's index of each parameter in the order (y, a) of the features x = (p, 1) every logit shares: row y of A, then
    b_y (its inverse permutation is ``argsort``)."""
    np = require("numpy", "StaICC calibrations")
    label, feature = np.divmod(np.arange(count * (count + 1)), count + 1)
    return np.where(feature < count, label * count + feature, count * count + label)


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

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:
        """The fit in the features' order (:meth:`feature_map`: the same objective, its parameters permuted, which
        neither the L2 pull nor the ridge sees), θ put back in the design's order."""
        matrix = as_matrix(probabilities, len(self.label_space), type(self).__name__)
        order = _orders(matrix.shape[1])
        theta = self.start()
        theta[order] = fit_linear_softmax(self.feature_map(matrix), labels, self.start()[order], self.l2)
        self.theta, self.trained = theta, True

    def linear_map(self, probabilities: Any) -> LinearMap:
        """:meth:`feature_map` in θ's own order (what :meth:`transform` reads, and the tests beside the design)."""
        np = require("numpy", "StaICC calibrations")
        order = _orders(probabilities.shape[1])
        to_theta = np.argsort(order)
        features = self.feature_map(probabilities)
        return LinearMap(lambda theta: features.logits(theta[order]),
                         lambda rows: features.transposed(rows)[:, to_theta],
                         lambda q, mq=None: features.gram(q)[np.ix_(to_theta, to_theta)])  # noqa: ARG005

    def feature_map(self, probabilities: Any) -> LinearMap:
        """M(p) through the features x = (p, 1) every logit shares, its parameters W (K × (K + 1)) row by row: logit
        y is W_y · x, so Mᵢᵀ rᵢ is rᵢ ⊗ xᵢ and Σᵢ Mᵢᵀ diag(qᵢ) Mᵢ is block-diagonal, block y: Σᵢ qᵢ_y xᵢ xᵢᵀ, which is
        block (y, y) of Σᵢ (qᵢ ⊗ xᵢ)ᵀ (1 ⊗ xᵢ): K (K + 1) products per row for Mᵢᵀ rᵢ, where the design's
        (K² + K) · K, and two matrix products (BLAS) for the Hessian."""
        np = require("numpy", "StaICC calibrations")
        n, count = probabilities.shape
        width = count + 1
        features = np.empty((n, width))
        features[:, :count] = probabilities
        features[:, count] = 1.0
        tiled = np.tile(features, (1, count))  # 1 ⊗ xᵢ
        spread = np.repeat(np.eye(count), width, axis=1)  # r @ spread repeats each rᵢ_y K + 1 times (exactly)
        block = spread.T @ spread  # 1 where both parameters are of one logit: the Hessian's first term's blocks

        def transposed(rows: Any) -> Any:
            return (rows @ spread) * tiled

        def gram(q: Any, mq: Any = None) -> Any:
            return ((transposed(q) if mq is None else mq).T @ tiled) * block
        return LinearMap(lambda theta: features @ theta.reshape(count, width).T, transposed, gram)
