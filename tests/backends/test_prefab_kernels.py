"""The HuggingFace kernels (spec §9.1–9.5) and the batched CausalLMScorer, on CPU.

Models are tiny, randomly initialised from configs and tokenizers are trained
locally (tests/prefab_helpers.py): nothing is downloaded.  The checks compare
the batched scorer with the one-prompt reference kernel, padding sides with
each other, and label scores with sums computed by hand from full logits.
"""
import functools
import sys
import types

import pytest

torch = pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install StaICC[hf])")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install StaICC[hf])")
pytest.importorskip("tokenizers", reason="the [hf] extra is not installed (pip install StaICC[hf])")

from prefab_helpers import corpus, tiny_model, tiny_tokenizer  # noqa: E402

from StaICC.prefabricate_inference import model_kernel as mk  # noqa: E402
from StaICC.prefabricate_inference.fast_kernel import CausalLMScorer  # noqa: E402
from StaICC.prefabricate_inference.standard_calibration import (  # noqa: E402
    batch_calibration, contextual_calibration, hidden_calibration, knn_prompting)

LABELS = ["negative", "positive"]
FAMILIES = [("llama", True), ("gpt2", False)]  # (model family, tokenizer adds BOS)


@pytest.fixture(scope="module", autouse=True)
def _deterministic_threads():
    torch.manual_seed(0)
    yield


def make_prompts(count=12, shots=2, offset=0):
    """Benchmark-style prompts of varied lengths: "review: … sentiment: label\\n" demonstrations + a query."""
    texts = corpus()
    prompts = []
    for i in range(count):
        demos = "".join(f"review: {texts[(offset + i * 7 + j) % len(texts)]} sentiment: {LABELS[(i + j) % 2]}\n"
                        for j in range(shots + i % 3))
        prompts.append(demos + f"review: {texts[offset + i]} sentiment: ")
    return prompts


