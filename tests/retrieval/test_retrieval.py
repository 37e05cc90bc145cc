"""Contracts of the demonstration retrievers (StaICC.retrieval)."""
import json
import math
import sys
import warnings
from collections import Counter

import pytest

from StaICC.retrieval import (
    BM25Index,
    BM25Retriever,
    EmbeddingTopKRetriever,
    FixKRetriever,
    MMRRetriever,
    RandomRetriever,
    Retriever,
    TopKRetriever,
    ZeroRetriever,
    check_k,
    default_tokenizer,
    normalise_text,
    retriever_from_name,
    sentence_transformers_embedder,
)


def rows(texts, labels=None):
    """(inputs, label) rows from plain texts."""
    labels = labels if labels is not None else ["x"] * len(texts)
    return [([text], label) for text, label in zip(texts, labels)]


def queries(texts):
    return [([text], None) for text in texts]


WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
DEMOS = rows([f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} item{i}" for i in range(40)],
             ["pos" if i % 4 else "neg" for i in range(40)])
QUERIES = queries([f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} query" for i in range(25)])


def all_retrievers():
    def toy_embed(text):
        return [text.count("a") + 1.0, text.count("e") + 1.0, len(text) / 10.0]

    return [RandomRetriever(), RandomRetriever(balanced=True), BM25Retriever(), BM25Retriever(balanced=True),
            MMRRetriever(), MMRRetriever(balanced=True), EmbeddingTopKRetriever(toy_embed),
            MMRRetriever(similarity=toy_embed)]


# --- shared contract ----------------------------------------------------------
@pytest.mark.parametrize("retriever", all_retrievers(), ids=repr)
@pytest.mark.parametrize("k", [0, 1, 4, 7])
def test_shape_and_index_range(retriever, k):
    sampler = retriever.build_sampler(DEMOS, QUERIES, k)
    assert len(sampler) == len(QUERIES)
    for row in sampler:
        assert len(row) == k
        assert len(set(row)) == k, "demonstrations within a row are distinct"
        assert all(isinstance(i, int) and 0 <= i < len(DEMOS) for i in row)


@pytest.mark.parametrize("retriever", all_retrievers(), ids=repr)
def test_deterministic_and_json_description(retriever):
    assert retriever.build_sampler(DEMOS, QUERIES, 3) == retriever.build_sampler(DEMOS, QUERIES, 3)
    record = retriever.describe()
    assert record["retriever"] == type(retriever).__name__
    assert record["parameters"]["dedup"] is True
    assert json.loads(json.dumps(record)) == record


@pytest.mark.parametrize("retriever", all_retrievers(), ids=repr)
def test_k_larger_than_pool_is_a_clear_error(retriever):
    with pytest.raises(ValueError, match=r"query 0 needs 41 demonstrations.*only 40 are available"):
        retriever.build_sampler(DEMOS, QUERIES, 41)


@pytest.mark.parametrize("retriever", all_retrievers(), ids=repr)
def test_dedup_never_picks_the_query_text(retriever):
    demos = rows(["the cat sat", "The  CAT sat ", "a dog ran", "birds fly high", "cats nap"], ["a", "b", "a", "b", "a"])
    query = queries(["the cat sat"])
    for k in range(1, 4):
        row = retriever.build_sampler(demos, query, k)[0]
        assert 0 not in row and 1 not in row
    with pytest.raises(ValueError, match="only 3 are available .after dedup."):
        retriever.build_sampler(demos, query, 4)
    assert retriever.build_sampler(demos, query, 0) == [[]]


def test_dedup_off_allows_the_duplicate():
    demos = rows(["the cat sat", "a dog ran", "birds fly high"])
    assert BM25Retriever(dedup=False, order="descending").build_sampler(demos, queries(["The cat  sat"]), 1) == [[0]]
    assert BM25Retriever(order="descending").build_sampler(demos, queries(["The cat  sat"]), 1) == [[1]]
    assert normalise_text("  The\tCat \n sat ") == "the cat sat"
    two = rows(["red", "green"])
    assert sorted(RandomRetriever(dedup=False).build_sampler(two, queries(["RED"]), 2)[0]) == [0, 1]
    assert RandomRetriever(dedup=False).describe()["parameters"]["dedup"] is False


def test_dedup_is_per_query():
    demos = rows(["red", "green", "blue"])
    sampler = RandomRetriever().build_sampler(demos, queries(["red", "green", "blue"]), 2)
    assert [sorted(row) for row in sampler] == [[1, 2], [0, 2], [0, 1]]


@pytest.mark.parametrize("bad", [2.0, True, "3", None])
def test_k_type_is_checked(bad):
    with pytest.raises(TypeError, match=r"k must be an int in BM25Retriever\.build_sampler, got"):
        BM25Retriever().build_sampler(DEMOS, QUERIES, bad)


def test_negative_k_is_rejected():
    with pytest.raises(ValueError, match="k should be a positive integer: got k = -1 in RandomRetriever"):
        RandomRetriever().build_sampler(DEMOS, QUERIES, -1)
    assert check_k(0) == 0


def test_rows_are_validated_with_their_index():
    with pytest.raises(TypeError, match=r"demonstrations\[1\] must be an \(inputs, label_text\) pair"):
        BM25Retriever().build_sampler([(["ok"], "a"), "not a pair"], QUERIES, 1)
    with pytest.raises(TypeError, match=r"queries\[0\] inputs must be a list of str"):
        BM25Retriever().build_sampler(DEMOS, [([1, 2], None)], 1)


def test_multi_input_rows_are_joined_with_a_space():
    demos = [(["premise about cats", "hypothesis"], "yes"), (["other", "text"], "no")]
    assert BM25Retriever().build_sampler(demos, [(["cats"], None)], 1) == [[0]]
    # dedup sees the joined text
    assert BM25Retriever().build_sampler(demos, [(["premise about CATS hypothesis"], None)], 1) == [[1]]


# --- zero and fixed -------------------------------------------------------------
def test_zero_retriever_ignores_k():
    assert ZeroRetriever().build_sampler(DEMOS, QUERIES, 4) == [[] for _ in QUERIES]
    with pytest.raises(TypeError):
        ZeroRetriever().build_sampler(DEMOS, QUERIES, 1.5)


def test_fixk_keeps_order_for_every_query():
    sampler = FixKRetriever([5, 0, 3]).build_sampler(DEMOS, QUERIES, 4)
    assert sampler == [[5, 0, 3]] * len(QUERIES)


def test_fixk_validation_names_the_bad_index():
    with pytest.raises(ValueError, match=r"fix_id_list\[1\] = 40 is out of range: expected 0 <= index < 40"):
        FixKRetriever([2, 40]).build_sampler(DEMOS, QUERIES, 2)
    with pytest.raises(ValueError, match=r"fix_id_list\[0\] = -1 is negative"):
        FixKRetriever([-1])
    with pytest.raises(TypeError, match=r"fix_id_list\[2\] must be an int in FixKRetriever, got str '3'"):
        FixKRetriever([1, 2, "3"])
    with pytest.raises(TypeError, match=r"fix_id_list\[0\] must be an int in FixKRetriever, got bool True"):
        FixKRetriever([True])
    with pytest.raises(TypeError, match="fix_id_list must be a sequence of ints"):
        FixKRetriever(5)


def test_fixk_dedup_drops_only_the_duplicate():
    demos = rows(["one", "two", "three"])
    assert FixKRetriever([2, 0]).build_sampler(demos, queries(["ONE", "four"]), 2) == [[2], [2, 0]]
    assert FixKRetriever([2, 0], dedup=False).build_sampler(demos, queries(["ONE"]), 2) == [[2, 0]]


# --- random ---------------------------------------------------------------------
def test_random_is_reproducible_by_seed_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = RandomRetriever(seed=7).build_sampler(DEMOS, QUERIES, 4)
    assert first == RandomRetriever(seed=7).build_sampler(DEMOS, QUERIES, 4)
    assert first != RandomRetriever(seed=8).build_sampler(DEMOS, QUERIES, 4)
    assert first != RandomRetriever().build_sampler(DEMOS, QUERIES, 4)
    assert len({tuple(row) for row in first}) > 1, "each query draws its own demonstrations"


def test_random_ice_num_overrides_k():
    sampler = RandomRetriever(ice_num=2).build_sampler(DEMOS, QUERIES, 5)
    assert all(len(row) == 2 for row in sampler)
    assert RandomRetriever(ice_num=2).describe()["parameters"]["ice_num"] == 2
    with pytest.raises(ValueError, match="ice_num must be >= 0 in RandomRetriever, got -2"):
        RandomRetriever(ice_num=-2)


def test_random_allow_repetition_exceeds_the_pool():
    demos = rows(["a", "b", "c"])
    sampler = RandomRetriever(allow_repetition=True).build_sampler(demos, queries(["q1", "q2"]), 10)
    assert all(len(row) == 10 and set(row) <= {0, 1, 2} for row in sampler)
    with pytest.raises(ValueError, match="needs 10 demonstrations but only 3"):
        RandomRetriever().build_sampler(demos, queries(["q1"]), 10)


def test_random_balanced_round_robin_rotates_per_query():
    labels = ["neg", "pos", "neu"] * 10
    demos = rows([f"text {i}" for i in range(30)], labels)
    sampler = RandomRetriever(balanced=True).build_sampler(demos, queries([f"q{i}" for i in range(6)]), 4)
    order = ["neg", "pos", "neu"]  # first appearance in the demonstrations
    for q, row in enumerate(sampler):
        assert [labels[i] for i in row] == [order[(q + j) % 3] for j in range(4)]
    totals = Counter(labels[i] for row in sampler for i in row)
    assert totals == {"neg": 8, "pos": 8, "neu": 8}


def test_balanced_needs_enough_of_each_label():
    demos = rows(["a1", "a2", "a3", "b1"], ["a", "a", "a", "b"])
    with pytest.raises(ValueError, match="query 0 needs 2 demonstrations with label 'b' but only 1"):
        RandomRetriever(balanced=True).build_sampler(demos, queries(["q"]), 4)
    with pytest.raises(ValueError, match=r"balanced=True needs labelled demonstrations; demonstrations\[0\]"):
        BM25Retriever(balanced=True).build_sampler([(["t"], None)], queries(["q"]), 1)


# --- BM25 -------------------------------------------------------------------------
def test_bm25_scores_match_the_formula_by_hand():
    # d0 = the cat sat (|d|=3), d1 = the dog sat on the mat (|d|=6), d2 = cats and dogs (|d|=3)
    # N = 3, avgdl = 12 / 3 = 4, k1 = 1.5, b = 0.75
    index = BM25Index([default_tokenizer(t) for t in ["the cat sat", "The dog sat on the mat", "cats and dogs"]])
    idf_the = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "the" in d0, d1
    idf_cat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # "cat" in d0 only ("cats" is another word)
    norm_d0 = 1.5 * (1 - 0.75 + 0.75 * 3 / 4)          # 1.21875
    norm_d1 = 1.5 * (1 - 0.75 + 0.75 * 6 / 4)          # 2.0625
    d0 = idf_the * 1 * 2.5 / (1 + norm_d0) + idf_cat * 1 * 2.5 / (1 + norm_d0)
    d1 = idf_the * 2 * 2.5 / (2 + norm_d1)             # tf("the", d1) = 2
    assert index.scores(["the", "cat"]) == pytest.approx([d0, d1, 0.0], rel=1e-12)
    assert d0 == pytest.approx((math.log(1.6) + math.log(8 / 3)) * 2.5 / 2.21875)
    # a repeated query term counts twice (as in Lucene and rank_bm25)
    assert index.scores(["cat", "cat"]) == pytest.approx([2 * idf_cat * 2.5 / (1 + norm_d0), 0.0, 0.0])
    assert index.scores(["unknown"]) == [0.0, 0.0, 0.0]


def test_bm25_top_k_order_and_ties():
    demos = rows(["the cat sat", "The dog sat on the mat", "cats and dogs"])
    query = queries(["the cat"])
    assert BM25Retriever(order="descending").build_sampler(demos, query, 2) == [[0, 1]]
    assert BM25Retriever().build_sampler(demos, query, 2) == [[1, 0]]  # ascending: best last
    # zero-score ties go to the lower index
    assert BM25Retriever(order="descending").build_sampler(demos, query, 3) == [[0, 1, 2]]
    tied = rows(["red apple", "green pear", "red apple", "blue plum"])
    assert BM25Retriever(order="descending").build_sampler(tied, queries(["apple"]), 3) == [[0, 2, 1]]


def test_bm25_custom_tokenizer_and_parameters():
    retriever = BM25Retriever(k1=1.2, b=0.5, tokenizer=str.split)
    assert retriever.build_sampler(rows(["a-b c", "a b"]), queries(["a-b"]), 1) == [[0]]
    assert retriever.describe()["parameters"]["tokenizer"] == "str.split"
    assert TopKRetriever is BM25Retriever
    with pytest.raises(ValueError, match=r"b must be in \[0.0, 1.0\], got 2"):
        BM25Retriever(b=2)
    with pytest.raises(ValueError, match="order must be one of 'ascending', 'descending'"):
        BM25Retriever(order="random")


def test_bm25_balanced_takes_each_labels_best():
    texts = ["cat food"] + ["cat toy"] * 5 + ["dog bone", "dog cat"]
    labels = ["a"] * 6 + ["b", "b"]
    sampler = BM25Retriever(balanced=True, order="descending").build_sampler(rows(texts, labels), queries(["cat"]), 4)
    assert sorted(sampler[0]) == [0, 1, 6, 7]
    assert sampler[0][-1] == 6, "the zero-score 'dog bone' ranks last"


# --- MMR ---------------------------------------------------------------------------
MMR_DOCS = ["cheap flights to paris", "Cheap flights to Paris!", "cheap hotels paris",
            "weather in london", "stock prices fall", "new phone released"]


def test_mmr_worked_example_picks_the_diverse_second_item():
    demos, query = rows(MMR_DOCS), queries(["cheap flights paris"])
    # Pure relevance takes the two near-duplicates.
    assert BM25Retriever(order="descending").build_sampler(demos, query, 2) == [[0, 1]]
    # By hand: N = 6, avgdl = 20/6; idf(cheap) = idf(paris) = log 2, idf(flights) = log 2.8.
    score0 = (2 * math.log(2) + math.log(2.8)) * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 4 / (20 / 6)))
    score2 = 2 * math.log(2) * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 3 / (20 / 6)))
    rel2 = score2 / score0                     # relevance normalised by the best score (docs 0 and 1)
    sim_20 = 2 / (math.sqrt(3) * 2)            # tf cosine of "cheap hotels paris" and doc 0
    value1 = 0.5 * 1.0 - 0.5 * 1.0             # doc 1: as relevant as doc 0 and identical to it
    value2 = 0.5 * rel2 - 0.5 * sim_20
    assert value2 == pytest.approx(0.0388, abs=1e-4) and value2 > value1 == 0.0
    assert MMRRetriever(lambda_=0.5, order="descending").build_sampler(demos, query, 2) == [[0, 2]]
    assert MMRRetriever(lambda_=0.5).build_sampler(demos, query, 2) == [[2, 0]]  # ascending: first pick last
    # lambda_ = 1 is pure relevance again
    assert MMRRetriever(lambda_=1.0, order="descending").build_sampler(demos, query, 2) == [[0, 1]]


