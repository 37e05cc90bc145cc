"""The runner's selections against one process: shards of both units, dry runs, write-out, query subsets.

Every sharded run is merged (a real SQLite cache per shard) and summarised again: its results
must equal, bit for bit, the run of one process.  The shard plan of the ``query`` unit is made
from the works' structure without writing prompts, so it is checked here against the prompts'
text: every distinct prompt is asked by exactly one shard, including prompts that several
query groups ask (k = 0, repeated demonstration rows, input texts that repeat).
"""
import hashlib
import warnings

import pytest

from StaICC.backends.base import Backend
from StaICC.backends.registry import make_backend
from StaICC.cache.merge import merge_caches
from StaICC.custom_datasets import from_records
from StaICC.engine.selection import AnswerPolicy, Nothing, QuerySubset, Shard
from StaICC.errors import TamperingWarning
from StaICC.subbenchmarks.builtin import Normal, Template_sens
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


def repeating_dataset():
    """Input texts that repeat (with different labels), so texts meet under different indexes."""
    records = [{"text": f"{WORDS[i % 5]} {WORDS[(i // 5) % 3]}", "label": ["no", "yes"][(i * 7) % 3 % 2]}
               for i in range(90)]
    return from_records(records, name="repeating", input_columns="text", label_column="label",
                        split_sizes=(10, 20, 60))


def suite(config):
    """A small suite: (benchmarks, datasets, k, options) -> fresh sub-benchmarks (8 test items each)."""
    benchmarks, datasets, k, options = config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        loaded = [repeating_dataset() if d == "repeating" else d for d in datasets]
        return build_suite(benchmarks, loaded, k, test_items=QuerySubset.first(8), **options)


STANDARD = ("Normal,GLER,Triplet_bias,Template_sens,Demo_sens", [0, 4], 4, {})
REPEATS = ("Normal,GLER,Triplet_bias,Demo_sens", ["repeating"], 1, {})
NO_DEMONSTRATIONS = ("Normal,GLER,Demo_sens", [4], 0, {})
NOISY = ("Normal,Triplet_bias", [1], 2, {"noisy_channel": True})
EMPTY_DOMAIN = ("Domain_bias,Contextual_bias,Normal", ["repeating"], 1,
                {"per_benchmark": {"Domain_bias": {"domain_query_length": 0}}})
SHORT_DOMAIN = ("Domain_bias,Triplet_bias,Normal", ["repeating"], 0,
                {"per_benchmark": {"Domain_bias": {"domain_query_length": 1}}})


class Recorder(Backend):
    """A model that records every request it is asked; ``function`` answers (a plain function of the prompt)."""

    name = "recorder"

    def __init__(self, function=None, requests_per_call=256):
        self.function = function
        self.inner = make_backend("reference") if function is None else None
        self.asked = []
        self.requests_per_call = requests_per_call

    def score(self, requests):
        self.asked.extend(requests)
        if self.inner is not None:
            return self.inner.score(requests)
        from StaICC.requests import Answer
        return [Answer(self.function(r.prompt, r.label_space)) for r in requests]

    def identity(self):
        return {"backend": "recorder", "function": self.function is not None}


def hashed(prompt, label_space):
    """A plain function: scores from the prompt's hash (deterministic, never a probability row)."""
    digest = hashlib.sha256(repr(prompt).encode()).digest()
    return [digest[i] / 64 - 2 for i in range(len(label_space))]


def one_process(config, function=None):
    return run_suite(Recorder(function), suite=suite(config))


def merged_run(config, tmp_path, count, unit, function=None, requests_per_call=256):
    """(result over the merged shard caches, per shard the recorder); every shard printed the same plan digest,
    and a dry run of the plan (what a launcher's final run records) computes it too."""
    paths, recorders, digests = [], [], set()
    for index in range(count):
        recorder = Recorder(function, requests_per_call)
        paths.append(str(tmp_path / f"{unit}-{index}.sqlite"))
        meta = run_suite(recorder, suite=suite(config), cache=paths[-1], selection=Shard(index, count, unit)).metadata
        recorders.append(recorder)
        digests.add(meta["shard"]["plan_sha256"])
    planned = run_suite(Recorder(function, requests_per_call), suite=suite(config),
                        selection=Nothing(Shard(0, count, unit))).metadata
    assert digests == {planned["shard"]["plan_sha256"]}
    merge_caches(tmp_path / f"{unit}-all.sqlite", paths)
    final = run_suite(Recorder(function), suite=suite(config), cache=str(tmp_path / f"{unit}-all.sqlite"))
    return final, recorders


