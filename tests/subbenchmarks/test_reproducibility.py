"""Same numbers from two fresh objects, from repeated calls, and after side calls.

The original's random streams kept advancing between calls (GLER label noise, Domain_bias
queries) and Template_sens kept appending predictions; here every call equals the first.
"""
import hashlib
import warnings

import pytest

from StaICC import (GLER, Contextual_bias, Demo_sens, Domain_bias, Normal, Post_bias, Template_sens,
                    Triplet_bias)
from StaICC.errors import TamperingWarning
from StaICC.metrics import softmax

DATASETS = ["financial_phrasebank", "TREC"]


def dummy(prompt, label_space):
    text = "\x01".join(prompt) if isinstance(prompt, list) else prompt
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return softmax([((digest[i] / 255.0) * 4) - 2 for i in range(len(label_space))])


BENCHMARKS = [Normal, Contextual_bias, Domain_bias, Post_bias, GLER, Template_sens, Demo_sens]


@pytest.mark.parametrize("cls", BENCHMARKS, ids=lambda c: c.__name__)
def test_second_call_and_fresh_object_agree(cls):
    bench = cls(datasets=DATASETS)
    first = bench(dummy)
    assert bench(dummy) == first
    assert cls(datasets=DATASETS)(dummy) == first


@pytest.mark.parametrize("cls", BENCHMARKS, ids=lambda c: c.__name__)
def test_prompt_set_and_example_do_not_change_results(cls):
    fresh = cls(datasets=DATASETS)(dummy)
    bench = cls(datasets=DATASETS)
    for experimentor in bench:
        experimentor.prompt_set()
        experimentor.example()
        experimentor.example()
    assert bench(dummy) == fresh


def test_label_noise_rate_run_twice_is_identical():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        experimentor = Normal(datasets=["TREC"])[0]
        experimentor.prompt_former.set_label_wrong_rate(0.5)
        prompts = experimentor.prompt_set()
        assert experimentor.prompt_set() == prompts
        first = experimentor.auto_run(dummy)
        experimentor.example()
        assert experimentor.auto_run(dummy) == first


def test_template_sens_does_not_accumulate_predictions():
    bench = Template_sens(datasets=["TREC"])
    bench(dummy)
    second = bench(dummy)
    assert len(second.records) == 900


def test_runs_leave_the_writer_as_they_found_it():
    bench = GLER(datasets=["TREC"])
    before = bench[0].prompt_former.get_config_dict()
    bench(dummy)
    assert bench[0].prompt_former.get_config_dict() == before
    bench = Template_sens(datasets=["TREC"])
    bench(dummy)
    assert bench[0].prompt_former.get_config_dict() == before


def test_metrics_are_not_shared_between_instances():
    a = Normal(datasets=["TREC"])
    a[0].add_metric("always_one", lambda ground_truth, prediction: 1.0)
    b = Normal(datasets=["TREC", "SST5"])
    assert "always_one" not in b[0].metrics and "always_one" not in b[1].metrics
    result = a(dummy)
    assert result["Divided results"]["TREC"]["always_one"] == 1.0
    assert result["Averaged results"]["always_one"] == 1.0


def test_re_initialize_keeps_noisy_channel_and_prompters():
    bench = Normal(noisy_channel=True, datasets=["TREC"])
    noisy_prompts = bench[0].prompt_set()
    bench.re_initialize(k=4)
    assert bench[0].prompt_set() == noisy_prompts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=["TREC"])
        bench[0].prompt_former.change_instruction("Classify the question. ")
        bench.re_initialize(k=2, keep_prompter=True)  # the original raised IndexError here
    assert bench[0].get_k() == 2
    assert bench[0].prompt_set()[0].startswith("Classify the question. question: ")
    bench.re_initialize(k=2)
    assert bench[0].prompt_set()[0].startswith("question: ")


def test_triplet_bias_loads_each_dataset_once():
    bench = Triplet_bias(datasets=DATASETS)
    # One Dataset object per name is shared by the three benchmarks.
    assert bench.contextual._datasets[0] is bench.domain._datasets[0] is bench.post._datasets[0]
    first = bench(dummy)
    assert bench(dummy) == first


def test_results_are_plain_comparable_dicts_with_metadata():
    result = Normal(datasets=["TREC"])(dummy)
    assert dict(result) == result
    assert result.metadata["benchmark"] == "Normal" and result.metadata["datasets"] == ["TREC"]
    assert result.metadata["k"] == 4 and result.metadata["standard"] is True
