"""Prefix sharing: the shared computation equals the unshared one, and really shares.

The prefix tree is tested in pure Python (every read computed exactly once, in a
row whose tokens up to the read equal the sequence's); the engine is tested with
tiny random HF models (argmax identical, |Δp| <= 1e-5 in float32).
"""
import random

import pytest

from StaICC.backends.prefix_tree import build, count_tokens, plan

UNSHARED = {"overhead_tokens": 0, "min_saved_fraction": 0.0, "max_depth": 0}
ALWAYS = {"overhead_tokens": 0, "min_saved_fraction": 0.0, "max_depth": 6}


def _reads_once_in_context(sequences, positions, nodes):
    """Walk the plan: each read exactly once, at a position whose prefix equals the sequence's."""
    seen = {}
    stack = [(node, []) for node in nodes]
    while stack:
        node, prefix = stack.pop()
        assert node.tokens, "a node computes at least one token"
        full = prefix + node.tokens
        for local, i, r in node.reads:
            at = len(prefix) + local
            assert at == positions[i][r]
            assert full[:at + 1] == list(sequences[i][:at + 1])
            seen[(i, r)] = seen.get((i, r), 0) + 1
        stack.extend((child, full) for child in node.children)
    assert seen == {(i, r): 1 for i in range(len(sequences)) for r in range(len(positions[i]))}


@pytest.mark.parametrize("seed", range(40))
def test_plans_read_everything_once_in_the_right_context(seed):
    rng = random.Random(seed)
    base = [rng.randrange(4) for _ in range(rng.randint(1, 10))]
    sequences = []
    for _ in range(rng.randint(1, 14)):
        cut = rng.randint(0, len(base))
        sequences.append(base[:cut] + [rng.randrange(4) for _ in range(rng.randint(0 if cut else 1, 6))])
    positions = [sorted(rng.sample(range(len(s)), rng.randint(0, len(s)))) for s in sequences]
    for settings in (UNSHARED, ALWAYS, {"overhead_tokens": 3, "min_saved_fraction": 0.2, "max_depth": 2}):
        nodes = plan(build(sequences, positions), **settings)
        _reads_once_in_context(sequences, positions, nodes)
        if settings is UNSHARED:
            assert all(not node.children for node in nodes)
            assert len(nodes) <= len({tuple(s) for s in sequences})


def test_cost_model_shares_long_prefixes_and_skips_short_ones():
    demos = list(range(100, 200))  # 100 shared tokens
    sequences = [demos + [i, i + 1] for i in range(8)]
    positions = [[len(s) - 1] for s in sequences]
    nodes = plan(build(sequences, positions), overhead_tokens=64, min_saved_fraction=0.05, max_depth=6)
    assert len(nodes) == 1 and len(nodes[0].tokens) == 100 and len(nodes[0].children) == 8
    assert count_tokens(nodes) == 100 + 8 * 2
    # three shared tokens (a BOS and a template word) save less than one forward call costs
    short = [[1, 2, 3] + [50 + i] * 20 for i in range(8)]
    nodes = plan(build(short, [[22]] * 8), overhead_tokens=64, min_saved_fraction=0.05, max_depth=6)
    assert len(nodes) == 8 and all(len(node.tokens) == 23 for node in nodes)


def test_identical_and_nested_sequences_are_computed_once():
    sequences = [[5, 6, 7], [5, 6, 7], [5, 6, 7, 8]]
    positions = [[2], [1], [3]]
    nodes = plan(build(sequences, positions), **UNSHARED)
    assert [node.tokens for node in nodes] == [[5, 6, 7, 8]]
    _reads_once_in_context(sequences, positions, nodes)


def test_empty_sequence_and_bad_read_fail_clearly():
    with pytest.raises(ValueError, match="sequence 1 is empty"):
        build([[1], []], [[0], []])
    with pytest.raises(ValueError, match="outside sequence 0"):
        build([[1, 2]], [[2]])


# ------------------------------------------------------------------- with a model
torch = pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install StaICC[hf])")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install StaICC[hf])")

from prefab_helpers import (FAMILIES, LABELS, compare, corpus, shared_demo_prompts, tiny_model,  # noqa: E402
                           tiny_tokenizer)

from StaICC.backends.causal_lm import CausalLMScorer  # noqa: E402
from StaICC.backends.kv_cache import CACHE_ARGUMENTS  # noqa: E402
from StaICC.backends.kernels import standard_ICL_inference_with_torch_Causal_LM  # noqa: E402



@pytest.mark.parametrize("family,bos", FAMILIES)
@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_shared_equals_unshared(family, bos, scoring):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    prompts = shared_demo_prompts()
    unshared = CausalLMScorer(model, tok, scoring=scoring, share_prefixes=False)
    shared = CausalLMScorer(model, tok, scoring=scoring, share_prefixes=True, token_budget=900)
    a, b = unshared(prompt=prompts, label_space=LABELS), shared(prompt=prompts, label_space=LABELS)
    assert compare(a, b) <= 1e-5
    assert shared.stats.tokens_computed < 0.6 * shared.stats.tokens_requested
    assert unshared.stats.tokens_computed >= unshared.stats.tokens_requested / len(LABELS)
    assert shared.largest_batch >= 1 and shared.stats.largest_batch_tokens <= 900
    if scoring == "last_token":  # the standard's numbers: compare with the one-prompt kernel too
        reference = [standard_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS) for p in prompts]
        assert compare(b, reference) <= 1e-5