def distinct_texts(config):
    """The distinct (prompt, label space) pairs of the one-process run, by the prompts' own text."""
    planned = plan_suite(make_backend("reference"), suite(config))
    return {(w.dataset, r.prompt, r.label_space) for works in planned.values() for w in works for r in w.requests()}


@pytest.mark.parametrize("config, function, unit", [
    (STANDARD, None, "query"), (STANDARD, None, "call"), (STANDARD, hashed, "query"),
    (REPEATS, hashed, "query"), (NO_DEMONSTRATIONS, None, "query"), (REPEATS, None, "call")])
def test_shards_merge_to_the_one_process_result_and_ask_each_prompt_once(tmp_path, config, function, unit):
    whole = one_process(config, function)
    final, recorders = merged_run(config, tmp_path, 3, unit, function)
    assert final.metadata["asked"] == 0
    assert repr(dict(final)) == repr(dict(whole))  # bit for bit
    asked = [(r.dataset, r.prompt, r.label_space) for recorder in recorders for r in recorder.asked]
    assert len(asked) == len(set(asked)) and set(asked) == distinct_texts(config)


@pytest.mark.parametrize("config", [STANDARD, REPEATS, NO_DEMONSTRATIONS, NOISY, EMPTY_DOMAIN, SHORT_DOMAIN])
def test_a_dry_run_counts_what_the_run_asks(tmp_path, config):
    cache = str(tmp_path / "half.sqlite")
    run_suite(Recorder(), suite=suite(config), cache=cache, selection=Shard(0, 2))  # half of the answers
    dry = run_suite(Recorder(), suite=suite(config), cache=cache, selection=Nothing()).metadata
    uncached = run_suite(Recorder(), suite=suite(config), selection=Nothing()).metadata
    recorder = Recorder()
    ran = run_suite(recorder, suite=suite(config), cache=cache).metadata
    assert (dry["prompts"], dry["distinct_prompts"]) == (ran["prompts"], ran["distinct_prompts"])
    assert (uncached["prompts"], uncached["distinct_prompts"]) == (ran["prompts"], ran["distinct_prompts"])
    assert dry["from_cache"] == ran["from_cache"] > 0 and uncached["from_cache"] == 0
    assert dry["distinct_prompts"] - dry["from_cache"] == ran["asked"] == len(recorder.asked) > 0
    assert ran["distinct_prompts"] == len({(d, p, s) for d, p, s in distinct_texts(config)})


def test_a_dry_run_writes_no_prompt_without_a_cache(monkeypatch):
    from StaICC.prompt.template import CompiledTemplate
    written = []
    monkeypatch.setattr(CompiledTemplate, "write_many", lambda *_, **__: written.append(1) or [])
    meta = run_suite(Recorder(), suite=suite(STANDARD), selection=Nothing()).metadata
    assert meta["distinct_prompts"] > 0 and meta["asked"] == 0 and written == []


def test_write_out_prints_the_first_prompts_of_each_work_as_the_run_asks_them():
    lines, recorder = [], Recorder()
    benches = suite(STANDARD)
    run_suite(recorder, suite=benches, policy=AnswerPolicy(write_out=2, out=lines.append))
    asked = {r.prompt for r in recorder.asked}
    expected = []
    for part, works in plan_suite(recorder, suite(STANDARD)).items():
        for work in works:
            for request in work.requests()[:2]:
                expected.append((f"===== {part} / {work.dataset}: prompt {request.query_index + 1} of "
                                 f"{work.plan.total} =====", request.prompt))
    printed = list(zip(lines[::2], lines[1::2]))
    assert sorted(printed) == sorted(expected) and len(printed) == len(lines) // 2
    assert all(prompt in asked for _, prompt in printed)  # each printed prompt is one the model is asked


