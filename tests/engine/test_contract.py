"""The inference contract and every bad input: clear errors naming what and where."""
import math

import pytest

from StaICC import InferenceError, Normal, GLER, Template_sens

TWO = ["financial_phrasebank", "rotten_tomatoes"]


@pytest.fixture(scope="module")
def bench():
    return Normal(datasets=TWO)


def constant(value):
    return lambda prompt, label_space: value


# --- what the function returns ------------------------------------------------------
@pytest.mark.parametrize("output, error, pattern", [
    ([0.5, 0.5], ValueError, r"returned 2 scores at dataset 'financial_phrasebank', query 0; expected 3"),
    ([0.2, math.nan, 0.8], ValueError, r"non-finite score nan at dataset 'financial_phrasebank', query 0"),
    ([0.2, math.inf, 0.8], ValueError, r"non-finite"),
    ("positive", TypeError, r"returned a string 'positive' at dataset 'financial_phrasebank', query 0"),
    (3, ValueError, r"label index 3 at dataset 'financial_phrasebank', query 0; expected an int in \[0, 3\)"),
    (-1, ValueError, r"label index -1"),
    (True, TypeError, r"returned a bool"),
    (0.5, TypeError, r"returned float"),
    (None, TypeError, r"returned NoneType"),
    (["a", "b", "c"], TypeError, r"non-numeric score 'a'"),
])
def test_bad_outputs_are_refused_with_dataset_and_query(bench, output, error, pattern):
    with pytest.raises(error, match=pattern):
        bench[0].auto_run(constant(output))


def test_the_failing_query_index_is_reported(bench):
    calls = []

    def f(prompt, label_space):
        calls.append(prompt)
        return [1.0, 0.0, 0.0] if len(calls) < 10 else [1.0]

    with pytest.raises(ValueError, match=r"query 9;"):
        bench[0].auto_run(f)


def test_mixed_ints_and_vectors_are_refused(bench):
    outputs = iter([0] + [[0.2, 0.3, 0.5]] * 2000)
    with pytest.raises(TypeError, match=r"mixed int labels and score vectors.*query 1"):
        bench[0].auto_run(lambda prompt, label_space: next(outputs))


def test_logits_tuples_and_arrays_are_accepted(bench):
    as_list, _ = bench[0].auto_run(constant([2.0, -1.0, 0.5]))
    as_tuple, _ = bench[0].auto_run(constant((2.0, -1.0, 0.5)))
    assert as_list == as_tuple
    numpy = pytest.importorskip("numpy")
    as_array, _ = bench[0].auto_run(constant(numpy.array([2.0, -1.0, 0.5])))
    assert as_array == as_list


def test_int_predictions_use_the_label_count_as_one_hot_width(bench):
    # The original crashed here: max prediction 0 < largest true label 2.
    result, ok = bench[0].auto_run(constant(0))
    same, _ = bench[0].auto_run(constant([1, 0, 0]))
    assert ok and result == same
    assert result["expected_calibration_error_1"] == 0  # confidence 1.0 falls in no bin (quirk kept)


def test_exceptions_inside_the_function_carry_dataset_query_and_partial_work(bench):
    seen = []

    def flaky(prompt, label_space):
        if len(seen) == 5:
            raise RuntimeError("GPU fell over")
        seen.append(prompt)
        return [0.2, 0.3, 0.5]

    with pytest.raises(InferenceError, match=r"raised RuntimeError: GPU fell over at dataset 'financial_phrasebank', query 5") as info:
        bench[0].auto_run(flaky)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.dataset == "financial_phrasebank" and info.value.query_index == 5
    assert info.value.partial_predictions == [[0.2, 0.3, 0.5]] * 5


def test_benchmark_failure_keeps_finished_datasets(bench):
    def fails_on_second_dataset(prompt, label_space):
        if len(label_space) == 2:
            raise KeyError("boom")
        return [0.2, 0.3, 0.5]

    with pytest.raises(InferenceError) as info:
        bench(fails_on_second_dataset)
    assert list(info.value.completed_results) == ["financial_phrasebank"]
    assert info.value.dataset == "rotten_tomatoes"


