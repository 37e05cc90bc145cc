"""The generic sub-benchmark: one experimentor per dataset, models matched to datasets, results averaged.

Averages are recomputed here from the per-dataset results; per-dataset results from runs of
each experimentor alone.
"""
import pytest

from StaICC import Normal
from StaICC.subbenchmarks.generic import FUNCTION_COUNT_ERROR, average_metrics, average_sensitivity, average_slopes

DATASETS = ["rotten_tomatoes", "SST5"]


@pytest.fixture(scope="module")
def bench():
    return Normal(datasets=DATASETS, k=1)


def always(index):
    def model(prompt, label_space):
        return index
    return model


def test_the_sub_benchmark_holds_one_experimentor_per_dataset_in_order(bench):
    assert len(bench) == 2 and bench.dataset_names() == DATASETS
    assert [e.dataset_name for e in bench.get_experimentors()] == DATASETS == [bench[i].dataset_name for i in range(2)]
    assert bench.get_label_spaces_for_experimentors() == [e.get_label_space() for e in bench]
    assert [e.get_k() for e in bench] == [1, 1]


def test_a_run_is_each_dataset_alone_then_the_left_to_right_mean(bench):
    result = bench(always(0))
    divided = result["Divided results"]
    assert list(divided) == DATASETS
    for experimentor in bench:
        alone, _ok = experimentor(always(0))
        assert divided[experimentor.dataset_name] == alone
    for metric, value in result["Averaged results"].items():
        assert value == (divided["rotten_tomatoes"][metric] + divided["SST5"][metric]) / 2


def test_one_model_per_dataset_is_matched_by_position(bench):
    result = bench([always(1), always(3)])
    for experimentor, label in zip(bench, (1, 3)):
        truth = experimentor.ground_truth()
        share = sum(1 for t in truth if t == label) / len(truth)
        assert result["Divided results"][experimentor.dataset_name]["accuracy"] == share


def test_a_list_of_one_model_serves_every_dataset(bench):
    assert bench([always(0)]) == bench(always(0))


def test_a_wrong_number_of_models_is_refused_before_any_inference(bench):
    calls = []

    def model(prompt, label_space):
        calls.append(prompt)
        return 0

    with pytest.raises(ValueError, match="must be the same as the number of datasets") as info:
        bench([model, model, model])
    assert str(info.value).startswith(FUNCTION_COUNT_ERROR) and "Got 3 functions for 2 datasets" in str(info.value)
    assert calls == []


def test_without_divided_results_only_the_average_is_returned(bench):
    full = bench(always(0))
    short = bench(always(0), return_divided_results=False)
    assert dict(short) == {"Averaged results": full["Averaged results"]}


def test_averages_follow_the_standards_rules():
    divided = {"a": {"accuracy": 0.5, "distribution": [0.5, 0.5]}, "b": {"accuracy": 0.25}}
    assert average_metrics(divided, 2) == {"accuracy": 0.375, "distribution": 0.0}  # lists count as 0
    slopes = {"a": {"sensitivity": {"accuracy": (-0.5, 0.9)}}, "b": {"sensitivity": {"accuracy": (-0.25, 0.8)}}}
    assert average_slopes(slopes, 2) == {"accuracy": -0.375}
    consistency = {"a": {"sensitivity": {"consistency": 0.5}}, "b": {"sensitivity": {"consistency": 1.0}}}
    assert average_sensitivity(consistency, 2) == {"consistency": 0.75}
