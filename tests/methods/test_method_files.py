"""Your own method in a file: loaded by path, run beside the built-in ones, recorded with its SHA-256.

The example in ``examples/methods/`` is run through ``run_methods`` and compared with the same
file's functions wired by hand (its prompts asked one by one, its train and apply called
directly); malformed files are refused with one line naming the file and what is wrong.
"""
import hashlib
import textwrap

import pytest

from StaICC import Normal
from StaICC.backends import make_backend
from StaICC.engine.selection import QuerySubset
from StaICC.methods.files import load_method_file, resolve_methods
from StaICC.methods.protocol import MethodData
from StaICC.methods.run import run_methods
from StaICC.requests import Request
from conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "methods" / "prior_matching.py"
DATASETS = ["TREC", "rotten_tomatoes"]


def test_the_example_loads_with_its_hash_and_description():
    method = load_method_file(str(EXAMPLE))
    assert method.name == "prior_matching" and method.calibrates and method.test_kinds == ("labels",)
    described = method.describe()
    assert described["sha256"] == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert described["file"] == str(EXAMPLE) and described["parameters"] == {"calibration_number": 64}
    assert described["description"].startswith("Prior matching: rescale every prediction")


def test_the_example_run_by_path_equals_its_functions_wired_by_hand():
    backend = make_backend("reference")
    result = run_methods(backend, ["vanilla", str(EXAMPLE)], "Normal", DATASETS, test_items=QuerySubset.first(8))
    assert list(result) == ["vanilla", "prior_matching"]
    module = load_method_file(str(EXAMPLE))
    bench = Normal(datasets=DATASETS, test_items=QuerySubset.first(8))
    for i, dataset in enumerate(DATASETS):
        experimentor, labels = bench[i], tuple(bench[i].get_label_space())
        data = MethodData(dataset, "Normal", labels, experimentor.calibration_set(), experimentor.get_k(),
                          experimentor.prompt_former.write_prompt_from_dataline)
        answers = [backend.score([Request(prompt, labels)])[0].prediction for prompt in module.requests(data)]
        state = module.train(data, answers)
        vanilla = [r["prediction"] for r in result["vanilla"]["Normal"].records if r["dataset"] == dataset]
        expected = module.apply(state, {"labels": vanilla})
        assert [r["prediction"] for r in result["prior_matching"]["Normal"].records if r["dataset"] == dataset] \
            == expected != vanilla
    assert result["prior_matching"].metadata["method"]["sha256"] == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("body, message", [
    ("def apply(state, answers):\n    return []\n", r"must define train\(\)"),
    ("train = 3\ndef apply(s, a):\n    return []\n", "train must be a function"),
    ("NAME = 'contextual'\ndef train(d, a):\n    pass\ndef apply(s, a):\n    return []\n", "built-in method's"),
    ("TEST_KINDS = ('labels', 'logits')\ndef train(d, a):\n    pass\ndef apply(s, a):\n    return []\n",
     "TEST_KINDS must name some of labels, full_vocab, hidden"),
    ("NAME = 'a b'\ndef train(d, a):\n    pass\ndef apply(s, a):\n    return []\n", "NAME must be letters"),
    ("raise RuntimeError('broken on purpose')\n", "importing the file raised RuntimeError: broken on purpose"),
])
def test_a_malformed_method_file_is_refused_naming_the_file(tmp_path, body, message):
    path = _write(tmp_path, "mine.py", body)
    with pytest.raises(ValueError, match=message) as caught:
        resolve_methods(["vanilla", path])
    assert str(caught.value).startswith(f"method file {path!r}: ") and "\n" not in str(caught.value)


