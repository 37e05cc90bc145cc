"""Tree packing: the flat layout reproduces every sequence, its masks are the tree, and the scores equal the
unshared computation (argmax identical, |Δp| <= 1e-5 in float32) on real tiny HF models."""
import random

import pytest

from StaICC.backends import tree_pack


def _visible(pack, index):
    """Flat indices that ``index`` attends to, by the rule j <= i < end[j]."""
    return [j for j in range(index + 1) if index < pack.ends[j]]


@pytest.mark.parametrize("seed", range(6))
def test_every_read_sees_exactly_its_own_sequence(seed):
    rng = random.Random(seed)
    stems = [[rng.randrange(5) for _ in range(rng.randrange(1, 12))] for _ in range(3)]
    sequences = [rng.choice(stems) + [rng.randrange(4) for _ in range(rng.randrange(0, 6))] for _ in range(14)]
    sequences = [s or [1] for s in sequences]
    reads = [sorted({rng.randrange(len(s)) for _ in range(3)} | {len(s) - 1}) for s in sequences]
    packs = tree_pack.plan_packs(sequences, reads, max_tokens=rng.choice([6, 20, 1000]), max_read_positions=1000)
    seen = set()
    for pack in packs:
        assert len(pack.tokens) == len(pack.positions) == len(pack.ends)
        for flat, i, r in pack.reads:
            context = [pack.tokens[j] for j in _visible(pack, flat)]
            assert context == sequences[i][:reads[i][r] + 1]
            assert pack.positions[flat] == reads[i][r]
            seen.add((i, r))
    assert seen == {(i, r) for i in range(len(sequences)) for r in range(len(reads[i]))}
    assert sorted(m for p in packs for m in p.members) == list(range(len(sequences)))


def test_one_pack_computes_each_distinct_prefix_once_and_respects_the_bounds():
    sequences = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 2, 3, 4, 5], [7, 8], [1, 2]]
    reads = [[len(s) - 1] for s in sequences]
    (pack,) = tree_pack.plan_packs(sequences, reads, max_tokens=100, max_read_positions=100)
    assert len(pack.tokens) == 8  # 1 2 3 4 5 | 9 | 7 8 : the trie's tokens
    assert pack.given == 18
    small = tree_pack.plan_packs(sequences, reads, max_tokens=5, max_read_positions=100)
    assert all(len(p.tokens) <= 5 for p in small) and len(small) > 1
    few_reads = tree_pack.plan_packs(sequences, [list(range(len(s))) for s in sequences], max_tokens=100,
                                     max_read_positions=4)
    assert all(len({flat for flat, _, _ in p.reads}) <= 5 for p in few_reads)  # one sequence may pass alone


def test_cost_model_joins_sharing_sequences_and_splits_unrelated_ones():
    shared = [[1] * 90 + [2, k] for k in range(6)]  # a long common prefix: joining adds 2 tokens each
    unrelated = [[10 + k] * 40 for k in range(6)]  # nothing in common: joining adds 40 tokens and their pairs
    reads = [[len(s) - 1] for s in shared + unrelated]
    cost = tree_pack.pair_cost(nonembedding_parameters=40_000, hidden_size=64, layers=2, block_sparse=False)
    assert cost == 2 * 64 * 2 / 40_000
    packs = tree_pack.plan_packs(shared + unrelated, reads, max_tokens=10**6, max_read_positions=10**6,
                                 pair_cost=cost)
    by_member = {m: p for p in packs for m in p.members}
    assert len({id(by_member[i]) for i in range(6)}) == 1  # the sharing sequences run as one pack
    assert len({id(by_member[i]) for i in range(6, 12)}) == 6  # sharing nothing, each runs as its own row
    sparse = tree_pack.pair_cost(nonembedding_parameters=40_000, hidden_size=64, layers=2, block_sparse=True)
    assert sparse == 0.0
    assert len(tree_pack.plan_packs(shared + unrelated, reads, max_tokens=10**6, max_read_positions=10**6,
                                    pair_cost=sparse)) == 1
    many = [[1] * 90 + [2, k] for k in range(200)]  # sharing, but a dense mask's pairs grow with the pack
    dense_packs = tree_pack.plan_packs(many, [[91]] * 200, max_tokens=10**6, max_read_positions=10**6,
                                       pair_cost=1e-2)
    assert 1 < len(dense_packs) < 200
    assert tree_pack.forward_flops(100, 4, 10, tokens=3, reads=2) == 2 * 100 * 3 + 2 * 4 * 10 * 2


