"""Vote-k, DPP, MDL and ConE on hand-made data where the right choice is known."""
import math
import random

import numpy as np
import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.retrieval import (ConERetriever, DPPRetriever, MDLRetriever, VoteKRetriever, causal_lm_loglik,
                              reference_embedder, retriever_from_name)
from StaICC.retrieval.cone import default_blocks
from StaICC.retrieval.dpp import dpp_kernel, greedy_map_dpp
from StaICC.retrieval.votek import nearest_others, vote_graph


def angle_embedder(angles):
    """embed_fn placing each text on the unit circle at its given angle."""
    def embed(text):
        return [math.cos(angles[text]), math.sin(angles[text])]
    return embed


# -- Vote-k --------------------------------------------------------------------------------------------
CLUSTERS = {"a0": 0.0, "a1": 0.01, "a2": 0.02, "a3": 0.03, "b0": 1.5, "b1": 1.51, "b2": 1.52, "c": 3.0}
POOL = [(name, "x") for name in CLUSTERS]


def test_vote_graph_counts_nearest_neighbour_votes():
    vectors = [angle_embedder(CLUSTERS)(name) for name in CLUSTERS]
    neighbours = nearest_others(vectors, 2, "python")
    assert nearest_others(vectors, 2, "numpy") == neighbours
    voters = vote_graph(neighbours)
    names = list(CLUSTERS)
    got = {names[j]: sorted(names[i] for i in voters[j]) for j in range(len(names))}
    # the outlier c votes for the two nearest points of cluster b
    assert got["a1"] == ["a0", "a2", "a3"] and got["a2"] == ["a0", "a1", "a3"]
    assert got["b1"] == ["b0", "b2", "c"] and got["b2"] == ["b0", "b1", "c"]
    assert got["c"] == []


def test_votek_picks_one_dense_representative_per_cluster():
    retriever = VoteKRetriever(angle_embedder(CLUSTERS), votek_k=2, overlap_threshold=0.5)
    rows = retriever.build_sampler(POOL, [("q1", None), ("q2", None)], 2)
    names = [name for name, _ in POOL]
    # a1 has the most votes; a2 shares 2 of its 3 voters with a1 (>= 0.5) and is skipped; b1 is next
    assert [[names[i] for i in row] for row in rows] == [["b1", "a1"], ["b1", "a1"]]
    descending = VoteKRetriever(angle_embedder(CLUSTERS), votek_k=2, overlap_threshold=0.5, order="descending")
    assert descending.build_sampler(POOL, [("q", None)], 2) == [[1, 5]]


def test_votek_dedup_takes_the_next_of_the_ranking_and_fill_is_seeded():
    retriever = VoteKRetriever(angle_embedder({**CLUSTERS, "a1 ": 0.01}), votek_k=2, overlap_threshold=0.5)
    rows = retriever.build_sampler(POOL, [("a1 ", None)], 3)
    assert 1 not in rows[0] and len(rows[0]) == 3
    # more than the Vote-k picks: the rest is a seeded shuffle, the same for the same seed
    one = VoteKRetriever(angle_embedder(CLUSTERS), votek_k=2, overlap_threshold=0.5, seed=3)
    two = VoteKRetriever(angle_embedder(CLUSTERS), votek_k=2, overlap_threshold=0.5, seed=3)
    assert one.build_sampler(POOL, [("q", None)], 8) == two.build_sampler(POOL, [("q", None)], 8)
    assert sorted(one.build_sampler(POOL, [("q", None)], 8)[0]) == list(range(8))


# -- DPP -----------------------------------------------------------------------------------------------
DPP_ANGLES = {"query": 0.0, "near": 0.1, "near-copy": 0.1001, "other-side": -0.3, "far": 2.5}
DPP_POOL = [(name, "x") for name in ("near", "near-copy", "other-side", "far")]


