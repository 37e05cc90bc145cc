"""The exact-sum rule's branch: declared by what the rows are, recorded per pass, said when it rests on rounding.

Every expected number is computed here from the formulas of the specification (§6.3, §7), not
by the package's own metric functions.
"""
import math
import warnings

import pytest

from StaICC import Normal
from StaICC.errors import StaICCWarning
from StaICC.metrics import (METRICS, PredictionRows, averaged_truelabel_likelihood, bias_entropy,
                            expected_calibration_error_1, get_metric, own_distribution, own_ece_nonstandard,
                            own_likelihood_nonstandard, with_own_distribution_metrics, normal_metrics)
from StaICC.metrics.exact_sum import (FEW_ROWS, RowRule, census, check_prediction_kind, notice, recorded_rule,
                                      rows_of_kind)
from StaICC.numeric import CHECK, SOFTMAX


def softmax(row):
    exps = [math.exp(v - max(row)) for v in row]
    total = 0
    for e in exps:
        total += e
    return [e / total for e in exps]


def passing_rows():
    """Probability rows that pass the exact check (sums exactly 1.0)."""
    return [[0.25, 0.75], [0.5, 0.5], [0.875, 0.125], [0.0625, 0.9375]]


def likelihood(rows, truth):
    total = 0
    for row, g in zip(rows, truth):
        total += row[g]
    return total / len(rows)


TRUTH = [1, 0, 0, 1]


def test_declared_probabilities_take_the_softmax_branch_even_when_every_row_passes():
    rows = passing_rows()
    standard = PredictionRows(rows)
    declared = rows_of_kind(PredictionRows(rows), "probabilities")
    assert declared.rule == SOFTMAX and standard.rule == CHECK
    assert averaged_truelabel_likelihood(TRUTH, standard) == likelihood(rows, TRUTH)  # the check passed: as given
    assert averaged_truelabel_likelihood(TRUTH, declared) == likelihood([softmax(r) for r in rows], TRUTH)


def test_loglikelihoods_are_softmaxed_once_into_the_distribution_then_take_the_softmax_branch():
    logs = [[math.log(0.25), math.log(0.75)], [math.log(0.9), math.log(0.1)]]
    rows = rows_of_kind(PredictionRows(logs), "loglikelihoods")
    assert rows.rule == SOFTMAX
    for got, log in zip(rows, logs):
        assert got == softmax(log)
    twice = [softmax(softmax(log)) for log in logs]
    assert averaged_truelabel_likelihood([1, 0], rows) == likelihood(twice, [1, 0])
    assert rows_of_kind(PredictionRows(logs), "logits") == rows


def test_the_bias_entropy_softmaxes_the_mean_under_the_softmax_branch():
    rows = passing_rows()
    mean = [left_to_right(r[c] for r in rows) / len(rows) for c in range(2)]
    assert left_to_right(mean) == 1  # the mean passes the check, so the standard reads it as it is
    entropy = -left_to_right(v * math.log(v) for v in mean)
    assert bias_entropy([0] * 4, PredictionRows(rows)) == pytest.approx(entropy, abs=1e-15)
    squashed = softmax(mean)
    assert bias_entropy([0] * 4, rows_of_kind(PredictionRows(rows), "probabilities")) == \
        pytest.approx(-left_to_right(v * math.log(v) for v in squashed), abs=1e-15)


def test_int_labels_with_a_declared_kind_are_refused_naming_the_dataset():
    with pytest.raises(ValueError, match="'sst2' are int label indexes"):
        rows_of_kind(PredictionRows.passing([[1, 0]], [0]), "probabilities", "sst2")
    with pytest.raises(ValueError, match="prediction_kind must be None.*'probabilities'"):
        check_prediction_kind("probability")


def left_to_right(values):
    total = 0
    for v in values:
        total += v
    return total


def near_rows(count, failing):
    """``count`` probability rows of which exactly ``failing`` miss a sum of 1.0 by rounding only."""
    rows = []
    for i in range(count):
        row = [0.7, 0.2, 0.1] if i < failing else [0.25, 0.25, 0.5]
        assert (left_to_right(row) != 1) == (i < failing)  # 0.7 + 0.2 + 0.1 = 0.9999999999999999
        rows.append(row)
    return rows


