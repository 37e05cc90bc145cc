"""Retrievers through the public API: Normal(..., retriever=...), single_experimentor.use_retriever,
metadata, exact prompts, and the way back to the standard sampler."""
import json
import warnings

import pytest

from StaICC import Normal
from StaICC.custom_datasets import from_records
from StaICC.errors import TamperingWarning
from StaICC.backends.reference_model import lexical_icl
from StaICC.retrieval import BM25Retriever, RandomRetriever, ZeroRetriever

DATASET = "rotten_tomatoes"


def experimentor(name=DATASET, **kwargs):
    return Normal(datasets=[name], **kwargs)[0]


def hand_prompt(demonstration_set, demo_indexes, query_text):
    """rotten_tomatoes' template: "review: <text> sentiment: <label>\\n" per demonstration, then the query."""
    prompt = ""
    for index in demo_indexes:
        (text,), label = demonstration_set[index]
        prompt += f"review: {text} sentiment: {label}\n"
    return prompt + f"review: {query_text} sentiment: "


def counted_accuracy(exp):
    """The reference model's accuracy over the experimentor's prompts, counted here query by query.

    With a retriever the sampler has one row per test item, so query q asks about test item q.
    """
    labels = exp.get_label_space()
    prompts, test = exp.prompt_set(), exp.test_set()
    assert len(prompts) == len(test)
    hits = 0
    for q, prompt in enumerate(prompts):
        row = list(lexical_icl(prompt, labels))
        hits += row.index(max(row)) == labels.index(test[q][1])
    return hits / len(prompts)


@pytest.fixture(scope="module")
def standard_prompts():
    return experimentor().prompt_set()


@pytest.fixture(scope="module")
def bm25():
    """(experimentor after use_retriever(BM25Retriever()), the warnings it emitted)."""
    exp = experimentor()
    assert exp.get_repeat_times() == 2 and len(exp) == 1024
    with pytest.warns(TamperingWarning) as record:
        exp.use_retriever(BM25Retriever())
    return exp, list(record)


def test_bm25_prompts_are_the_retrieved_rows_byte_for_byte(bm25):
    exp, record = bm25
    assert len(record) == 1
    assert "custom demonstration sampler" in str(record[0].message)
    assert "the BM25 retriever (k1=1.5, b=0.75" in str(record[0].message)
    assert exp.get_repeat_times() == 1
    prompts = exp.prompt_set()
    assert len(prompts) == 512 == len(exp)
    demo, test = exp.demonstration_set(), exp.test_set()
    checked = (0, 1, 255, 511)
    # BM25 ranks each query on its own, so retrieving for a few queries gives their rows
    expected_rows = BM25Retriever().build_sampler(demo, [test[q] for q in checked], 4)
    for q, rows in zip(checked, expected_rows):
        assert len(rows) == 4
        assert exp.demonstration_sampler[q] == rows
        (query,), _ = test[q]
        assert prompts[q] == hand_prompt(demo, rows, query)
    # the most similar demonstration comes last (order="ascending"): it shares words with the query
    (query,), _ = test[0]
    (closest,), _ = demo[expected_rows[0][-1]]
    assert set(query.lower().split()) & set(closest.lower().split())


def test_retrieved_prompts_differ_from_the_standard_ones(bm25, standard_prompts):
    retrieved = bm25[0].prompt_set()
    same = sum(a == b for a, b in zip(retrieved, standard_prompts[:512]))
    assert same < 5


def test_benchmark_with_random_retriever_records_the_seed():
    with pytest.warns(TamperingWarning) as record:
        bench = Normal(datasets=[DATASET], retriever=RandomRetriever(seed=7))
    assert len([w for w in record if "the Random retriever (" in str(w.message) and "seed=7" in str(w.message)]) == 1
    assert len(bench[0].prompt_set()) == 512
    result = bench(lexical_icl)
    assert set(result["Divided results"][DATASET]) == {"accuracy", "averaged_truelabel_likelihood", "macro_F1",
                                                       "expected_calibration_error_1"}
    assert result.metadata["standard"] is False
    retriever = result.metadata["retriever"]
    assert retriever["retriever"] == "RandomRetriever"
    assert retriever["parameters"]["seed"] == 7
    assert [s.startswith("custom demonstration sampler") for s in result.metadata["non_standard_settings"][DATASET]] \
        == [True]
    assert json.loads(result.to_json())["metadata"]["retriever"]["parameters"]["seed"] == 7
    # the same seed gives the same numbers; the rows are those of the retriever itself
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        again = Normal(datasets=[DATASET], retriever=RandomRetriever(seed=7))
        other = Normal(datasets=[DATASET], retriever=RandomRetriever(seed=8))
    assert again(lexical_icl) == result
    exp = again[0]
    assert [exp.demonstration_sampler[q] for q in range(512)] == \
        RandomRetriever(seed=7).build_sampler(exp.demonstration_set(), exp.test_set(), 4)
    assert other[0].prompt_set() != exp.prompt_set()