torch = pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install StaICC[hf])")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install StaICC[hf])")

from prefab_helpers import (FAMILIES, LABELS, compare, corpus, shared_demo_prompts, tiny_model,  # noqa: E402
                           tiny_tokenizer)

from StaICC.backends.causal_lm import CausalLMScorer  # noqa: E402

def test_masks_are_the_tree():
    rng = random.Random(3)
    sequences = [[rng.randrange(3) for _ in range(rng.randrange(1, 90))] for _ in range(9)]
    (pack,) = tree_pack.plan_packs(sequences, [[len(s) - 1] for s in sequences], max_tokens=10**6,
                                   max_read_positions=10**6)
    n = len(pack.tokens)
    dense = tree_pack.dense_mask(torch, pack.ends, "cpu")[0, 0]
    assert dense.shape == (n, n)
    for i in range(0, n, 7):
        assert dense[i].nonzero().flatten().tolist() == _visible(pack, i)
    additive = tree_pack.dense_mask(torch, pack.ends, "cpu", torch.float32)[0, 0]
    assert torch.equal(additive == 0, dense)
    block = 16
    mask = tree_pack.flex_block_mask(torch, pack.ends, "cpu", block=block)
    tiles = -(-n // block)
    partial = {(q, int(k)) for q in range(tiles) for k in mask.kv_indices[0, 0, q, :mask.kv_num_blocks[0, 0, q]]}
    full = {(q, int(k)) for q in range(tiles)
            for k in mask.full_kv_indices[0, 0, q, :mask.full_kv_num_blocks[0, 0, q]]}
    assert not partial & full
    for q in range(tiles):
        for k in range(tiles):
            tile = dense[q * block:(q + 1) * block, k * block:(k + 1) * block]
            assert ((q, k) in partial | full) == bool(tile.any())
            assert ((q, k) in full) == bool(tile.all())
            if (q, k) in partial:  # the mask function refines the tile to the tree
                qs = torch.arange(q * block, min(n, (q + 1) * block))[:, None]
                ks = torch.arange(k * block, min(n, (k + 1) * block))[None, :]
                assert torch.equal(mask.mask_mod(0, 0, qs, ks), tile)


@pytest.mark.parametrize("family,bos", FAMILIES)
@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_tree_packed_equals_unshared(family, bos, scoring, monkeypatch):
    # pairs priced at zero: every sharing prompt joins one pack, the largest trees the layout can make
    monkeypatch.setattr(tree_pack, "pair_cost", lambda **_: 0.0)
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    prompts = shared_demo_prompts()
    rows = CausalLMScorer(model, tok, scoring=scoring, packing="rows")
    tree = CausalLMScorer(model, tok, scoring=scoring, packing="tree")
    a, b = rows(prompt=prompts, label_space=LABELS), tree(prompt=prompts, label_space=LABELS)
    assert compare(a, b) <= 1e-5
    assert tree._tree_ok is True
    assert tree.stats.tokens_computed < 0.6 * rows.stats.tokens_computed
    assert tree.stats.padded_tokens < 0.6 * rows.stats.padded_tokens  # packs are rows: padding only between packs


@pytest.mark.parametrize("family,bos", FAMILIES)
def test_noisy_channel_tree_packed_equals_unshared(family, bos):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    texts = corpus()
    demos = "".join(f"sentiment: {LABELS[j % 2]} review: {texts[30 + j]}\n" for j in range(3))
    queries = [[demos + f"sentiment: {label} review: {texts[i]}\n" for label in LABELS] for i in range(5)]
    a = CausalLMScorer(model, tok, packing="rows")(prompt=queries, label_space=LABELS)
    tree = CausalLMScorer(model, tok, packing="tree")
    b = tree(prompt=queries, label_space=LABELS)
    assert compare(a, b) <= 1e-5
    assert tree.stats.tokens_computed < 0.5 * tree.stats.tokens_requested


def test_states_from_tree_packs_match_rows():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(3, 3)
    rows = CausalLMScorer(model, tok, packing="rows").with_states(prompts, LABELS)
    tree = CausalLMScorer(model, tok, packing="tree").with_states(prompts, LABELS)
    for (p, hidden, full), (q, hidden_tree, full_tree) in zip(rows, tree):
        assert compare([p], [q]) <= 1e-5
        assert abs(hidden - hidden_tree).max() < 1e-4 and abs(full - full_tree).max() < 1e-3


def test_model_ignoring_the_mask_fails_the_probe_and_falls_back():
    """A forward that drops the 4-D mask (as a model without mask support would) is caught, not trusted."""
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(3, 3)
    expected = CausalLMScorer(model, tok, packing="rows")(prompt=prompts, label_space=LABELS)
    original = model.forward

    def forward(*args, **kwargs):
        if getattr(kwargs.get("attention_mask"), "ndim", 0) == 4:
            kwargs.pop("attention_mask")
        return original(*args, **kwargs)

    model.forward = forward
    try:
        scorer = CausalLMScorer(model, tok, packing="tree")
        with pytest.warns(UserWarning, match="prefix-tree engine"):
            result = scorer(prompt=prompts, label_space=LABELS)
    finally:
        del model.forward
    assert scorer._tree_ok is False
    assert compare(result, expected) <= 1e-5


def test_sliding_window_model_falls_back_to_the_prefix_engine():
    transformers = pytest.importorskip("transformers")
    tok = tiny_tokenizer(True)
    torch.manual_seed(0)
    config = transformers.MistralConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        sliding_window=32, max_position_embeddings=4096)
    model = transformers.MistralForCausalLM(config).eval()
    prompts = shared_demo_prompts(3, 3)
    expected = CausalLMScorer(model, tok, packing="rows")(prompt=prompts, label_space=LABELS)
    scorer = CausalLMScorer(model, tok, packing="tree")
    with pytest.warns(UserWarning, match="prefix-tree engine"):
        result = scorer(prompt=prompts, label_space=LABELS)
    assert scorer._tree_ok is False
    assert compare(result, expected) <= 1e-5