@pytest.mark.parametrize("body, message", [
    ("def requests(data):\n    return [3]\ndef train(d, a):\n    pass\ndef apply(s, a):\n    return []\n",
     r"requests\(\) item 0 \(dataset 'TREC'\) must be a prompt string"),
    ("def train(d, a):\n    return 1 / 0\ndef apply(s, a):\n    return []\n",
     r"train\(\) raised ZeroDivisionError: division by zero \(dataset 'TREC', Normal\)"),
    ("def train(d, a):\n    pass\ndef apply(s, a):\n    return a['labels'][:1]\n",
     r"apply\(\) returned 1 rows for 16 queries \(dataset 'TREC', Normal TREC\)"),
    ("def train(d, a):\n    pass\ndef apply(s, a):\n    return [[1.0] for _ in a['labels']]\n",
     r"apply\(\) the inference returned 1 scores at dataset 'TREC', query 0; expected 6"),
])
def test_a_method_that_misbehaves_says_which_method_dataset_and_step(tmp_path, body, message):
    path = _write(tmp_path, "mine.py", body)
    with pytest.raises(ValueError, match=message):
        run_methods(make_backend("reference"), ["vanilla", path], "Normal", ["TREC"], test_items=QuerySubset.first(8))


def test_methods_are_named_once_and_vanilla_leads():
    methods = resolve_methods(["contextual", "batch"])
    assert [m.name for m in methods] == ["vanilla", "contextual", "batch"]
    with pytest.raises(ValueError, match="methods named twice: batch"):
        resolve_methods(["batch", "vanilla", "batch"])
    with pytest.raises(ValueError, match="unknown method 'contextal'; choose from vanilla, noisy_channel"):
        resolve_methods(["contextal"])
    with pytest.raises(ValueError, match=r"method parameter knn_kk: no method named takes it \(contextual takes"):
        resolve_methods(["contextual"], {"knn_kk": 3})
    assert resolve_methods(["knn"], {"knn_k": 5})[1].describe()["parameters"] == {"calibration_number": 128,
                                                                                   "knn_k": 5}


class _Described:
    """A backend as the planner reads it (name, kinds, identity, demonstration boundaries), answering nothing."""

    name, request_kinds = "toy", ("labels",)

    def __init__(self, scoring="last_token", needs_segments=False):
        self.scoring, self.needs_segments = scoring, needs_segments

    def identity(self):
        return {"backend": "toy", "scoring": self.scoring}


@pytest.mark.parametrize("backend, method, message", [
    (_Described(), "hidden", "method 'hidden' needs hidden states, which the toy backend does not give"),
    (_Described(scoring="generate"), "contextual", "reads label probabilities; the toy backend with scoring=generate"),
    (_Described(needs_segments=True), "domain", "cannot split them"),
])
def test_a_method_the_backend_cannot_serve_is_refused_when_planned(backend, method, message):
    from StaICC.methods.run import plan_methods
    from StaICC.subbenchmarks.suite import build_suite
    suite = build_suite("Normal", ["TREC"], test_items=QuerySubset.first(5))
    with pytest.raises(ValueError, match=message):
        plan_methods(backend, suite, resolve_methods([method]))
    plan_methods(_Described(needs_segments=True), suite, resolve_methods(["vanilla", "batch"]))  # no training prompts


def test_a_method_file_with_premise_free_reads_the_premise_free_prompts(tmp_path):
    """A file that sets PREMISE_FREE and divides by answers["premise_free"] is the built-in pmi, to the last bit,
    on a function model whose answer depends on the query text (so the twins' answers differ from vanilla's)."""
    path = tmp_path / "my_pmi.py"
    path.write_text(textwrap.dedent('''\
        """PMI in a file."""
        PREMISE_FREE = True

        def train(data, answers):
            return None

        def apply(state, answers):
            from StaICC.methods.calibration.pmi import pmi_rows
            return pmi_rows(answers["labels"], answers["premise_free"])
        '''))

    def model(prompt, label_space):
        tail = prompt[-60:]
        weights = [1.0 + (sum(map(ord, tail)) * (i + 3)) % 7 for i in range(len(label_space))]
        return [w / sum(weights) for w in weights]
    result = run_methods(model, ["pmi", str(path)], "Normal", DATASETS, test_items=QuerySubset.first(5))
    for dataset in DATASETS:
        mine = [r["prediction"] for r in result["my_pmi"]["Normal"].records if r["dataset"] == dataset]
        assert mine == [r["prediction"] for r in result["pmi"]["Normal"].records if r["dataset"] == dataset]
        assert mine != [r["prediction"] for r in result["vanilla"]["Normal"].records if r["dataset"] == dataset]
    assert result.metadata["distinct_prompts"] == len(DATASETS) * 2 * 2 * 5  # the twins asked once for both
