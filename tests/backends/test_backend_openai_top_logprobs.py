"""``scoring=top_logprobs`` end to end over real HTTP: the reference server serves a real tiny model's top-k
answer tokens (chat ``logprobs.content[0].top_logprobs``), and the test knows the exact label scores from the
same model's whole next-token distribution.  Every metric's interval must contain the exact metric, on every
dataset; hostile top-k lists are refused with one line naming the answer."""
import copy
import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.generative import default_messages  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.backends.top_logprobs import box_of_text, naming_label  # noqa: E402
from StaICC.engine.selection import QuerySubset  # noqa: E402
from StaICC.metrics.intervals import standard_intervals  # noqa: E402
from StaICC.numeric import SOFTMAX, PredictionRows  # noqa: E402
from StaICC.requests import Request  # noqa: E402
from StaICC.subbenchmarks.suite import build_suite, plan_suite  # noqa: E402

from StaICC.metrics import accuracy, averaged_truelabel_likelihood, expected_calibration_error_1, macro_F1  # noqa: E402
from StaICC.metrics.bias import bias_entropy, post_bias_dl_div  # noqa: E402
from StaICC.metrics.scores import own_ece_nonstandard, own_likelihood_nonstandard  # noqa: E402

from backend_helpers import ThreadedServer, tiny_pair  # noqa: E402
from openai_reference_server import JSONHandler, ReferenceServer  # noqa: E402

#: the metrics as the run computes them (a server backend's rows take the softmax branch)
SCALAR = {"accuracy": accuracy, "averaged_truelabel_likelihood": averaged_truelabel_likelihood,
          "macro_F1": macro_F1, "expected_calibration_error_1": expected_calibration_error_1,
          "own_likelihood_nonstandard": own_likelihood_nonstandard, "own_ece_nonstandard": own_ece_nonstandard,
          "post_bias_dl_div": post_bias_dl_div, "bias_entropy": bias_entropy}

DATASETS = ("GLUE-SST2", "rotten_tomatoes", "financial_phrasebank", "SST5", "TREC", "AGNews", "Subjective",
            "tweet_eval_emotion", "tweet_eval_hate", "hate_speech_18")
LIMIT = 6
#: logit added to the tokens that name a label: a tiny model that answers in its task's label words
LABEL_BIAS = 9.0
#: the whole table's bias: weaker, so that some answers are undecided and the intervals have width
SUITE_BIAS = 6.0


def dataset_works():
    """Normal's work for every dataset, first LIMIT test items."""
    suite = build_suite("Normal", list(DATASETS), test_items=QuerySubset.first(LIMIT))
    return [work for works in plan_suite(None, suite).values() for work in works]


def label_biased_pair(labels, strength=LABEL_BIAS):
    """The tiny model with a bias on its output layer towards the tokens naming one of ``labels``."""
    import torch
    model, tokenizer = tiny_pair()
    server_probe = ReferenceServer.__new__(ReferenceServer)
    server_probe.tokenizer = tokenizer
    bias = torch.zeros(len(tokenizer))
    for i in range(len(tokenizer)):
        if naming_label(server_probe.token_text(i), labels) is not None:
            bias[i] = strength
    # a copy: the tests' tiny model is one shared object (backend_helpers.tiny_pair), so changing its head in place
    # (a new module, or a hook) changed every later test's model
    model = copy.deepcopy(model)
    head = torch.nn.Linear(model.lm_head.in_features, model.lm_head.out_features, bias=True)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.copy_(bias)
    model.lm_head = head
    return model, tokenizer


def exact_rows(server, requests):
    """Each request's exact label probabilities: the whole next-token distribution, summed by naming label."""
    rows = []
    for r in requests:
        values = server.next_token_logprobs(server.chat_ids(default_messages(r)))
        scores = [0.0] * len(r.label_space)
        for token, value in enumerate(values):
            c = naming_label(server.token_text(token), r.label_space)
            if c is not None:
                scores[c] += math.exp(value)
        rows.append([s / sum(scores) for s in scores])
    return rows


@pytest.fixture(scope="module")
def measured():
    """Per dataset: the intervals at k=20, the exact metrics, and the shares of labels listed."""
    out = {}
    for work in dataset_works():
        requests = work.requests()
        model, tokenizer = label_biased_pair(requests[0].label_space)
        with ReferenceServer(model, tokenizer) as server:
            backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="top_logprobs",
                                   chat="true", top_logprobs="20", concurrency="1", retries="0")
            answers = backend.score(requests)
            exact = PredictionRows(exact_rows(server, requests), SOFTMAX)
        truth = [work.truth[q % len(work.truth)] for q in range(len(requests))]
        boxes = [box_of_text(a.text) for a in answers]
        out[work.dataset] = (standard_intervals(truth, boxes), {n: f(truth, exact) for n, f in SCALAR.items()},
                             boxes, exact, answers)
    return out