@pytest.mark.parametrize("scale, second", [(0.001, 1), (0.1, 2), (10.0, 3)])
def test_dpp_scale_factor_moves_from_relevance_to_diversity(scale, second):
    """The most relevant first; then the near copy (relevance rules), the other side, or the far one."""
    retriever = DPPRetriever(angle_embedder(DPP_ANGLES), scale_factor=scale, order="descending")
    picks = retriever.build_sampler(DPP_POOL, [("query", None)], 2)
    assert picks == [[0, second]]
    # ascending (default): the most relevant pick is last, next to the query
    assert DPPRetriever(angle_embedder(DPP_ANGLES), scale_factor=scale).build_sampler(
        DPP_POOL, [("query", None)], 2) == [[second, 0]]


@pytest.mark.parametrize("seed", range(10))
def test_greedy_map_maximises_the_determinant_step_by_step(seed):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(9, 4))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    relevance = rng.uniform(-1, 1, size=9)
    kernel = dpp_kernel(relevance.tolist(), vectors.tolist(), 0.3)
    L = np.asarray(kernel)
    expected = []
    for _ in range(4):
        gains = [(np.linalg.det(L[np.ix_(expected + [i], expected + [i])]), -i) for i in range(9) if i not in expected]
        expected.append(-max(gains)[1])
    assert greedy_map_dpp(kernel, 4) == expected


def test_dpp_never_repeats_a_demonstration_on_a_low_rank_kernel():
    same = {"q": 0.0, "a": 0.5, "b": 0.5, "c": 0.5}
    rows = DPPRetriever(angle_embedder(same)).build_sampler([("a", "x"), ("b", "x"), ("c", "x")], [("q", None)], 3)
    assert sorted(rows[0]) == [0, 1, 2]


# -- MDL -----------------------------------------------------------------------------------------------
def test_mdl_keeps_the_set_under_which_the_model_is_most_certain():
    texts = [f"demo {i}" for i in range(8)]
    demos = [(t, "pos" if i % 2 else "neg") for i, t in enumerate(texts)]
    calls = []

    def model(prompt, label_space):
        calls.append(prompt)
        # certain only when the prompt shows demonstration 5
        return [0.9, 0.1] if "demo 5\n" in prompt else [0.5, 0.5]

    retriever = MDLRetriever(model, candidates=8, select_time=12, seed=0)
    rows = retriever.build_sampler(demos, [("demo query", None)], 2)
    assert 5 in rows[0]
    assert len(calls) == 12
    assert retriever.build_sampler(demos, [("demo query", None)], 2) == rows  # seeded


def test_mdl_with_one_selection_is_the_nearest_set_and_runs_the_reference_model():
    demos = [("cat sat on mat", "pets"), ("dog on mat", "pets"), ("stock markets fell", "money"),
             ("bank rates rose", "money")]
    retriever = MDLRetriever(lexical_icl, select_time=1)
    nearest = retriever.build_sampler(demos, [("the cat on the mat", None)], 2)
    assert sorted(nearest[0]) == [0, 1]
    rows = MDLRetriever(lexical_icl, select_time=4).build_sampler(demos, [("bank stock", None)], 2)
    assert len(rows[0]) == 2 and len(set(rows[0])) == 2


def test_mdl_refuses_unlabelled_demonstrations_and_a_non_callable_model():
    with pytest.raises(ValueError, match=r"demonstrations\[1\] has none"):
        MDLRetriever(lexical_icl).build_sampler([("a", "x"), ("b",)], [("q", None)], 1)
    with pytest.raises(TypeError, match="model must be callable"):
        MDLRetriever("gpt2")


# -- shared ----------------------------------------------------------------------------------------------
def test_reference_embedder_is_deterministic_and_lexical():
    embed = reference_embedder(64)
    assert embed("the cat sat") == embed("The  cat sat")
    a, b, c = (np.asarray(embed(t)) for t in ("stocks fell sharply", "stocks fell", "a cat sat"))
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    assert cos(a, b) > cos(a, c)


