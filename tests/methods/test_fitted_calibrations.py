"""The calibrations fitted on calibration queries' label probabilities, each against an independent computation
(SciPy's optimiser, scikit-learn's Gaussian mixture, a pure-Python grid or ratio) and on a function model with a
known distortion (a temperature, a prior shift, a contextual bias, two clusters) that the method must undo."""
import math
import random

import pytest

np = pytest.importorskip("numpy")

from StaICC.methods.calibration import (batch_calibration_learnt, generative_calibration,  # noqa: E402
                                        linc_calibration, platt_scaling, prior_adaptation, prototypical_calibration,
                                        supervised_calibration, temperature_scaling)
from StaICC.methods.calibration.prior_adaptation import adapted_bias  # noqa: E402

LABELS2 = ["no", "yes"]
LABELS3 = ["a", "b", "c"]


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _world(n, labels, seed, scale=2.0, prior=None):
    """True logits s and labels drawn from softmax(s + log prior)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, scale, size=(n, labels))
    if prior is not None:
        s = s + np.log(prior)
    truth = _softmax(s)
    y = np.array([rng.choice(labels, p=row) for row in truth])
    return s, truth, y


def _trained(calibration, model_rows, y, number=None):
    """calibration.train through its own steps: a function model answers each calibration query's prompt, which is
    the query's index in a calibration set of (inputs, label) rows (k = 0: the prompt is the query alone)."""
    rows = [((str(i),), calibration.label_space[int(label)]) for i, label in enumerate(y)]
    model = {str(i): list(map(float, p)) for i, p in enumerate(model_rows)}
    calibration.train(lambda demos, query: query[0], lambda prompt, label_space: model[prompt], rows,
                      calibration_number=number or len(rows), k=0)
    return calibration


def _drawn(calibration, model_rows, y):
    """The (predictions, labels) the fit saw: the calibration set's rows as its fresh stream drew them."""
    rows = [((str(i),), calibration.label_space[int(label)]) for i, label in enumerate(y)]
    prompts, labels = calibration.training_queries(lambda demos, query: query[0], rows, len(rows), 0)
    return np.asarray(model_rows)[[int(p) for p in prompts]], np.asarray(labels)


def _nll(q, y):
    return float(-np.log(np.asarray(q)[np.arange(len(y)), y]).mean())


# --------------------------------------------------------------------------- independent computations
def _scipy_fit(features, y, theta0, l2, logits):
    from scipy.optimize import minimize

    def loss(theta):
        z = logits(features, theta)
        z = z - z.max(axis=1, keepdims=True)
        return float((np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]).mean() + l2 * ((theta - theta0) ** 2).sum())
    return minimize(loss, theta0, method="BFGS", options={"gtol": 1e-10, "maxiter": 10000}).x


AFFINE = [
    (temperature_scaling, 0.0, lambda p: np.ones(1), lambda p, t: t[0] * np.log(p)),
    (platt_scaling, 1e-3, lambda p: np.r_[1.0, np.zeros(p.shape[1])], lambda p, t: t[0] * np.log(p) + t[1:]),
    (supervised_calibration, 1e-3, lambda p: np.r_[np.ones(p.shape[1]), np.zeros(p.shape[1])],
     lambda p, t: t[:p.shape[1]] * np.log(p) + t[p.shape[1]:]),
    (linc_calibration, 1e-3, lambda p: np.r_[np.eye(p.shape[1]).ravel(), np.zeros(p.shape[1])],
     lambda p, t: p @ t[:p.shape[1] ** 2].reshape(p.shape[1], p.shape[1]).T + t[p.shape[1] ** 2:]),
]


@pytest.mark.parametrize("cls, l2, start, logits", AFFINE, ids=[a[0].__name__ for a in AFFINE])
def test_affine_fits_equal_scipys_minimum_of_the_same_objective(cls, l2, start, logits):
    pytest.importorskip("scipy")
    s, _truth, y = _world(300, 3, seed=1)
    model = _softmax(1.7 * s + np.array([0.5, 0.0, -0.3]))
    calibration = _trained(cls(LABELS3, l2=l2), model, y)
    seen, seen_y = _drawn(calibration, model, y)
    theta = _scipy_fit(seen, seen_y, start(model), l2, logits)
    expected = _softmax(logits(model, theta))
    assert np.abs(np.asarray(calibration.transform_rows(model.tolist())) - expected).max() < 1e-5


