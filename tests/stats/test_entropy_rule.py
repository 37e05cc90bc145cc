"""The bias entropy recomputed from records keeps the exact-sum rule the run recorded.

Rows declared probabilities (``prediction_kind="probabilities"``, as every model backend declares them)
take the softmax branch always: the standard's entropy softmaxes their mean row even where that mean
sums to exactly 1.0. Statistics recomputed from the records (reports, comparisons, lite estimates) must
take the same branch, not decide it again from the mean's last bit.
"""
import math
import warnings

import pytest

from StaICC import run_lite, run_suite
from StaICC.numeric import softmax
from StaICC.report.runs import load_run
from StaICC.runs import Run, write
from StaICC.stats import part_statistics

pytestmark = pytest.mark.filterwarnings("ignore")


def skewed(prompt, label_space):  # noqa: ARG001  (a model takes the prompt and the label space)
    """The same dyadic row for every prompt: its mean sums to exactly 1.0."""
    return [0.75, 0.25] + [0.0] * (len(label_space) - 2)


def _entropy(vector):
    return -math.fsum(v * math.log(v) for v in vector if v)


SOFTMAXED = _entropy(softmax([0.75, 0.25, 0.0, 0.0, 0.0, 0.0]))


def test_records_of_a_softmax_rule_run_give_its_entropy_again(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_suite(skewed, "Domain_bias", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    recorded = result["Domain_bias"]["Divided results"]["TREC"]["entropy"]
    assert math.isclose(recorded, SOFTMAXED, rel_tol=1e-12)  # the softmax branch, not the raw mean's 0.562
    write(Run.from_result(result, None), str(tmp_path / "run"), log_samples="compact")
    part = load_run(str(tmp_path / "run")).parts["Domain_bias"]
    assert part_statistics(part)["TREC"].point()["entropy"] == recorded  # checked against results.json, too


def test_a_lite_estimate_of_a_softmax_rule_run_takes_its_branch():
    pytest.importorskip("numpy")  # the lite estimates
    lite = run_lite(skewed, 0.5, "Domain_bias", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    estimates = lite.metadata["lite"]["estimates"]["benchmarks"]["Domain_bias"]
    for row in ("TREC", "Averaged"):  # every subset's mean row is the same: the estimate is exact, on the run's branch
        cell = estimates[row]["entropy"]
        assert all(math.isclose(cell[key], SOFTMAXED, rel_tol=1e-12) for key in ("value", "low", "high")), cell


def test_a_loaded_run_and_a_result_give_the_rules_their_rows_took(tmp_path):
    from StaICC.metrics.exact_sum import recorded_rules
    result = run_suite(skewed, "Domain_bias,Normal", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    write(Run.from_result(result, None), str(tmp_path / "run"), log_samples="compact")
    expected = {("Domain_bias", "TREC"): "softmax", ("Normal", "TREC"): "softmax"}
    assert recorded_rules(result) == expected == recorded_rules(load_run(str(tmp_path / "run")))
    checked = run_suite(skewed, "Normal", datasets=["TREC"], progress=False)
    assert recorded_rules(checked) == {("Normal", "TREC"): "check"}


def test_a_compound_results_parts_give_their_rules_as_a_loaded_runs(tmp_path):
    """Triplet_bias (the standard suite's form of the three bias diagnoses) holds each part's metadata under the
    part: a lite run estimates from the result in memory and must find the rule its records' parts took."""
    from StaICC.metrics.exact_sum import recorded_rules
    result = run_suite(skewed, "Triplet_bias", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    write(Run.from_result(result, None), str(tmp_path / "run"), log_samples="compact")
    expected = {(part, "TREC"): "softmax" for part in ("Contextual_bias", "Domain_bias", "Post_bias")}
    assert recorded_rules(result) == expected == recorded_rules(load_run(str(tmp_path / "run")))
    pytest.importorskip("numpy")  # the lite estimates
    lite = run_lite(skewed, 0.5, "Triplet_bias", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    cell = lite.metadata["lite"]["estimates"]["benchmarks"]["Domain_bias"]["TREC"]["entropy"]
    assert all(math.isclose(cell[key], SOFTMAXED, rel_tol=1e-12) for key in ("value", "low", "high")), cell


def test_a_proxy_run_keeps_the_rule_its_rows_took(tmp_path):
    from StaICC.stats.lite_proxy import proxy_of_run
    result = run_suite(skewed, "Domain_bias", datasets=["TREC"], prediction_kind="probabilities", progress=False)
    write(Run.from_result(result, None), str(tmp_path / "run"), log_samples="compact")
    proxy = proxy_of_run(load_run(str(tmp_path / "run")), "skewed")
    statistic = proxy.statistic("Domain_bias", "TREC")
    assert statistic.table.rule == "softmax"
    assert statistic.point()["entropy"] == result["Domain_bias"]["Divided results"]["TREC"]["entropy"]
