"""Supervised calibration (Gundem et al. 2025): a per-class affine map in logit space.

    q(y | x) = softmax(w_y · log p(y | x) + b_y)
    (w, b) = argmin (1/n) Σᵢ −log q(yᵢ | xᵢ) + l2 · (‖w − 1‖² + ‖b‖²)

fitted on the labelled calibration queries (:mod:`.labelled`).  Simplifications against the
paper: one context (the calibration prompts' own demonstrations, not an ensemble of context
sets), and an L2 pull toward the identity map in place of its trust-region constraints.
"""
from typing import Any

from ...extras import require
from .labelled import affine_calibration, log_probabilities
from .slopes import slope_bias_map


class supervised_calibration(affine_calibration):
    """softmax(w ⊙ log p + b): θ = (w₀ … w_{K−1}, b₀ … b_{K−1}), from (1 … 1, 0 … 0)."""

    def design(self, probabilities: Any) -> Any:
        np = require("numpy", "StaICC calibrations")
        n, count = probabilities.shape
        design = np.zeros((n, count, 2 * count))
        labels = np.arange(count)
        design[:, labels, labels] = log_probabilities(probabilities)
        design[:, labels, count + labels] = 1.0
        return design

    def linear_map(self, probabilities: Any) -> Any:
        return slope_bias_map(log_probabilities(probabilities), shared=False, biases=True)

    def start(self) -> Any:
        np = require("numpy", "StaICC calibrations")
        count = len(self.label_space)
        return np.concatenate([np.ones(count), np.zeros(count)])