def test_mmr_candidates_restrict_the_pool():
    demos, query = rows(MMR_DOCS), queries(["cheap flights paris"])
    # with only 2 candidates (the near-duplicates) MMR cannot reach doc 2
    assert MMRRetriever(candidates=2, order="descending").build_sampler(demos, query, 2) == [[0, 1]]
    # the pool never shrinks below k
    assert len(MMRRetriever(candidates=1).build_sampler(demos, query, 3)[0]) == 3
    with pytest.raises(ValueError, match="candidates must be at least 1"):
        MMRRetriever(candidates=0)
    with pytest.raises(ValueError, match=r"lambda_ must be in \[0.0, 1.0\]"):
        MMRRetriever(lambda_=1.5)


def test_mmr_with_embeddings():
    vectors = {"q": [1.0, 0.0], "a": [1.0, 0.05], "a2": [1.0, 0.06], "b": [0.8, -0.6], "c": [0.0, 1.0]}
    demos = rows(["a", "a2", "b", "c"])
    retriever = MMRRetriever(similarity=vectors.__getitem__, order="descending")
    assert EmbeddingTopKRetriever(vectors.__getitem__, order="descending").build_sampler(demos, queries(["q"]), 2) \
        == [[0, 1]]
    assert retriever.build_sampler(demos, queries(["q"]), 2) == [[0, 2]]
    assert retriever.describe()["parameters"]["similarity"] == "embedding"