def test_sequence_mode_computes_each_prompt_once():
    """Auto mode: the label continuations read from one computation of their prompt."""
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(4, 1)
    scorer = CausalLMScorer(model, tok, scoring="sequence")
    scorer(prompt=prompts, label_space=LABELS)
    prompt_tokens = sum(len(ids) for ids in tok(prompts)["input_ids"])
    assert scorer.stats.tokens_computed < prompt_tokens + 4 * len(LABELS) * 4
    assert scorer.stats.tokens_requested > 2.5 * prompt_tokens  # one row per (prompt, label) unshared


@pytest.mark.parametrize("family,bos", FAMILIES)
def test_noisy_channel_shared_equals_unshared(family, bos):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    texts = corpus()
    demos = "".join(f"sentiment: {LABELS[j % 2]} review: {texts[30 + j]}\n" for j in range(3))
    queries = [[demos + f"sentiment: {label} review: {texts[i]}\n" for label in LABELS] for i in range(5)]
    a = CausalLMScorer(model, tok, share_prefixes=False)(prompt=queries, label_space=LABELS)
    shared = CausalLMScorer(model, tok, share_prefixes="auto")
    b = shared(prompt=queries, label_space=LABELS)
    assert compare(a, b) <= 1e-5
    assert shared.stats.tokens_computed < 0.5 * shared.stats.tokens_requested


def test_states_with_shared_prefixes_match_the_kernel():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(3, 3)
    scorer = CausalLMScorer(model, tok, share_prefixes=True)
    for prompt, (probs, hidden, full) in zip(prompts, scorer.with_states(prompts, LABELS)):
        ref_probs, ref_hidden, ref_full = standard_ICL_inference_with_torch_Causal_LM(
            prompt, model, tok, LABELS, return_hidden_state=True, return_full_vocab_prob=True)
        assert compare([probs], [ref_probs]) <= 1e-5
        assert abs(hidden - ref_hidden).max() < 1e-4 and abs(full - ref_full).max() < 1e-3


def test_out_of_memory_in_a_child_level_halves_and_agrees():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = shared_demo_prompts(6, 6)
    expected = CausalLMScorer(model, tok, scoring="sequence", share_prefixes=False)(prompt=prompts, label_space=LABELS)
    scorer = CausalLMScorer(model, tok, scoring="sequence", share_prefixes=True)  # reads the forward's signature
    original = model.forward

    def forward(*args, **kwargs):
        if any(name in kwargs for name in CACHE_ARGUMENTS) and kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(*args, **kwargs)

    model.forward = forward
    try:
        with pytest.warns(UserWarning, match="out of memory"):
            result = scorer(prompt=prompts, label_space=LABELS)
    finally:
        del model.forward
    assert compare(result, expected) <= 1e-5
    assert scorer.batch_size <= 2


def test_bad_options_fail_clearly():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    with pytest.raises(ValueError, match="share_prefixes"):
        CausalLMScorer(model, tok, share_prefixes="yes")
    with pytest.raises(TypeError, match="token_budget"):
        CausalLMScorer(model, tok, token_budget=True)


def test_old_and_new_import_paths_are_the_same_objects():
    from StaICC.prefabricate_inference import CausalLMScorer as lazy
    from StaICC.prefabricate_inference import fast_kernel, model_kernel, standard_calibration
    import StaICC.backends.kernels as kernels
    import StaICC.methods.calibration as calibration

    assert fast_kernel.CausalLMScorer is CausalLMScorer is lazy
    assert model_kernel.standard_ICL_inference_with_torch_Causal_LM is kernels.standard_ICL_inference_with_torch_Causal_LM
    assert model_kernel._GPT_API_call is kernels._GPT_API_call
    assert standard_calibration.knn_prompting is calibration.knn_prompting


def test_prefix_sharing_is_on_with_this_transformers_and_off_with_a_line_when_the_model_cannot_take_it():
    """With the installed transformers (5.23: ``past_key_values``; 5.24: ``cache``) the engine finds the
    KV-cache argument and shares prefixes; a forward that takes neither name gets one warning line saying
    why, recorded in ``switched_off`` and in the hf backend's numerics, and the same numbers."""
    import inspect
    import warnings

    from StaICC.backends.hf import HFBackend
    from StaICC.errors import StaICCWarning
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaICCWarning)  # nothing is switched off for a real Llama
        scorer = CausalLMScorer(model, tok, share_prefixes=True)
    assert scorer._can_share and scorer.switched_off == []
    assert scorer._cache_argument in CACHE_ARGUMENTS and scorer._cache_argument in inspect.signature(model.forward).parameters
    prompts = shared_demo_prompts()
    expected = scorer(prompt=prompts, label_space=LABELS)
    assert scorer.stats.tokens_computed < scorer.stats.tokens_requested

    original = model.forward
    parameters = [p for name, p in inspect.signature(original).parameters.items() if name not in CACHE_ARGUMENTS]

    def forward(*args, **kwargs):
        return original(*args, **kwargs)

    forward.__signature__ = inspect.Signature(parameters)
    model.forward = forward
    try:
        with pytest.warns(StaICCWarning, match=r"prefix sharing: LlamaForCausalLM.forward takes no KV cache argument "
                                               r"\(looked for past_key_values or cache\)") as caught:
            backend = HFBackend(model, tok, packing="prefix", numerics="fast")  # the library forward's KV cache
        assert len(caught) == 1
        got = backend.scorer(prompt=prompts, label_space=LABELS)
        assert backend.scorer.stats.tokens_computed == backend.scorer.stats.tokens_requested
        numerics = backend.numerics()
        assert numerics["switched_off"] == [backend.scorer.switched_off[0]] and numerics["packing"] == "prefix"
        backend.close()
        assert backend.numerics()["switched_off"] == numerics["switched_off"]  # kept for provenance after close
    finally:
        del model.forward
    assert compare(expected, got) <= 1e-5
