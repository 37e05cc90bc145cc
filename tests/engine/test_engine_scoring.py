"""``score_requests``, the one place a model is called: order, chunks, validation, the cache, partial answers.

Requests are built by hand and the model is a small recording function, so every expected
answer, call and count is known in the test; the cache is a real SQLite file.
"""
import pytest

from StaICC.backends.base import Backend, FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.engine.scoring import check_output, check_preentered, expand, predicted_labels, score_requests
from StaICC.errors import InferenceError
from StaICC.requests import Answer, Request

LABELS = ("negative", "positive")


def requests_for(prompts, dataset="toy"):
    return [Request(p, LABELS, "Normal", dataset, q, 0) for q, p in enumerate(prompts)]


class Recorder:
    """f(prompt, label_space): probabilities from the prompt's length; every call recorded."""

    def __init__(self, fail_at=None, bad_at=None):
        self.calls = []
        self.fail_at, self.bad_at = fail_at, bad_at

    def row(self, prompt):
        if prompt == self.fail_at:
            raise RuntimeError("model crashed")
        if prompt == self.bad_at:
            return [0.5, float("nan")]
        share = (len(prompt) % 10) / 10
        return [share, 1 - share]

    def __call__(self, prompt, label_space):
        self.calls.append(prompt)
        assert label_space == list(LABELS)
        return [self.row(p) for p in prompt] if isinstance(prompt, list) else self.row(prompt)


def test_answers_come_back_in_request_order_validated():
    model = Recorder()
    prompts = ["a", "bbb", "cc", "dddddd"]
    answers = score_requests(FunctionBackend(model), requests_for(prompts))
    assert [a.prediction for a in answers] == [model.row(p) for p in prompts]
    assert all(isinstance(a, Answer) for a in answers)
    assert model.calls == prompts  # one call per request, in order


def test_a_batched_model_is_called_in_chunks_of_its_batch_size():
    model = Recorder()
    prompts = [f"p{i}" * (i + 1) for i in range(7)]
    answers = score_requests(FunctionBackend(model, batched=True, batch_size=3), requests_for(prompts))
    assert [len(call) for call in model.calls] == [3, 3, 1]
    assert [p for call in model.calls for p in call] == prompts
    assert [a.prediction for a in answers] == [model.row(p) for p in prompts]


def test_without_a_cache_every_repeated_prompt_is_asked_again():
    model = Recorder()
    counts = {}
    score_requests(FunctionBackend(model), requests_for(["x", "y", "x", "x"]), counts=counts)
    assert model.calls == ["x", "y", "x", "x"]  # a sampling model may answer a repeat differently
    assert counts == {"cached": 0, "asked": 4}


def test_with_a_cache_a_repeat_is_asked_once_and_a_second_run_asks_nothing(tmp_path):
    model = Recorder()
    requests = requests_for(["x", "y", "x", "zz", "y"])
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        counts = {}
        first = score_requests(FunctionBackend(model, model_id="recorder"), requests, cache=cache, counts=counts)
        assert model.calls == ["x", "y", "zz"] and counts == {"cached": 0, "asked": 3}
        counts = {}
        again = score_requests(FunctionBackend(model, model_id="recorder"), requests, cache=cache, counts=counts)
    assert model.calls == ["x", "y", "zz"] and counts == {"cached": 5, "asked": 0}
    assert [a.prediction for a in again] == [a.prediction for a in first] == [model.row(r.prompt) for r in requests]


def test_a_cache_never_serves_another_model(tmp_path):
    requests = requests_for(["x", "y"])
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        score_requests(FunctionBackend(Recorder(), model_id="first"), requests, cache=cache)
        other = Recorder()
        score_requests(FunctionBackend(other, model_id="second"), requests, cache=cache)
    assert other.calls == ["x", "y"]


def test_a_bad_value_names_dataset_and_query_and_keeps_the_answers_before_it(tmp_path):
    model = Recorder(bad_at="c")
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        with pytest.raises(ValueError, match=r"non-finite score nan at dataset 'toy', query 2") as info:
            score_requests(FunctionBackend(model, model_id="m"), requests_for(["a", "bb", "c", "dd"]), cache=cache)
        assert info.value.partial_predictions == [model.row("a"), model.row("bb")]
        # what was answered before the error is in the cache: a rerun asks only from the bad prompt on
        fixed = Recorder()
        score_requests(FunctionBackend(fixed, model_id="m"), requests_for(["a", "bb", "c", "dd"]), cache=cache)
    assert fixed.calls == ["c", "dd"]


def test_a_model_exception_becomes_an_inference_error_with_the_leading_answers():
    model = Recorder(fail_at="bb")
    with pytest.raises(InferenceError, match=r"inference function raised RuntimeError: model crashed at dataset "
                                             r"'toy', query 1") as info:
        score_requests(FunctionBackend(model), requests_for(["a", "bb", "c"]))
    assert info.value.partial_predictions == [model.row("a")]
    assert model.calls == ["a", "bb"]  # nothing is asked after the failure