@pytest.mark.parametrize("failing, rests", [(0, True), (1, True), (FEW_ROWS, True), (FEW_ROWS + 1, False)])
def test_census_says_when_the_branch_was_decided_by_few_probability_rows(failing, rests):
    rows = PredictionRows(near_rows(40, failing))
    averaged_truelabel_likelihood([0] * 40, rows)  # the metric takes the branch
    found = census(rows, RowRule(), values=True)
    assert found.failing == failing and found.rounding is rests
    assert found.branch == ("as given" if failing == 0 else "softmax")
    assert census(rows, RowRule(), values=False).rounding is False  # only argmax read: nothing moved


def test_census_leaves_logits_one_hot_declared_and_reproducible_rows_alone():
    logits = PredictionRows([[2.0, -1.0], [0.5, 3.0]])
    assert census(logits, RowRule(), values=True).rounding is False
    assert census(logits, RowRule(), values=True).loglikelihoods is False
    one_hot = PredictionRows.passing([[1, 0], [0, 1]], [0, 1])
    assert census(one_hot, RowRule(), values=True) == census(one_hot, RowRule(), values=True)._replace(rounding=False)
    declared = rows_of_kind(PredictionRows(near_rows(4, 1)), "probabilities")
    assert census(declared, RowRule("probabilities"), values=True).as_dict() == \
        {"rule": "softmax", "rows": 4, "branch": "softmax", "rounding": False, "mean_rounding": False,
         "loglikelihoods": False}
    reproducible = PredictionRows(near_rows(4, 1))
    assert census(reproducible, RowRule(None, True), values=True).rounding is False


def test_census_flags_loglikelihoods_and_the_bias_entropys_mean():
    logs = PredictionRows([[-0.1, -2.5], [-1.2, -0.4]])
    assert census(logs, RowRule(), values=True).loglikelihoods is True
    assert census(PredictionRows(near_rows(200, 60)), RowRule(), entropy=True).mean_rounding is True


def test_the_notice_names_the_runs_the_metrics_and_the_argument():
    rounding = census(PredictionRows(near_rows(8, 2)), RowRule(), values=True)
    line = notice([("Normal trec", [rounding]), ("Normal sst2", [rounding._replace(rounding=False)])])
    assert line.startswith("NUMERICS: ") and "\n" not in line
    assert "Normal trec" in line and "Normal sst2" not in line
    assert "averaged_truelabel_likelihood, expected_calibration_error_1" in line
    assert "prediction_kind='probabilities'" in line
    logs = census(PredictionRows([[-0.1, -2.5]]), RowRule(), values=True)
    line = notice([("Normal trec", [rounding]), ("GLER sst2", [logs.as_dict()])])  # results-file form too
    assert "GLER sst2 look like log-likelihoods" in line and "prediction_kind='loglikelihoods'" in line
    assert notice([("Normal trec", [rounding._replace(rounding=False)])]) is None


def test_own_distribution_normalises_probabilities_once_and_softmaxes_scores_once():
    near = [[0.7, 0.2, 0.1], [0.25, 0.25, 0.5]]
    got = own_distribution(near)
    assert got[1] == [0.25, 0.25, 0.5]
    assert got[0] == [v / math.fsum(near[0]) for v in near[0]]
    logits = [[1.0, 2.0], [0.0, -1.0]]
    assert own_distribution(logits) == [softmax(r) for r in logits]
    rows = passing_rows()
    assert own_likelihood_nonstandard(TRUTH, rows_of_kind(PredictionRows(rows), "probabilities")) == \
        likelihood(rows, TRUTH)  # the declared rows' own distribution is the rows, not their softmax


def test_own_ece_is_the_standards_formula_on_the_own_distribution():
    rows = [[0.95, 0.05], [0.65, 0.35], [0.15, 0.85], [0.45, 0.55]] * 3
    truth = [0, 1, 1, 0] * 3
    # by hand: confidences 0.95 (bin 9, right), 0.65 (bin 6, wrong), 0.85 (bin 8, right), 0.55 (bin 5, wrong)
    expected = (3 / 12) * abs(1 - 0.95) + (3 / 12) * abs(0 - 0.65) + (3 / 12) * abs(1 - 0.85) + (3 / 12) * abs(0 - 0.55)
    assert own_ece_nonstandard(truth, rows) == pytest.approx(expected, abs=1e-12)
    assert expected_calibration_error_1(truth, rows) == pytest.approx(expected, abs=1e-12)  # every row passed
    declared = rows_of_kind(PredictionRows(rows), "probabilities")  # the softmax branch: the standard's ECE moves,
    assert expected_calibration_error_1(truth, declared) != pytest.approx(expected, abs=1e-3)
    assert own_ece_nonstandard(truth, declared) == pytest.approx(expected, abs=1e-12)  # the own distribution's not