def test_out_of_memory_halves_the_pack_and_agrees(monkeypatch):
    monkeypatch.setattr(tree_pack, "pair_cost", lambda **_: 0.0)  # one pack of everything, as on a GPU
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(6, 3)
    expected = CausalLMScorer(model, tok, scoring="sequence", packing="rows")(prompt=prompts, label_space=LABELS)
    scorer = CausalLMScorer(model, tok, scoring="sequence", packing="tree", pack_tokens=4096)
    scorer._tree_usable()  # probe with the real forward first
    limit = max(len(ids) for ids in tok([p + " very positive" for p in prompts])["input_ids"]) + 4
    original = model.forward

    def forward(*args, **kwargs):
        if kwargs["input_ids"].shape[1] > limit:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(*args, **kwargs)

    model.forward = forward
    try:
        result = scorer(prompt=prompts, label_space=LABELS)
    finally:
        del model.forward
    assert compare(result, expected) <= 1e-5
    assert scorer.pack_tokens <= limit


def test_default_and_bad_packing_options():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    assert CausalLMScorer(model, tok, share_prefixes=False).packing == "rows"
    with pytest.raises(ValueError, match="packing must be one of"):
        CausalLMScorer(model, tok, packing="flat")
    with pytest.raises(ValueError, match="tree_attention must be one of"):
        CausalLMScorer(model, tok, tree_attention="flash")
    with pytest.raises(ValueError, match="pack_tokens"):
        CausalLMScorer(model, tok, pack_tokens=0)


def test_hf_backend_takes_packing_as_a_model_argument():
    from StaICC.backends.hf import HFBackend
    from StaICC.requests import Request
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(3, 3)
    tree = HFBackend(model, tok, model_id="tiny", packing="tree")
    rows = HFBackend(model, tok, model_id="tiny", packing="rows")
    assert (tree.scorer.packing, rows.scorer.packing) == ("tree", "rows")
    requests = [Request(prompt=p, label_space=tuple(LABELS)) for p in prompts]
    a = [answer.prediction for answer in tree.score(requests)]
    b = [answer.prediction for answer in rows.score(requests)]
    assert compare(a, b) <= 1e-5
    with pytest.raises(ValueError, match="packing"):
        HFBackend(model, tok, packing="flat")