def test_zero_retriever_gives_prompts_without_demonstrations():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        exp = experimentor()
        exp.use_retriever(ZeroRetriever())
    prompts = exp.prompt_set()
    assert len(prompts) == 512
    test = exp.test_set()
    assert prompts == [f"review: {test[q][0][0]} sentiment: " for q in range(512)]
    result, _ok = exp.auto_run(lexical_icl)
    assert result["accuracy"] == counted_accuracy(exp)


def test_no_retriever_is_the_standard_run():
    plain = Normal(datasets=[DATASET])
    explicit = Normal(datasets=[DATASET], retriever=None)
    first, second = plain(lexical_icl), explicit(lexical_icl)
    assert first == second
    assert first.metadata["standard"] is True and second.metadata["standard"] is True
    assert first.metadata["retriever"] is None and first.metadata["non_standard_settings"] == {}
    single, _ok = experimentor()(lexical_icl)
    assert first["Divided results"][DATASET] == single


def test_reset_after_a_retriever_restores_the_standard_prompts(standard_prompts):
    exp = experimentor()
    with pytest.warns(TamperingWarning):
        exp.use_retriever(RandomRetriever(seed=3))
    assert len(exp.prompt_set()) == 512
    assert exp.non_standard_settings()
    exp.reset_demonstration_sampler()
    assert exp.get_repeat_times() == 2
    assert exp.prompt_set() == standard_prompts
    assert exp.non_standard_settings() == []
    assert exp(lexical_icl) == experimentor()(lexical_icl)


def test_reset_inside_a_benchmark_makes_the_run_standard_again():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=[DATASET], retriever=ZeroRetriever())
    bench[0].reset_demonstration_sampler()
    result = bench(lexical_icl)
    assert result == Normal(datasets=[DATASET])(lexical_icl)
    assert result.metadata["non_standard_settings"] == {}


def custom_pairs(n=200):
    topics = ["football match goal", "election vote party", "stock market shares", "guitar concert band"]
    return [{"question": f"{topics[i % 4]} item {i}", "context": f"context {i % 7}", "topic": i % 4}
            for i in range(n)]


def test_retriever_on_a_custom_two_input_dataset():
    ds = from_records(custom_pairs(), name="topics", input_columns=["question", "context"], label_column="topic",
                      label_words=["sports", "politics", "business", "music"], label_prefix="topic: ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=[ds], retriever=BM25Retriever())
    exp = bench[0]
    demo, test = exp.demonstration_set(), exp.test_set()
    rows = BM25Retriever().build_sampler(demo, test, 4)
    prompts = exp.prompt_set()
    assert len(prompts) == len(test) == 40
    for q in (0, 39):
        expected = ""
        for index in rows[q]:
            (question, context), word = demo[index]
            expected += f"question: {question} context: {context} topic: {word}\n"
        (question, context), _ = test[q]
        expected += f"question: {question} context: {context} topic: "
        assert prompts[q] == expected
        # BM25 over "question context" finds same-topic demonstrations here
        assert {demo[i][1] for i in rows[q]} == {test[q][1]}
    result = bench(lexical_icl)
    assert result.metadata["standard"] is False
    assert "custom dataset" in result.metadata["non_standard_settings"]["topics"]
    assert result["Divided results"]["topics"]["accuracy"] == counted_accuracy(exp)


def test_custom_dataset_departures_keep_the_retriever_entry():
    ds = from_records(custom_pairs(80), name="topics", input_columns=["question", "context"], label_column="topic",
                      label_words=["sports", "politics", "business", "music"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        result = Normal(datasets=[ds], k=1, retriever=ZeroRetriever())(lexical_icl)
    settings = result.metadata["non_standard_settings"]["topics"]
    assert "custom dataset" in settings
    assert any(s.startswith("custom demonstration sampler") for s in settings)
