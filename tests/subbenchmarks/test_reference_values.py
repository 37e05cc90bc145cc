"""Spec §10: every sub-benchmark, fresh, with the deterministic dummy model.

Checks the SHA-256 of every prompt sent to the inference (per dataset, in call order)
and every per-dataset and averaged number against the reference file.
"""
import hashlib
import json
import warnings

import pytest

import StaICC
from StaICC.metrics import softmax
from conftest import REFERENCE_PATH

REFERENCE = json.load(open(REFERENCE_PATH, encoding="utf-8"))


def dummy(prompt, label_space):
    """Spec §10.4: logits from the SHA-256 of the prompt, softmaxed."""
    text = "\x01".join(prompt) if isinstance(prompt, list) else prompt
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return softmax([((digest[i] / 255.0) * 4) - 2 for i in range(len(label_space))])


class PromptRecorder:
    """Wraps the dummy per dataset and hashes the prompts it receives (spec §10.3)."""

    def __init__(self):
        self.hashes = {}
        self.counts = {}

    def for_dataset(self, name):
        digest = hashlib.sha256()
        self.hashes[name] = digest
        self.counts[name] = 0

        def inference(prompt, label_space):
            if self.counts[name]:
                digest.update(b"\x00")
            self.counts[name] += 1
            digest.update(("\x01".join(prompt) if isinstance(prompt, list) else prompt).encode("utf-8"))
            return dummy(prompt, label_space)
        return inference


BENCHMARKS = {
    "Normal": lambda: StaICC.Normal(),
    "Normal_noisy_channel": lambda: StaICC.Normal(noisy_channel=True),
    "Contextual_bias": lambda: StaICC.Contextual_bias(),
    "Domain_bias": lambda: StaICC.Domain_bias(),
    "Post_bias": lambda: StaICC.Post_bias(),
    "GLER": lambda: StaICC.GLER(),
    "Template_sens": lambda: StaICC.Template_sens(),
    "Demo_sens": lambda: StaICC.Demo_sens(),
}


def as_json(value):
    return json.loads(json.dumps(value))


@pytest.fixture(scope="module", params=sorted(BENCHMARKS))
def run(request):
    name = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a standard run emits no warning at all
        bench = BENCHMARKS[name]()
        recorder = PromptRecorder()
        result = bench([recorder.for_dataset(e.dataset_name) for e in bench])
    return name, bench, recorder, result


def test_prompt_hashes(run):
    name, bench, recorder, _ = run
    for ds in REFERENCE["datasets"]:
        assert recorder.hashes[ds["name"]].hexdigest() == ds["reference_prompt_sha256"][name], ds["name"]
        counts_key = "Normal" if name == "Normal_noisy_channel" else name
        assert recorder.counts[ds["name"]] == ds["reference_prompt_counts"][counts_key]


def test_per_dataset_results(run):
    name, _, _, result = run
    for ds in REFERENCE["datasets"]:
        expected = ds["reference_dummy_results"].get(name)
        if expected is not None:
            assert as_json(result["Divided results"][ds["name"]]) == expected, ds["name"]


def test_averaged_results(run):
    name, _, _, result = run
    assert as_json(result["Averaged results"]) == REFERENCE["reference_dummy_averaged_results"][name]


def test_result_structure_and_metadata(run):
    name, bench, _, result = run
    assert list(result) == ["Divided results", "Averaged results"]
    assert list(result["Divided results"]) == [d["name"] for d in REFERENCE["datasets"]]
    assert result.metadata["standard"] is True
    assert result.metadata["non_standard_settings"] == {}


def test_prompt_set_matches_what_the_run_sends(run):
    name, bench, recorder, _ = run
    experimentor = bench[1]
    digest = hashlib.sha256(b"\x00".join(
        ("\x01".join(p) if isinstance(p, list) else p).encode("utf-8") for p in experimentor.prompt_set()))
    assert digest.hexdigest() == recorder.hashes[experimentor.dataset_name].hexdigest()


def test_triplet_bias_runs_the_three_in_order():
    bench = StaICC.Triplet_bias()
    result = bench(dummy, return_divided_results=False)
    assert list(result) == ["contextual", "domain", "post"]
    averaged = REFERENCE["reference_dummy_averaged_results"]
    assert as_json(result["contextual"]["Averaged results"]) == averaged["Contextual_bias"]
    assert as_json(result["domain"]["Averaged results"]) == averaged["Domain_bias"]
    assert as_json(result["post"]["Averaged results"]) == averaged["Post_bias"]
    assert list(result["post"]) == ["Averaged results"]


def test_first_rotten_tomatoes_prompt_byte_for_byte():
    expected = ("review: thoughtful , provocative and entertaining . sentiment: positive\nreview: don't be fooled by "
                "the impressive cast list - eye see you is pure junk . sentiment: negative\nreview: an overwrought "
                "taiwanese soaper about three people and their mixed-up relationship . sentiment: negative\nreview: "
                "in an effort , i suspect , not to offend by appearing either too serious or too lighthearted , it "
                "offends by just being wishy-washy . sentiment: negative\nreview: audiard successfully maintains "
                "suspense on different levels throughout a film that is both gripping and compelling . sentiment: ")
    assert StaICC.Normal(datasets=["rotten_tomatoes"])[0].prompt_set()[0] == expected