# --- batched mode ------------------------------------------------------------------------
def test_batched_equals_per_query(bench):
    per_query, _ = bench[1].auto_run(lambda prompt, label_space: [len(prompt) % 7, 3.0])
    batched, _ = bench[1].auto_run(lambda prompt, label_space: [[len(p) % 7, 3.0] for p in prompt],
                                   batched_inference=True)
    assert per_query == batched


def test_batched_wrong_count_is_refused(bench):
    with pytest.raises(ValueError, match=r"returned 3 predictions at dataset 'rotten_tomatoes'; expected 1024"):
        bench[1].auto_run(lambda prompt, label_space: [0, 1, 0], batched_inference=True)
    with pytest.raises(TypeError, match=r"batched inference returned int"):
        bench[1].auto_run(lambda prompt, label_space: 0, batched_inference=True)


# --- preentered predictions ------------------------------------------------------------
def test_preentered_predictions_equal_a_live_run(bench):
    f = lambda prompt, label_space: len(prompt) % 3  # noqa: E731
    live, _, outputs = bench[0].auto_run(f, return_outputs=True)
    replay, _ = bench[0].auto_run(preentered_prediction=outputs["predicted"])
    assert live == replay
    assert outputs["groundtruth"] == bench[0].ground_truth()
    assert len(outputs["prob."]) == 1024 and outputs["prob."][0] in ([1, 0, 0], [0, 1, 0], [0, 0, 1])


def test_preentered_wrong_count_is_refused(bench):
    with pytest.raises(ValueError, match=r"10 preentered predictions at dataset 'financial_phrasebank'; expected 1024"):
        bench[0].auto_run(preentered_prediction=[0] * 10)
    with pytest.raises(ValueError, match=r"label index 7 at dataset 'financial_phrasebank', query 0"):
        bench[0].auto_run(preentered_prediction=[7] * 1024)


def test_benchmark_level_preentered_predictions(bench):
    f = lambda prompt, label_space: len(prompt) % len(label_space)  # noqa: E731
    live = bench(f)
    given = {e.dataset_name: e.auto_run(f, return_outputs=True)[2]["predicted"] for e in bench}
    assert bench(preentered_predictions=given) == live
    with pytest.raises(ValueError, match=r"unknown datasets \['SST5'\]"):
        bench(preentered_predictions={"SST5": []})


def test_preentered_predictions_for_multi_pass_benchmarks():
    gler = GLER(datasets=["financial_phrasebank"])
    f = lambda prompt, label_space: len(prompt) % 3  # noqa: E731
    prompts = gler[0].prompt_set()
    assert len(prompts) == 5 * 1024
    assert gler(preentered_predictions=[[f(p, None) for p in prompts]]) == gler(f)


# --- arguments ------------------------------------------------------------------------
def test_neither_function_nor_predictions(bench):
    with pytest.raises(ValueError, match=r"You should provide either the forward_inference function or the input_prediction"):
        bench[0].auto_run()


def test_function_list_of_wrong_length(bench):
    f = constant(0)
    with pytest.raises(ValueError, match=r"The length of list_of_forward_inference must be the same as the number of datasets"):
        bench([f, f, f])
    with pytest.raises(TypeError, match=r"inference for dataset 'rotten_tomatoes' is str, not callable"):
        bench([f, "not a function"])


@pytest.mark.parametrize("k, error, pattern", [(-1, ValueError, "k should be a positive integer"),
                                                (2.5, TypeError, "k must be an int"),
                                                (True, TypeError, "k must be an int")])
def test_bad_k(k, error, pattern):
    with pytest.raises(error, match=pattern):
        Normal(k=k, datasets=["rotten_tomatoes"])


def test_k_larger_than_the_demonstration_set_fails_before_any_inference():
    bench = Normal(k=600, datasets=["rotten_tomatoes", "financial_phrasebank"])
    calls = []
    with pytest.raises(ValueError, match=r"k = 600 is larger than the demonstration set \(512 rows\) at dataset 'financial_phrasebank'"):
        bench(lambda prompt, label_space: calls.append(1) or 0)
    assert calls == []  # rotten_tomatoes was not run and lost


