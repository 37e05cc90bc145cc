"""Few-shot batch calibration, BCL (Zhou et al. 2024): batch calibration with a learnt strength.

Batch calibration (BC, the ``batch`` method) removes each batch's mean prediction, the
contextual prior the batch estimates; BCL scales that correction by γ, chosen on labelled
calibration queries:

    q(y | x) = softmax(p(y | x) − γ · p̄(y)),   p̄ = the mean prediction of x's batch,
    γ = argmax_{γ ∈ grid} accuracy of argmax_y (pᵢ(y) − γ · p̄_cal(y)) over the calibration queries,

p̄_cal their own mean; the grid runs from ``-gamma_bound`` to ``gamma_bound`` in ``gamma_steps``
equal steps (the paper's is [−5, 5]); among equally accurate γ the one nearest 1 (BC) is taken.
γ = 1 is BC exactly (``batch_calibration``'s softmax(p − p̄)).  Batches are taken in query
order within a pass, ``batch_size`` at a time, as ``batch`` takes them.
"""
from typing import Any, List, Sequence

from ...errors import InvalidTypeError
from ...extras import require
from ...validation import check, check_int, Real
from .base import DEFAULT_BATCH_SIZE
from .labelled import as_matrix, labelled_calibration, softmax_rows


def gamma_grid(bound: float, steps: int) -> List[float]:
    """``steps`` + 1 values from −bound to bound, evenly spaced (1 on the grid when bound·2/steps divides 1)."""
    return [-bound + 2 * bound * i / steps for i in range(steps + 1)]


class batch_calibration_learnt(labelled_calibration):
    """BCL: γ from the labelled calibration queries, then p − γ·(batch mean) per batch of ``batch_size``."""

    def __init__(self, label_space: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE, gamma_bound: float = 5.0,
                 gamma_steps: int = 100) -> None:
        super().__init__(label_space)
        where = f" in {type(self).__name__}"
        self.batch_size = check_int(batch_size, "batch_size", minimum=1, at=where)
        self.gamma_steps = check_int(gamma_steps, "gamma_steps", minimum=1, at=where)
        self.gamma_bound = check(gamma_bound, Real(0, 1e6, closed="neither", text="a positive number"), f"gamma_bound{where}")
        self.gamma = 1.0

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:
        np = require("numpy", "StaICC calibrations")
        matrix = as_matrix(probabilities, len(self.label_space), type(self).__name__)
        truth = np.asarray(labels, dtype=np.int64)
        mean = matrix.mean(axis=0)
        best = None
        for gamma in gamma_grid(self.gamma_bound, self.gamma_steps):
            accuracy = int(((matrix - gamma * mean).argmax(axis=1) == truth).sum())
            key = (accuracy, -abs(gamma - 1.0))
            if best is None or key > best[0]:
                best = (key, gamma)
        self.gamma = best[1]
        self.trained = True

    def transform(self, probabilities: Any) -> Any:
        """Each batch of ``batch_size`` rows (in order) less γ times its own mean, then softmax."""
        np = require("numpy", "StaICC calibrations")
        out = []
        for start in range(0, probabilities.shape[0], self.batch_size):
            batch = probabilities[start:start + self.batch_size]
            out.append(softmax_rows(batch - self.gamma * batch.mean(axis=0)))
        return np.concatenate(out)

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
        raise InvalidTypeError("batch_calibration_learnt calibrates a batch, not one prediction: use transform_rows "
                               "(or batch_calibration_function= of the batched kernel)")

    __call__ = inference
