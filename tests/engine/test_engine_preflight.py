"""Checks before any inference: a run that cannot finish fails before the model is asked, saying what to change.

Datasets are built here from records with chosen split sizes; the model counts its calls.
"""
import warnings

import pytest

from StaICC import Contextual_bias, Domain_bias, Normal
from StaICC.custom_datasets import from_records
from StaICC.sampling.demonstrations import domain_conditions
from StaICC.errors import TamperingWarning


def tiny(split_sizes, rows=60, name="tiny"):
    records = [{"text": f"item {i} {'good' if i % 2 else 'bad'}", "label": i % 2} for i in range(rows)]
    return from_records(records, name=name, input_columns="text", label_column="label",
                        label_words=["negative", "positive"], split_sizes=split_sizes)


class CountingModel:
    def __init__(self):
        self.calls = 0

    def __call__(self, prompt, label_space):
        self.calls += 1
        return 0


def refused(bench, match):
    model = CountingModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        with pytest.raises(ValueError, match=match):
            bench(model)
    assert model.calls == 0  # refused before the first inference
    return model


def test_k_larger_than_the_demonstration_set_is_refused_by_name():
    refused(Normal(datasets=[tiny((5, 3, 20))], k=4),
            r"k = 4 is larger than the demonstration set \(3 rows\) at dataset 'tiny': use k <= D")


def test_the_same_dataset_runs_when_k_fits():
    model = CountingModel()
    Normal(datasets=[tiny((5, 3, 20))], k=3)(model)
    assert model.calls == 20 * 2  # every test item, in both repeats


def test_too_few_queries_for_the_calibration_error_are_refused():
    refused(Normal(datasets=[tiny((5, 10, 4))], k=2),
            r"4 test rows x 2 repeats = 8 queries at dataset 'tiny', but the expected calibration error needs at "
            r"least 10 .*give the split a larger test part")


def test_a_limit_below_the_calibration_error_minimum_says_how_many_items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=[tiny((5, 10, 20))], k=2)
        bench.limit_test_items(3)
    refused(bench, r"3 test rows x 2 repeats = 6 queries .*evaluate at least 5 test items \(--limit 5, --lite-items 5 or a larger --lite\)")


def test_the_bias_diagnoses_without_the_calibration_error_accept_few_queries():
    model = CountingModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        Contextual_bias(datasets=[tiny((5, 10, 4))], k=2)(model)
        Domain_bias(datasets=[tiny((5, 10, 4))], k=2)(model)
    assert model.calls > 0


class Labels:
    def __init__(self, labels):
        self.labels = labels

    def label_indexes(self):
        return list(self.labels)


class Triplet:
    def __init__(self, demonstration_labels, test_labels):
        self.demonstration, self.test = Labels(demonstration_labels), Labels(test_labels)


def test_domain_conditions_keep_rows_with_or_without_the_querys_label():
    triplet = Triplet([0, 0, 1, 2], [1, 2])
    keep_in, feasible_in = domain_conditions(triplet, 2, want_label=True)
    keep_out, feasible_out = domain_conditions(triplet, 2, want_label=False)
    # query 0 is label 1 (demonstration 2), query 1 is label 2 (demonstration 3); query 2 is test item 0 again
    assert keep_in(0, (0, 2)) and not keep_in(0, (0, 1)) and keep_in(2, (2, 3))
    assert keep_out(0, (0, 1)) and not keep_out(0, (1, 2)) and keep_out(1, (0, 2))
    assert feasible_in(0) and feasible_in(1)
    assert feasible_out(0)  # three demonstrations lack label 1: a row of 2 exists


def test_domain_conditions_say_when_no_row_can_exist():
    triplet = Triplet([1, 1, 0], [1, 2])
    _, feasible_in = domain_conditions(triplet, 2, want_label=True)
    _, feasible_out = domain_conditions(triplet, 2, want_label=False)
    assert not feasible_in(1)  # no demonstration has label 2
    assert not feasible_out(0)  # only one demonstration lacks label 1, a row needs 2
    _, zero_shot = domain_conditions(triplet, 0, want_label=True)
    assert not zero_shot(0)  # an empty row holds no label