@pytest.mark.parametrize("spec, error, pattern", [("SST-7", ValueError, r"unknown dataset 'SST-7'; the standard datasets are"),
                                                   (12, ValueError, r"dataset index 12 out of range"),
                                                   (3.5, TypeError, r"expected a dataset name")])
def test_unknown_dataset(spec, error, pattern):
    with pytest.raises(error, match=pattern):
        Normal(datasets=[spec])


def test_duplicated_dataset():
    with pytest.raises(ValueError, match=r"datasets appear twice"):
        Normal(datasets=["TREC", 4])


@pytest.mark.parametrize("sampler, error, pattern", [
    ([[0, 1, 2, 3]] * 10, ValueError, r"got 10 rows, expected 512"),
    ([[0, 1, 2]] * 512, ValueError, r"row 0 has 3 indexes, k = 4"),
    ([[0, 1, 2, 512]] * 512, ValueError, r"row 0 holds index 512, outside the demonstration set \[0, 512\)"),
    ([[0, 1, 2, -1]] * 512, ValueError, r"holds index -1"),
    ([[0, 1, 2, "3"]] * 512, TypeError, r"holds '3', expected an int"),
    (42, TypeError, r"must be a list of index lists"),
])
def test_bad_samplers(sampler, error, pattern):
    experimentor = Normal(datasets=["financial_phrasebank"])[0]
    with pytest.raises(error, match=pattern):  # refused before anything changes, so no tampering warning
        experimentor.set_demonstration_sampler(sampler)
    assert experimentor.get_repeat_times() == 2 and experimentor.non_standard_settings() == []


def test_template_sens_needs_alternate_templates():
    from StaICC.datasets import Dataset
    rows = [([f"text {i}"], i % 2) for i in range(400)]
    custom = Dataset("tiny", rows, ["no", "yes"], split_sizes=(100, 100, 100))
    with pytest.raises(ValueError, match=r"alternate templates for dataset 'tiny'"):
        Template_sens(datasets=[custom])


# --- checkpoints -------------------------------------------------------------------------
def test_checkpoint_resumes_without_rerunning_finished_datasets(tmp_path):
    # checkpoint= is the prediction cache; a plain function is named with model_id= so that
    # the fixed function of the second run may reuse the first run's answers.
    from StaICC.backends import FunctionBackend
    from StaICC.cache import PredictionCache
    path = str(tmp_path / "run.cache")
    bench = Normal(datasets=TWO)
    calls = {"n": 0}

    def fails_on_second(prompt, label_space):
        calls["n"] += 1
        if len(label_space) == 2:
            raise RuntimeError("preempted")
        return [0.1, 0.2, 0.7]

    with pytest.raises(InferenceError):
        bench(fails_on_second, checkpoint=path, model_id="my-model")
    fingerprint = FunctionBackend(fails_on_second, model_id="my-model").fingerprint()
    with PredictionCache(path) as cache:
        finished = cache.lookup(fingerprint, bench[0].requests())
        assert all(answer is not None for answer in finished)  # financial_phrasebank was saved
        assert all(answer is None for answer in cache.lookup(fingerprint, bench[1].requests()))
    calls["n"] = 0

    def works(prompt, label_space):
        calls["n"] += 1
        return [0.1, 0.2, 0.7][:len(label_space)] if len(label_space) == 3 else [0.4, 0.6]

    resumed = bench(works, checkpoint=path, model_id="my-model")
    assert calls["n"] == 1024  # only rotten_tomatoes ran
    assert resumed == Normal(datasets=TWO)(works)


def test_finished_datasets_survive_a_validation_error():
    bench = Normal(datasets=TWO)

    def nan_on_second_dataset(prompt, label_space):
        return [0.5, math.nan] if len(label_space) == 2 else [0.2, 0.3, 0.5]

    with pytest.raises(ValueError, match=r"non-finite score nan at dataset 'rotten_tomatoes', query 0"):
        bench(nan_on_second_dataset)
    assert list(bench.last_partial_results) == ["financial_phrasebank"]
