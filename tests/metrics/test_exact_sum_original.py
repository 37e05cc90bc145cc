"""The exact-sum choice said at run time, and ``exact_sum="original"`` replicating the original's rule.

Rows of 0.25 / 0.75 pass the standard's exact check (the sum is exactly 1.0), and their mean does too:
the original reads them as given (likelihood 0.25 or 0.75 per row, entropy of [0.25, 0.75]); declared
probabilities take the softmax branch always, which moves the likelihood, ECE and the bias entropy.
"""
import json
import math
import warnings

import pytest

from StaICC import cli
from StaICC.engine.selection import QuerySubset
from StaICC.subbenchmarks.suite import run_suite


def passing_rows(prompt, label_space):
    return [0.25, 0.75] + [0.0] * (len(label_space) - 2)


def _run(**options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_suite(passing_rows, "Normal,Contextual_bias", ["rotten_tomatoes"],
                           test_items=QuerySubset.first(20), **options)
    return result, [str(w.message) for w in caught if "EXACT-SUM" in str(w.message)]


def test_a_softmax_branch_run_names_the_metrics_the_original_rule_would_change():
    _, lines = _run(prediction_kind="probabilities")
    assert len(lines) == 1
    assert ("under the original's rule these values would differ: averaged_truelabel_likelihood, "
            "expected_calibration_error_1 in Normal rotten_tomatoes; entropy in Contextual_bias rotten_tomatoes") \
        in lines[0]
    assert "--exact-sum original" in lines[0]


def test_exact_sum_original_gives_the_original_rules_numbers_and_marks_the_run():
    original, lines = _run(prediction_kind="probabilities", exact_sum="original")
    standard_rule, _ = _run()  # a plain function: the standard's check, as the original applied it
    softmax_branch, _ = _run(prediction_kind="probabilities")
    assert lines == []
    normal = original["Normal"]["Divided results"]["rotten_tomatoes"]
    assert normal == standard_rule["Normal"]["Divided results"]["rotten_tomatoes"]
    assert normal != softmax_branch["Normal"]["Divided results"]["rotten_tomatoes"]
    entropy = original["Contextual_bias"]["Divided results"]["rotten_tomatoes"]
    assert entropy["entropy"] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), abs=1e-12)
    metadata = original["Normal"].metadata
    assert metadata["standard"] is False and metadata["exact_sum"]["rotten_tomatoes"]["rule"] == "original"
    assert any("exact_sum=original" in s for s in metadata["non_standard_settings"]["rotten_tomatoes"])
    assert "rule" not in softmax_branch["Normal"].metadata["exact_sum"]["rotten_tomatoes"]


def test_exact_sum_refuses_another_value():
    with pytest.raises(ValueError, match="exact_sum must be one of 'standard', 'original', got 'first'"):
        run_suite(passing_rows, "Normal", ["rotten_tomatoes"], exact_sum="first")


def test_the_command_records_exact_sum_in_provenance(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["run", "--datasets", "rotten_tomatoes", "--limit", "10", "--exact-sum", "original",
                     "--no-progress", "--output-dir", str(out)]) == 0
    document = json.loads((out / "results.json").read_text())
    assert document["provenance"]["exact_sum"] == "original"
    assert cli.main(["run", "--exact-sum", "first"]) == 2
    assert "--exact-sum: invalid choice: 'first'" in capsys.readouterr().err
