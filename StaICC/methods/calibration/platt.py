"""Platt scaling (Platt 1999) as a calibration, its multi-class form: one slope, a bias per label.

    q(y | x) = softmax(a · log p(y | x) + b_y)
    (a, b) = argmin (1/n) Σᵢ −log q(yᵢ | xᵢ) + l2 · ((a − 1)² + ‖b‖²)

With two labels this is Platt's σ(a·s + b) on the score s = log p₁ − log p₀.  Fitted on the
labelled calibration queries (:mod:`.labelled`); unlike temperature scaling the biases can
move the argmax (a prior shift), unlike the per-class affine map the slope is shared.
"""
from typing import Any

from ...extras import require
from .labelled import affine_calibration, log_probabilities
from .slopes import slope_bias_map


class platt_scaling(affine_calibration):
    """softmax(a log p + b): θ = (a, b₀ … b_{K−1}), from (1, 0 … 0)."""

    def design(self, probabilities: Any) -> Any:
        np = require("numpy", "StaICC calibrations")
        n, count = probabilities.shape
        design = np.zeros((n, count, 1 + count))
        design[:, :, 0] = log_probabilities(probabilities)
        design[:, np.arange(count), 1 + np.arange(count)] = 1.0
        return design

    def linear_map(self, probabilities: Any) -> Any:
        return slope_bias_map(log_probabilities(probabilities), shared=True, biases=True)

    def start(self) -> Any:
        np = require("numpy", "StaICC calibrations")
        return np.concatenate([np.ones(1), np.zeros(len(self.label_space))])
