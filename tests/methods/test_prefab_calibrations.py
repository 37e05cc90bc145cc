"""Calibrations (spec §9.6–9.9) against hand-computed values, with fake feedforwards.

No model is needed: the feedforwards return fixed vectors chosen per prompt,
so every expected number below is worked out from the formulas by hand.
"""
import math
import subprocess
import sys
import types
import warnings

import pytest

np = pytest.importorskip("numpy", reason="the StaICC[hf] calibrations need numpy (pip install StaICC[hf])")

from StaICC.prefabricate_inference.standard_calibration import (  # noqa: E402
    MISSING_CATEGORY_WARNING, batch_calibration, contextual_calibration, domain_calibration, hidden_calibration,
    knn_prompt_centroid, knn_prompting)
from StaICC.rng import fresh_stream  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

LABELS = ["negative", "positive"]


def softmax(values):
    peak = max(values)
    exps = [math.exp(v - peak) for v in values]
    total = 0.0
    for e in exps:
        total += e
    return [e / total for e in exps]


class FakeSet:
    """A calibration set: rows (inputs, label text); labels alternate by row parity."""

    def __init__(self, size=10):
        self.rows = [([f"text {i}"], LABELS[i % 2]) for i in range(size)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]

    def get_label_space(self):
        return list(LABELS)


def prompt_maker(demos, query):
    """A prompt that records which rows and which query were used."""
    return "|".join(inputs[0] + "=" + label for inputs, label in demos) + "#" + " ".join(query)


def query_row(prompt):
    """The calibration row index a prompt_maker prompt was asked about."""
    return int(prompt.split("#")[1].split()[-1])


# ----------------------------------------------------------------- the optional extra
def test_importing_the_prefab_modules_does_not_import_torch():
    code = ("import sys, StaICC, StaICC.prefabricate_inference as p; "
            "from StaICC.prefabricate_inference import model_kernel, fast_kernel, standard_calibration, "
            "prompt_template_edit; assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    repository = str(REPO_ROOT)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repository)


def test_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" fail
    from StaICC.prefabricate_inference.fast_kernel import CausalLMScorer
    from StaICC.prefabricate_inference.model_kernel import standard_ICL_inference_with_torch_Causal_LM
    with pytest.raises(ImportError, match=r'CausalLMScorer.*pip install "StaICC\[hf\]"'):
        CausalLMScorer(object(), object())
    with pytest.raises(ImportError, match=r'pip install "StaICC\[hf\]"'):
        standard_ICL_inference_with_torch_Causal_LM("p", object(), object(), LABELS)


# ----------------------------------------------------------------- contextual / domain
def test_contextual_calibration_matches_hand_computation():
    seen = []

    def feedforward(prompt, label_space):
        assert label_space == LABELS
        seen.append(prompt)
        return [0.2, 0.8] if len(seen) % 2 else [0.4, 0.6]

    calibration = contextual_calibration(LABELS)
    calibration.train(prompt_maker, feedforward, FakeSet(), calibration_number=4, k=2)
    expected_a = [(1e-5 + 0.2 + 0.4 + 0.2 + 0.4) / 4, (1e-5 + 0.8 + 0.6 + 0.8 + 0.6) / 4]
    assert calibration.calibrationA == pytest.approx(expected_a, abs=1e-15)
    assert calibration.inference([0.5, 0.5]) == pytest.approx(softmax([0.5 / expected_a[0], 0.5 / expected_a[1]]))
    # demonstrations: index_set(N·k, |C|, with repetition) from a fresh stream; the query is [""]
    idx = fresh_stream().index_set(8, 10, allow_repetition=True)
    expected_prompts = [prompt_maker([FakeSet()[j] for j in idx[2 * i:2 * i + 2]], [""]) for i in range(4)]
    assert seen == expected_prompts


def test_contextual_second_train_restarts():
    def feedforward(prompt, label_space):
        return [0.3, 0.7]

    fresh = contextual_calibration(LABELS)
    fresh.train(prompt_maker, feedforward, FakeSet(), calibration_number=3, k=1)
    reused = contextual_calibration(LABELS)
    reused.train(prompt_maker, lambda prompt, label_space: [0.9, 0.1], FakeSet(), calibration_number=5, k=1)
    reused.train(prompt_maker, feedforward, FakeSet(), calibration_number=3, k=1)
    assert reused.calibrationA == fresh.calibrationA
    assert reused.inference([0.1, 0.9]) == fresh.inference([0.1, 0.9])


def test_contextual_rejects_wrong_width():
    calibration = contextual_calibration(LABELS)
    with pytest.raises(ValueError, match="query 0"):
        calibration.train(prompt_maker, lambda prompt, label_space: [1.0], FakeSet(), calibration_number=2, k=1)


def test_domain_calibration_uses_domain_queries():
    prompt_module = pytest.importorskip("StaICC.prompt", reason="core StaICC.prompt not available")
    calib_set = FakeSet(12)
    seen = []

    def feedforward(prompt, label_space):
        seen.append(prompt)
        return [0.25, 0.75]

    calibration = domain_calibration(LABELS)
    calibration.train(prompt_maker, feedforward, calib_set, calibration_number=3, sample_length=5, k=1)
    generator = prompt_module.domain_query_generator(types.SimpleNamespace(table=calib_set.rows), 5)
    idx = fresh_stream().index_set(3, 12, allow_repetition=True)
    assert seen == [prompt_maker([calib_set[idx[i]]], next(generator)) for i in range(3)]
    assert calibration.calibrationA == pytest.approx([(1e-5 + 0.75) / 3, (1e-5 + 2.25) / 3], abs=1e-15)
    first = list(seen)
    seen.clear()
    calibration.train(prompt_maker, feedforward, calib_set, calibration_number=3, sample_length=5, k=1)
    assert seen == first  # the domain generator restarts with train


# ----------------------------------------------------------------- batch
def test_batch_calibration_hand_values():
    probs = [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]]
    out = batch_calibration(probs, batch_size=2)
    mean = [(0.9 + 0.5) / 2, (0.1 + 0.5) / 2]
    assert out[0] == softmax([0.9 - mean[0], 0.1 - mean[1]])
    assert out[1] == softmax([0.5 - mean[0], 0.5 - mean[1]])
    assert out[2] == [0.5, 0.5]  # a batch of one is centred to zero
    assert batch_calibration([]) == []
    with pytest.raises(ValueError, match="batch_size"):
        batch_calibration(probs, batch_size=0)