def test_every_interval_contains_the_exact_metric_on_every_dataset(measured):
    cells = 0
    for dataset, (bounds, exact, _, rows, _) in measured.items():
        for name, value in exact.items():
            low, high = bounds[name]
            assert low - 1e-9 <= value <= high + 1e-9, (dataset, name, low, value, high)
            cells += 1
        means = [sum(r[c] for r in rows) / len(rows) for c in range(len(rows[0]))]
        for m, (low, high) in zip(means, bounds["bias_distribution"]):
            assert low - 1e-9 <= m <= high + 1e-9, dataset
            cells += 1
    assert cells >= 10 * len(SCALAR)


def test_the_point_is_inside_and_the_answer_keeps_its_evidence(measured):
    for dataset, (_, _, boxes, _, answers) in measured.items():
        for box, answer in zip(boxes, answers):
            kept = json.loads(answer.text)
            assert len(kept["top_logprobs"]) == 20
            for p, (low, high) in zip(answer.prediction, box.probability_bounds()):
                assert low - 1e-12 <= p <= high + 1e-12, dataset
            assert math.fsum(answer.prediction) == pytest.approx(1.0)


def test_accuracy_widths_at_k_20_are_reported(measured, capsys):
    """The widths at k = 20 (printed: the figures docs/backends.md quotes); most datasets decide almost every
    answer when the model answers in its label words (measured: all ten at width 0)."""
    widths = {d: bounds["accuracy"][1] - bounds["accuracy"][0] for d, (bounds, *_rest) in measured.items()}
    with capsys.disabled():
        print("\naccuracy interval width at k=20:", {d: round(w, 4) for d, w in widths.items()})
    assert sum(w <= 0.01 for w in widths.values()) >= 6  # "most datasets"


# ------------------------------------------------------------------ the whole standard table
def suite_works():
    """Every work of the standard suite (Normal, the three bias parts, GLER, Template_sens, Demo_sens), every
    dataset, first LIMIT test items, by dataset."""
    suite = build_suite("all", list(DATASETS), test_items=QuerySubset.first(LIMIT))
    by_dataset = {}
    for part, works in plan_suite(None, suite).items():
        for work in works:
            by_dataset.setdefault(work.dataset, []).append((part, work))
    return by_dataset


class RememberingServer(ReferenceServer):
    """The reference server, remembering each prompt's next-token distribution: the suite asks many prompts
    twice (its answer and the test's exact row), and sub-benchmarks share prompts."""

    def next_token_logprobs(self, ids):
        memo = self.__dict__.setdefault("_memo", {})
        if tuple(ids) not in memo:
            memo[tuple(ids)] = super().next_token_logprobs(ids)
        return memo[tuple(ids)]


@pytest.fixture(scope="module")
def suite_measured():
    """(records of the top-k answers, the exact results) of every sub-benchmark, every dataset, at k = 20: the
    exact results are the same works summarised over the model's exact label probabilities."""
    from StaICC.engine.outcome import row_rule, summarize
    from StaICC.requests import Answer
    records, exact = [], {}
    for dataset, works in suite_works().items():
        model, tokenizer = label_biased_pair(works[0][1].requests()[0].label_space, SUITE_BIAS)
        with RememberingServer(model, tokenizer) as server:
            backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="top_logprobs",
                                   chat="true", top_logprobs="20", concurrency="1", retries="0")
            rule = row_rule(backend)
            for part, work in works:
                requests = work.requests()
                answers = backend.score(requests)
                exact_answers = [Answer(row) for row in exact_rows(server, requests)]
                records.extend(summarize(work, requests, answers, rule).records)
                exact[(part, dataset)] = summarize(work, requests, exact_answers, rule).summary
    return records, exact


def exact_averages(exact):
    """The exact averaged row of each sub-benchmark, by the spec table's averaging rule."""
    from StaICC.spec import SPECS
    from StaICC.stats.bounds import AVERAGED
    from StaICC.subbenchmarks.averaging import AVERAGING
    out = {}
    for part in {p for p, _ in exact}:
        divided = {d: v for (p, d), v in exact.items() if p == part}
        out[(part, AVERAGED)] = AVERAGING[SPECS[part].averaging](divided, len(divided))
    return out