# --- embeddings ----------------------------------------------------------------
class FakeArray:
    """Stands in for a numpy array: only ``tolist``."""

    def __init__(self, values):
        self.values = values

    def tolist(self):
        return list(self.values)


def test_embedding_topk_by_cosine():
    vectors = {"cat": [1.0, 0.0], "kitten": [0.9, 0.1], "dog": [0.0, 1.0], "puppy": [0.1, 0.9], "car": [-1.0, 0.0],
               "hound": [0.0, 2.0]}
    demos = rows(["kitten", "dog", "puppy", "car"])
    retriever = EmbeddingTopKRetriever(lambda text: FakeArray(vectors[text]), order="descending")
    assert retriever.build_sampler(demos, queries(["cat", "hound"]), 2) == [[0, 2], [1, 2]]
    assert EmbeddingTopKRetriever(vectors.__getitem__).build_sampler(demos, queries(["cat"]), 3) == [[1, 2, 0]]


def test_embedding_cosine_vs_dot_and_batching():
    calls = []

    def batched(texts):
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    demos = rows(["aa", "aaaaaaaa", "a"])
    retriever = EmbeddingTopKRetriever(batched, metric="dot", batched=True, order="descending")
    assert retriever.build_sampler(demos, queries(["aaa"]), 1) == [[1]]  # longest vector wins the dot product
    assert calls == [["aa", "aaaaaaaa", "a"], ["aaa"]]
    retriever.build_sampler(demos, queries(["b"]), 1)
    assert calls[2:] == [["b"]], "demonstrations are embedded once while they do not change"
    cosine = EmbeddingTopKRetriever(batched, batched=True, order="descending")
    assert cosine.build_sampler(demos, queries(["aaa"]), 1) == [[0]]  # direction (2,1) is closest to (3,1)


