"""Calibrations fitted on the test pass itself: cross-fitting reads no query's own label, asks no prompt, and
equals fitting each fold by hand on the others."""
import pytest

np = pytest.importorskip("numpy", reason="the calibrations need numpy (pip install \"StaICC[methods]\")")

from StaICC import cli  # noqa: E402
from StaICC.methods.builtin import built_in  # noqa: E402
from StaICC.methods.calibration import platt_scaling, prior_adaptation, temperature_scaling  # noqa: E402
from StaICC.methods.calibration.labelled import crossfit_rows  # noqa: E402


def _pass(n=40, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    logits = rng.normal(0, 1, (n, 3)) + 2.0 * np.eye(3)[labels] + np.array([1.0, 0, 0])  # a bias toward label 0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    return probs.tolist(), labels.tolist()


def test_each_fold_is_calibrated_by_a_fit_on_the_other_folds_alone():
    rows, labels = _pass()
    got = crossfit_rows(lambda: platt_scaling(["a", "b", "c"]), rows, labels, 4)
    for fold in range(4):
        rest = [q for q in range(40) if q % 4 != fold]
        by_hand = platt_scaling(["a", "b", "c"])
        by_hand.fit([rows[q] for q in rest], [labels[q] for q in rest])
        held = list(range(fold, 40, 4))
        assert [got[q] for q in held] == by_hand.transform_rows([rows[q] for q in held])


def test_a_query_s_own_label_never_reaches_its_row():
    """Flipping one query's label changes the other folds' rows, never its own."""
    rows, labels = _pass()
    before = crossfit_rows(lambda: temperature_scaling(["a", "b", "c"]), rows, labels, 5)
    flipped = list(labels)
    flipped[7] = (flipped[7] + 1) % 3
    after = crossfit_rows(lambda: temperature_scaling(["a", "b", "c"]), rows, flipped, 5)
    assert after[7] == before[7]
    assert any(after[q] != before[q] for q in range(40) if q % 5 != 7 % 5)


def test_ucpa_on_the_pass_makes_the_pass_mean_uniform():
    """Transductive UCPA (no label read): the calibrated mean prediction of the pass is the uniform prior."""
    rows, _labels = _pass(200)
    got = np.asarray(crossfit_rows(lambda: prior_adaptation(["a", "b", "c"]), rows, [], 5, transductive=True))
    assert np.abs(got.mean(0) - 1 / 3).max() < 1e-9
    assert np.abs(np.asarray(rows).mean(0) - 1 / 3).max() > 0.05  # the pass was biased


def test_cross_fitting_recovers_a_known_temperature():
    """Predictions made over-confident by T = 1/3: the cross-fitted rows' mean true-label likelihood is within
    0.01 of the true model's, far above the distorted one's."""
    rng = np.random.default_rng(3)
    n = 3000
    logits = rng.normal(0, 1, (n, 2))
    truth = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = (rng.random(n) < truth[:, 1]).astype(int)
    sharp = np.exp(3 * logits) / np.exp(3 * logits).sum(1, keepdims=True)
    got = np.asarray(crossfit_rows(lambda: temperature_scaling(["a", "b"]), sharp.tolist(), labels.tolist(), 5))

    def nll(p):
        return -np.log(p[np.arange(n), labels]).mean()
    assert abs(nll(got) - nll(truth)) < 0.01 and nll(sharp) > nll(truth) + 0.1


def test_the_default_asks_no_calibration_prompt_and_prompts_asks_them():
    from StaICC.methods.run import run_methods
    from StaICC.backends.reference import ReferenceBackend
    from StaICC.engine.selection import QuerySubset
    crossfit = run_methods(ReferenceBackend(), ["platt"], "Normal", ["rotten_tomatoes"],
                           test_items=QuerySubset.first(20))
    prompts = run_methods(ReferenceBackend(), [built_in("platt", calibration="prompts", calibration_number=16)],
                          "Normal", ["rotten_tomatoes"], test_items=QuerySubset.first(20))
    assert prompts.metadata["asked"] == crossfit.metadata["asked"] + 16
    assert dict(built_in("platt").parameters)["calibration"] == "crossfit"


@pytest.mark.parametrize("args, message", [
    ("calibration=held_out", "method 'platt': calibration must be one of crossfit, prompts, got 'held_out'"),
    ("folds=1", "folds"),
])
def test_a_bad_calibration_argument_is_one_line(args, message, capsys):
    code = cli.main(["run", "--datasets", "TREC", "--limit", "5", "--methods", "vanilla,platt", "--method-args", args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err


@pytest.mark.parametrize("name", ["batch", "platt"])
def test_a_method_s_records_hold_its_rows_beside_the_model_s_answers(name):
    """A method's rows reach the summary without an answer built per row: each record holds the calibrated row
    (the rows the hand-wired calibration gives), its argmax, and the model's own text and parsed flag."""
    from StaICC.methods.calibration import batch_calibration
    from StaICC.methods.run import run_methods
    from StaICC.backends.reference import ReferenceBackend
    from StaICC.engine.selection import QuerySubset
    result = run_methods(ReferenceBackend(), [name], "Normal", ["TREC"], test_items=QuerySubset.first(40))
    plain, calibrated = list(result["vanilla"].records), list(result[name].records)
    rows = [r["prediction"] for r in plain]
    labels = [r["label"] for r in plain]
    expected = batch_calibration(rows) if name == "batch" else \
        crossfit_rows(lambda: platt_scaling([str(label) for label in range(len(rows[0]))]), rows, labels, 5)
    assert [r["prediction"] for r in calibrated] == expected
    assert [r["predicted"] for r in calibrated] == [row.index(max(row)) for row in expected]
    assert [(r["text"], r["parsed"]) for r in calibrated] == [(r["text"], r["parsed"]) for r in plain]
