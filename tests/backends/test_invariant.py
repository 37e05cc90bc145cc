"""Batch-invariant numerics: a prompt's scores are the same bits whatever else is in the call, however it is
packed, in float32 and bfloat16, on real tiny random Llama models; the pieces are checked on their own."""
import random
import warnings

import pytest

torch = pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

from StaICC.backends import invariant, tree_pack  # noqa: E402
from StaICC.backends.causal_lm import CausalLMScorer  # noqa: E402
from StaICC.backends.tiny_models import tiny_causal_lm, tiny_tokenizer  # noqa: E402

TEXTS = [f"Review: film number {k} was {'good' if k % 3 else 'bad'} and {'long' if k % 2 else 'short'}. "
         "sentiment: " for k in range(30)]
SHARED = "Review: a fine film. sentiment: positive\nReview: a poor film. sentiment: negative\n"
PROMPTS = [SHARED + text for text in TEXTS[:12]] + TEXTS[12:]
LABELS = ["negative", "positive"]


@pytest.fixture(scope="module")
def pair():
    tokenizer = tiny_tokenizer(PROMPTS + LABELS * 20, vocab_size=300)
    model = tiny_causal_lm("llama", vocab_size=len(tokenizer), hidden_size=64, layers=2, seed=3)
    return model, tokenizer


def test_tree_sum_is_the_sum_and_padding_with_zeros_changes_no_bit():
    x = torch.randn(5, 37, dtype=torch.float32)
    total = invariant.tree_sum(torch, x, -1)
    assert torch.allclose(total, x.double().sum(-1).float(), atol=1e-5)
    for extra in (1, 27, 91):
        padded = torch.cat([x, torch.zeros(5, extra)], dim=-1)
        assert torch.equal(invariant.tree_sum(torch, padded, -1), total)
    assert torch.equal(invariant.tree_sum(torch, x.t(), 0), total)


def test_log_softmax_agrees_with_torch_and_ignores_other_rows():
    x = torch.randn(7, 301)
    got = invariant.log_softmax(torch, x)
    assert torch.allclose(got, torch.log_softmax(x, -1), atol=1e-6)
    assert torch.equal(invariant.log_softmax(torch, x[3:4])[0], got[3])


@pytest.mark.parametrize("seed", range(4))
def test_the_attention_plan_gives_every_token_its_own_path(seed):
    rng = random.Random(seed)
    stems = [[rng.randrange(5) for _ in range(rng.randrange(1, 9))] for _ in range(3)]
    sequences = [rng.choice(stems) + [rng.randrange(4) for _ in range(rng.randrange(0, 7))] for _ in range(10)]
    sequences = [s or [1] for s in sequences]
    packs = tree_pack.plan_packs(sequences, [[len(s) - 1] for s in sequences], max_tokens=25, max_read_positions=99)
    positions = [p for pack in packs for p in pack.positions]
    ends, offset = [], 0
    for pack in packs:
        ends.extend(e + offset for e in pack.ends)
        offset += len(pack.tokens)
    seen = set()
    for queries, place, keys in invariant.attention_plan(positions, budget=64 * 3):
        for tile in range(queries.shape[0]):
            for column, query in enumerate(queries[tile]):
                if query == len(positions):
                    continue
                seen.add(int(query))
                ancestors = [j for j in range(query + 1) if query < ends[j]]  # the tree mask's rule
                assert [int(k) for k in keys[tile][:place[tile][column] + 1]] == ancestors
    assert seen == set(range(len(positions)))


def _scores(model, tokenizer, *, per_call, **options):
    scorer = CausalLMScorer(model, tokenizer, numerics="invariant", **options)
    out = []
    for start in range(0, len(PROMPTS), per_call):
        out.extend(scorer.score(PROMPTS[start:start + per_call], LABELS))
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_scores_are_the_same_bits_for_every_packing_and_call_size(pair, dtype):
    model, tokenizer = pair
    model = model.to(getattr(torch, dtype))
    try:
        reference = _scores(model, tokenizer, per_call=len(PROMPTS), packing="prefix")
        for packing, per_call in (("rows", 1), ("tree", 7), ("prefix", 5), ("rows", len(PROMPTS))):
            got = _scores(model, tokenizer, per_call=per_call, packing=packing)
            assert [i for i, (a, b) in enumerate(zip(reference, got)) if a != b] == [], (packing, per_call)
        budget = _scores(model, tokenizer, per_call=len(PROMPTS), packing="tree", token_budget=97)
        assert budget == reference
    finally:
        model.to(torch.float32)


