"""Generative calibration (Jiang et al. 2023), its label-marginal-from-pseudo-inputs form.

Generative calibration divides the model's prediction by its label marginal under the
in-context distribution of inputs, estimated by Monte Carlo over inputs x̃ⱼ:

    p̂(y) = (1/m) Σⱼ p(y | demonstrations, x̃ⱼ),   q(y | x) = (p(y | x) / p̂(y)) / Σ_y' (p(y' | x) / p̂(y'))

The paper samples x̃ⱼ by letting the model generate them after the demonstrations.  The
backends here score label words and do not generate text, so this form draws the
pseudo-inputs from the dataset's calibration part instead (samples of the input distribution
the generated ones approximate), each after k demonstrations of its own: the calibration
queries of :mod:`.labelled`, their labels unread.  Against contextual and domain calibration,
the queries are real inputs, not empty or random words, and the ratio is renormalised as
the paper writes it.
"""
from typing import Any, Sequence

from .labelled import as_matrix, labelled_calibration


class generative_calibration(labelled_calibration):
    """p / p̂, renormalised, with p̂ the mean prediction for in-distribution pseudo-inputs."""

    def __init__(self, label_space: Sequence[str]) -> None:
        super().__init__(label_space)
        self.marginal: Any = None

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:  # noqa: ARG002  (unsupervised: labels unread)
        from ...extras import require
        np = require("numpy", "StaICC calibrations")
        matrix = as_matrix(probabilities, len(self.label_space), type(self).__name__)
        self.marginal = np.maximum(matrix.mean(axis=0), 1e-12)
        self.trained = True

    def transform(self, probabilities: Any) -> Any:
        ratio = probabilities / self.marginal
        return ratio / ratio.sum(axis=1, keepdims=True)
