"""summarize: one row object per label for the standard's metrics, one list per query everywhere else.

With only the standard's (read-only) metrics, int answers' one-hot rows are shared
between queries and known to pass the probability check; the results must be those of
plain, independent rows, and the records must still hand out one list per query.  A
metric the package does not know gets independent rows, as the rows are documented.
"""
import hashlib
import random
import warnings

import pytest

from StaICC import GLER, Normal, Template_sens
from StaICC.engine.outcome import compute_metrics, prompt_set_digest
from StaICC.engine.scoring import expand
from StaICC.errors import TamperingWarning
from StaICC.metrics import PredictionRows, normal_metrics
from StaICC.requests import Request
from StaICC.results.records import PlanRecords


def reference_expand(predictions, label_count, dataset):
    """expand as first written: one kind throughout, else the first query of the other kind is named."""
    if not predictions:
        return []
    int_kind = isinstance(predictions[0], int)
    for i, p in enumerate(predictions):
        if isinstance(p, int) != int_kind:
            raise TypeError(f"the inference mixed int labels and score vectors at dataset {dataset!r}, query {i}: "
                            f"query 0 returned {'an int' if int_kind else 'a vector'}; return one kind throughout")
    if not int_kind:
        return list(predictions)
    return [[1 if c == p else 0 for c in range(label_count)] for p in predictions]


def test_expand_gives_the_reference_rows_shared_or_not():
    rng = random.Random(3)
    for _ in range(300):
        width = rng.randrange(1, 6)
        ints = [rng.randrange(width) for _ in range(rng.randrange(0, 25))]
        want = reference_expand(ints, width, "d")
        for share in (False, True):
            rows = expand(ints, width, "d", share_rows=share)
            assert isinstance(rows, PredictionRows) and rows == want
            if ints:
                assert rows.normalized is rows and rows.labels == ints
        independent = expand(ints, width, "d")
        assert len({id(row) for row in independent}) == len(ints)
        assert len({id(row) for row in expand(ints, width, "d", share_rows=True)}) <= width


def test_expand_names_the_first_query_of_the_other_kind():
    for predictions in ([0, 1, [0.5, 0.5], 1], [[0.5, 0.5], [1.0, 0.0], 1, [0.0, 1.0]], [True, [1.0, 0.0]]):
        with pytest.raises(TypeError) as got:
            expand(predictions, 2, "toy")
        with pytest.raises(TypeError) as want:
            reference_expand(predictions, 2, "toy")
        assert str(got.value) == str(want.value)


def test_out_of_range_ints_are_not_known_to_pass():
    rows = expand([0, 3], 2, "d", share_rows=True)
    assert rows == [[1, 0], [0, 0]] and rows.normalized is None


class Answer:
    def __init__(self, prediction):
        self.prediction, self.text, self.parsed = prediction, None, True


def test_records_copy_shared_rows_when_first_read():
    shared = expand([1, 1, 0], 2, "d", share_rows=True)
    vector = [0.25, 0.75]
    answers = [Answer(1), Answer(1), Answer(0), Answer(vector)]
    records = PlanRecords(None, answers, list(shared) + [vector], copy_int_rows=True)
    rows = records.rows()
    assert rows == [[0, 1], [0, 1], [1, 0], [0.25, 0.75]]
    assert rows[0] is not rows[1] and rows[3] is vector
    rows[0][0] = 9
    assert shared[1] == [0, 1] and records.rows()[1] == [0, 1] and records.rows() is rows


def first(benchmark, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return benchmark(datasets=["rotten_tomatoes"], k=1, **options)[0]


def passes_of(exp, predictions, passes):
    per_pass = len(predictions) // passes
    return [predictions[p * per_pass:(p + 1) * per_pass] for p in range(passes)]


@pytest.mark.parametrize("benchmark, passes", [(Normal, 1), (GLER, 5), (Template_sens, 9)])
def test_results_equal_those_of_independent_plain_rows(benchmark, passes):
    exp = first(benchmark)
    prompts = exp.prompt_set()
    ints = [(len(p) * 7 + sum(map(ord, p[-20:]))) % 2 for p in prompts]
    answers = dict(zip(prompts, ints))
    outcome = exp.execute(lambda prompt, label_space: answers[prompt])
    truth = list(exp.ground_truth())
    stored, results = [], []
    for chunk in passes_of(exp, ints, passes):
        rows = [[1 if c == p else 0 for c in range(2)] for p in chunk]
        stored = stored + rows if benchmark is Template_sens else rows
        results.append(compute_metrics(dict(exp.metrics), truth, list(stored), "rotten_tomatoes"))
    assert repr(outcome.summary) == repr(exp.procedure.summarize(results))
    rows = outcome.records.rows()
    assert rows == [[1 if c == p else 0 for c in range(2)] for p in ints]
    assert len({id(row) for row in rows}) == len(rows)
    assert outcome.outputs["prob."] == rows and outcome.records[3]["prediction"] is rows[3]


def test_a_metric_the_package_does_not_know_gets_independent_rows():
    seen = {}

    def marks_first_row(truth, rows):
        seen["rows"] = rows
        rows[0][0] = 5  # changes its input: no other query's row may change with it
        return sum(row[0] for row in rows)

    exp = first(Normal, metrics={**normal_metrics(), "marks": marks_first_row})
    outcome = exp.execute(lambda prompt, label_space: 0)
    count = len(exp.prompt_set())
    assert outcome.summary["marks"] == 5 + (count - 1)
    assert outcome.records[0]["prediction"] == [5, 0] and outcome.records[1]["prediction"] == [1, 0]
    assert outcome.records[0]["prediction"] is seen["rows"][0]


def reference_digest(requests):
    digest = hashlib.sha256()
    label_space = None
    for request in requests:
        if request.label_space != label_space:
            label_space = request.label_space
            digest.update(b"L" + "\x00".join(label_space).encode("utf-8", "surrogatepass") + b"\x00")
        texts = request.prompt if isinstance(request.prompt, tuple) else (request.prompt,)
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            digest.update(b"%d:" % len(data))
            digest.update(data)
    return digest.hexdigest()


def test_the_digest_equals_the_reference_on_random_prompt_sets():
    rng = random.Random(17)
    alphabet = "ab \n:0é中\U0001f600\ud800\udc00"
    spaces = [("negative", "positive"), ("no", "yes"), ("a\x00", "b"), ("é",)]

    def text():
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))

    for _ in range(200):
        requests = []
        for _ in range(rng.randrange(0, 12)):
            labels = rng.choice(spaces)
            prompt = tuple(text() for _ in labels) if rng.random() < 0.3 else text()
            requests.append(Request(prompt, labels))
        assert prompt_set_digest(requests) == reference_digest(requests)