def test_an_interrupt_propagates_unchanged_with_the_leading_answers():
    def interrupted(prompt, label_space):
        if prompt == "stop":
            raise KeyboardInterrupt
        return 1

    with pytest.raises(KeyboardInterrupt) as info:
        score_requests(FunctionBackend(interrupted), requests_for(["a", "b", "stop", "c"]))
    assert info.value.partial_predictions == [1, 1]


class CountingBackend(Backend):
    """A backend that answers with a wrong number of answers, or with values that are not Answers."""

    name = "counting"

    def __init__(self, answers):
        self.answers = answers
        self.batch_size = 2  # requests per score call

    def score(self, requests):
        return self.answers

    def identity(self):
        return {"backend": "counting"}


def test_a_backend_answering_too_few_or_wrong_values_is_refused():
    with pytest.raises(ValueError, match=r"counting backend returned 1 answers for 2 requests at dataset 'toy'"):
        score_requests(CountingBackend([Answer(0)]), requests_for(["a", "b"]))
    with pytest.raises(TypeError, match=r"must answer with StaICC.requests.Answer values, got int at dataset 'toy', "
                                        r"query 0"):
        score_requests(CountingBackend([0]), requests_for(["a"]))


def test_a_batched_model_returning_the_wrong_count_says_how_many():
    with pytest.raises(ValueError, match=r"returned 1 predictions at dataset 'toy'; expected 2, one per prompt"):
        score_requests(FunctionBackend(lambda prompt, label_space: [[0.5, 0.5]], batched=True),
                       requests_for(["a", "b"]))


def test_no_requests_no_call():
    model = Recorder()
    assert score_requests(FunctionBackend(model), []) == [] and model.calls == []


# -- the value contract ------------------------------------------------------------------------
class ArrayLike:
    """A NumPy-like value: converted through ``tolist()``."""

    def __init__(self, values):
        self.values = values

    def tolist(self):
        return list(self.values) if isinstance(self.values, list) else self.values


@pytest.mark.parametrize("output, expected", [
    (1, 1), ([2, -1], [2.0, -1.0]), ((0.25, 0.75), [0.25, 0.75]), (ArrayLike([3, 4]), [3.0, 4.0]),
    (ArrayLike(0), 0),
])
def test_check_output_accepts_an_index_or_a_finite_vector(output, expected):
    got = check_output(output, 2, "toy", 5)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("output, error, text", [
    (True, TypeError, "returned a bool at dataset 'toy', query 5"),
    (2, ValueError, r"label index 2 at dataset 'toy', query 5; expected an int in \[0, 2\)"),
    (-1, ValueError, r"label index -1"),
    ("positive", TypeError, "a string 'positive'"),
    ([0.1, 0.2, 0.7], ValueError, "returned 3 scores at dataset 'toy', query 5; expected 2"),
    ([0.5, "x"], TypeError, "non-numeric score 'x'"),
    ([float("inf"), 0], ValueError, "non-finite score inf"),
    ([10 ** 400, 0], ValueError, "too large for a float"),
    ({"negative": 1}, TypeError, "returned dict"),
])
def test_check_output_refuses_with_what_and_where(output, error, text):
    with pytest.raises(error, match=text):
        check_output(output, 2, "toy", 5)


def test_a_row_with_a_negative_entry_is_logits_even_when_it_sums_to_1():
    assert check_output([-0.5, 1.0, 0.5], 3, "toy", 0) == [-0.5, 1.0, 0.5]  # as in the original: softmaxed later
    assert check_output([-0.5, 2.0, -0.5], 3, "toy", 0) == [-0.5, 2.0, -0.5]  # logits may be negative


def test_int_predictions_expand_to_one_hot_rows_of_the_label_count():
    assert expand([0, 2], 3, "toy") == [[1, 0, 0], [0, 0, 1]]
    assert expand([[0.2, 0.8]], 2, "toy") == [[0.2, 0.8]]
    assert expand([], 2, "toy") == []
    with pytest.raises(TypeError, match="mixed int labels and score vectors at dataset 'toy', query 1"):
        expand([0, [0.5, 0.5]], 2, "toy")
    assert predicted_labels([1, [0.2, 0.5, 0.3], [0.6, 0.6]]) == [1, 1, 0]  # ties: the first


def test_preentered_predictions_are_checked_up_front():
    assert check_preentered(ArrayLike([0, 1]), 2, list(LABELS), "toy") == [0, 1]
    with pytest.raises(ValueError, match="3 preentered predictions at dataset 'toy'; expected 2"):
        check_preentered([0, 1, 1], 2, list(LABELS), "toy")
    with pytest.raises(TypeError, match="preentered predictions must be a list at dataset 'toy', got str"):
        check_preentered("01", 2, list(LABELS), "toy")
    with pytest.raises(ValueError, match="label index 7 at dataset 'toy', query 1"):
        check_preentered([0, 7], 2, list(LABELS), "toy")
