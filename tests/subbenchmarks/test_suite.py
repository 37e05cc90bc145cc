"""The suite runner: each distinct prompt asked once, results equal to each sub-benchmark alone."""

import pytest

from StaICC import GLER, Demo_sens, Normal, Template_sens, Triplet_bias
from StaICC.backends.base import FunctionBackend
from StaICC.subbenchmarks.suite import STANDARD_SUITE, resolve_benchmark_names, run_suite
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
ALONE = {"Normal": Normal, "Triplet_bias": Triplet_bias, "GLER": GLER, "Template_sens": Template_sens,
         "Demo_sens": Demo_sens}


def scores(prompt, label_space):
    """Deterministic scores that depend on the whole prompt."""
    text = prompt if isinstance(prompt, str) else "\x01".join(prompt)
    h = hash(text) & 0xFFFF
    return [((h >> (3 * i)) % 11) / 3.0 for i in range(len(label_space))]


class Counting:
    def __init__(self, function=scores):
        self.function, self.calls = function, 0

    def __call__(self, prompt, label_space):
        self.calls += 1
        return self.function(prompt, label_space)


@pytest.fixture(scope="module")
def full_suite():
    model = Counting()
    return model, run_suite(model, "all")


def test_the_standard_suite_asks_each_distinct_prompt_once(full_suite):
    model, result = full_suite
    assert result.metadata["prompts"] == 111_400
    assert result.metadata["distinct_prompts"] == 87_360
    assert model.calls == result.metadata["asked"] == 87_360
    assert list(result) == list(STANDARD_SUITE)
    assert result.metadata["standard"] is True


@pytest.mark.parametrize("name", list(ALONE))
def test_each_result_equals_the_sub_benchmark_alone(full_suite, name):
    _model, result = full_suite
    alone = ALONE[name]()(scores)
    assert result[name] == alone
    if name != "Triplet_bias":
        assert result[name].metadata["prompt_sha256"] == alone.metadata["prompt_sha256"]


def test_records_cover_every_prompt(full_suite):
    _model, result = full_suite
    assert len(result.records) == 111_400
    assert len(result["GLER"].records) == 10 * 5 * 1024
    first = result["Triplet_bias"].records[0]
    assert first["benchmark"] == "Contextual_bias" and first["pass"] == 0


def test_benchmark_names_are_checked():
    assert resolve_benchmark_names("Normal, GLER") == ["Normal", "GLER"]
    with pytest.raises(ValueError, match="unknown sub-benchmark 'Foo'"):
        resolve_benchmark_names(["Normal", "Foo"])
    with pytest.raises(ValueError, match="named twice"):
        resolve_benchmark_names("GLER,GLER")
    with pytest.raises(ValueError, match="no sub-benchmark named"):
        resolve_benchmark_names(" , ")


def test_a_batched_function_is_called_once_per_new_pass():
    calls = []

    def batched(prompt, label_space):
        calls.append(len(prompt))
        return [scores(p, label_space) for p in prompt]

    result = run_suite(batched, "Normal,Post_bias,GLER", datasets=["TREC"], batched=True)
    assert calls == [1024] * 5  # Post_bias and GLER's first pass are Normal's prompts
    assert result["GLER"] == GLER(datasets=["TREC"])(scores)


def test_the_suite_resumes_from_its_cache(tmp_path):
    path = str(tmp_path / "suite.cache")
    datasets = ["financial_phrasebank", "TREC"]
    crashing = Counting()

    def crashes_after_3000(prompt, label_space):
        if crashing.calls >= 3000:
            raise RuntimeError("preempted")
        return crashing(prompt, label_space)

    with pytest.raises(RuntimeError):
        run_suite(crashes_after_3000, "Normal,GLER", datasets=datasets, cache=path, model_id="m")
    resumed = Counting()
    result = run_suite(resumed, "Normal,GLER", datasets=datasets, cache=path, model_id="m")
    distinct = result.metadata["distinct_prompts"]
    assert resumed.calls == distinct - 3000 and result.metadata["from_cache"] == 3000
    assert result["GLER"] == GLER(datasets=datasets)(scores)
    again = Counting()
    assert run_suite(again, "Normal,GLER", datasets=datasets, cache=path, model_id="m") == result
    assert again.calls == 0
    other = Counting(lambda prompt, label_space: [1.0] + [0.0] * (len(label_space) - 1))
    run_suite(other, "Normal", datasets=datasets, cache=path, model_id="another model")
    assert other.calls == 2048  # answers written for model "m" are never used for another model


class PrefixSharingFunction(FunctionBackend):
    """A batched function that says it computes shared prefixes once, as the hf engine does."""

    shares_prefixes = True


def test_a_prefix_sharing_backend_gets_each_dataset_together_in_text_order():
    calls = []

    def batched(prompt, label_space):
        calls.append(list(prompt))
        return [scores(p, label_space) for p in prompt]

    datasets = ["TREC", "SST5"]
    result = run_suite(PrefixSharingFunction(batched, batched=True, model_id="sharing"), "Normal,Triplet_bias,GLER",
                       datasets=datasets)
    per_dataset = [sum(1 for r in result.records if r["dataset"] == d) for d in datasets]
    assert len(calls) == 2 and sum(map(len, calls)) == result.metadata["distinct_prompts"] < sum(per_dataset)
    for prompts in calls:
        assert prompts == sorted(prompts) and len(set(prompts)) == len(prompts)
    for name in ("Normal", "Triplet_bias", "GLER"):
        assert result[name] == ALONE[name](datasets=datasets)(scores)


def test_the_hf_backend_shares_demonstrations_across_passes():
    """A query's GLER passes and its Normal prompt meet in one call and share their demonstrations' KV."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from backend_helpers import tiny_pair

    from StaICC.backends.hf import HFBackend

    from StaICC.custom_datasets import from_csv

    reviews = from_csv(str(EXAMPLES / "data" / "sentiment.csv"), name="reviews", input_columns="text",
                       label_column="label", split_sizes=(60, 120, 60))
    model, tokenizer = tiny_pair()
    sharing = HFBackend(model, tokenizer, model_id="tiny", requests_per_call=512)
    shared = run_suite(sharing, "Normal,GLER", datasets=[reviews])
    alone = HFBackend(model, tokenizer, model_id="tiny", requests_per_call=512)
    alone.shares_prefixes = False  # pass by pass, as a backend without a prefix tree is asked
    unshared = run_suite(alone, "Normal,GLER", datasets=[reviews])
    stats = sharing.scorer.stats, alone.scorer.stats
    assert stats[0].tokens_requested == stats[1].tokens_requested
    assert stats[0].tokens_computed < 0.8 * stats[1].tokens_computed
    for a, b in zip(shared.records, unshared.records):
        assert a["predicted"] == b["predicted"]
        assert a["prediction"] == pytest.approx(b["prediction"], abs=1e-5)