def test_temperature_scaling_recovers_a_known_temperature():
    """The model is over-confident by T = 3 (its logits are 3 times the truth's): the fit finds T within 10%,
    keeps every argmax, and its likelihood on fresh items approaches the truth's."""
    s, truth, y = _world(3000, 3, seed=2)
    calibration = _trained(temperature_scaling(LABELS3), _softmax(3 * s), y)
    assert abs(calibration.temperature - 3) < 0.3
    s2, truth2, y2 = _world(2000, 3, seed=3)
    q = np.asarray(calibration.transform_rows(_softmax(3 * s2).tolist()))
    assert (q.argmax(1) == s2.argmax(1)).all()
    assert _nll(q, y2) - _nll(truth2, y2) < 0.01 < _nll(_softmax(3 * s2), y2) - _nll(truth2, y2)


@pytest.mark.parametrize("cls", [platt_scaling, supervised_calibration])
def test_the_logit_maps_undo_a_known_affine_distortion(cls):
    """The model's logits are a scaled, shifted copy of the truth's: each map brings the predictions within 0.03 of
    the true probabilities (mean absolute difference) on fresh items, from 0.1 or more."""
    distort = lambda s: _softmax(np.array([2.0, 2.0]) * s + np.array([1.5, 0.0]))  # noqa: E731
    s, _truth, y = _world(3000, 2, seed=4)
    calibration = _trained(cls(LABELS2), distort(s), y)
    s2, truth2, _y2 = _world(2000, 2, seed=5)
    q = np.asarray(calibration.transform_rows(distort(s2).tolist()))
    assert np.abs(q - truth2).mean() < 0.03 < 0.1 < np.abs(distort(s2) - truth2).mean()


def test_linc_undoes_a_contextual_bias_in_probability_space():
    """The model mixes 40% of label 0 into every prediction: LinC's probe brings fresh items' accuracy within
    0.02 of the truth's (from 0.05 or more below it) and closes most of the likelihood gap."""
    distort = lambda truth: 0.6 * truth + 0.4 * np.array([1.0, 0.0])  # noqa: E731
    s, truth, y = _world(3000, 2, seed=4)
    calibration = _trained(linc_calibration(LABELS2), distort(truth), y)
    s2, truth2, y2 = _world(2000, 2, seed=5)
    q = np.asarray(calibration.transform_rows(distort(truth2).tolist()))
    accuracy = lambda rows: (rows.argmax(1) == y2).mean()  # noqa: E731
    assert accuracy(distort(truth2)) < accuracy(truth2) - 0.05 and abs(accuracy(q) - accuracy(truth2)) < 0.02
    assert _nll(q, y2) - _nll(truth2, y2) < 0.25 * (_nll(distort(truth2), y2) - _nll(truth2, y2))


def test_prior_adaptation_is_the_fixed_point_and_equals_a_root_finder():
    pytest.importorskip("scipy")
    from scipy.optimize import brentq
    s, _truth, _y = _world(500, 2, seed=6)
    log_p = np.log(_softmax(s))
    prior = np.array([0.3, 0.7])
    beta = adapted_bias(log_p, prior)
    assert np.abs(_softmax(log_p + beta).mean(0) - prior).max() < 1e-10
    root = brentq(lambda b: _softmax(log_p + [0, b]).mean(0)[1] - 0.7, -20, 20, xtol=1e-14)
    assert abs(beta[1] - root) < 1e-8


def test_ucpa_recovers_a_shifted_prior_and_sucpa_the_labels_prior():
    """The model believes a 0.8 / 0.2 prior where the labels are balanced: UCPA's correction is log 4 (± 0.15) and
    brings accuracy back to the truth's; SUCPA matches the calibration labels' (smoothed) frequencies."""
    s, truth, y = _world(4000, 2, seed=7)
    model = _softmax(np.log(truth) + np.log([0.8, 0.2]))
    ucpa = _trained(prior_adaptation(LABELS2), model, y)
    assert abs((ucpa.beta[1] - ucpa.beta[0]) - math.log(4)) < 0.15
    q = np.asarray(ucpa.transform_rows(model.tolist()))
    assert (q.argmax(1) == y).mean() > (model.argmax(1) == y).mean() + 0.05
    assert abs((q.argmax(1) == y).mean() - (truth.argmax(1) == y).mean()) < 0.02
    s, truth, y = _world(4000, 2, seed=8, prior=[0.7, 0.3])
    sucpa = _trained(prior_adaptation(LABELS2, supervised=True), _softmax(np.log(truth) - np.log([0.7, 0.3])), y)
    counts = np.bincount(_drawn(sucpa, truth, y)[1], minlength=2)
    assert np.abs(sucpa.prior - (counts + 1) / (len(y) + 2)).max() == 0
    assert abs((sucpa.beta[0] - sucpa.beta[1]) - math.log(7 / 3)) < 0.15


