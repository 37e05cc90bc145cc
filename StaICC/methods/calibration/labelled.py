"""What the calibrations fitted on calibration prompts' label probabilities share: their prompts and their fit.

Every calibration here is trained on the same prompts as hidden calibration and kNN (per
calibration query: k demonstrations and one query row of the calibration set, drawn from a
fresh stream, :meth:`~StaICC.methods.calibration.representations._demonstration_query_trained.training_queries`),
but asks only their label probabilities.  So a run of several of them asks each prompt once
(the runner's dedup), and the hand-wired route is ``train(prompt_maker, feedforward,
calibration_set, calibration_number, k)`` with any feedforward that returns label
probabilities.  Whether a calibration reads the query labels (supervised) or not
(unsupervised) is its own ``fit``.

:func:`fit_linear_softmax` is the one fitter of the affine calibrations (temperature, Platt,
per-class affine, LinC): a multinomial log-likelihood whose logits are linear in the
parameters, ``logits(x) = M(x) θ``, minimised by the one Newton solver (:mod:`.newton`).  The fit is
deterministic (a fixed start, a fixed number of steps at most), so two routes that give it the
same answers get the same parameters to the last bit.
"""
from typing import Any, Callable, List, NamedTuple, Sequence, Tuple

from ...errors import InvalidValueError, OperationError
from ...extras import require
from ...numeric import float_array, row_max, row_sum
from ...validation import check, Real
from .base import DEFAULT_CALIBRATION_NUMBER, Feedforward, PromptMaker, _call, _probabilities
from .newton import NEWTON_STEPS, newton_minimize
from .representations import _demonstration_query_trained

#: the smallest probability a logarithm is taken of (a model's 0 would be -inf)
PROBABILITY_FLOOR = 1e-12


