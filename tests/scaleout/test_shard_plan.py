"""The shard plan, the launch rules and the cache merge: pure functions and real SQLite, no model."""
import sqlite3
import warnings

import pytest

from StaICC.backends.registry import make_backend
from StaICC.cache import CacheError, PredictionCache
from StaICC.cache.merge import merge_caches
from StaICC.errors import TamperingWarning
from StaICC.requests import Answer, Request
from StaICC.scaleout.launchers import (final_argv, ray_options, resolve_launch, shard_argv, shard_cache_path,
                                       without_options)
from StaICC.scaleout.shards import group_keys, parse_shard, planned_requests, select_shard, shard_plan
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite


def small_suite():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        suite = build_suite("Normal,GLER,Triplet_bias,Template_sens", [0, 4], 4)
        for bench in suite.values():
            for part in (bench.benchmarks().values() if hasattr(bench, "benchmarks") else [bench]):
                part.limit_test_items(8)
    return suite


@pytest.fixture(scope="module")
def run_requests():
    return planned_requests(plan_suite(make_backend("reference"), small_suite()))


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_plan_covers_every_distinct_request_once_and_keeps_queries_together(run_requests, count):
    plan = shard_plan(run_requests, count)
    chosen = [select_shard(run_requests, index, count) for index in range(count)]
    keys = [r.key() for shard in chosen for r in shard]
    assert len(keys) == len(set(keys)) == len({r.key() for r in run_requests})
    # every request of a query group is on the shard of the group's first request, unless an
    # earlier group asked the same prompt first
    first_group = {}
    for request, group in zip(run_requests, group_keys(run_requests)):
        first_group.setdefault(request.key(), group)
    shard_of_group = {}
    for key, group in first_group.items():
        assert shard_of_group.setdefault(group, plan.shard_of_key[key]) == plan.shard_of_key[key]
    # all passes of a GLER query share a group: five passes, one shard
    gler = [g for r, g in zip(run_requests, group_keys(run_requests)) if r.benchmark == "GLER"]
    assert len(set(gler)) == len(gler) // 5
    if count > 1:
        assert max(plan.characters) <= 1.2 * min(plan.characters)  # balanced by characters


def test_the_plan_is_deterministic_and_its_hash_names_it(run_requests):
    again = planned_requests(plan_suite(make_backend("reference"), small_suite()))
    assert shard_plan(run_requests, 3).digest == shard_plan(again, 3).digest
    assert shard_plan(run_requests, 3).digest != shard_plan(run_requests, 2).digest
    assert shard_plan(run_requests, 3).describe(1)["plan_sha256"] == shard_plan(again, 3).digest


def test_shard_runs_merge_to_the_one_process_result(tmp_path):
    backend = make_backend("reference")
    paths = []
    for index in range(3):
        paths.append(str(tmp_path / f"s{index}.sqlite"))
        meta = run_suite(backend, suite=small_suite(), cache=paths[-1], shard=(index, 3)).metadata
        assert meta["asked"] == meta["distinct_prompts"] and meta["shard"]["index"] == index
    counts = merge_caches(tmp_path / "all.sqlite", paths)
    assert counts["added"] == counts["read"]
    merged = run_suite(backend, suite=small_suite(), cache=str(tmp_path / "all.sqlite"))
    assert merged.metadata["asked"] == 0
    assert repr(dict(merged)) == repr(dict(run_suite(backend, suite=small_suite())))
    with pytest.raises(ValueError, match="a shard run needs a cache"):
        run_suite(backend, suite=small_suite(), shard=(0, 2))


def test_parse_shard():
    assert parse_shard("2/4") == (2, 4)
    for bad, message in (("4/4", "must be <= 3"), ("1", "I/N"), ("a/2", "I/N"), ("0/0", "must be >= 1"),
                         ("-1/2", "I/N")):
        with pytest.raises(ValueError, match=message):
            parse_shard(bad)


