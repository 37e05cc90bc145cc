"""Prototypical calibration (Han et al. 2023): a Gaussian mixture over label-probability vectors.

The predictions for unlabelled calibration queries are modelled as a mixture of K Gaussians
(K = the number of labels), each cluster a label's prototype:

    p(x) = Σₖ πₖ N(x; μₖ, Σₖ),   fitted by EM (full covariances, ``reg_covar`` added to their diagonal);
    cluster k is matched to label σ(k), the one-to-one map maximising Σₖ μₖ[σ(k)];
    q(σ(k) | x) = πₖ N(x; μₖ, Σₖ) / Σⱼ πⱼ N(x; μⱼ, Σⱼ).

x is a prediction's first K − 1 probabilities (the last is one minus their sum, so a full
covariance over all K would be singular).  Simplifications against the paper: EM starts from
the predictions themselves as responsibilities (deterministic; the paper restarts from
k-means draws), and beyond 8 labels the matching is greedy (largest μₖ[y] first) instead of
the exact assignment.
"""
import itertools
from typing import Any, List, Sequence, Tuple

from ...extras import require
from ...validation import check, check_int, Real
from .labelled import as_matrix, labelled_calibration, softmax_rows

EXACT_MATCHING_LABELS = 8


def _m_step(x: Any, resp: Any, reg: float) -> Tuple[Any, Any, Any]:
    np = require("numpy", "StaICC calibrations")
    counts = resp.sum(axis=0) + 10 * np.finfo(float).eps
    means = (resp.T @ x) / counts[:, None]
    covariances = []
    for k in range(resp.shape[1]):
        diff = x - means[k]
        covariances.append((resp[:, k, None] * diff).T @ diff / counts[k] + reg * np.eye(x.shape[1]))
    return counts / x.shape[0], means, np.stack(covariances)


def _factors(covariances: Any) -> Tuple[Any, Any]:
    """(L⁻¹ per cluster, log det Σₖ), with Σₖ = L Lᵀ its Cholesky factorisation."""
    np = require("numpy", "StaICC calibrations")
    factors = [np.linalg.cholesky(c) for c in covariances]
    return (np.stack([np.linalg.inv(f) for f in factors]),
            np.array([2 * np.log(np.diag(f)).sum() for f in factors]))


def _log_joint(x: Any, weights: Any, means: Any, inverses: Any, log_dets: Any) -> Any:
    """log πₖ + log N(xᵢ; μₖ, Σₖ) for every row and cluster.

    ‖L⁻¹(x − μ)‖² is summed element-wise per row (no matrix product), so a row's value does not
    depend on the other rows computed with it: one prediction alone equals it within a pass."""
    np = require("numpy", "StaICC calibrations")
    out = np.empty((x.shape[0], len(weights)))
    for k in range(len(weights)):
        solved = ((x - means[k])[:, None, :] * inverses[k][None, :, :]).sum(axis=2)
        out[:, k] = np.log(weights[k]) - 0.5 * ((solved ** 2).sum(axis=1) + log_dets[k]
                                                + x.shape[1] * np.log(2 * np.pi))
    return out


def fit_mixture(x: Any, start: Any, reg: float, iterations: int, tol: float = 1e-10) -> Tuple[Any, Any, Any]:
    """EM from the responsibilities ``start``: (weights, means, covariances) once the mean log-likelihood gains < tol."""
    np = require("numpy", "StaICC calibrations")
    weights, means, covariances = _m_step(x, start, reg)
    previous = -np.inf
    for _ in range(iterations):
        joint = _log_joint(x, weights, means, *_factors(covariances))
        top = joint.max(axis=1, keepdims=True)
        likelihood = float((top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))).mean())
        weights, means, covariances = _m_step(x, softmax_rows(joint), reg)
        if likelihood - previous < tol:
            break
        previous = likelihood
    return weights, means, covariances


def match_clusters(prototypes: Any) -> List[int]:
    """σ: cluster k → label, one to one, maximising Σₖ prototypes[k, σ(k)] (exact up to 8 labels, else greedy)."""
    count = prototypes.shape[0]
    if count <= EXACT_MATCHING_LABELS:
        best = max(itertools.permutations(range(count)),
                   key=lambda perm: sum(float(prototypes[k, perm[k]]) for k in range(count)))
        return list(best)
    matched: List[int] = [-1] * count
    pairs = sorted(((float(prototypes[k, y]), k, y) for k in range(count) for y in range(count)), reverse=True)
    taken = set()
    for _value, k, y in pairs:
        if matched[k] < 0 and y not in taken:
            matched[k] = y
            taken.add(y)
    return matched


class prototypical_calibration(labelled_calibration):
    """A K-cluster Gaussian mixture over the calibration queries' predictions, clusters matched to labels."""

    def __init__(self, label_space: Sequence[str], em_iterations: int = 100, reg_covar: float = 1e-6) -> None:
        super().__init__(label_space)
        self.em_iterations = check_int(em_iterations, "em_iterations", minimum=1, at=" in prototypical_calibration")
        self.reg_covar = check(reg_covar, Real(0, 1, closed="neither", text="a number in (0, 1)"),
                               "reg_covar in prototypical_calibration")
        self.mixture: Any = None
        self.labels_of_clusters: List[int] = []

    def fit(self, probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> None:  # noqa: ARG002  (unsupervised: labels unread)
        matrix = as_matrix(probabilities, len(self.label_space), type(self).__name__)
        weights, means, covariances = fit_mixture(matrix[:, :-1], matrix, self.reg_covar, self.em_iterations)
        full_means = _completed(means)
        self.mixture = (weights, means, *_factors(covariances))
        self.labels_of_clusters = match_clusters(full_means)
        self.trained = True

    def transform(self, probabilities: Any) -> Any:
        np = require("numpy", "StaICC calibrations")
        responsibilities = softmax_rows(_log_joint(probabilities[:, :-1], *self.mixture))
        out = np.zeros_like(responsibilities)
        out[:, self.labels_of_clusters] = responsibilities
        return out


def _completed(means: Any) -> Any:
    """The K − 1 free coordinates of each mean with the last, 1 − their sum, appended."""
    np = require("numpy", "StaICC calibrations")
    return np.concatenate([means, 1 - means.sum(axis=1, keepdims=True)], axis=1)
