"""Temperature scaling (Guo et al. 2017) as a calibration: one temperature for every logit.

    q(y | x) = softmax(log p(y | x) / T),   T = 1/β,
    β = argmin_β (1/n) Σᵢ −log softmax(β · log pᵢ)_{yᵢ} + l2 · (β − 1)²

fitted on the labelled calibration queries (:mod:`.labelled`).  T > 1 flattens an
over-confident model's predictions, T < 1 sharpens them; the argmax never changes, so the
accuracy is vanilla's and the likelihood and ECE are what it is for.  A temperature is
positive: where the likelihood is best at β ≤ 0 (predictions no better than their reverse on
the calibration queries), β is kept at :data:`BETA_FLOOR` (T = 1000: nearly uniform, the
argmax still the model's).
"""
from typing import Any

from ...extras import require
from .labelled import affine_calibration, log_probabilities
from .slopes import slope_bias_map

#: the smallest 1/T a fit keeps
BETA_FLOOR = 1e-3


class temperature_scaling(affine_calibration):
    """softmax(β log p) with β = 1/T fitted by likelihood (no penalty by default)."""

    def __init__(self, label_space: Any, l2: float = 0.0) -> None:
        super().__init__(label_space, l2)

    def fit(self, probabilities: Any, labels: Any) -> None:
        super().fit(probabilities, labels)
        self.theta = self.theta.clip(BETA_FLOOR)

    def design(self, probabilities: Any) -> Any:
        return log_probabilities(probabilities)[:, :, None]

    def linear_map(self, probabilities: Any) -> Any:
        return slope_bias_map(log_probabilities(probabilities), shared=True, biases=False)

    def start(self) -> Any:
        return require("numpy", "StaICC calibrations").ones(1)

    @property
    def temperature(self) -> float:
        """T = 1/β."""
        return 1.0 / float(self.theta[0])