def test_a_query_subset_evaluates_those_items_with_their_rows_of_the_full_run():
    full = Normal(datasets=[4])
    name = full.dataset_names()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        chosen = Normal(datasets=[4], test_items=QuerySubset.of({(None, name): (5, 2, 9, 40, 17)}, "five items"))
    result, whole = chosen(make_backend("reference")), full(make_backend("reference"))
    records, whole_records = list(result.records), {(r["test_index"], r["repeat"]): r for r in whole.records}
    assert [r["test_index"] for r in records] == [5, 2, 9, 40, 17] * 2
    for record in records:
        same = whole_records[(record["test_index"], record["repeat"])]
        assert (record["demonstrations"], record["prediction"], record["prompt_sha256"]) == \
            (same["demonstrations"], same["prediction"], same["prompt_sha256"])
    from StaICC.engine.outcome import compute_metrics
    metrics = dict(chosen[0].metrics)
    expected = compute_metrics(metrics, [r["label"] for r in records], [r["prediction"] for r in records], name)
    assert result["Divided results"][name] == expected
    available = len(full[0].triplet_dataset.test)
    assert result.metadata["non_standard_settings"][name] == [f"evaluated 5 of {available} test items (five items)"]


def test_the_first_n_items_are_the_limit_bit_for_bit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        limited = Template_sens(datasets=[0])
        limited.limit_test_items(12)
        subset = Template_sens(datasets=[0], test_items=QuerySubset.first(12))
    model = make_backend("reference")
    a, b = limited(model), subset(model)
    a.metadata.pop("seconds"), b.metadata.pop("seconds")
    assert repr(dict(a)) == repr(dict(b)) and a.metadata == b.metadata
    assert list(a.records) == list(b.records)


def test_a_picked_subset_sees_each_datasets_labels_and_bad_items_are_refused():
    seen = {}

    def pick(benchmark, dataset, labels):
        seen[(benchmark, dataset)] = list(labels)
        return [i for i, label in enumerate(labels) if label == 0][:4] + [i for i, label in enumerate(labels)
                                                                         if label == 1][:4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=[0], test_items=QuerySubset.picked(pick, "four of each label"))
    labels = bench[0].triplet_dataset.test.label_indexes()
    assert seen == {("Normal", bench.dataset_names()[0]): labels}
    assert [labels[i] for i in bench[0].plan().test_items] == [0] * 4 + [1] * 4
    for items, message in (((1, 1), "repeat an index"), ((5000,), "not an index of the test part"), ((), "no test")):
        with pytest.raises(ValueError, match=message):
            Normal(datasets=[0], test_items=QuerySubset.of({(None, "GLUE-SST2"): items}))


def test_a_work_is_frozen_when_planned():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = build_suite("GLER,Template_sens,Domain_bias", [0], 4, test_items=QuerySubset.first(6))
        experimentors = [bench[name][0] for name in ("GLER", "Template_sens", "Domain_bias")]
        works = [e.work() for e in experimentors]
        before = [[(r.prompt, r.label_space) for r in w.requests()] for w in works]
        for experimentor in experimentors:
            writer = experimentor.prompt_former
            writer.change_instruction("something else: ")
            writer.change_label_space(["x", "y"])
            writer.set_label_wrong_rate(0.5)
            writer.cut_by_length = 3
            experimentor.set_k(2)
        bench["GLER"].re_initialize(1)
    after = [[(r.prompt, r.label_space) for r in w.requests()] for w in works]
    assert after == before
    assert [[(r.prompt, r.label_space) for r in w.requests()] for w in (e.work() for e in experimentors)] != before


def test_a_shard_needs_a_cache_and_no_more_shards_than_queries(tmp_path):
    # units: Demo_sens's 8 items x 8 repeats, the longest pass of the dataset
    with pytest.raises(ValueError, match="a shard run needs a cache"):
        run_suite(Recorder(), suite=suite(NO_DEMONSTRATIONS), selection=Shard(0, 2))
    with pytest.raises(ValueError, match=r"^--shard 3/100000000: the run has 64 queries"):
        run_suite(Recorder(), suite=suite(NO_DEMONSTRATIONS), cache=str(tmp_path / "c"),
                  selection=Shard(3, 100_000_000))