def test_bcl_picks_gamma_as_a_hand_written_grid_search_and_removes_a_contextual_bias():
    """The model adds a contextual bias (+0.6 to label 0's probability, renormalised): the γ BCL picks equals a
    pure-Python grid search's, is positive, and the calibrated accuracy is within 0.03 of the truth's."""
    s, truth, y = _world(1000, 2, seed=9, scale=1.0)
    model = truth + np.array([0.6, 0.0])
    model = model / model.sum(1, keepdims=True)
    calibration = _trained(batch_calibration_learnt(LABELS2, batch_size=128), model, y)
    seen, seen_y = _drawn(calibration, model, y)
    drawn = seen.tolist()
    mean = [sum(r[j] for r in drawn) / len(drawn) for j in range(2)]
    best = max(((sum(int(max(range(2), key=lambda j: (r[j] - g * mean[j], -j)) == t) for r, t in zip(drawn, seen_y)),
                 -abs(g - 1), g) for g in [-5 + 10 * i / 100 for i in range(101)]))
    assert calibration.gamma == best[2] > 0
    rows = model.tolist()
    q = np.asarray(calibration.transform_rows(rows))
    assert abs((q.argmax(1) == y).mean() - (truth.argmax(1) == y).mean()) < 0.03
    assert (model.argmax(1) == y).mean() < (truth.argmax(1) == y).mean() - 0.1
    first = rows[:128]
    first_mean = [sum(r[j] for r in first) / 128 for j in range(2)]
    by_hand = [[math.exp(v) / sum(math.exp(w) for w in row) for v in row]
               for row in ([r[j] - calibration.gamma * first_mean[j] for j in range(2)] for r in first)]
    assert np.abs(q[:128] - np.asarray(by_hand)).max() < 1e-12


def test_generative_calibration_divides_by_the_pseudo_inputs_marginal():
    """By hand: p / mean(p), renormalised; on a model biased 3 : 1 toward label 0 over balanced inputs, the
    calibrated predictions' mean is 40% or more closer to the truth's and accuracy returns to the truth's."""
    s, truth, y = _world(3000, 2, seed=10)
    model = truth * [3.0, 1.0]
    model = model / model.sum(1, keepdims=True)
    calibration = _trained(generative_calibration(LABELS2), model, y)
    mean = _drawn(calibration, model, y)[0].mean(0)
    by_hand = (model / mean) / (model / mean).sum(1, keepdims=True)
    q = np.asarray(calibration.transform_rows(model.tolist()))
    assert np.abs(q - by_hand).max() < 1e-12
    assert np.abs(q.mean(0) - truth.mean(0)).max() < 0.6 * np.abs(model.mean(0) - truth.mean(0)).max()
    assert abs((q.argmax(1) == y).mean() - (truth.argmax(1) == y).mean()) < 0.02


def _two_clusters(n, seed):
    """Label 0's predictions centre on p₀ = 0.9, label 1's on p₀ = 0.7: argmax says label 0 for all."""
    rng = random.Random(seed)
    y = [rng.randrange(2) for _ in range(n)]
    rows = [[c, 1 - c] for c in (rng.gauss(0.9 if t == 0 else 0.7, 0.03) for t in y)]
    return np.asarray(rows), np.asarray(y)


def test_prototypical_calibration_separates_two_clusters_and_equals_sklearns_mixture():
    model, y = _two_clusters(600, seed=11)
    calibration = _trained(prototypical_calibration(LABELS2), model, y)
    q = np.asarray(calibration.transform_rows(model.tolist()))
    assert (model.argmax(1) == y).mean() < 0.6 and (q.argmax(1) == y).mean() > 0.97
    q = np.asarray(calibration.transform_rows(_drawn(calibration, model, y)[0].tolist()))
    sklearn = pytest.importorskip("sklearn.mixture")
    from StaICC.methods.calibration.prototypical import _m_step
    model = _drawn(calibration, model, y)[0]
    weights, means, covariances = _m_step(model[:, :-1], model, 1e-6)
    mixture = sklearn.GaussianMixture(2, covariance_type="full", reg_covar=1e-6, tol=1e-12, max_iter=1000,
                                      weights_init=weights, means_init=means,
                                      precisions_init=np.linalg.inv(covariances)).fit(model[:, :-1])
    order = np.argsort(mixture.means_[:, 0])
    mine = calibration.mixture[1]
    assert np.abs(mine[np.argsort(mine[:, 0])] - mixture.means_[order]).max() < 1e-6
    expected = mixture.predict_proba(model[:, :-1])
    label_of_cluster = calibration.labels_of_clusters
    assert np.abs(q[:, label_of_cluster] - expected).max() < 1e-5


