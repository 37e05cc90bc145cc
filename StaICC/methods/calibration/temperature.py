"""Temperature scaling (Guo et al. 2017) as a calibration: one temperature for every logit.

    q(y | x) = softmax(log p(y | x) / T),   T = 1/β,
    β = argmin_β (1/n) Σᵢ −log softmax(β · log pᵢ)_{yᵢ} + l2 · (β − 1)²

fitted on the labelled calibration queries (:mod:`.labelled`).  T > 1 flattens an
over-confident model's predictions, T < 1 sharpens them; the argmax never changes, so the
accuracy is vanilla's and the likelihood and ECE are what it is for.
"""
from typing import Any

from ...extras import require
from .labelled import affine_calibration, log_probabilities


class temperature_scaling(affine_calibration):
    """softmax(β log p) with β = 1/T fitted by likelihood (no penalty by default)."""

    def __init__(self, label_space: Any, l2: float = 0.0) -> None:
        super().__init__(label_space, l2)

    def design(self, probabilities: Any) -> Any:
        return log_probabilities(probabilities)[:, :, None]

    def start(self) -> Any:
        return require("numpy", "StaICC calibrations").ones(1)

    @property
    def temperature(self) -> float:
        """T = 1/β (infinite when the fit finds no signal: β = 0)."""
        beta = float(self.theta[0])
        return float("inf") if beta == 0 else 1.0 / beta
