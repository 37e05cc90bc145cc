"""The one runner: plan -> distinct requests -> score_requests once per pass with new prompts -> summarize."""
import hashlib

import pytest

from StaICC import GLER, Normal
from StaICC.backends.base import Backend, FunctionBackend
from StaICC.engine import outcome as outcome_module
from StaICC.engine import runner
from StaICC.errors import InferenceError
from StaICC.requests import Request
from StaICC.subbenchmarks import suite as suite_module
from StaICC.subbenchmarks.suite import run_suite

ONE = ["financial_phrasebank"]
TWO = ["financial_phrasebank", "rotten_tomatoes"]


def scores(prompt, label_space):
    text = prompt if isinstance(prompt, str) else "\x01".join(prompt)
    h = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return [((h >> (3 * i)) % 11) / 3.0 for i in range(len(label_space))]


@pytest.fixture
def score_calls(monkeypatch):
    """Every score_requests call the runner makes: (description, requests)."""
    calls = []
    real = runner.score_requests

    def spy(backend, requests, **options):
        calls.append((options.get("description", ""), list(requests)))
        return real(backend, requests, **options)
    monkeypatch.setattr(runner, "score_requests", spy)
    return calls


def test_a_one_dataset_suite_calls_score_requests_once_per_pass_with_new_prompts(score_calls):
    result = run_suite(scores, "all", datasets=ONE, progress=False)
    # Normal 1, Contextual 1, Domain 1, Post_bias 0 (Normal's prompts), GLER 4 (its first pass is Normal's),
    # Template_sens 8 (its first template is the standard's), Demo_sens 1
    assert len(score_calls) == result.metadata["score_calls"] == 16
    asked = [(r.prompt, r.label_space) for _, requests in score_calls for r in requests]
    assert len(asked) == len(set(asked)) == result.metadata["distinct_prompts"] == result.metadata["asked"]
    for description, requests in score_calls:
        assert len({(r.benchmark, r.pass_index) for r in requests}) == 1  # one call: one pass's new prompts
        assert description.startswith(requests[0].benchmark)
    assert sum(len(r) for _, r in score_calls) < result.metadata["prompts"]


def test_a_sub_benchmark_call_is_the_suite_of_one(score_calls):
    alone = GLER(datasets=ONE)(scores)
    assert [len(r) for _, r in score_calls] == [1024] * 5  # no cache: every request asked, pass by pass
    assert [d for d, _ in score_calls] == [f"GLER financial_phrasebank pass {i}/5" + s for i, s in
                                          zip(range(1, 6), [" (label noise 0.00)", " (label noise 0.25)",
                                                             " (label noise 0.50)", " (label noise 0.75)",
                                                             " (label noise 1.00)"])]
    assert run_suite(scores, "GLER", datasets=ONE, progress=False)["GLER"] == alone


def test_every_experimentor_is_checked_once_and_the_model_wrapped_once(monkeypatch):
    from StaICC.subbenchmarks import experimentor, generic
    checks, wraps = [], []
    real_check, real_wrap = experimentor.check_experimentor, suite_module.as_backend
    monkeypatch.setattr(experimentor, "check_experimentor", lambda e: checks.append(e) or real_check(e))
    monkeypatch.setattr(suite_module, "as_backend", lambda *a, **k: wraps.append(a) or real_wrap(*a, **k))
    monkeypatch.setattr(generic, "as_backend", lambda *a, **k: wraps.append(a) or real_wrap(*a, **k))
    run_suite(scores, "Normal,GLER", datasets=TWO, progress=False)
    assert len(checks) == 4 and len(wraps) == 1  # 2 sub-benchmarks x 2 datasets; one backend
    checks.clear(), wraps.clear()
    Normal(datasets=TWO)(scores)
    assert len(checks) == 2 and len(wraps) == 1


def test_the_fake_backend_and_its_flag_are_gone():
    assert not hasattr(Backend, "serves_validated_answers")
    assert not hasattr(suite_module, "_Answered")
    assert not hasattr(outcome_module, "answer_plan")


def test_distinct_requests_merges_repeats_and_keeps_their_places():
    bench = Normal(datasets=ONE)
    work = bench[0].work()
    requests = work.requests()
    backend = FunctionBackend(scores)
    batches = runner.distinct_requests([work, work], [requests, requests], [backend, backend],
                                       distinct=True, in_text_order=False)
    assert len(batches) == 1  # the second work's only pass asks nothing new
    (batch,) = batches
    assert len(batch.requests) == len({(r.prompt, r.label_space) for r in requests})
    places = sorted(p for targets in batch.targets for p in targets)
    assert places == sorted((w, i) for w in (0, 1) for i in range(len(requests)))
    every = runner.distinct_requests([work, work], [requests, requests], [backend, backend],
                                     distinct=False, in_text_order=False)
    assert [len(b.requests) for b in every] == [len(requests)] * 2
    ordered = runner.distinct_requests([work], [requests], [backend], distinct=True, in_text_order=True)
    texts = [r.prompt for r in ordered[0].requests]
    assert texts == sorted(texts)


def test_a_failure_in_a_later_pass_keeps_the_earlier_passes_and_finished_datasets():
    calls = {"n": 0}

    def fails_in_pass_three(prompt, label_space):
        calls["n"] += 1
        if len(label_space) == 2 and calls["n"] > 5120 + 2 * 1024 + 7:
            raise RuntimeError("out of memory")
        return scores(prompt, label_space)

    bench = GLER(datasets=TWO)
    with pytest.raises(InferenceError, match="out of memory at dataset 'rotten_tomatoes', query 2055") as info:
        bench(fails_in_pass_three)
    assert list(info.value.completed_results) == ["financial_phrasebank"]
    assert len(info.value.partial_predictions) == 2 * 1024 + 7
    assert list(bench.last_partial_results) == ["financial_phrasebank"]


def test_records_keep_no_prompt_and_rebuild_one_on_demand():
    bench = Normal(datasets=ONE)
    result = bench(scores)
    part = result.records._parts[0]
    held = [v for v in vars(part).values() if isinstance(v, list) and v]
    assert not any(isinstance(v[0], (Request, str)) for v in held)
    prompts = bench[0].prompt_set()
    for i in (0, 1, 511, len(prompts) - 1):
        assert part.prompt(i) == prompts[i]
        assert result.records[i]["prompt_sha256"] == hashlib.sha256(prompts[i].encode()).hexdigest()


def test_requests_per_call_is_passed_down_and_the_backend_is_left_alone():
    sizes = []

    def batched(prompt, label_space):
        sizes.append(len(prompt))
        return [0] * len(prompt)
    backend = FunctionBackend(batched, batched=True)
    before = backend.requests_per_call
    run_suite(backend, "Normal", datasets=ONE, progress=False, requests_per_call=300)
    assert sizes == [300, 300, 300, 124] and backend.requests_per_call == before


def test_batch_size_is_the_older_name_of_requests_per_call():
    backend = FunctionBackend(scores, batch_size=5)
    assert backend.requests_per_call == backend.batch_size == 5
    backend.batch_size = 7
    assert backend.requests_per_call == 7
