"""Label-word anchor re-weighting (Wang et al., EMNLP 2023, arXiv 2305.14160), to first order in β.

The paper re-weights the attention from the last position q to the label words p of class c
in the demonstrations, in every layer l and head h (:mod:`StaICC.backends.hf_anchors`):

    Â⁽ˡʰ⁾(q, p) = exp(β⁽ˡʰᶜ⁾) · A⁽ˡʰ⁾(q, p),

and learns β (initialised at 0, the model frozen) by minimising the cross-entropy of the
re-weighted model's label prediction on labelled auxiliary prompts.  Here the re-weighted
label log-probabilities are taken to first order around β = 0, where each answer of a request
of kind ``"anchors"`` gives them exactly (the forward, then a gradient per label):

    log q(β | x) ≈ log q(0 | x) + J(x) β,   J(x)_{k,(l,h,c)} = ∂ log q_k / ∂ β⁽ˡʰᶜ⁾ at β = 0,
    β = argmin_β (1/n) Σᵢ −log softmax(log q(0 | xᵢ) + J(xᵢ) β)_{yᵢ} + l2 · ‖β‖²,
    calibrated prediction: softmax(log q(0 | x) + J(x) β).

The auxiliary prompts are the calibration queries of :mod:`.labelled` (k demonstrations and one
query row of the calibration set each, labelled).  The objective is convex in β (a linear map
of the logits), minimised by the one Newton solver of :mod:`.newton` (its Hessian by matrix
products, layers × heads × classes parameters); ``l2`` (default 1e-3) keeps it strictly convex
when n is small.

What differs from the paper, and why: the paper trains β by Adam through the re-weighted model
and predicts with the exactly re-weighted forward; a run here asks every prompt once, before
any fit (the one runner and the cache), so the fitted β cannot change the test prompts' forward.
The first-order form needs only answers at β = 0, and equals the paper's at β → 0 (a test
checks the Jacobian against the exactly re-weighted forward).
"""
from typing import Any, List, Sequence, Tuple

from ...errors import InvalidTypeError, InvalidValueError, OperationError
from ...extras import require
from ...validation import check, Real
from .base import DEFAULT_CALIBRATION_NUMBER, Feedforward, PromptMaker, _call
from .labelled import PROBABILITY_FLOOR, labelled_calibration, softmax_rows
from .newton import NEWTON_STEPS, newton_minimize


def _objective(logits: Any, onehot: Any, beta: Any, l2: float) -> float:
    np = require("numpy", "StaICC calibrations")
    top = logits.max(axis=1, keepdims=True)
    lse = (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))[:, 0]
    return float((lse - (logits * onehot).sum(axis=1)).mean() + l2 * float(beta @ beta))


def fit_offset_softmax(offset: Any, jacobian: Any, labels: Sequence[int], l2: float, steps: int = NEWTON_STEPS) -> Any:
    """argmin_β (1/n) Σᵢ −log softmax(oᵢ + Jᵢ β)_{yᵢ} + l2·‖β‖², by :func:`~.newton.newton_minimize` from β = 0.

    Gradient (1/n) Σ Jᵢᵀ(qᵢ − e_{yᵢ}) + 2·l2·β; Hessian (1/n) Σ Jᵢᵀ(diag qᵢ − qᵢqᵢᵀ)Jᵢ + (2·l2 + 1e-9)·I.
    """
    np = require("numpy", "StaICC calibrations")
    n, count, size = jacobian.shape
    onehot = np.zeros((n, count))
    onehot[np.arange(n), np.asarray(labels, dtype=np.int64)] = 1.0
    ridge = (2 * l2 + 1e-9) * np.eye(size)
    flat = jacobian.reshape(n * count, size)

    def evaluate(beta: Any) -> Tuple[float, Any]:
        logits = offset + jacobian @ beta  # kept for the derivatives at β
        return _objective(logits, onehot, beta, l2), logits

    def derivatives(beta: Any, logits: Any) -> Tuple[Any, Any]:
        q = softmax_rows(logits)
        gradient = flat.T @ (q - onehot).reshape(-1) / n + 2 * l2 * beta
        mq = np.einsum("nkp,nk->np", jacobian, q)
        return gradient, (flat.T @ (flat * q.reshape(-1, 1)) - mq.T @ mq) / n + ridge
    return newton_minimize(evaluate, derivatives, np.zeros(size), steps)


class anchor_reweighting(labelled_calibration):
    """β over (layers, heads, classes) fitted on labelled calibration queries' anchor answers (module docstring)."""

    def __init__(self, label_space: Sequence[str], l2: float = 1e-3) -> None:
        super().__init__(label_space)
        self.l2 = check(l2, Real(0, text="a number >= 0"), f"l2 in {type(self).__name__}")
        self.beta: Any = None

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        """:meth:`training_queries`' prompts through ``feedforward`` (an anchors answer per prompt), then :meth:`fit`."""
        prompts, labels = self.training_queries(default_prompt_maker, calibration_set, calibration_number, k)
        self.fit([_call(feedforward, prompt, self.label_space) for prompt in prompts], labels)

    def _split(self, vectors: Sequence[Any]) -> Any:
        """(log q at β = 0: n × K, J: n × K × parameters) from anchors answers, each checked for its length."""
        np = require("numpy", "StaICC calibrations")
        count = len(self.label_space)
        rows = [np.asarray(v, dtype=np.float64).reshape(-1) for v in vectors]
        size = len(rows[0]) if rows else count
        for i, row in enumerate(rows):
            if len(row) != size or (size - count) % (count * count) or size <= count:
                raise InvalidValueError(f"{type(self).__name__}: answer {i} has {len(row)} values; an anchors answer for "
                                        f"{count} labels has {count} log-probabilities and {count} × layers × heads × "
                                        f"{count} derivatives")
        matrix = np.stack(rows) if rows else np.zeros((0, size))
        offset = np.maximum(matrix[:, :count], np.log(PROBABILITY_FLOOR))
        return offset, matrix[:, count:].reshape(len(rows), count, (size - count) // count)

    def fit(self, vectors: Sequence[Any], labels: Sequence[int]) -> None:
        offset, jacobian = self._split(vectors)
        self.beta = fit_offset_softmax(offset, jacobian, labels, self.l2)
        self.trained = True

    def transform_rows(self, rows: Sequence[Any]) -> List[List[float]]:
        """softmax(log q(0 | x) + J(x) β) for each anchors answer ``rows[i]``."""
        if not self.trained:
            raise OperationError(f"{type(self).__name__}: call train() or fit() first")
        if not rows:
            return []
        offset, jacobian = self._split(rows)
        return softmax_rows(offset + jacobian @ self.beta).tolist()

    def inference(self, label_space_prob: Any, full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
        raise InvalidTypeError(f"{type(self).__name__} reads an anchors answer per prompt: use transform_rows([answer])")