def test_cli_names_and_errors():
    assert isinstance(retriever_from_name("vote-k"), VoteKRetriever)
    assert isinstance(retriever_from_name("DPP", scale_factor=0.5), DPPRetriever)
    with pytest.raises(ValueError, match="scale_factor must be in"):
        DPPRetriever(scale_factor=0)
    with pytest.raises(ValueError, match="votek_k must be"):
        VoteKRetriever(votek_k=0)
    with pytest.raises(ValueError, match="needs 3 demonstrations"):
        DPPRetriever().build_sampler([("a b", "x"), ("c d", "x")], [("q", None)], 3)


def test_numpy_backend_gives_the_same_rows_on_separated_data():
    demos = [(name, "x") for name in CLUSTERS]
    for make in (lambda b: VoteKRetriever(angle_embedder(CLUSTERS), votek_k=2, overlap_threshold=0.5, backend=b),
                 lambda b: DPPRetriever(angle_embedder({**CLUSTERS, "q": 0.7}), backend=b)):
        assert make("numpy").build_sampler(demos, [("q", None)], 3) == make("python").build_sampler(
            demos, [("q", None)], 3)


def test_same_inputs_same_rows_for_every_retriever():
    rng = random.Random(4)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    demos = [(" ".join(rng.choice(words) for _ in range(4)), rng.choice("xy")) for _ in range(30)]
    queries = [(" ".join(rng.choice(words) for _ in range(3)), None) for _ in range(5)]
    for make in (lambda: VoteKRetriever(seed=2), lambda: DPPRetriever(),
                 lambda: MDLRetriever(lexical_icl, seed=2)):
        assert make().build_sampler(demos, queries, 3) == make().build_sampler(demos, queries, 3)


# -- ConE ----------------------------------------------------------------------------------------------
def test_cone_keeps_the_demonstrations_that_make_the_query_most_likely():
    demos = [(f"demo {i}", "x") for i in range(6)]
    calls = []

    def loglik(context, continuation):
        calls.append((context, continuation))
        # the query is most likely after demo 4, then demo 1; the others are equally poor
        return {"demo 4": -1.0, "demo 1": -2.0}.get(context.split("\n")[0][len("Input: "):], -9.0)

    rows = ConERetriever(loglik, candidates=6, order="descending").build_sampler(demos, [("demo query", None)], 2)
    assert rows == [[4, 1]]
    assert len(calls) == 6 and all(c[1] == "Input: demo query\nLabel:" for c in calls)
    assert ConERetriever(loglik, candidates=6).build_sampler(demos, [("demo query", None)], 2) == [[1, 4]]


def test_cone_with_a_tiny_causal_lm():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import sys
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from backend_helpers import tiny_pair
    import torch
    model, tokenizer = tiny_pair("llama", 0)
    loglik = causal_lm_loglik(model, tokenizer)
    # the sum of the continuation's token log-probabilities, checked against one forward pass by hand
    head = tokenizer("Input: a cat\nLabel: x\n\n")["input_ids"]
    tail = tokenizer("Input: a dog\nLabel:", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([head + tail])).logits[0].double()
    expected = sum(float(torch.log_softmax(logits[len(head) - 1 + t], -1)[token]) for t, token in enumerate(tail))
    assert loglik("Input: a cat\nLabel: x\n\n", "Input: a dog\nLabel:") == pytest.approx(expected, rel=1e-9)
    demos = [("a cat", "x"), ("a dog", "y"), ("the stock", "z")]
    rows = ConERetriever(loglik, candidates=3).build_sampler(demos, [("a dog barks", None)], 2)
    scores = {d: -loglik(*default_blocks(demos[d], "a dog barks")) for d in range(3)}
    assert rows[0] == sorted(range(3), key=lambda d: (scores[d], d))[:2][::-1]