class labelled_calibration(_demonstration_query_trained):
    """A calibration fitted on the label probabilities of calibration queries (and, if it reads them, their labels).

    Subclasses define :meth:`fit` and :meth:`transform` (a 2-D array of probabilities in, calibrated
    probabilities out); :meth:`inference` maps one prediction, :meth:`transform_rows` a pass.
    """

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        """:meth:`training_queries`' prompts through ``feedforward`` (label probabilities), then :meth:`fit`."""
        where = f"{type(self).__name__}.train"
        prompts, labels = self.training_queries(default_prompt_maker, calibration_set, calibration_number, k)
        probabilities = [_probabilities(_call(feedforward, prompt, self.label_space), len(self.label_space),
                                        f"{where} query {i}") for i, prompt in enumerate(prompts)]
        self.fit(probabilities, labels)

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement fit")

    def transform(self, probabilities: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement transform")

    def transform_rows(self, rows: Sequence[Sequence[float]]) -> List[List[float]]:
        """Calibrated probabilities of each row (one pass at once; each row computed as it would be alone)."""
        values = self.transform_values(rows)
        return [] if values is None else values.tolist()

    def transform_values(self, rows: Sequence[Sequence[float]]) -> Any:
        """:meth:`transform_rows` as the float array it is the ``tolist()`` of (None for no row)."""
        if not self.trained:
            raise OperationError(f"{type(self).__name__}: call train() or fit() first")
        if not rows:
            return None
        return self.transform(as_matrix(rows, len(self.label_space), type(self).__name__))

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
        return self.transform_rows([label_space_prob])[0]

    __call__ = inference


# --------------------------------------------------------------------------- numerics
def as_matrix(rows: Sequence[Sequence[Any]], labels: int, where: str) -> Any:
    """Rows of label probabilities as an n × labels float64 array (each row checked for its length)."""
    np = require("numpy", "StaICC calibrations")
    if isinstance(rows, np.ndarray) and rows.dtype == np.float64 and rows.ndim == 2 and rows.shape[1] == labels:
        return rows  # already such an array (a cross-fit's folds): the same values, not copied row by row
    values = float_array(np, rows) if type(rows) is list else None  # lists of finite floats (a model's): at once
    if values is not None and values.shape[1] == labels:
        return values
    values = [list(row.tolist() if hasattr(row, "tolist") else row) for row in rows]
    for i, row in enumerate(values):
        if len(row) != labels:
            raise InvalidValueError(f"{where}: row {i} has {len(row)} label probabilities, expected {labels}")
    return np.asarray(values, dtype=np.float64).reshape(len(values), labels)


def log_probabilities(probabilities: Any) -> Any:
    """log p, each probability floored at :data:`PROBABILITY_FLOOR` first."""
    np = require("numpy", "StaICC calibrations")
    return np.log(np.maximum(probabilities, PROBABILITY_FLOOR))


def softmax_rows(logits: Any) -> Any:
    """softmax of each row (the row's maximum subtracted first)."""
    np = require("numpy", "StaICC calibrations")
    exps = np.exp(logits - row_max(np, logits))
    return exps / numpy_row_sum(exps)


def numpy_row_sum(values: Any) -> Any:
    """``values.sum(axis=1, keepdims=True)``, to the bit: a column at a time below 8 columns, where NumPy adds
    left to right (:func:`~StaICC.numeric.row_sum`, several times quicker on a short last axis)."""
    return row_sum(values) if values.shape[1] < 8 else values.sum(axis=1, keepdims=True)


def _weighted_gram(flat: Any, q: Any) -> Any:
    """Σ over rows and labels of M[n,k,p] · q[n,k] · M[n,k,r], the Hessian's first term (``flat``: M as
    (n · labels) × parameters), as one matrix product (BLAS) over the weighted rows."""
    return flat.T @ (flat * q.reshape(-1, 1))


class LinearMap(NamedTuple):
    """The logits M θ of an affine calibration, as the fit reads them: ``logits(θ)`` (n × labels),
    ``transposed(r)`` (Mᵢᵀ rᵢ for every row: n × parameters) and ``gram(q, mq=None)`` (Σᵢ Mᵢᵀ diag(qᵢ) Mᵢ;
    ``mq``: ``transposed(q)`` where the fit has it already, for a map that reads it)."""

    logits: Callable[[Any], Any]
    transposed: Callable[[Any], Any]
    gram: Callable[[Any], Any]


def design_map(design: Any) -> LinearMap:
    """The :class:`LinearMap` of a design array M (n × labels × parameters), its sums as matrix products."""
    np = require("numpy", "StaICC calibrations")
    n, count, size = design.shape
    flat = design.reshape(n * count, size)
    return LinearMap(lambda theta: (flat @ theta).reshape(n, count),
                     lambda rows: np.matmul(rows[:, None, :], design)[:, 0, :],
                     lambda q, mq=None: _weighted_gram(flat, q))  # noqa: ARG005  (mq: not read here)


def fit_linear_softmax(design: Any, labels: Sequence[int], theta0: Any, l2: float,
                       steps: int = NEWTON_STEPS) -> Any:
    """argmin_θ  (1/n) Σᵢ −log softmax(Mᵢ θ)_{yᵢ} + l2·‖θ − θ₀‖², by :func:`~.newton.newton_minimize` from θ₀.

    ``design``: M (n × labels × parameters), or the :class:`LinearMap` of a map with structure of its
    own (LinC; the slopes and biases of temperature, Platt and per-class affine, :mod:`.slopes`).  The
    gradient is (1/n) Σ Mᵢᵀ(qᵢ − e_{yᵢ}) + 2·l2·(θ − θ₀) and the Hessian
    (1/n) Σ Mᵢᵀ(diag qᵢ − qᵢqᵢᵀ)Mᵢ + 2·l2·I (plus 1e-9·I, so that a parameter the data leave free,
    such as LinC's shift of every logit, stays where it starts).  The objective is convex.

    Every sum over the rows is a matrix-vector product with a vector of ones (BLAS: NumPy's column sums of
    an n × K array cost ten times as much for K this small), and Σᵢ (Mᵢ θ)_{yᵢ}, the true labels' logits,
    is θ · Σᵢ Mᵢᵀ e_{yᵢ}, one dot product: a Newton step of a cross-fit's fold is some twenty array
    operations, most of them element-wise over the n × K logits.
    """
    np = require("numpy", "StaICC calibrations")
    linear = design if isinstance(design, LinearMap) else design_map(design)
    theta0 = np.array(theta0, dtype=np.float64)
    n, count = linear.logits(theta0).shape
    onehot = np.zeros((n, count))
    onehot[np.arange(n), np.asarray(labels, dtype=np.int64)] = 1.0
    ones = np.ones(n)
    truth = ones @ linear.transposed(onehot)  # Σ Mᵢᵀ e_{yᵢ}
    ridge = (2 * l2 + 1e-9) * np.eye(len(theta0))

    def evaluate(theta: Any) -> Tuple[float, Any]:
        logits = linear.logits(theta)
        top = row_max(np, logits)
        exps = np.exp(logits - top)
        sums = row_sum(exps)
        lse = np.log(sums)
        lse += top
        value = (float(ones @ lse[:, 0]) - float(theta @ truth)) / n  # mean of lse minus the true logit
        shift = theta - theta0
        return value + l2 * float(shift @ shift), (exps, sums)  # kept for the derivatives: q = exps / sums

    def derivatives(theta: Any, kept: Any) -> Tuple[Any, Any]:
        q = kept[0] / kept[1]
        mq = linear.transposed(q)
        gradient = (ones @ mq - truth) / n + 2 * l2 * (theta - theta0)
        return gradient, (linear.gram(q, mq) - mq.T @ mq) / n + ridge
    return newton_minimize(evaluate, derivatives, theta0.copy(), steps)


class affine_calibration(labelled_calibration):
    """A supervised calibration whose calibrated logits are linear in its parameters: softmax(M(p) θ).

    Subclasses give :meth:`design` (M for every row: n × labels × parameters) and :meth:`start`
    (θ₀, the identity map, also the point the L2 penalty pulls toward); :meth:`fit` is
    :func:`fit_linear_softmax` on the calibration queries' labels.
    """

    def __init__(self, label_space: Sequence[str], l2: float = 1e-3) -> None:
        super().__init__(label_space)
        self.l2 = check(l2, Real(0, text="a number >= 0"), f"l2 in {type(self).__name__}")
        self.theta: Any = None

    def design(self, probabilities: Any) -> Any:
        raise NotImplementedError

    def start(self) -> Any:
        raise NotImplementedError

    def linear_map(self, probabilities: Any) -> Any:
        """What the fit reads of M(p): the design itself, or a :class:`LinearMap` that uses its structure."""
        return self.design(probabilities)

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:
        matrix = as_matrix(probabilities, len(self.label_space), type(self).__name__)
        self.theta = fit_linear_softmax(self.linear_map(matrix), labels, self.start(), self.l2)
        self.trained = True

    def transform(self, probabilities: Any) -> Any:
        return softmax_rows(self.linear_map(probabilities).logits(self.theta))


def crossfit_rows(make: Any, rows: Sequence[Sequence[float]], labels: Sequence[int], folds: int,
                  transductive: bool = False) -> List[List[float]]:
    """A pass's rows calibrated from the pass itself, no extra inference and no query's own label read.

    ``make()`` gives a fresh calibration (:class:`labelled_calibration`).  Query q is in fold
    q mod F (F = min(``folds``, n)); each fold is transformed by a calibration fitted on the other
    folds' rows and labels (cross-fitting).  ``transductive``: one calibration fitted on every row
    of the pass (for a calibration that reads no label, UCPA: its fit sees no label to leak).  A
    pass of one query, which has no other fold, keeps its row.
    """
    values = crossfit_values(make, rows, labels, folds, transductive)
    return [list(row) for row in rows] if values is None else values.tolist()


def crossfit_values(make: Any, rows: Sequence[Sequence[float]], labels: Sequence[int], folds: int,
                    transductive: bool = False) -> Any:
    """:func:`crossfit_rows` as the float array it is the ``tolist()`` of; None where the rows are kept
    as they are (no row, or a pass of one query)."""
    if transductive:
        calibration = make()
        matrix = as_matrix(rows, len(calibration.label_space), type(calibration).__name__)  # once, for both
        calibration.fit(matrix, [])
        return calibration.transform(matrix) if len(rows) else None
    count = min(folds, len(rows))
    if count < 2:
        return None
    np = require("numpy", "StaICC calibrations")
    calibration = make()
    matrix = as_matrix(rows, len(calibration.label_space), type(calibration).__name__)  # once, not per fold
    truth = np.asarray(labels, dtype=np.int64)
    fold_of = np.arange(len(rows)) % count
    out = np.empty_like(matrix)
    for fold in range(count):
        rest = fold_of != fold
        calibration = make()
        calibration.fit(matrix[rest], truth[rest])
        # fold f's rows are every count-th from f: a view, transformed row by row as transform_rows computes each alone
        out[fold::count] = calibration.transform(matrix[fold::count])
    return out
