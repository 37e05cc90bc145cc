"""Label-word anchor re-weighting: the attention hook against attention computed by hand, the first-order fit
against SciPy and on a model with a known re-weighting, the method against the hand-wired route, bit for bit."""
import copy

import pytest

np = pytest.importorskip("numpy", reason="the calibrations need numpy (pip install \"StaICC[methods]\")")
torch = pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")

from backend_helpers import tiny_pair  # noqa: E402

from StaICC.backends.hf_anchors import anchor_answer, anchor_positions, reweighted_log_probs, reweighting  # noqa: E402
from StaICC.methods.calibration.anchors import anchor_reweighting, fit_offset_softmax  # noqa: E402

PROMPT = "Review: good film\nSentiment: positive\nReview: bad plot\nSentiment: negative\nReview: fine\nSentiment:"
LABELS = ("positive", "negative")


@pytest.fixture(scope="module")
def pair():
    model, tokenizer = tiny_pair("llama")
    return copy.deepcopy(model).double(), tokenizer  # a copy: the cached model is shared with later tests


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def _by_hand(attention, x, cos, sin, beta, positions):
    """One Llama attention layer computed from its weights: causal softmax attention, the last row's weights on
    each class's anchors times exp(β[h, c]), then the output projection."""
    heads, kv = attention.config.num_attention_heads, attention.config.num_key_value_heads
    size, length = attention.head_dim, x.shape[1]
    q = attention.q_proj(x).view(1, length, heads, size).transpose(1, 2)
    k = attention.k_proj(x).view(1, length, kv, size).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
    v = attention.v_proj(x).view(1, length, kv, size).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
    q, k = _rotate(q, cos[:, None], sin[:, None]), _rotate(k, cos[:, None], sin[:, None])
    scores = q @ k.transpose(2, 3) / size ** 0.5
    scores = scores.masked_fill(torch.ones(length, length, dtype=torch.bool).triu(1), float("-inf"))
    weights = scores.softmax(dim=-1)
    for c, anchors in enumerate(positions):
        for p in anchors:
            weights[0, :, -1, p] = weights[0, :, -1, p] * torch.exp(beta[:, c])
    return attention.o_proj((weights @ v).transpose(1, 2).reshape(1, length, heads * size))


def test_the_hook_reweights_the_attention_on_the_anchors_as_computed_by_hand(pair):
    model, tokenizer = pair
    positions = anchor_positions(tokenizer, PROMPT, LABELS)
    ids = tokenizer(PROMPT)["input_ids"]
    assert [len(p) for p in positions] == [1, 1] and all(tokenizer.decode([ids[p[0]]]).strip() in LABELS[c]
                                                         for c, p in enumerate(positions))
    beta = torch.tensor(np.random.default_rng(0).normal(0, 0.7, (2, model.config.num_attention_heads, 2)))
    seen = []
    for layer in model.model.layers:
        layer.self_attn.register_forward_hook(lambda m, args, kwargs, out: seen.append((m, kwargs, out[0])),
                                              with_kwargs=True)
    try:
        with torch.no_grad(), reweighting(model, beta, positions):
            model(input_ids=torch.tensor([ids]))
    finally:
        for layer in model.model.layers:
            layer.self_attn._forward_hooks.clear()
    assert model.config._attn_implementation != "staicc_anchors"  # restored
    for number, (attention, kwargs, output) in enumerate(seen):
        cos, sin = kwargs["position_embeddings"]
        with torch.no_grad():
            expected = _by_hand(attention, kwargs["hidden_states"], cos, sin, beta[number], positions)
        assert float((output - expected).abs().max()) < 1e-12, float((output - expected).abs().max())
        assert not torch.allclose(output[0, -1], _by_hand(attention, kwargs["hidden_states"], cos, sin,
                                                          beta[number] * 0, positions)[0, -1])  # β did something