# ----------------------------------------------------------------- hidden
def hidden_feedforward(prompt, label_space):
    """Hidden state = a float32 vector determined by the query row: label 0 near (1, 0), 1 near (0, 1)."""
    row = query_row(prompt)
    base = [1.0, 0.0] if row % 2 == 0 else [0.0, 1.0]
    return [0.5, 0.5], np.array([base[0] + row / 100, base[1] - row / 100], dtype=np.float32)


def test_hidden_calibration_centroids_and_inference():
    calib_set = FakeSet(10)
    calibration = hidden_calibration(LABELS)
    calibration.train(prompt_maker, hidden_feedforward, calib_set, calibration_number=6, k=2)
    idx = fresh_stream().index_set(6 * 3, 10, allow_repetition=True)
    queries = [idx[i * 3 + 2] for i in range(6)]
    for label in (0, 1):
        rows = [q for q in queries if q % 2 == label]
        vectors = [hidden_feedforward(f"#{q}", LABELS)[1] for q in rows]
        total = np.zeros(2, dtype=np.float32)
        for v in vectors:
            total = total + v
        assert np.array_equal(calibration.centroids[label], total / len(vectors))
        assert calibration.centroids.dtype == np.float32
    hidden = np.array([0.9, 0.2], dtype=np.float32)
    d = [np.float32(0)] * 2
    for c in (0, 1):
        acc = np.float32(0)
        for h, m in zip(hidden, calibration.centroids[c]):
            acc = acc + (h - m) ** 2
        d[c] = acc ** 0.5
    result = calibration.inference([0.5, 0.5], None, hidden)
    assert result == softmax([d[0] - d[0], d[0] - d[1]])
    assert result[0] > result[1]
    assert all(type(x) is float for x in result)


def test_hidden_calibration_missing_label_fails_softly():
    one_label_set = FakeSet(10)
    one_label_set.rows = [(inputs, "negative") for inputs, _ in one_label_set.rows]
    calibration = hidden_calibration(LABELS)
    with pytest.warns(UserWarning, match=MISSING_CATEGORY_WARNING + "positive"):
        calibration.train(prompt_maker, hidden_feedforward, one_label_set, calibration_number=4, k=1)
    assert calibration.failed
    assert calibration.inference([0.3, 0.7], None, np.zeros(2, dtype=np.float32)) == [0.3, 0.7]