def test_invariant_scores_agree_with_the_models_own_forward(pair):
    model, tokenizer = pair
    fast = CausalLMScorer(model, tokenizer, numerics="fast", share_prefixes=False)
    for scoring in ("last_token", "sequence"):
        fast.scoring = scoring
        mine = CausalLMScorer(model, tokenizer, numerics="invariant", scoring=scoring)
        a, b = fast.score(PROMPTS, LABELS), mine.score(PROMPTS, LABELS)
        assert max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) <= 1e-5
    states = CausalLMScorer(model, tokenizer, numerics="invariant").with_states(PROMPTS[:3], LABELS)
    own = fast.with_states(PROMPTS[:3], LABELS)
    for (_, hidden, full), (_, hidden_own, full_own) in zip(states, own):
        assert abs(hidden - hidden_own).max() <= 1e-4 and abs(full - full_own).max() <= 1e-4


def test_a_model_of_another_family_runs_fast_and_says_why():
    tokenizer = tiny_tokenizer(PROMPTS, vocab_size=300, bos=False)
    model = tiny_causal_lm("gpt2", vocab_size=len(tokenizer), hidden_size=32, layers=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer = CausalLMScorer(model, tokenizer, numerics="invariant")
    assert scorer.numerics == "fast" and "invariant numerics" in scorer.switched_off[0]
    assert any("gpt2" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="numerics must be one of"):
        CausalLMScorer(model, tokenizer, numerics="exact")


def test_the_hf_backend_runs_invariant_by_default_with_a_certificate_in_its_record(pair):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = pair
    backend = HFBackend(model, tokenizer, model_id="tiny")
    record = backend.numerics()
    assert backend.identity()["numerics"] == "invariant" and record["numerics"] == "invariant"
    certificate = record["certificate"]
    assert certificate["compositions_agree"] is True and len(certificate["sha256"]) == 64
    assert backend.scorer.stats.forward_calls == 0  # the canary is not the run's work
    again = HFBackend(model, tokenizer, model_id="tiny", packing="tree", requests_per_call=3).numerics()
    assert again["certificate"]["sha256"] == certificate["sha256"]  # another shape of work, the same bits
    fast = HFBackend(model, tokenizer, model_id="tiny", numerics="fast")
    assert fast.identity()["numerics"] == "fast" and fast.fingerprint() != backend.fingerprint()
    with pytest.raises(ValueError, match="numerics"):
        HFBackend(model, tokenizer, model_id="tiny", numerics="exact")


def test_invariant_records_compare_the_certificate_not_the_shape_of_the_work():
    from StaICC.backends.numerics import comparison_notes, numerics_conflicts
    first = {"backend": "hf", "device": "cpu (x)", "dtype": "float32", "numerics": "invariant", "packing": "tree",
             "threads": 2, "requests_per_call": 7, "certificate": {"sha256": "a" * 64}}
    assert numerics_conflicts(first, dict(first, packing="rows", threads=1, requests_per_call=64)) == []
    other = numerics_conflicts(first, dict(first, certificate={"sha256": "b" * 64}))
    assert [(c.field, c.refuse) for c in other] == [("certificate", True)] and "canary" in str(other[0])
    fast = numerics_conflicts(dict(first, numerics="fast"), dict(first, numerics="fast", packing="rows",
                                                                  certificate={"sha256": "b" * 64}))
    assert {c.field for c in fast} == {"packing", "certificate"} and not any(c.refuse for c in fast)
    run = {"model": {"identity": {"model": "m", "numerics": "fast"}},
           "numerics": {"answers": dict(first, numerics="fast"), "exact_sum": {}}}
    other_run = {"model": {"identity": {"model": "m", "numerics": "invariant"}}, "numerics": {"answers": first}}
    (line,) = comparison_notes(run, other_run, "a vs b", {"flipped": 3, "compared": 200, "largest": 0.0123})
    assert "3 of 200 predictions flipped" in line and "0.0123" in line and "last bits" not in line
    assert "not marked significant" in line