def test_prototypical_matches_clusters_to_labels_by_the_best_assignment():
    from StaICC.methods.calibration.prototypical import match_clusters
    prototypes = np.array([[0.5, 0.4, 0.1], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    assert match_clusters(prototypes) == [1, 0, 2]  # 0.4 + 0.6 + 0.6 beats the greedy 0.6 + 0.4 + 0.6 tie broken
    many = np.eye(10)[::-1]
    assert match_clusters(many) == list(range(10))[::-1]


@pytest.mark.parametrize("make, message", [
    (lambda: platt_scaling(LABELS2, l2=-1), "l2"),
    (lambda: batch_calibration_learnt(LABELS2, gamma_steps=0), "gamma_steps"),
    (lambda: prototypical_calibration(LABELS2, reg_covar=0), "reg_covar"),
    (lambda: prior_adaptation(LABELS2, iterations=-3), "iterations"),
])
def test_bad_settings_are_refused_naming_them(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_pmi_is_the_normalised_ratio_and_removes_each_prompts_own_bias():
    """By hand: (p / p∅) renormalised.  A function model multiplies the true posterior by a bias of each prompt's
    demonstrations, and answers that bias for the premise-free prompt: PMI gives the truth back (to 1e-12)."""
    from StaICC.methods.calibration.pmi import pmi_rows
    s, truth, _y = _world(200, 3, seed=12)
    bias = _softmax(np.random.default_rng(13).normal(0, 1.5, size=(200, 3)))
    model = truth * bias
    model = model / model.sum(1, keepdims=True)
    q = np.asarray(pmi_rows(model.tolist(), bias.tolist()))
    by_hand = (model / bias) / (model / bias).sum(1, keepdims=True)
    assert np.abs(q - by_hand).max() < 1e-12 and np.abs(q - truth).max() < 1e-12
    with pytest.raises(ValueError, match="premise-free"):
        pmi_rows(model.tolist(), bias.tolist()[:3])


@pytest.mark.parametrize("labels, parameters, rows", [(2, 6, 7), (3, 12, 40), (6, 42, 333), (14, 210, 64), (4, 1, 50)])
def test_the_hessians_weighted_gram_term_is_the_sum_over_rows_and_labels(labels, parameters, rows):
    from StaICC.methods.calibration.labelled import _weighted_gram
    rng = np.random.default_rng(labels * 1000 + rows)
    design, q = rng.normal(size=(rows, labels, parameters)), rng.dirichlet(np.ones(labels), size=rows)
    got = _weighted_gram(design.reshape(rows * labels, parameters), q)
    by_loop = sum(q[n, k] * np.outer(design[n, k], design[n, k]) for n in range(rows) for k in range(labels))
    assert np.allclose(got, by_loop, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("labels", [2, 3, 6, 14])
def test_lincs_structured_map_is_its_design(labels):
    """LinC's fit reads M(p) through the shared features (p, 1): its logits, Mᵢᵀ rᵢ and Σ Mᵢᵀ diag(qᵢ) Mᵢ equal the
    design array's, computed by sums over its entries."""
    from StaICC.methods.calibration.labelled import design_map
    rng = np.random.default_rng(labels)
    p, q = rng.dirichlet(np.ones(labels), size=40), rng.dirichlet(np.ones(labels), size=40)
    calibration = linc_calibration([f"l{i}" for i in range(labels)])
    design = calibration.design(p)
    structured, plain = calibration.linear_map(p), design_map(design)
    theta = rng.normal(size=design.shape[2])
    assert np.allclose(structured.logits(theta), np.einsum("nkp,p->nk", design, theta), rtol=1e-12, atol=1e-12)
    assert np.allclose(structured.transposed(q), np.einsum("nkp,nk->np", design, q), rtol=1e-12, atol=1e-12)
    assert np.allclose(structured.gram(q), np.einsum("nkp,nk,nkr->pr", design, q, design), rtol=1e-12, atol=1e-12)
    assert np.allclose(plain.gram(q), structured.gram(q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [temperature_scaling, platt_scaling, supervised_calibration])
@pytest.mark.parametrize("labels", [2, 3, 6, 14])
def test_the_slope_and_bias_maps_are_their_designs(cls, labels):
    """Temperature, Platt and per-class affine read M(p) through log p alone (:mod:`...calibration.slopes`): the logits,
    Mᵢᵀ rᵢ and Σ Mᵢᵀ diag(qᵢ) Mᵢ equal the design array's, computed by sums over its entries."""
    rng = np.random.default_rng(labels)
    p, q = rng.dirichlet(np.ones(labels), size=40), rng.dirichlet(np.ones(labels), size=40)
    calibration = cls([f"l{i}" for i in range(labels)])
    design, structured = calibration.design(p), calibration.linear_map(p)
    theta = rng.normal(size=design.shape[2])
    assert np.allclose(structured.logits(theta), np.einsum("nkp,p->nk", design, theta), rtol=1e-12, atol=1e-12)
    assert np.allclose(structured.transposed(q), np.einsum("nkp,nk->np", design, q), rtol=1e-12, atol=1e-12)
    assert np.allclose(structured.gram(q), np.einsum("nkp,nk,nkr->pr", design, q, design), rtol=1e-12, atol=1e-10)