def test_the_whole_standard_table_contains_the_exact_values_in_every_cell(suite_measured, capsys):
    """Every scalar cell (every sub-benchmark, every dataset, and each sub-benchmark's averaged row) of the
    intervals holds the exact metric; vector cells (bias distributions) too.  Widths printed per
    sub-benchmark and metric (the figures docs/backends.md quotes)."""
    from StaICC.stats.bounds import AVERAGED, bound_rows, dataset_intervals, boxes_by_dataset
    records, exact = suite_measured
    rows = bound_rows(records, {**exact, **exact_averages(exact)})
    scalar = [r for r in rows if "[" not in r["metric"]]
    for r in scalar:
        assert isinstance(r["point"], float), r
        assert r["low"] - 1e-9 <= r["point"] <= r["high"] + 1e-9, r
    parts = {r["benchmark"] for r in scalar}
    assert parts == {"Normal", "Contextual_bias", "Domain_bias", "Post_bias", "GLER", "Template_sens",
                     "Demo_sens"}
    assert {(r["benchmark"], r["dataset"]) for r in scalar} >= {(p, d) for p in parts for d in DATASETS + (AVERAGED,)}
    vectors = 0
    for (part, dataset), items in boxes_by_dataset(records).items():
        for metric, interval in dataset_intervals(part, items).items():
            key = {"bias_distribution": "distribution", "post_bias_distribution": "distribution"}.get(metric)
            if isinstance(interval, list) and key in exact[(part, dataset)] and metric == (
                    "post_bias_distribution" if part == "Post_bias" else "bias_distribution"):
                for value, (low, high) in zip(exact[(part, dataset)][key], interval):
                    assert low - 1e-9 <= value <= high + 1e-9, (part, dataset, metric)
                    vectors += 1
    assert vectors >= 3 * 2 * len(DATASETS)
    widths = {}
    for r in scalar:
        if r["dataset"] == AVERAGED:
            widths[f"{r['benchmark']}:{r['metric']}"] = round(r["width"], 4)
    with capsys.disabled():
        print(f"\n{len(scalar)} scalar cells and {vectors} vector cells, all inside; averaged-row widths at k=20:",
              widths)


# ------------------------------------------------------------------ hostile servers
HOSTILE = {
    "fewer": [{"token": "positive", "logprob": -0.1}],
    "duplicated": [{"token": "positive", "logprob": -0.5}, {"token": "positive", "logprob": -1.5}],
    "above_zero": [{"token": "positive", "logprob": 0.5}, {"token": "negative", "logprob": -1.0}],
    "nan": [{"token": "positive", "logprob": "NaN"}, {"token": "negative", "logprob": -1.0}],
    "too_much_mass": [{"token": "positive", "logprob": -0.1}, {"token": "negative", "logprob": -0.2}],
    "missing": None,
}
PROBLEM = {"fewer": "1 top log-probabilities, 2 were asked", "duplicated": "twice", "above_zero": "impossible",
           "nan": "impossible", "too_much_mass": "over 1", "missing": "no top-k list"}


class HostileServer(ThreadedServer):
    def __init__(self, top):
        class Handler(JSONHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                content = [{"token": "x", "logprob": -1.0, "top_logprobs": top}] if top is not None else None
                self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"},
                                              "logprobs": {"content": content}}]})
        self._serve(Handler)


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_a_hostile_top_k_list_is_one_line_naming_the_answer(mode):
    from StaICC.backends.openai_echo import MissingLogprobsError
    with HostileServer(HOSTILE[mode]) as server:
        backend = make_backend("openai", base_url=server.base_url, model="m", scoring="top_logprobs", chat="true",
                               top_logprobs="2", retries="0", concurrency="1")
        request = Request("Review: fine. Sentiment:", ("negative", "positive"), dataset="toy", query_index=3)
        with pytest.raises(MissingLogprobsError) as caught:
            backend.score([request])
    message = str(caught.value)
    assert "\n" not in message
    assert "dataset 'toy', query 3" in message and PROBLEM[mode] in message, message


def test_noisy_channel_prompts_are_refused_in_one_line():
    backend = make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="top_logprobs", chat="true")
    noisy = Request(("Review: fine. Sentiment: negative", "Review: fine. Sentiment: positive"), ("negative", "positive"))
    with pytest.raises(ValueError, match="cannot answer noisy-channel prompts"):
        backend.score([noisy])


def test_the_identity_says_what_changes_the_answers():
    def builder(request):
        return [{"role": "user", "content": request.prompt}]
    plain = make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="top_logprobs", chat="true")
    built = make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="top_logprobs", chat="true",
                         message_builder=builder, top_logprobs="5")
    assert plain.identity()["top_logprobs"] == 20 and built.identity()["top_logprobs"] == 5
    assert "message_builder" in built.identity() and plain.fingerprint() != built.fingerprint()
    assert "scoring=top_logprobs" in plain.non_standard