def max_diff(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def argmaxes(rows):
    return [max(range(len(r)), key=r.__getitem__) for r in rows]


def manual_logprob(model, ids, start):
    """Σ log p(ids[t] | ids[:t]) for t ≥ start, from one unpadded full forward (float64 sum)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return sum(float(logp[t - 1, ids[t]]) for t in range(start, len(ids)))


# --------------------------------------------------------------------- the reference kernel
def test_uniform_template():
    assert mk.inference_standard_template("anything", ["a", "b", "c", "d"]) == [0.25] * 4
    with pytest.raises(ValueError, match="label_space"):
        mk.inference_standard_template("x", [])


@pytest.mark.parametrize("family,bos", FAMILIES)
def test_standard_kernel_matches_manual_softmax(family, bos):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    prompt = make_prompts(1)[0]
    probs, hidden, full = mk.standard_ICL_inference_with_torch_Causal_LM(
        prompt, model, tok, LABELS, return_hidden_state=True, return_full_vocab_prob=True)
    with torch.no_grad():
        out = model(**tok(prompt, return_tensors="pt"), output_hidden_states=True)
    ids = [tok(label)["input_ids"][-1] for label in LABELS]
    logits = out.logits[0, -1].float()
    expected = torch.softmax(logits[ids].double(), dim=0).tolist()
    assert probs == pytest.approx(expected, abs=1e-6)
    assert all(type(p) is float for p in probs)
    assert full.dtype.name == "float32" and full.shape == (model.config.vocab_size,)
    assert torch.allclose(torch.from_numpy(full), logits)
    assert torch.allclose(torch.from_numpy(hidden), out.hidden_states[-1][0, -1].float())
    # each flag alone gives a pair (the original crashed with both, §11.1.7)
    assert mk.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tok, LABELS, return_hidden_state=True)[0] == probs
    assert mk.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tok, LABELS, return_full_vocab_prob=True)[0] == probs


def test_standard_kernel_cache_empty_and_calibration():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    calls = []
    seen = {}

    def calibration(label_probs, full_vocab, hidden):
        seen.update(probs=label_probs, full=full_vocab.shape, hidden=hidden.shape)
        return [0.0, 1.0]

    prompt = make_prompts(1)[0]
    result = mk.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tok, LABELS, cache_empty=lambda: calls.append(1),
                                                            calibration_function=calibration)
    assert result == [0.0, 1.0] and calls == [1]
    assert seen["full"] == (model.config.vocab_size,) and seen["hidden"] == (model.config.hidden_size,)
    assert seen["probs"] == mk.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tok, LABELS)


def test_batched_kernel_applies_batch_calibration():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = make_prompts(3)
    plain = [mk.standard_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS) for p in prompts]
    assert mk.batched_ICL_inference_with_torch_Causal_LM(prompts, model, tok, LABELS) == plain
    calibrated = mk.batched_ICL_inference_with_torch_Causal_LM(prompts, model, tok, LABELS,
                                                               batch_calibration_function=batch_calibration)
    assert calibrated == batch_calibration(plain)
    with pytest.raises(ValueError, match="list of prompts"):
        mk.batched_ICL_inference_with_torch_Causal_LM("one prompt", model, tok, LABELS)


def test_api_call_kernel_and_gpt_helper(monkeypatch):
    assert mk.standard_ICL_inference_with_API_call(lambda p: "positive", "x", LABELS) == pytest.approx(
        [1 / (1 + 2.718281828459045), 2.718281828459045 / (1 + 2.718281828459045)])
    assert mk.standard_ICL_inference_with_API_call(lambda p: " positive", "x", LABELS) == [0.5, 0.5]
    requests = []

    class FakeClient:
        def __init__(self):
            self.completions = types.SimpleNamespace(create=self.create)

        def create(self, **kwargs):
            requests.append(kwargs)
            return types.SimpleNamespace(choices=[types.SimpleNamespace(text="positive")])

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=FakeClient))
    assert mk._GPT_API_call("a prompt") == "positive"
    assert requests == [{"model": "gpt-3.5-turbo-instruct", "prompt": "a prompt", "max_tokens": 1, "temperature": 0}]
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match="pip install openai"):
        mk._GPT_API_call("a prompt")


# --------------------------------------------------------------------- batched vs one at a time
@pytest.mark.parametrize("family,bos", FAMILIES)
@pytest.mark.parametrize("side", ["left", "right"])
def test_scorer_batched_matches_reference_kernel(family, bos, side):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    prompts = make_prompts(12)
    reference = [mk.standard_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS) for p in prompts]
    scorer = CausalLMScorer(model, tok, padding_side=side, token_budget=1500)
    batched = scorer(prompt=prompts, label_space=LABELS)
    assert max_diff(batched, reference) < 1e-4
    assert argmaxes(batched) == argmaxes(reference)
    assert all(type(p) is float for row in batched for p in row)
    single = scorer(prompt=prompts[5], label_space=LABELS)
    assert isinstance(single, list) and max_diff([single], [reference[5]]) < 1e-4


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_left_and_right_padding_agree(scoring):
    model, tok = tiny_model("gpt2"), tiny_tokenizer(False)
    prompts = make_prompts(10)
    labels = LABELS + ["very positive"]
    left = CausalLMScorer(model, tok, scoring=scoring, padding_side="left", token_budget=2000)(prompt=prompts, label_space=labels)
    right = CausalLMScorer(model, tok, scoring=scoring, padding_side="right", token_budget=2000)(prompt=prompts, label_space=labels)
    one_by_one = [CausalLMScorer(model, tok, scoring=scoring)(prompt=p, label_space=labels) for p in prompts]
    assert max_diff(left, right) < 1e-4 and max_diff(left, one_by_one) < 1e-4
    assert argmaxes(left) == argmaxes(right) == argmaxes(one_by_one)


def test_position_ids_matter_for_left_padding():
    """Without explicit position ids, a left-padded GPT-2 would shift its absolute positions."""
    model, tok = tiny_model("gpt2"), tiny_tokenizer(False)
    prompts = make_prompts(6)
    scorer = CausalLMScorer(model, tok, token_budget=5000)
    assert scorer._takes_position_ids
    reference = [mk.standard_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS) for p in prompts]
    assert max_diff(scorer(prompt=prompts, label_space=LABELS), reference) < 1e-4


# --------------------------------------------------------------------- scoring modes
def test_last_token_mode_scores_only_the_last_label_token():
    """§9.2: labels are tokenized alone and only their final token is read (kept for comparability)."""
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    labels = [" positive", "very positive"]  # both end with the token "Ġpositive"
    last_ids = [tok(label)["input_ids"][-1] for label in labels]
    assert last_ids[0] == last_ids[1] and len(tok("very positive")["input_ids"]) >= 3
    prompt = make_prompts(1)[0]
    with pytest.warns(UserWarning, match="share a last token"):
        probs = CausalLMScorer(model, tok)(prompt=prompt, label_space=labels)
    assert probs == [0.5, 0.5]
    assert probs == mk.standard_ICL_inference_with_torch_Causal_LM(prompt, model, tok, labels)


@pytest.mark.parametrize("family,bos", FAMILIES)
def test_sequence_mode_scores_every_label_token(family, bos):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    prompt = make_prompts(1)[0]
    labels = ["positive", "very positive", "negative sentiment"]
    scorer = CausalLMScorer(model, tok, scoring="sequence")
    scores = []
    for label in labels:
        split = scorer._split_joint(prompt, label)
        assert len(split.continuation) >= 1
        joint = tok(prompt + label)["input_ids"]
        assert split.context + split.continuation == joint
        scores.append(manual_logprob(model, joint, len(split.context)))
    assert len(scorer._split_joint(prompt, "very positive").continuation) >= 2
    expected = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0).tolist()
    assert scorer(prompt=prompt, label_space=labels) == pytest.approx(expected, abs=1e-5)
    # the last token matters: the same first words with different endings score differently
    two = scorer(prompt=prompt, label_space=["very positive", "very negative"])
    assert abs(two[0] - two[1]) > 1e-6


def test_label_merging_with_the_prompt_is_scored_not_dropped():
    """The prompt ends in a space; " positive" is one token, so the split moves the space into the label."""
    model, tok = tiny_model("gpt2"), tiny_tokenizer(False)
    prompt = make_prompts(1)[0]
    assert prompt.endswith(" ")
    alone = tok(prompt)["input_ids"]
    joint = tok(prompt + "positive")["input_ids"]
    assert joint[:len(alone)] != alone  # the trailing space merged with the label
    scorer = CausalLMScorer(model, tok, scoring="first_token")
    split = scorer._split_joint(prompt, "positive")
    assert split.context == alone[:-1] and split.continuation == joint[len(alone) - 1:]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([split.context])).logits[0, -1].float()
    first_ids = [scorer._split_joint(prompt, label).continuation[0] for label in LABELS]
    expected = torch.softmax(logits[first_ids].double(), dim=0).tolist()
    assert scorer(prompt=prompt, label_space=LABELS) == pytest.approx(expected, abs=1e-5)


def test_unscorable_labels_fail_clearly():
    scorer = CausalLMScorer(tiny_model("gpt2"), tiny_tokenizer(False), scoring="sequence")
    with pytest.raises(ValueError, match="empty label"):
        scorer(prompt="review: good . sentiment: ", label_space=["", "positive"])
    with pytest.raises(ValueError, match="label_space"):
        scorer(prompt="x", label_space=None)
    with pytest.raises(ValueError, match="scoring"):
        CausalLMScorer(tiny_model("gpt2"), tiny_tokenizer(False), scoring="mean")


# --------------------------------------------------------------------- noisy channel
@pytest.mark.parametrize("family,bos", FAMILIES)
def test_noisy_channel_batched_matches_reference(family, bos):
    model, tok = tiny_model(family), tiny_tokenizer(bos)
    texts = corpus()
    queries = [[f"sentiment: {label} review: {texts[i]}\n" for label in LABELS] for i in range(8)]
    reference = [mk.noisy_channel_ICL_inference_with_torch_Causal_LM(q, model, tok, LABELS) for q in queries]
    scorer = CausalLMScorer(model, tok, token_budget=600)
    batched = scorer(prompt=queries, label_space=LABELS)
    assert max_diff(batched, reference) < 1e-4 and argmaxes(batched) == argmaxes(reference)
    per_query = CausalLMScorer(model, tok, noisy_channel=True)(prompt=queries[3], label_space=LABELS)
    assert max_diff([per_query], [reference[3]]) < 1e-4
    with pytest.raises(ValueError, match="one prompt per label"):
        scorer(prompt=[queries[0][:1]], label_space=LABELS)


# --------------------------------------------------------------------- engine behaviour
class ForwardSpy:
    """Wraps model.forward to record the batch shapes and the logits kept."""

    def __init__(self, model, fail_above=None):
        self.model, self.original, self.fail_above, self.calls = model, model.forward, fail_above, []

    def __enter__(self):
        def forward(*args, **kwargs):
            rows = kwargs["input_ids"].shape[0]
            if self.fail_above is not None and rows > self.fail_above:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
            out = self.original(*args, **kwargs)
            self.calls.append((tuple(kwargs["input_ids"].shape), tuple(out.logits.shape)))
            return out
        self.model.forward = forward
        return self

    def __exit__(self, *exc):
        del self.model.forward


def test_batches_follow_budget_sorting_and_keep_only_last_logits():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = make_prompts(12)
    scorer = CausalLMScorer(model, tok, token_budget=1200, batch_size=4)
    with ForwardSpy(model) as spy:
        scorer(prompt=prompts, label_space=LABELS)
    lengths = sorted((len(ids) for ids in tok(prompts)["input_ids"]), reverse=True)
    assert sum(shape[0] for shape, _ in spy.calls) == 12
    assert all(shape[0] <= 4 and shape[0] * shape[1] <= 1200 for shape, _ in spy.calls)
    assert [shape[1] for shape, _ in spy.calls] == sorted((shape[1] for shape, _ in spy.calls), reverse=True)
    assert spy.calls[0][0][1] == lengths[0]
    assert all(logits[1] == 1 for _, logits in spy.calls)  # only the last position's logits


def test_out_of_memory_halves_the_batch_and_still_agrees():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = make_prompts(8)
    expected = CausalLMScorer(model, tok)(prompt=prompts, label_space=LABELS)
    scorer = CausalLMScorer(model, tok, token_budget=100000)
    with ForwardSpy(model, fail_above=2) as spy, pytest.warns(UserWarning, match="out of memory"):
        result = scorer(prompt=prompts, label_space=LABELS)
    assert max_diff(result, expected) < 1e-5
    assert all(shape[0] <= 2 for shape, _ in spy.calls)
    with ForwardSpy(model, fail_above=0), pytest.raises(torch.OutOfMemoryError):
        CausalLMScorer(model, tok)(prompt=prompts[:1], label_space=LABELS)


# --------------------------------------------------------------------- states and calibrations
def test_states_match_the_reference_kernel():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    prompts = make_prompts(4)
    states = CausalLMScorer(model, tok).with_states(prompts, LABELS)
    for prompt, (probs, hidden, full) in zip(prompts, states):
        ref_probs, ref_hidden, ref_full = mk.standard_ICL_inference_with_torch_Causal_LM(
            prompt, model, tok, LABELS, return_hidden_state=True, return_full_vocab_prob=True)
        assert max_diff([probs], [ref_probs]) < 1e-4
        assert abs(hidden - ref_hidden).max() < 1e-4 and abs(full - ref_full).max() < 1e-3
        assert hidden.dtype.name == "float32" and full.dtype.name == "float32"


def test_calibrated_scorer_matches_kernel_with_calibration():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    calib_rows = [([t], LABELS[i % 2]) for i, t in enumerate(corpus()[:40])]

    def maker(demos, query):
        return "".join(f"review: {x[0]} sentiment: {y}\n" for x, y in demos) + f"review: {query[0]} sentiment: "

    scorer = CausalLMScorer(model, tok)
    prompts = make_prompts(5, offset=50)
    for calibration, feedforward in ((contextual_calibration(LABELS), scorer),
                                     (hidden_calibration(LABELS), scorer.feedforward_with_hidden_state),
                                     (knn_prompting(LABELS), scorer.feedforward_with_full_vocab)):
        calibration.train(maker, feedforward, calib_rows, calibration_number=8, k=1)
        fast = scorer.calibrated(calibration.inference)(prompt=prompts, label_space=LABELS)
        slow = [mk.standard_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS, calibration_function=calibration.inference)
                for p in prompts]
        assert max_diff(fast, slow) < 1e-3, type(calibration).__name__


# --------------------------------------------------------------------- end to end through the public API
from StaICC import Normal  # noqa: E402
from StaICC.prefabricate_inference.prompt_template_edit import PPL_ICL, SA_ICL  # noqa: E402


def _metrics_close(a, b, tol):
    assert a.keys() == b.keys()
    for name in a:
        assert abs(a[name] - b[name]) <= tol, (name, a[name], b[name])


def test_full_normal_run_on_two_datasets_matches_the_one_prompt_kernel():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    datasets = ["GLUE-SST2", "rotten_tomatoes"]
    fast = Normal(k=1, datasets=datasets)(CausalLMScorer(model, tok), batched_inference=True)
    slow_inference = functools.partial(mk.standard_ICL_inference_with_torch_Causal_LM, model=model, tokenizer=tok)
    slow = Normal(k=1, datasets=datasets)(slow_inference)
    assert list(fast["Divided results"]) == datasets
    for name in datasets:
        result = fast["Divided results"][name]
        assert set(result) == {"accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1"}
        assert 0 <= result["accuracy"] <= 1
        _metrics_close(result, slow["Divided results"][name], 1e-4)
        assert result["accuracy"] == slow["Divided results"][name]["accuracy"]  # identical argmaxes
    _metrics_close(fast["Averaged results"], slow["Averaged results"], 1e-4)


def test_noisy_channel_normal_run():
    model, tok = tiny_model("gpt2"), tiny_tokenizer(False)
    bench = Normal(k=0, noisy_channel=True, datasets=["rotten_tomatoes"])  # zero-shot keeps it fast
    prompts = bench[0].prompt_set()
    assert isinstance(prompts[0], list) and len(prompts[0]) == 2
    reference = [mk.noisy_channel_ICL_inference_with_torch_Causal_LM(p, model, tok, LABELS) for p in prompts[:4]]
    scorer = CausalLMScorer(model, tok)
    assert max_diff(scorer(prompt=prompts[:4], label_space=LABELS), reference) < 1e-4
    result = bench(scorer, batched_inference=True)["Divided results"]["rotten_tomatoes"]
    assert 0 <= result["accuracy"] <= 1


@pytest.mark.filterwarnings("ignore::StaICC.errors.TamperingWarning")  # changing the instruction is the point
def test_ppl_icl_picks_the_lowest_loss_instruction():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    experimentor = Normal(k=1, datasets=["GLUE-SST2"])[0]
    with pytest.raises(ValueError, match="instruction_set"):
        PPL_ICL(model, tok)
    instructions = ["Classify the sentiment. ", "Is this review positive or negative? ", "Label: "]
    losses = []
    for instruction in instructions:
        ids = tok(instruction, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            losses.append(float(model(input_ids=ids, labels=ids).loss))
    assert PPL_ICL(model, tok, instruction_set=instructions) == instructions[losses.index(min(losses))]
    emptied = []
    chosen = PPL_ICL(model, tok, experimentor=experimentor, cache_empty=lambda: emptied.append(1))
    from StaICC.datasets import dataset_constants
    assert chosen in dataset_constants("GLUE-SST2")["ppl_icl_instructions"] and len(emptied) == 5
    assert experimentor.prompt_set()[0].startswith(chosen)


@pytest.mark.filterwarnings("ignore::StaICC.errors.TamperingWarning")  # SA-ICL installs its own sampler
def test_sa_icl_topk_and_entropy_selection():
    model, tok = tiny_model("llama"), tiny_tokenizer(True)
    experimentor = Normal(k=2, datasets=["rotten_tomatoes"])[0]
    demonstrations_before = len(experimentor.demonstration_set())
    scorer = CausalLMScorer(model, tok)
    sa = SA_ICL(model, tok, experimentor, demonstration_set_cut=24, scorer=scorer)
    assert len(experimentor.demonstration_set()) == demonstrations_before  # not truncated in place
    assert sa.anchors.shape == (24, model.config.hidden_size)
    # the one-prompt kernel path encodes the same anchors
    slow = SA_ICL(model, tok, Normal(k=2, datasets=["rotten_tomatoes"])[0], demonstration_set_cut=24)
    assert abs(slow.anchors - sa.anchors).max() < 1e-4
    query = experimentor.test_set()[0][0]
    top = sa.topk(query, 5)
    assert top == slow.topk(query, 5) and len(set(top)) == 5 and all(0 <= i < 24 for i in top)
    # entropy selection returns one candidate's prediction, the same on both paths
    fast_choice, slow_choice = sa._inference(0), slow._inference(0)
    assert max_diff([fast_choice], [slow_choice]) < 1e-4
    # run through the experimentor (batched, one prediction per test item); fewer, shorter candidates for speed
    small = functools.partial(sa.inference_interface, nearest_k=3, inference_demos_number=1, return_length=3)
    result, success, outputs = experimentor.auto_run(forward_inference=small, batched_inference=True,
                                                     return_outputs=True)
    direct = small(prompt=[""] * 512, label_space=LABELS)
    assert success is True and len(outputs["prob."]) == 512  # R = 1: one query per test item
    assert max_diff(outputs["prob."], direct) < 1e-5
    assert max_diff([direct[7]], [sa._inference(7, 3, 1, 3)]) < 1e-5
    assert_accuracy_of(result, direct, experimentor)
    with pytest.raises(ValueError, match="one prompt per test item"):
        sa.inference_interface(["p"] * 3, LABELS)
    # TopK demonstrations: sampler row i holds test item i's nearest demonstrations
    sa.set_TopK_to_demonstration(2)
    assert len(experimentor.prompt_set()) == len(experimentor.test_set())
    result, success, outputs = experimentor.auto_run(forward_inference=scorer, batched_inference=True,
                                                     return_outputs=True)
    prompts = experimentor.prompt_set()
    assert success is True and max_diff(outputs["prob."][:6], scorer(prompt=prompts[:6], label_space=LABELS)) < 1e-5
    assert_accuracy_of(result, outputs["prob."], experimentor)


def assert_accuracy_of(result, rows, experimentor):
    """The run's accuracy equals the share of rows whose argmax is the query's true label, counted here."""
    truth = [experimentor.get_label_space().index(label) for _, label in experimentor.test_set()]
    hits = sum(1 for predicted, label in zip(argmaxes(rows), truth) if predicted == label)
    assert len(rows) == len(truth) and result["accuracy"] == pytest.approx(hits / len(truth), abs=1e-12)


class NoOffsetsTokenizer:
    """A tokenizer without offset mappings (like HuggingFace's slow, pure-Python tokenizers)."""

    is_fast = False

    def __init__(self, inner):
        self.inner = inner
        self.all_special_ids = inner.all_special_ids
        self.pad_token_id = inner.pad_token_id

    def __call__(self, text, **kwargs):
        if "return_offsets_mapping" in kwargs:
            raise NotImplementedError("offsets are not available")
        return self.inner(text, **kwargs)


@pytest.mark.parametrize("bos", [True, False])
def test_tokenizer_without_offsets_uses_the_common_prefix_fallback(bos):
    fast = tiny_tokenizer(bos)
    slow = NoOffsetsTokenizer(fast)
    model = tiny_model("llama" if bos else "gpt2")
    prompts = make_prompts(3)
    labels = ["positive", "very positive", "negative"]
    fast_scorer = CausalLMScorer(model, fast, scoring="sequence")
    slow_scorer = CausalLMScorer(model, slow, scoring="sequence")
    for prompt in prompts:
        for label in labels:
            assert slow_scorer._split_joint(prompt, label) == fast_scorer._split_joint(prompt, label)
    assert slow_scorer(prompt=prompts, label_space=labels) == fast_scorer(prompt=prompts, label_space=labels)
