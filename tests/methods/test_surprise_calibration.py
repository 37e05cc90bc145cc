"""Surprise calibration: the accumulated surprise by hand, the fit against SciPy, a known surprise-driven prior
recovered, the method against the hand-wired route bit for bit, and its prefix prompts counted."""
import math

import pytest

np = pytest.importorskip("numpy", reason="the calibrations need numpy (pip install \"StaICC[methods]\")")

from StaICC.methods.calibration.surprise import _design, accumulated_surprise, surprise_calibration  # noqa: E402


def test_the_accumulated_surprise_is_the_decayed_sum_of_each_label_s_surprise():
    rows, labels = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [1, 1, 0]
    s = [-math.log(0.2), -math.log(0.7), -math.log(0.6)]
    assert accumulated_surprise(rows, labels, 2, 0.5) == pytest.approx([s[2], 0.25 * s[0] + 0.5 * s[1]], rel=1e-15)
    assert accumulated_surprise(rows, labels, 2, 0.0) == pytest.approx([s[2], 0.0])
    assert accumulated_surprise([], [], 3, 0.7) == [0.0, 0.0, 0.0]  # no demonstration, no shift


def _model(n, seed, lam=0.8, bias=(0.0, 0.6, -0.4), decay=0.5, k=4):
    """Queries whose predictions carry a prior log π = b + λ h_k from their demonstrations' surprise; the labels
    are drawn from the undistorted prediction."""
    rng = np.random.default_rng(seed)
    truth_logits = rng.normal(0, 1.5, (n, 3))
    truth = np.exp(truth_logits) / np.exp(truth_logits).sum(1, keepdims=True)
    labels = np.array([rng.choice(3, p=p) for p in truth])
    contexts = []
    for _ in range(n):
        demo_labels = rng.integers(0, 3, k).tolist()
        contexts.append((rng.dirichlet(np.ones(3), k).tolist(), demo_labels))
    h = np.array([accumulated_surprise(r, y, 3, decay) for r, y in contexts])
    biased = truth_logits + np.asarray(bias) + lam * h
    probs = np.exp(biased - biased.max(1, keepdims=True))
    return (probs / probs.sum(1, keepdims=True)).tolist(), labels.tolist(), contexts, truth


def test_a_known_surprise_driven_prior_is_recovered():
    """λ = 0.8, b = (0, 0.6, −0.4), γ = 0.5: recovered within 0.1 (γ exactly, from the grid), and the calibrated
    predictions' likelihood of the true labels is within 0.01 of the undistorted model's."""
    probs, labels, contexts, truth = _model(6000, 0)
    calibration = surprise_calibration(["a", "b", "c"], l2=0.0)
    calibration.fit(probs, labels, contexts)
    b1, b2, lam = calibration.theta
    assert calibration.decay == 0.5
    assert abs(lam - 0.8) < 0.1 and abs(b1 - 0.6) < 0.1 and abs(b2 + 0.4) < 0.1
    got = np.asarray(calibration.transform(probs, calibration.histories(contexts, calibration.decay)))
    rows = np.arange(len(labels))

    def nll(p):
        return -np.log(p[rows, labels]).mean()
    assert abs(nll(got) - nll(truth)) < 0.01 and nll(np.asarray(probs)) > nll(truth) + 0.1


def test_the_fit_is_scipys_minimum_at_the_chosen_decay():
    scipy = pytest.importorskip("scipy.optimize")
    probs, labels, contexts, _truth = _model(300, 1)
    calibration = surprise_calibration(["a", "b", "c"], l2=1e-3)
    calibration.fit(probs, labels, contexts)
    offset = np.log(np.asarray(probs))
    design = _design(calibration.histories(contexts, calibration.decay), 3)

    def objective(theta):
        logits = offset + design @ theta
        top = logits.max(1)
        return (np.log(np.exp(logits - top[:, None]).sum(1)) + top - logits[np.arange(300), labels]).mean() \
            + 1e-3 * theta @ theta
    reference = scipy.minimize(objective, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    assert np.allclose(calibration.theta, reference, atol=1e-5)


@pytest.mark.parametrize("args, message", [({"decays": [1.5]}, "decays"), ({"l2": -1}, "l2")])
def test_bad_arguments_are_refused(args, message):
    from StaICC.methods.builtin import built_in
    with pytest.raises(ValueError, match=message):
        built_in("surprise", **args)


def test_the_method_equals_the_hand_wired_route_bit_for_bit():
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    from method_routes import CALIBRATION_NUMBER, LIMIT, backend, hand_wired

    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.builtin import built_in
    from StaICC.methods.run import run_methods
    datasets = ("TREC", "rotten_tomatoes", "SST5")
    result = run_methods(backend(), [built_in("surprise", calibration_number=CALIBRATION_NUMBER)], "Normal",
                         list(datasets), test_items=QuerySubset.first(LIMIT))
    expected = hand_wired("Normal", ("surprise",))["surprise"]
    for dataset in datasets:
        summary, rows = expected[dataset]
        assert result["surprise"]["Normal"]["Divided results"][dataset] == summary
        got = [r["prediction"] for r in result["surprise"]["Normal"].records if r["dataset"] == dataset]
        plain = [r["prediction"] for r in result["vanilla"]["Normal"].records if r["dataset"] == dataset]
        assert got == [list(row) for row in rows] and got != plain
    # per dataset: vanilla's test prompts, the calibration prompts and their k prefixes, k prefixes per test query
    queries = sum(1 for r in result["vanilla"]["Normal"].records if r["dataset"] in datasets)
    assert result.metadata["asked"] == queries * (1 + 4) + len(datasets) * CALIBRATION_NUMBER * (1 + 4)