def test_embedding_validation():
    with pytest.raises(TypeError, match="embed_fn must be callable"):
        EmbeddingTopKRetriever("not a function")
    with pytest.raises(ValueError, match="metric must be one of 'cosine', 'dot'"):
        EmbeddingTopKRetriever(len, metric="l2")
    with pytest.raises(ValueError, match="embed_fn returned dimension 1 for demonstration 1, expected 2"):
        EmbeddingTopKRetriever(lambda t: [1.0] * len(t)).build_sampler(rows(["ab", "a"]), queries(["q"]), 1)


def test_embedding_numpy_backend_matches_python():
    pytest.importorskip("numpy")
    embed = lambda text: [text.count(c) + 0.5 for c in "aeiou"]  # noqa: E731
    python = EmbeddingTopKRetriever(embed).build_sampler(DEMOS, QUERIES, 3)
    assert EmbeddingTopKRetriever(embed, backend="numpy").build_sampler(DEMOS, QUERIES, 3) == python


def test_sentence_transformers_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now raises ImportError
    with pytest.raises(ImportError, match=r"pip install StaICC\[embeddings\]"):
        sentence_transformers_embedder("all-MiniLM-L6-v2")


# --- by name ----------------------------------------------------------------------
def test_retriever_from_name():
    assert isinstance(retriever_from_name("zero"), ZeroRetriever)
    assert retriever_from_name("FixK", fix_id_list=[1]).fix_id_list == [1]
    assert retriever_from_name("random", seed=3).seed == 3
    assert type(retriever_from_name("topk")) is BM25Retriever
    assert isinstance(retriever_from_name("bm25"), BM25Retriever)
    assert isinstance(retriever_from_name("mmr", lambda_=0.3), MMRRetriever)
    assert isinstance(retriever_from_name("embedding", embed_fn=len), EmbeddingTopKRetriever)
    with pytest.raises(ValueError, match="unknown retriever 'dense'; valid names: zero, fixk, random, bm25, topk, "
                                         "mmr, embedding"):
        retriever_from_name("dense")


