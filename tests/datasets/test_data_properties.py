"""Property tests: custom data files and retriever parameters never end in a surprise.

For any input, the result is either valid (a dataset whose split fits its rows; a sampler
whose rows are in range) or a ValueError/TypeError whose message names what is wrong:
never another exception type, a hang or a non-finite value.
"""
import json
import math
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from StaICC.custom_datasets import CustomDatasetError, from_csv, from_jsonl, from_records
from StaICC.datasets import Dataset
from StaICC.retrieval import BM25Retriever, EmbeddingTopKRetriever, MMRRetriever, RandomRetriever

FAST = settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])

values = st.one_of(st.text(max_size=12), st.integers(-3, 3), st.none(), st.booleans(),
                   st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2))
records = st.lists(st.dictionaries(st.sampled_from(["text", "label", "other"]), values, max_size=3), max_size=30)


def assert_valid(dataset):
    assert isinstance(dataset, Dataset)
    c, d, t = dataset.split_sizes
    assert min(c, d, t) >= 0 and t >= 1 and c + d + t <= len(dataset)
    for i in range(len(dataset)):
        inputs, label = dataset[i]
        assert all(isinstance(text, str) and text.strip() for text in inputs)
        assert label in dataset.get_label_space()


def outcome(build):
    """The dataset, or the error message; any other exception fails the test."""
    try:
        dataset = build()
    except (ValueError, TypeError) as error:  # CustomDatasetError is a ValueError
        assert str(error), "an error must say what is wrong"
        return None
    assert_valid(dataset)
    return dataset


@FAST
@given(records)
def test_from_records_is_valid_or_refused(rows):
    outcome(lambda: from_records(rows, name="prop", input_columns="text", label_column="label"))


@FAST
@given(records, st.one_of(st.none(), st.lists(st.text(max_size=5), max_size=4),
                          st.dictionaries(st.integers(0, 3), st.text(max_size=5), max_size=3)))
def test_label_words_are_valid_or_refused(rows, words):
    outcome(lambda: from_records(rows, name="prop", input_columns="text", label_column="label", label_words=words))


@FAST
@given(st.lists(st.one_of(st.text(max_size=40), st.builds(json.dumps, st.dictionaries(
    st.sampled_from(["text", "label"]), values, max_size=2))), max_size=25))
def test_from_jsonl_is_valid_or_refused_naming_the_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("jsonl") / "data.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))  # lone surrogates: invalid UTF-8
    try:
        dataset = from_jsonl(path, name="prop", input_columns="text", label_column="label")
    except CustomDatasetError as error:
        assert error.path == str(path) and str(path) in str(error)
        return
    except (ValueError, TypeError) as error:
        assert str(error)
        return
    assert_valid(dataset)


@FAST
@given(st.text(max_size=300), st.sampled_from([",", ";", "\t"]))
def test_from_csv_is_valid_or_refused_naming_the_file(tmp_path_factory, text, delimiter):
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    path.write_bytes(("text,label\n" + text).encode("utf-8", "surrogatepass"))
    try:
        dataset = from_csv(path, delimiter=delimiter, name="prop", input_columns="text", label_column="label")
    except CustomDatasetError as error:
        assert error.path == str(path)
        return
    except (ValueError, TypeError) as error:
        assert str(error)
        return
    assert_valid(dataset)


# -- retrievers ---------------------------------------------------------------------------------------
numbers_ = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10 ** 400), st.booleans(),
                     st.none(), st.text(max_size=3))
DEMOS = [([f"alpha beta item{i} {'gamma' * (i % 3)}"], "pos" if i % 2 else "neg") for i in range(12)]
QUERIES = [([f"beta gamma item{i}"], None) for i in range(4)]


def check_sampler(sampler, k):
    assert len(sampler) == len(QUERIES)
    for row in sampler:
        assert len(row) == k and all(0 <= i < len(DEMOS) for i in row) and len(set(row)) == k


@FAST
@given(numbers_, numbers_, st.integers(0, 6))
def test_bm25_parameters_are_valid_or_refused(k1, b, k):
    try:
        retriever = BM25Retriever(k1=k1, b=b)
    except (ValueError, TypeError) as error:
        assert "BM25Retriever" in str(error)
        return
    assert math.isfinite(retriever.k1) and math.isfinite(retriever.b)
    check_sampler(retriever.build_sampler(DEMOS, QUERIES, k), k)


@FAST
@given(numbers_, numbers_, st.one_of(st.none(), st.integers(-2, 60), st.floats()), st.integers(0, 6))
def test_mmr_parameters_are_valid_or_refused(lambda_, k1, candidates, k):
    try:
        retriever = MMRRetriever(lambda_=lambda_, k1=k1, candidates=candidates)
    except (ValueError, TypeError) as error:
        assert "MMRRetriever" in str(error)
        return
    check_sampler(retriever.build_sampler(DEMOS, QUERIES, k), k)


vectors = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=3),
    st.lists(st.floats(-1e300, 1e300), min_size=2, max_size=2),
    st.text(max_size=3), st.binary(max_size=3), st.none(), st.integers(),
    st.lists(st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=2)), min_size=1, max_size=3))


@FAST
@given(st.lists(vectors, min_size=len(DEMOS) + 1, max_size=len(DEMOS) + 1), st.sampled_from(["cosine", "dot"]),
       st.booleans())
def test_embeddings_are_valid_or_refused(outputs, metric, mmr):
    table = {text[0]: outputs[i] for i, (text, _label) in enumerate(DEMOS)}
    embed = lambda text: table.get(text, outputs[-1])  # noqa: E731  (every query gets the last vector)
    retriever = MMRRetriever(similarity=embed) if mmr else EmbeddingTopKRetriever(embed, metric=metric)
    try:
        sampler = retriever.build_sampler(DEMOS, QUERIES, 2)
    except (ValueError, TypeError) as error:
        assert type(retriever).__name__ in str(error)
        return
    check_sampler(sampler, 2)


@FAST
@given(st.one_of(st.integers(-3, 40), st.none()), numbers_)
def test_random_parameters_are_valid_or_refused(ice_num, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            retriever = RandomRetriever(ice_num=ice_num, seed=seed)
            sampler = retriever.build_sampler(DEMOS, QUERIES, 3)
        except (ValueError, TypeError) as error:
            assert str(error)
            return
    check_sampler(sampler, 3 if ice_num is None else ice_num)