def test_resolve_launch_from_arguments_and_environment():
    assert resolve_launch(None, None, {}).kind == "single"
    assert resolve_launch("1/3", None, {"WORLD_SIZE": "2"}) .index == 1
    rank = resolve_launch(None, None, {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"})
    assert (rank.kind, rank.index, rank.count, rank.local_rank) == ("torchrun", 3, 4, 1)
    assert resolve_launch(None, None, {"WORLD_SIZE": "1"}).kind == "single"
    task = resolve_launch(None, "slurm", {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4",
                                          "SLURM_ARRAY_TASK_MIN": "2"})
    assert (task.kind, task.index, task.count) == ("slurm", 3, 4)
    ray = resolve_launch(None, "ray:address=auto,shards=4,num_gpus=1", {})
    assert ray.kind == "ray" and ray.options == {"address": "auto", "shards": "4", "num_gpus": "1"}
    for shard, launcher, env, message in (
            ("0/2", "ray", {}, "either --shard"), (None, "mpi", {}, "--launcher must be one of"),
            (None, "slurm", {}, "SLURM_ARRAY_TASK_ID"), (None, "torchrun", {}, "WORLD_SIZE and RANK"),
            (None, None, {"WORLD_SIZE": "two"}, "WORLD_SIZE must be an integer"),
            (None, "slurm:x=1", {}, "takes no options")):
        with pytest.raises(ValueError, match=message):
            resolve_launch(shard, launcher, env)
    for text, message in (("shards=0", "shards must be an integer >= 1"), ("gpus=1", "unknown option"),
                          ("num_gpus=-1", "num_gpus must be a number")):
        with pytest.raises(ValueError, match=message):
            ray_options(text)


def test_shard_command_lines():
    argv = ["run", "--model", "hf", "--cache", "c.sqlite", "--output-dir=out", "--log-samples",
            "--launcher", "ray:shards=2", "--k", "4"]
    assert without_options(argv) == ["run", "--model", "hf", "--k", "4"]
    assert shard_argv(argv, "c.sqlite", 1, 2)[-4:] == ["--shard", "1/2", "--cache", shard_cache_path("c.sqlite", 1, 2)]
    assert final_argv(argv) == ["run", "--model", "hf", "--cache", "c.sqlite", "--output-dir=out", "--log-samples",
                                "--k", "4"]


LABELS = ("a", "b")


def fill(path, answers, fingerprint="model"):
    with PredictionCache(path) as cache:
        cache.register_model(fingerprint, {"backend": "test"})
        cache.store(fingerprint, [Request(p, LABELS) for p in answers], [Answer(v) for v in answers.values()])


def test_merge_copies_equal_answers_and_refuses_a_conflict_naming_the_key(tmp_path):
    fill(tmp_path / "a", {"x": [0.25, 0.75], "y": 1})
    fill(tmp_path / "b", {"y": 1, "z": [0.5, 0.5]})
    fill(tmp_path / "b", {"w": 0}, fingerprint="other")
    counts = merge_caches(tmp_path / "out", [tmp_path / "a", tmp_path / "b"])
    assert counts == {"read": 5, "added": 4, "equal": 0, "models": 2}
    with PredictionCache(tmp_path / "out") as out:
        found = out.lookup("model", [Request(p, LABELS) for p in "xyz"])
        assert [a.prediction for a in found] == [[0.25, 0.75], 1, [0.5, 0.5]]
        assert {m["fingerprint"]: m["identity"] for m in out.models()}["other"] == {"backend": "test"}
    fill(tmp_path / "c", {"x": [0.25, 0.7500000000000001]})
    key = Request("x", LABELS).key()
    with pytest.raises(CacheError, match=f"conflicting answers for key {key}"):
        merge_caches(tmp_path / "out2", [tmp_path / "a", tmp_path / "c"])
    with pytest.raises(CacheError, match=f"conflicting answers for key {key}"):
        merge_caches(tmp_path / "out", [tmp_path / "c"])  # against what the output already holds
    with PredictionCache(tmp_path / "out") as out:
        assert out.stats()["entries"] == 4  # nothing written


def test_merge_refuses_a_damaged_entry_and_an_output_among_the_inputs(tmp_path):
    fill(tmp_path / "a", {"x": [0.25, 0.75]})
    connection = sqlite3.connect(tmp_path / "a")
    connection.execute("UPDATE predictions SET parsed = 0")
    connection.commit()
    connection.close()
    with pytest.raises(CacheError, match="fails its CRC check"):
        merge_caches(tmp_path / "out", [tmp_path / "a"])
    with pytest.raises(ValueError, match="also an input"):
        merge_caches(tmp_path / "a", [tmp_path / "a"])
    with pytest.raises(ValueError, match="does not exist"):
        merge_caches(tmp_path / "out", [tmp_path / "missing"])


class Recording:
    """A reference backend that records the prompts of each call."""

    def __init__(self, shares_prefixes, batch_size):
        from StaICC.backends.base import Backend

        class Recorder(Backend):
            name = "recorder"

            def __init__(self):
                self.inner = make_backend("reference")
                self.calls = []

            def score(self, requests):
                self.calls.append([(r.prompt, r.label_space) for r in requests])
                return self.inner.score(requests)

            def identity(self):
                return {"backend": "recorder"}

        self.backend = Recorder()
        self.backend.shares_prefixes = shares_prefixes
        self.backend.batch_size = batch_size


@pytest.mark.parametrize("shares_prefixes", [True, False])
def test_one_process_calls_are_the_calls_the_suite_makes(shares_prefixes):
    from StaICC.scaleout.shards import one_process_calls
    recording = Recording(shares_prefixes, 7).backend
    suite = small_suite()
    planned = plan_suite(recording, suite)
    run_suite(recording, suite=suite, planned=planned)
    predicted = [[(r.prompt, r.label_space) for r in call] for call in one_process_calls(recording, planned)]
    assert predicted == recording.calls


def test_call_unit_shards_make_the_one_process_calls(tmp_path):
    from StaICC.scaleout.shards import one_process_calls
    whole = Recording(True, 5).backend
    run_suite(whole, suite=small_suite())
    made = []
    for index in range(3):
        shard = Recording(True, 5).backend
        meta = run_suite(shard, suite=small_suite(), cache=str(tmp_path / f"s{index}"), shard=(index, 3, "call"))
        assert meta.metadata["shard"]["unit"] == "call"
        made.extend(shard.calls)
    assert sorted(made) == sorted(whole.calls)  # the same calls, split between the shards
    planned = plan_suite(whole, small_suite())
    calls = one_process_calls(whole, planned)
    assert shard_plan(planned_requests(planned), 3, calls).digest != shard_plan(planned_requests(planned), 3).digest