def test_hidden_calibration_retrain_replaces_centroids():
    calib_set = FakeSet(10)
    fresh = hidden_calibration(LABELS)
    fresh.train(prompt_maker, hidden_feedforward, calib_set, calibration_number=6, k=2)
    reused = hidden_calibration(LABELS)
    reused.train(prompt_maker, lambda prompt, label_space: ([0.5, 0.5], np.ones(2, np.float32) * 7), calib_set,
                 calibration_number=6, k=2)
    reused.train(prompt_maker, hidden_feedforward, calib_set, calibration_number=6, k=2)
    assert np.array_equal(reused.centroids, fresh.centroids)


def test_hidden_calibration_requires_tuple_feedforward():
    with pytest.raises(ValueError, match="tuple"):
        hidden_calibration(LABELS).train(prompt_maker, lambda prompt, label_space: [0.5, 0.5], FakeSet(),
                                         calibration_number=2, k=1)


# ----------------------------------------------------------------- kNN
def knn_feedforward(prompt, label_space):
    """Full-vocab vector: row r -> (r, 0, label) in double precision."""
    row = query_row(prompt)
    return [0.5, 0.5], [float(row), 0.0, float(row % 2)]


def test_knn_prompting_votes():
    calib_set = FakeSet(10)
    calibration = knn_prompting(LABELS, knn_k=3)
    calibration.train(prompt_maker, knn_feedforward, calib_set, calibration_number=8, k=1)
    idx = fresh_stream().index_set(16, 10, allow_repetition=True)
    queries = [idx[i * 2 + 1] for i in range(8)]
    assert calibration.anchor_labels == [q % 2 for q in queries]
    assert calibration.label_counts == [sum(q % 2 == 0 for q in queries), sum(q % 2 == 1 for q in queries)]
    query = [4.2, 0.0, 0.0]
    distances = [math.sqrt((q - 4.2) ** 2 + (q % 2) ** 2) for q in queries]
    votes = [0, 0]
    for _ in range(3):
        nearest = distances.index(min(distances))
        votes[queries[nearest] % 2] += 1
        distances[nearest] = 1e9
    assert calibration.inference([0.5, 0.5], query, None) == softmax(votes)


def test_knn_retrain_replaces_anchors():
    calib_set = FakeSet(10)
    calibration = knn_prompting(LABELS)
    calibration.train(prompt_maker, knn_feedforward, calib_set, calibration_number=8, k=1)
    calibration.train(prompt_maker, knn_feedforward, calib_set, calibration_number=8, k=1)
    assert calibration.anchors.shape == (8, 3)


def test_knn_centroid_hand_values():
    calib_set = FakeSet(10)
    calibration = knn_prompt_centroid(LABELS)
    calibration.train(prompt_maker, knn_feedforward, calib_set, calibration_number=8, k=1)
    idx = fresh_stream().index_set(16, 10, allow_repetition=True)
    queries = [idx[i * 2 + 1] for i in range(8)]
    centroids = []
    for label in (0, 1):
        rows = [q for q in queries if q % 2 == label]
        centroids.append([sum(float(q) for q in rows) / len(rows), 0.0, float(label)])
    vector = [3.0, 1.0, 0.5]
    d = [math.sqrt(sum((a - b) ** 2 for a, b in zip(vector, c))) for c in centroids]
    assert calibration.inference([0.5, 0.5], vector) == pytest.approx(softmax([d[0] - d[0], d[0] - d[1]]), abs=1e-12)


def test_knn_rejects_bad_k_and_vector_length():
    with pytest.raises(ValueError, match="knn_k"):
        knn_prompting(LABELS, knn_k=0)
    calibration = knn_prompting(LABELS)
    calibration.train(prompt_maker, knn_feedforward, FakeSet(10), calibration_number=8, k=1)
    with pytest.raises(ValueError, match="length"):
        calibration.inference([0.5, 0.5], [1.0, 2.0])


def test_untrained_calibrations_say_so():
    with pytest.raises(RuntimeError, match="train"):
        hidden_calibration(LABELS).inference([0.5, 0.5], None, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="train"):
        knn_prompting(LABELS).inference([0.5, 0.5], [1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert contextual_calibration(LABELS).inference([0.5, 0.5]) == [0.5, 0.5]


# ----------------------------------------------------------------- end to end on a sub-benchmark
def _end_to_end_setup():
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install StaICC[hf])")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install StaICC[hf])")
    from prefab_helpers import tiny_model, tiny_tokenizer

    from StaICC import Normal
    from StaICC.prefabricate_inference import CausalLMScorer
    scorer = CausalLMScorer(tiny_model("llama"), tiny_tokenizer(True))
    return Normal(k=0, datasets=["rotten_tomatoes"])[0], scorer  # zero-shot: short prompts, fast


