"""Surprise calibration (Tan et al., EMNLP 2025, arXiv 2506.12796): a class prior per query, from the surprise
of its own demonstrations.

Source: the paper's abstract and its method as public summaries state it (the full text could
not be read here).  The paper reads ICL as implicit sequential Bayesian inference: reading
demonstration j (input e_j, label y_j) after the demonstrations D_{j−1} before it, the model's
class prior shifts, and the shift grows with the *surprise* of the label,

    S_j = −log p(y_j | e_j, D_{j−1}),

which the model's prefix prediction gives (the prompt of the first j − 1 demonstrations with
e_j as the query).  SC accumulates these signals over the demonstrations with a learnt
sequence model to estimate each query's class prior, and divides the prediction by it.  The
sequence model here is the linear recurrence (the paper's is a learnt recurrent network; this
is its linear, few-parameter form, fitted by likelihood, and the simplification is ours):

    h_0 = 0,   h_j = γ · h_{j−1} + S_j · e_{y_j}      (e_y: the one-hot vector of label y),
    log π(x) = b + λ · h_k,
    q(y | x) = softmax(log p(y | x, D) − log π(x))_y,

b (one bias per label, b_0 = 0) and λ fitted by likelihood (:func:`~StaICC.methods.calibration.anchors.fit_offset_softmax`,
with an ``l2`` pull toward 0) on labelled calibration queries (k demonstrations and one query row of
the calibration set each, as :mod:`.labelled`), for each decay γ in ``decays``; the γ whose fit has
the lowest objective is kept.  With λ = 0 it is a per-label bias (a fixed prior); the surprise term
makes the prior each query's own.  Probabilities are floored at 1e-12 before a logarithm.
"""
from typing import Any, List, Sequence, Tuple

from ...errors import InvalidValueError
from ...validation import check, Real
from ...extras import require
from .anchors import _objective, fit_offset_softmax
from .labelled import as_matrix, log_probabilities, softmax_rows

DEFAULT_DECAYS = (0.0, 0.25, 0.5, 0.75, 1.0)


def accumulated_surprise(prefix_rows: Sequence[Sequence[float]], labels: Sequence[int], count: int,
                         decay: float) -> List[float]:
    """h_k of one query: its demonstrations' prefix predictions ``prefix_rows[j]`` and labels ``labels[j]``, in order."""
    import math
    h = [0.0] * count
    for row, label in zip(prefix_rows, labels):
        h = [decay * value for value in h]
        h[label] += -math.log(max(float(row[label]), 1e-12))
    return h


def _design(histories: Any, count: int) -> Any:
    """J with logits = log p + J θ, θ = (b_1 .. b_{K−1}, λ): −1 on label c's bias, −h on λ."""
    np = require("numpy", "StaICC calibrations")
    n = len(histories)
    design = np.zeros((n, count, count))
    for c in range(1, count):
        design[:, c, c - 1] = -1.0
    design[:, :, count - 1] = -np.asarray(histories, dtype=np.float64).reshape(n, count)
    return design


class surprise_calibration:
    """The fitted prior model: ``fit`` on calibration queries, ``transform`` with each query's own surprise."""

    def __init__(self, label_space: Sequence[str], l2: float = 1e-3, decays: Sequence[float] = DEFAULT_DECAYS) -> None:
        self.l2 = check(l2, Real(0, text="a number >= 0"), "l2 in surprise_calibration")
        decays = tuple(decays) if isinstance(decays, (list, tuple)) else (decays,)
        if not decays or any(Real(0, 1).judge(d)[0] for d in decays):
            raise InvalidValueError(f"decays in surprise_calibration must be numbers in [0, 1], got {decays!r}")
        self.label_space, self.decays = tuple(label_space), tuple(float(d) for d in decays)
        self.theta: Any = None
        self.decay = 0.0

    def histories(self, contexts: Sequence[Tuple[Sequence[Sequence[float]], Sequence[int]]], decay: float) -> List[Any]:
        return [accumulated_surprise(rows, labels, len(self.label_space), decay) for rows, labels in contexts]

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int],
            contexts: Sequence[Tuple[Sequence[Sequence[float]], Sequence[int]]]) -> None:
        """``contexts[i]``: (prefix predictions, demonstration labels) of calibration query i."""
        np = require("numpy", "StaICC calibrations")
        count = len(self.label_space)
        offset = log_probabilities(as_matrix(probabilities, count, "surprise_calibration"))
        onehot = np.zeros(offset.shape)
        onehot[np.arange(len(labels)), np.asarray(labels, dtype=np.int64)] = 1.0
        best = None
        for decay in self.decays:
            design = _design(self.histories(contexts, decay), count)
            theta = fit_offset_softmax(offset, design, labels, self.l2)
            value = _objective(offset + design @ theta, onehot, theta, self.l2)
            if best is None or value < best[0]:
                best = (value, decay, theta)
        _value, self.decay, self.theta = best  # type: ignore[misc]

    def transform(self, probabilities: Sequence[Sequence[float]], histories: Sequence[Sequence[float]]) -> List[List[float]]:
        """softmax(log p − b − λ h) per query (``histories``: each query's h_k at the fitted decay)."""
        if not probabilities:
            return []
        count = len(self.label_space)
        offset = log_probabilities(as_matrix(probabilities, count, "surprise_calibration"))
        return softmax_rows(offset + _design(histories, count) @ self.theta).tolist()