def test_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        Retriever().build_sampler(DEMOS, QUERIES, 1)


# --- parameters and embeddings are validated, naming the retriever ---------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: BM25Retriever(k1=float("inf")), "k1 must be a finite number in BM25Retriever"),
    (lambda: BM25Retriever(k1=float("nan")), "k1 must be a finite number in BM25Retriever"),
    (lambda: BM25Retriever(k1=1e300), r"BM25Retriever: k1 must be in \[0.0, 1000000.0\]"),
    (lambda: BM25Retriever(k1=-0.1), r"BM25Retriever: k1 must be in"),
    (lambda: BM25Retriever(b=float("nan")), "b must be a finite number in BM25Retriever"),
    (lambda: MMRRetriever(k1=float("inf")), "k1 must be a finite number in MMRRetriever"),
    (lambda: MMRRetriever(lambda_=float("nan")), "lambda_ must be a finite number in MMRRetriever"),
    (lambda: MMRRetriever(b=-1), r"MMRRetriever: b must be in \[0.0, 1.0\]"),
    (lambda: BM25Index([["a"]], k1=float("inf")), "k1 must be a finite number in BM25Index"),
])
def test_non_finite_or_out_of_range_parameters_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make, match", [
    (lambda: BM25Retriever(k1="1.5"), "k1 must be a real number in BM25Retriever, got str"),
    (lambda: BM25Retriever(k1=True), "k1 must be a real number in BM25Retriever, got bool"),
    (lambda: MMRRetriever(candidates=2.0), "candidates must be an int in MMRRetriever"),
    (lambda: RandomRetriever(seed="7"), "seed must be an int in RandomRetriever"),
    (lambda: BM25Retriever(balanced=1), "balanced must be True or False in BM25Retriever"),
    (lambda: BM25Retriever(tokenizer="split"), r"tokenizer must be callable \(str -> list of str\) in BM25Retriever"),
])
def test_parameter_types_are_refused(make, match):
    with pytest.raises(TypeError, match=match):
        make()


