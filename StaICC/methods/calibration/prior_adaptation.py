"""Calibration through prior adaptation, UCPA and SUCPA (Estienne et al. 2023).

The model's posteriors are re-weighted per label so that their mean over a set of queries
matches a target prior π:

    q(y | x) = softmax(log p(y | x) + β)_y,   β such that (1/n) Σᵢ q(y | xᵢ) = π_y for every y,

found by the fixed-point iteration β ← β + log π − log((1/n) Σᵢ softmax(log pᵢ + β)) from β = 0
(at most ``iterations`` steps, stopping when no β moves by more than 1e-12).  UCPA
(unsupervised) takes π uniform and needs no labels; SUCPA takes π from the labels of the
calibration queries, (count_y + 1) / (n + K) (add-one smoothing, a simplification: the paper
uses the raw frequencies, which a label absent from a few draws would make zero).  The
queries are the calibration queries of :mod:`.labelled` (the paper's unlabelled samples).
"""
from typing import Any, Sequence

from ...extras import require
from ...validation import check_int
from .labelled import as_matrix, labelled_calibration, log_probabilities, softmax_rows

DEFAULT_ITERATIONS = 1000


def adapted_bias(log_p: Any, prior: Any, iterations: int = DEFAULT_ITERATIONS) -> Any:
    """β with mean_i softmax(log pᵢ + β) = π (the fixed point above).

    Iterated on w = exp(β): softmax(log pᵢ + β) = pᵢ ⊙ w / (pᵢ · w), so each step is two matrix-vector
    products, w ← w ⊙ π / (w ⊙ mean_i pᵢ / (pᵢ · w)), and its log is the step of β.
    """
    np = require("numpy", "StaICC calibrations")
    p = np.exp(log_p)  # the floored probabilities
    weights = np.ones(log_p.shape[1])
    for _ in range(iterations):
        ratio = prior / (weights * (p.T @ (1.0 / (p @ weights))) / len(p))
        weights = weights * ratio
        if float(np.abs(np.log(ratio)).max()) < 1e-12:
            break
    beta = np.log(weights)
    return beta - beta[0]  # only differences between labels matter


class prior_adaptation(labelled_calibration):
    """UCPA (``supervised=False``: the uniform prior) or SUCPA (the calibration labels' smoothed frequencies)."""

    def __init__(self, label_space: Sequence[str], supervised: bool = False,
                 iterations: int = DEFAULT_ITERATIONS) -> None:
        super().__init__(label_space)
        self.supervised = bool(supervised)
        self.iterations = check_int(iterations, "iterations", minimum=1, at=f" in {type(self).__name__}")
        self.prior: Any = None
        self.beta: Any = None

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:
        np = require("numpy", "StaICC calibrations")
        count = len(self.label_space)
        log_p = log_probabilities(as_matrix(probabilities, count, type(self).__name__))
        if self.supervised:
            counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=count)[:count]
            self.prior = (counts + 1.0) / (len(labels) + count)
        else:
            self.prior = np.full(count, 1.0 / count)
        self.beta = adapted_bias(log_p, self.prior, self.iterations)
        self.trained = True

    def transform(self, probabilities: Any) -> Any:
        return softmax_rows(log_probabilities(probabilities) + self.beta)
