"""Calls the original StaICC 0.1.1 accepted run as it ran them, with its numbers.

The expected values were read from the original wheel as a black box (the same calls, the same
deterministic model below, in a separate environment) and are recorded as literals; the original
package is not needed to run these tests.
"""
import contextlib
import hashlib
import io
import json
import warnings

import pytest

from StaICC import GLER, Demo_sens, Normal, Template_sens
from StaICC.util import functional as F


def hashed_model(prompt, label_space):
    """A deterministic model: probabilities from the SHA-256 of the prompt(s)."""
    digest = hashlib.sha256(json.dumps(prompt).encode()).digest()
    values = [b / 255 + 0.01 for b in digest[:len(label_space)]]
    return [v / sum(values) for v in values]


def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def recorded(seen):
    def model(prompt, label_space):
        seen.append([prompt, list(label_space)])
        return hashed_model(prompt, label_space)
    return model


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def test_gler_reinitialized_with_noisy_channel_sends_the_originals_prompts_and_gives_its_numbers():
    bench = GLER(datasets=["GLUE-SST2"])
    bench.re_initialize(4, noisy_channel=True)
    seen = []
    result, ok = bench[0].auto_run(recorded(seen))
    assert ok is True and len(seen) == 5120 and isinstance(seen[0][0], list)  # one prompt per label
    assert digest(seen) == "c56564cbec9f68539705672d40ed4187f57d119b173fb94bd7038e9d8e969f0c"
    assert result["0"] == {"accuracy": 0.5126953125, "averaged_truelabel_likelihood": 0.5051419210510149,
                           "macro_F1": 0.5111807118729355, "expected_calibration_error_1": 0.07825123295967341}
    assert digest(result) == "2b2baac1253dc62efb020a3f81e33715e18b685b9501e25b1b693a789f788063"


def test_a_label_space_with_a_distractor_word_runs_as_in_the_original():
    bench = Normal(datasets=["GLUE-SST2"])
    bench[0].prompt_former.change_label_space(["bad", "good", "meh"])
    seen = []
    result, ok = bench[0].auto_run(recorded(seen))
    assert seen[0][1] == ["bad", "good", "meh"] and seen[0][0].endswith("sentiment: ")
    assert digest(seen) == "88c25bc4168f98154f45270c714d3c7c3198ef11115a331cba5677ecc66fc3e9"
    assert result == {"accuracy": 0.3447265625, "averaged_truelabel_likelihood": 0.33152464129265136,
                      "macro_F1": 0.27202011726075, "expected_calibration_error_1": 0.0518697473018206}
    with pytest.raises(ValueError, match=r"needs at least 2 words \(one per label of 'GLUE-SST2'\), got 1"):
        bench[0].prompt_former.change_label_space(["bad"])  # the original failed later, with an IndexError


def test_a_row_with_a_negative_entry_that_sums_to_1_is_logits():
    bench = Normal(datasets=["TREC"])
    result, _ = bench[0].auto_run(lambda prompt, label_space: [1.0, 0.0, 1.0, -1.0, 0.0, 0.0])  # noqa: ARG005
    assert result == {"accuracy": 0.009765625, "averaged_truelabel_likelihood": 0.1409502359902645,
                      "macro_F1": 0.0032237266279819474, "expected_calibration_error_1": 0.29897415537848265}


@pytest.mark.parametrize("cls", [Demo_sens, Template_sens, GLER])
def test_sensitivity_experimentors_return_two_items_with_return_outputs(cls):
    bench = cls(datasets=["GLUE-SST2"])
    returned = bench[0].auto_run(hashed_model, return_outputs=True)
    assert len(returned) == 2 and returned[1] is True
    assert len(Normal(datasets=["GLUE-SST2"])[0].auto_run(hashed_model, return_outputs=True)) == 3
    if cls is Demo_sens:
        assert returned[0] == {"sensitivity": {"consistency": 0.62109375}}


def test_the_originals_keyword_names_are_accepted():
    assert (F.argmax(x=[1, 3, 2]), F.argmin(x=[1, 3, 2])) == (1, 0)
    assert F.softmax(x=[1.0, 2.0]) == [0.2689414213699951, 0.7310585786300049]
    assert F.entropy(x=[0.5, 0.5]) == 0.6931471805599453
    assert F.exp_to_list(list=[0.0, 1.0]) == [1.0, 2.718281828459045]
    assert F.unique_check(list=[1, 2, 2]) is False
    assert F.argmax([1, 3, 2]) == F.argmax(vector=[1, 3, 2]) == 1  # the new names too
    with pytest.raises(TypeError, match="got both 'vector' and 'x'"):
        F.argmax([1], x=[2])
    from StaICC.prefabricate_inference.standard_calibration import batch_calibration
    assert batch_calibration(label_space_probs=[[0.2, 0.8], [0.6, 0.4]]) == \
        [[0.401312339887548, 0.598687660112452], [0.598687660112452, 0.401312339887548]]


@pytest.mark.parametrize("call, message", [
    (lambda: F.post_bias_dl_div([0, 1], []), "post_bias_dl_div needs at least one prediction row"),
    (lambda: F.bias_entropy([0, 1], []), "bias_entropy needs at least one prediction row"),
    (lambda: F.linear_regression([], []), "linear_regression needs at least 2 points, got 0"),
    (lambda: F.linear_regression([1, 1], [2, 3]), "every x is the same value"),
])
def test_metrics_on_empty_input_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