def test_tokenizer_output_is_checked():
    with pytest.raises(TypeError, match=r"tokenizer str.lower must return a list of str in BM25Retriever, got str"):
        BM25Retriever(tokenizer=str.lower).build_sampler(DEMOS, QUERIES, 1)
    with pytest.raises(TypeError, match="must return a list of str in MMRRetriever"):
        MMRRetriever(tokenizer=lambda text: [1, 2]).build_sampler(DEMOS, QUERIES, 1)


@pytest.mark.parametrize("vector, error, match", [
    ("12", TypeError, r"embed_fn returned a str for demonstration 0, expected a list of numbers"),
    (b"12", TypeError, "embed_fn returned a bytes for demonstration 0"),
    ([1.0, float("nan")], ValueError, "non-finite value for demonstration 0 at position 1: nan"),
    ([float("inf"), 1.0], ValueError, "non-finite value for demonstration 0 at position 0: inf"),
    ([1.0, "2"], TypeError, "non-numeric value for demonstration 0 at position 1: str"),
    ([1.0, True], TypeError, "non-numeric value for demonstration 0 at position 1: bool"),
    ([], ValueError, "empty vector for demonstration 0"),
    (None, TypeError, "embed_fn returned a NoneType for demonstration 0"),
])
@pytest.mark.parametrize("owner", ["EmbeddingTopKRetriever", "MMRRetriever"])
def test_bad_embeddings_are_refused_naming_retriever_and_row(vector, error, match, owner):
    def embed(text):
        return vector if text == "alpha" else [1.0, 0.5]
    retriever = EmbeddingTopKRetriever(embed) if owner == "EmbeddingTopKRetriever" else MMRRetriever(similarity=embed)
    with pytest.raises(error, match=f"{owner}: {match if match.startswith('embed_fn') else 'embed_fn returned an? ' + match}"):
        retriever.build_sampler(rows(["alpha", "beta"]), queries(["q"]), 1)


def test_query_embeddings_are_checked_too():
    embed = lambda text: [float("nan"), 1.0] if text == "q" else [1.0, 0.0]  # noqa: E731
    with pytest.raises(ValueError, match="EmbeddingTopKRetriever: embed_fn returned a non-finite value for query 0"):
        EmbeddingTopKRetriever(embed).build_sampler(rows(["a", "b"]), queries(["q"]), 1)


def test_huge_and_tiny_embeddings_keep_their_direction():
    vectors = {"a": [1e200, 0.0], "b": [1e200, 1e200], "c": [1e-200, 1e-200], "q": [1e200, 1e200]}
    retriever = EmbeddingTopKRetriever(vectors.__getitem__, order="descending")
    ranked = retriever.build_sampler(rows(["a", "b", "c"]), queries(["q"]), 3)
    assert sorted(ranked[0][:2]) == [1, 2] and ranked[0][2] == 0  # b and c point where q does
    dot = EmbeddingTopKRetriever(vectors.__getitem__, metric="dot")
    with pytest.raises(ValueError, match="EmbeddingTopKRetriever: the similarities of query 0 overflow"):
        dot.build_sampler(rows(["a", "b", "c"]), queries(["q"]), 1)


def test_batched_embed_fn_must_return_a_list():
    retriever = EmbeddingTopKRetriever(lambda texts: "12", batched=True)
    with pytest.raises(TypeError, match="EmbeddingTopKRetriever: the batched embed_fn must return a list of vectors"):
        retriever.build_sampler(rows(["a", "b"]), queries(["q"]), 1)