def test_registry_names_them_non_standard_with_their_direction():
    assert get_metric("own_likelihood_nonstandard").higher_is_better is True
    assert get_metric("own_ece_nonstandard").higher_is_better is False
    for name in ("own_likelihood_nonstandard", "own_ece_nonstandard"):
        assert "non-standard" in METRICS[name].display_name
    metrics = with_own_distribution_metrics(normal_metrics())
    assert list(metrics)[-2:] == ["own_likelihood_nonstandard", "own_ece_nonstandard"]
    assert with_own_distribution_metrics({"accuracy": normal_metrics()["accuracy"]}) == \
        {"accuracy": normal_metrics()["accuracy"]}


def test_recorded_rule_reads_a_results_files_metadata():
    metadata = {"exact_sum": {"trec": {"prediction_kind": "probabilities", "passes": [{"rule": "softmax"}]}}}
    assert recorded_rule(metadata, "trec") == SOFTMAX
    assert recorded_rule(metadata, "sst2") == CHECK and recorded_rule({}, "trec") == CHECK


# ----------------------------------------------------------------------------
# through a run: preentered predictions and functions
# ----------------------------------------------------------------------------
def small_normal():
    bench = Normal(datasets=["rotten_tomatoes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench.limit_test_items(8)
    return bench


def model_logs(prompt):
    """A deterministic 'model': log-probabilities over two labels from the prompt's length."""
    p = 0.2 + 0.6 * ((len(prompt) * 7919) % 97) / 97
    return [math.log(1 - p), math.log(p)]


def test_handed_back_loglikelihoods_give_the_numbers_of_a_backend_declaring_probabilities():
    from StaICC.backends.base import FunctionBackend

    class ProbabilityBackend(FunctionBackend):  # what the hf backend answers: the softmax of the label scores
        prediction_kind = "probabilities"

    bench = small_normal()
    logs = [model_logs(p) for p in bench[0].prompt_set()]
    backend = ProbabilityBackend(lambda prompt, **_: softmax(model_logs(prompt)))
    backend.prediction_kind = "probabilities"
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaICCWarning)  # neither route has anything to say but the EXACT-SUM line:
        warnings.filterwarnings("ignore", "EXACT-SUM", StaICCWarning)  # these rows all pass the original's check
        served = bench(backend)
        handed = bench(preentered_predictions=[logs], prediction_kind="loglikelihoods")
    for name, value in served["Averaged results"].items():
        assert handed["Averaged results"][name] == pytest.approx(value, abs=1e-12), name
    with pytest.warns(StaICCWarning, match="look like log-likelihoods.*prediction_kind='loglikelihoods'") as caught:
        plain = bench(preentered_predictions=[logs])
    assert len([w for w in caught if "NUMERICS" in str(w.message)]) == 1  # one line for the run
    assert plain["Averaged results"]["accuracy"] == served["Averaged results"]["accuracy"]
    assert plain["Averaged results"]["averaged_truelabel_likelihood"] != \
        pytest.approx(served["Averaged results"]["averaged_truelabel_likelihood"], abs=1e-6)


def test_a_function_keeps_the_standards_rule_unless_told_and_the_metadata_records_each_pass():
    bench = small_normal()
    rows = {}

    def f(prompt, **_):
        rows.setdefault(prompt, softmax(model_logs(prompt)))
        return rows[prompt]

    with pytest.warns(StaICCWarning, match="decided by rounding in Normal rotten_tomatoes"):
        standard = bench(f)
    entry = standard.metadata["exact_sum"]["rotten_tomatoes"]
    assert entry["prediction_kind"] is None and entry["passes"][0]["rule"] == "check"
    assert entry["passes"][0]["rounding"] is True
    with pytest.warns(StaICCWarning, match="EXACT-SUM: .* averaged_truelabel_likelihood, expected_calibration_error_1 "
                      "in Normal rotten_tomatoes") as caught:  # every row passes the check the original applied
        declared = bench(f, prediction_kind="probabilities")
    assert [str(w.message)[:10] for w in caught] == ["EXACT-SUM:"]
    assert declared.metadata["exact_sum"]["rotten_tomatoes"]["passes"][0]["branch"] == "softmax"
    truth = bench[0].ground_truth()
    prompts = bench[0].prompt_set()
    expected = likelihood([softmax(rows[p]) for p in prompts], truth * 2)
    assert declared["Averaged results"]["averaged_truelabel_likelihood"] == pytest.approx(expected, abs=1e-15)
    with pytest.raises(ValueError, match="prediction_kind must be None"):
        bench(f, prediction_kind="probs")
