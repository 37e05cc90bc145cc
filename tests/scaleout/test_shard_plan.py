"""The shard plan, the launch rules and the cache merge: pure functions and real SQLite, no model."""
import sqlite3
import warnings

import pytest

from StaICC.backends.base import Backend
from StaICC.backends.registry import make_backend
from StaICC.cache import CacheError, PredictionCache
from StaICC.cache.merge import merge_caches
from StaICC.engine.selection import Shard
from StaICC.errors import TamperingWarning
from StaICC.requests import Answer, Request
from StaICC.cli.launchers import (final_argv, ray_options, resolve_launch, shard_argv, shard_cache_path,
                                       without_options)
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite


def small_suite():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        suite = build_suite("Normal,GLER,Triplet_bias,Template_sens", [0, 4], 4)
        for bench in suite.values():
            for part in (bench.benchmarks().values() if hasattr(bench, "benchmarks") else [bench]):
                part.limit_test_items(8)
    return suite


class Recorder(Backend):
    """The reference backend, recording the requests of each call."""

    name = "recorder"

    def __init__(self, shares_prefixes=False, requests_per_call=256):
        self.inner = make_backend("reference")
        self.calls = []
        self.shares_prefixes, self.requests_per_call = shares_prefixes, requests_per_call

    def score(self, requests):
        self.calls.append(list(requests))
        return self.inner.score(requests)

    def identity(self):
        return {"backend": "recorder"}


def one_process_prompts():
    """Every request of the one-process suite (no cache: in plan order) and the distinct ones."""
    planned = plan_suite(make_backend("reference"), small_suite())
    requests = [r for works in planned.values() for work in works for r in work.requests()]
    per_pass = {(w.part, w.dataset): w.plan.queries_per_pass for works in planned.values() for w in works}
    return requests, per_pass


def sharded(tmp_path, count, unit="query", **backend):
    """(recorder, metadata) of each shard of the small suite."""
    out = []
    tmp_path.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        recorder = Recorder(**backend)
        meta = run_suite(recorder, suite=small_suite(), cache=str(tmp_path / f"{unit}{count}-{index}"),
                         shard=Shard(index, count, unit)).metadata
        out.append((recorder, meta))
    return out


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_plan_covers_every_distinct_request_once_and_keeps_queries_together(tmp_path, count):
    requests, per_pass = one_process_prompts()
    shards = sharded(tmp_path, count)
    asked = [[r for call in recorder.calls for r in call] for recorder, _ in shards]
    keys = [r.key() for shard in asked for r in shard]
    assert len(keys) == len(set(keys)) == len({r.key() for r in requests})
    # every request of a query group (dataset, query number within its pass) is on the group's shard,
    # unless an earlier group asked the same prompt first
    def group(r):
        return r.dataset, r.query_index - r.pass_index * per_pass[(r.benchmark, r.dataset)]
    first_group = {}
    for r in requests:
        first_group.setdefault(r.key(), group(r))
    shard_of_key = {r.key(): index for index, shard in enumerate(asked) for r in shard}
    shard_of_group = {}
    for key, g in first_group.items():
        assert shard_of_group.setdefault(g, shard_of_key[key]) == shard_of_key[key]
    # all passes of a GLER query share a group: five passes, one shard
    gler = [group(r) for r in requests if r.benchmark == "GLER"]
    assert len(set(gler)) == len(gler) // 5
    metas = [meta for _, meta in shards]
    assert [m["shard"]["distinct_requests"] for m in metas] == [len(shard) for shard in asked]
    assert all(m["shard"]["run_distinct_requests"] == len(set(keys)) for m in metas)
    if count in (2, 3):
        weights = [m["shard"]["weight"] for m in metas]
        assert max(weights) <= 1.2 * min(weights)  # balanced by the rows' text
        characters = [sum(len(r.prompt) for r in shard) for shard in asked]
        assert max(characters) <= 1.2 * min(characters)


def test_the_plan_is_deterministic_and_its_hash_names_it(tmp_path):
    digests = {(count, again): sharded(tmp_path / f"{again}", count)[0][1]["shard"]["plan_sha256"]
               for count in (2, 3) for again in range(2)}
    assert digests[(3, 0)] == digests[(3, 1)] and digests[(2, 0)] == digests[(2, 1)]
    assert digests[(3, 0)] != digests[(2, 0)]
    second = sharded(tmp_path / "again", 3)[1][1]["shard"]
    assert second["plan_sha256"] == digests[(3, 0)] and second["index"] == 1


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


def test_more_shards_than_units_are_refused_before_anything_is_allocated(tmp_path):
    # units: one per query number of each dataset (Normal's 8 items x 2 repeats is the longest pass)
    with pytest.raises(ValueError, match=r"^--shard 0/100000000: the run has 32 queries, so it can be split into "
                                         r"at most 32 shards$"):
        run_suite(make_backend("reference"), suite=small_suite(), cache=str(tmp_path / "c"), shard=(0, 100_000_000))
    assert not (tmp_path / "c").exists()  # refused before the cache was opened
    requests, _ = one_process_prompts()
    with pytest.raises(ValueError, match=f"the run has {len(requests)} requests, so it can be split into at most"):
        run_suite(make_backend("reference"), suite=small_suite(), cache=str(tmp_path / "c"), shard=(0, 10 ** 9, "call"))


def test_parse_shard():
    assert Shard.parse("2/4") == Shard(2, 4) and Shard.parse("0/3", "call").unit == "call"
    for bad, message in (("4/4", "must be <= 3"), ("1", "I/N"), ("a/2", "I/N"), ("0/0", "must be >= 1"),
                         ("-1/2", "I/N")):
        with pytest.raises(ValueError, match=message):
            Shard.parse(bad)
    with pytest.raises(ValueError, match="unit must be one of query, call"):
        Shard(0, 2, "dataset")


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


@pytest.mark.parametrize("shares_prefixes", [True, False])
def test_a_call_unit_shard_of_one_makes_the_calls_of_one_process(tmp_path, shares_prefixes):
    whole = Recorder(shares_prefixes, 7)
    run_suite(whole, suite=small_suite())
    (alone, meta), = sharded(tmp_path, 1, "call", shares_prefixes=shares_prefixes, requests_per_call=7)
    assert [[(r.prompt, r.label_space) for r in call] for call in alone.calls] == \
        [[(r.prompt, r.label_space) for r in call] for call in whole.calls]
    assert meta["shard"]["unit"] == "call"


def test_call_unit_shards_make_the_one_process_calls(tmp_path):
    whole = Recorder(True, 5)
    run_suite(whole, suite=small_suite())
    made, digests = [], set()
    for recorder, meta in sharded(tmp_path, 3, "call", shares_prefixes=True, requests_per_call=5):
        assert meta["shard"]["unit"] == "call"
        made.extend(recorder.calls)
        digests.add(meta["shard"]["plan_sha256"])

    def prompts(calls):
        return sorted([(r.prompt, r.label_space) for r in call] for call in calls)
    assert prompts(made) == prompts(whole.calls)  # the same calls, split between the shards
    assert len(digests) == 1
    assert digests != {sharded(tmp_path / "q", 3, shares_prefixes=True)[0][1]["shard"]["plan_sha256"]}