@pytest.mark.parametrize("name", ["contextual", "domain", "hidden", "knn", "knn_centroid"])
def test_trained_calibration_runs_on_a_sub_benchmark(name):
    experimentor, scorer = _end_to_end_setup()
    labels = experimentor.get_label_space()
    calibration, feedforward = {
        "contextual": (contextual_calibration(labels), scorer),
        "domain": (domain_calibration(labels), scorer),
        "hidden": (hidden_calibration(labels), scorer.feedforward_with_hidden_state),
        "knn": (knn_prompting(labels), scorer.feedforward_with_full_vocab),
        "knn_centroid": (knn_prompt_centroid(labels), scorer.feedforward_with_full_vocab),
    }[name]
    calibration.train(experimentor.prompt_former.write_prompt_from_dataline, feedforward,
                      experimentor.calibration_set(), calibration_number=16, k=experimentor.get_k())
    assert calibration.trained and not getattr(calibration, "failed", False)
    inference = scorer.calibrated(calibration.inference)
    prompts = experimentor.prompt_set()
    calibrated = inference(prompt=prompts[:6], label_space=labels)
    plain = scorer(prompt=prompts[:6], label_space=labels)
    assert calibrated != plain  # the calibration changed the predictions
    for index in (0, 5):  # batched and per-prompt calibrated inference agree
        single = inference(prompt=prompts[index], label_space=labels)
        assert single == pytest.approx(calibrated[index], abs=1e-4)
    outputs = _run_and_check(experimentor, inference)
    assert _largest_gap(outputs[:6], calibrated) < 1e-4  # the run's rows are the calibrated ones


def test_batch_calibration_runs_on_a_sub_benchmark():
    experimentor, scorer = _end_to_end_setup()

    def inference(prompt, label_space):
        return batch_calibration(scorer(prompt=prompt, label_space=label_space))

    outputs = _run_and_check(experimentor, inference)
    plain = scorer(prompt=experimentor.prompt_set()[:6], label_space=experimentor.get_label_space())
    assert _largest_gap(outputs[:6], plain) > 1e-6  # the calibration changed the predictions


def _run_and_check(experimentor, inference):
    """Run ``inference`` through the experimentor; its rows and accuracy must be what the model answered.

    The rows are recorded as the model returns them (by prompt), the true labels are read from the
    test set, and the accuracy is counted here: the run must agree with all three.
    """
    answered = {}

    def recorded(prompt, label_space):
        rows = inference(prompt=prompt, label_space=label_space)
        answered.update(zip(prompt, rows))
        return rows

    result, success, outputs = experimentor.auto_run(forward_inference=recorded, batched_inference=True,
                                                     return_outputs=True)
    labels = experimentor.get_label_space()
    truth = [labels.index(label) for _, label in experimentor.test_set()] * experimentor.get_repeat_times()
    rows = [answered[prompt] for prompt in experimentor.prompt_set()]
    assert success is True and outputs["groundtruth"] == truth
    assert len(outputs["prob."]) == len(rows) and _largest_gap(outputs["prob."], rows) < 1e-9
    hits = sum(1 for row, label in zip(rows, truth) if max(range(len(row)), key=row.__getitem__) == label)
    assert result["accuracy"] == pytest.approx(hits / len(truth), abs=1e-12)
    return outputs["prob."]


def _largest_gap(rows, other_rows):
    return max(abs(a - b) for row, other in zip(rows, other_rows) for a, b in zip(row, other))


def test_vectorised_distances_equal_the_pure_python_loop():
    """§11.4.8 fix: NumPy distances are bit-identical to the original's element-by-element loop."""
    from StaICC.methods.vectors import sequential_l2
    rng = np.random.default_rng(0)
    anchors = rng.normal(size=(5, 3000)).astype(np.float32)
    vector = rng.normal(size=3000).astype(np.float32)
    for a, v in ((anchors, vector), (anchors.astype(np.float64), vector.astype(np.float64))):
        expected = []
        for row in a:
            total = 0
            for x, y in zip(row, v):
                total = total + (x - y) ** 2
            expected.append(total ** 0.5)
        got = sequential_l2(a, v)
        assert got == expected and type(got[0]) is type(expected[0])