def test_the_anchors_answer_is_the_plain_forward_and_its_derivatives(pair):
    """log q at β = 0 is the model's own last-position label log-softmax; J matches central differences of the
    exactly re-weighted forward (a step of 1e-3: the model's rotary tables are float32, so smaller steps see
    their rounding)."""
    model, tokenizer = pair
    from StaICC.backends.kernels import label_token_ids
    answer = anchor_answer(model, tokenizer, PROMPT, LABELS)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tokenizer(PROMPT)["input_ids"]])).logits[0, -1]
        plain = torch.log_softmax(logits[label_token_ids(tokenizer, list(LABELS))], 0).numpy()
    assert np.allclose(answer[:2], plain, atol=1e-6)
    shape = (model.config.num_hidden_layers, model.config.num_attention_heads, 2)
    jacobian = answer[2:].reshape(2, -1)
    for index in [(0, 0, 0), (1, 3, 1), (1, 1, 0)]:
        step = torch.zeros(shape, dtype=torch.float64)
        step[index] = 1e-3
        with torch.no_grad():
            up = reweighted_log_probs(model, tokenizer, PROMPT, LABELS, step)
            down = reweighted_log_probs(model, tokenizer, PROMPT, LABELS, -step)
        assert np.allclose(((up - down) / 2e-3).numpy(), jacobian[:, np.ravel_multi_index(index, shape)],
                           rtol=1e-2, atol=1e-5)


def _objective(beta, offset, jacobian, labels, l2):
    logits = offset + jacobian @ beta
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    return (lse - logits[np.arange(len(labels)), labels]).mean() + l2 * beta @ beta


def test_the_fit_is_scipys_minimum_of_the_same_objective():
    scipy = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(1)
    offset, jacobian = np.log(rng.dirichlet(np.ones(3), 40)), rng.normal(0, 0.5, (40, 3, 6))
    labels = rng.integers(0, 3, 40)
    beta = fit_offset_softmax(offset, jacobian, labels, 1e-3)
    reference = scipy.minimize(_objective, np.zeros(6), args=(offset, jacobian, labels, 1e-3), method="BFGS",
                               options={"gtol": 1e-10}).x
    assert np.allclose(beta, reference, atol=1e-5)


def test_a_known_reweighting_is_recovered():
    """A model whose label log-probabilities are log q0 + J β* (β*: a re-weighting that favours the true class):
    fitted on 4,000 labelled prompts drawn from it, β comes back within 0.15 and the accuracy rises to the truth's."""
    rng = np.random.default_rng(2)
    n, labels, parameters = 4000, 2, 8
    truth = rng.normal(0, 1.0, parameters)
    offset = np.log(rng.dirichlet(np.ones(labels), n))
    jacobian = rng.normal(0, 1.0, (n, labels, parameters))
    logits = offset + jacobian @ truth
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    y = (rng.random(n) < probs[:, 1]).astype(int)
    vectors = np.concatenate([offset, jacobian.reshape(n, -1)], axis=1).astype(np.float32)
    calibration = anchor_reweighting(["a", "b"], l2=0.0)
    calibration.fit(list(vectors), y.tolist())
    assert np.abs(calibration.beta - truth).max() < 0.15
    calibrated = np.asarray(calibration.transform_rows(list(vectors)))
    assert (calibrated.argmax(1) == y).mean() > (offset.argmax(1) == y).mean() + 0.1


def test_a_malformed_answer_is_one_line():
    calibration = anchor_reweighting(["a", "b"])
    with pytest.raises(ValueError, match="answer 1 has 5 values"):
        calibration.fit([[0.0] * 10, [0.0] * 5], [0, 1])


def test_the_method_equals_the_hand_wired_route_bit_for_bit():
    from method_routes import CALIBRATION_NUMBER, LIMIT, backend, hand_wired

    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.builtin import built_in
    from StaICC.methods.run import run_methods
    datasets = ("TREC", "rotten_tomatoes", "SST5")
    result = run_methods(backend(), [built_in("anchors", calibration_number=CALIBRATION_NUMBER)], "Normal",
                         list(datasets), test_items=QuerySubset.first(LIMIT))
    expected = hand_wired("Normal", ("anchors",))["anchors"]
    for dataset in datasets:
        summary, rows = expected[dataset]
        assert result["anchors"]["Normal"]["Divided results"][dataset] == summary
        got = [r["prediction"] for r in result["anchors"]["Normal"].records if r["dataset"] == dataset]
        plain = [r["prediction"] for r in result["vanilla"]["Normal"].records if r["dataset"] == dataset]
        assert got == [list(row) for row in rows] and got != plain
