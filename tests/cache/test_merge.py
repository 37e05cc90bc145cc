"""``merge_caches`` in SQL: what it copies, what it refuses, and that a failed or killed merge writes nothing.

Real SQLite files throughout; the kill test kills a real merging process.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import StaICC.cache.merge as merge_module
from StaICC.cache import CacheError, PredictionCache
from StaICC.cache.codec import _crc
from StaICC.cache.merge import MAX_ATTACHED, CacheFacts, check_mergeable, merge_caches
from StaICC.requests import Answer, Request
from conftest import REPO_ROOT

LABELS = ("a", "b")
ENTRIES = "SELECT m.fingerprint, p.content_key, p.check_key, p.value, p.text, p.parsed, p.crc " \
          "FROM predictions p JOIN models m ON m.id = p.model ORDER BY m.fingerprint, p.content_key"


def fill(path, answers, fingerprint="model", identity=None):
    with PredictionCache(path) as cache:
        cache.register_model(fingerprint, identity or {"backend": "test"})
        cache.store(fingerprint, [Request(p, LABELS) for p in answers], [Answer(v) for v in answers.values()])


def entries(path):
    with sqlite3.connect(path) as connection:
        rows = connection.execute(ENTRIES).fetchall()
    connection.close()
    return rows


def state(path):
    """Every entry and model row of a cache, for "left as it was"."""
    with sqlite3.connect(path) as connection:
        models = connection.execute("SELECT * FROM models ORDER BY id").fetchall()
    connection.close()
    return entries(path), models


def test_entries_keep_their_model_when_the_files_number_models_differently(tmp_path):
    fill(tmp_path / "out", {"x": 0}, fingerprint="second")  # "second" is model 1 in the output
    fill(tmp_path / "in", {"y": 1}, fingerprint="first")
    fill(tmp_path / "in", {"y": [0.25, 0.75], "x": 1}, fingerprint="second", identity={"backend": "two"})
    with pytest.raises(CacheError, match="conflicting answers for key " + Request("x", LABELS).key()):
        merge_caches(tmp_path / "out", [tmp_path / "in"])
    fill(tmp_path / "in2", {"y": 1}, fingerprint="first")
    fill(tmp_path / "in2", {"y": [0.25, 0.75], "x": 0}, fingerprint="second")
    assert merge_caches(tmp_path / "out", [tmp_path / "in2"]) == {"read": 3, "added": 2, "equal": 1, "models": 2}
    with PredictionCache(tmp_path / "out") as out:
        assert out.lookup("first", [Request("y", LABELS)]) == [Answer(1)]
        assert out.lookup("second", [Request(p, LABELS) for p in "xy"]) == [Answer(0), Answer([0.25, 0.75])]
        assert {m["fingerprint"]: m["entries"] for m in out.models()} == {"second": 2, "first": 1}


def test_a_conflict_between_inputs_names_both_and_writes_nothing(tmp_path):
    fill(tmp_path / "out", {"w": 0})
    before = state(tmp_path / "out")
    fill(tmp_path / "a", {"x": [0.25, 0.75], "y": 1})
    fill(tmp_path / "b", {"z": 0})
    fill(tmp_path / "c", {"x": [0.25, 0.7500000000000001]})
    key = Request("x", LABELS).key()
    with pytest.raises(CacheError, match=f"conflicting answers for key {key} .* in {tmp_path / 'a'} and "
                                         f"{tmp_path / 'c'};"):
        merge_caches(tmp_path / "out", [tmp_path / "a", tmp_path / "b", tmp_path / "c"])
    assert state(tmp_path / "out") == before


def test_a_forged_check_digest_is_a_conflict(tmp_path):
    """Same key, same value, another BLAKE2b: a SHA-256 collision or an edit, never merged."""
    fill(tmp_path / "a", {"x": 1})
    fill(tmp_path / "b", {"x": 1})
    with sqlite3.connect(tmp_path / "b") as raw:
        key, check = raw.execute("SELECT content_key, check_key FROM predictions").fetchone()
        forged = bytes(byte ^ 0xFF for byte in check)
        raw.execute("UPDATE predictions SET check_key = ?, crc = ?", (forged, _crc("model", key, forged, 1, None, 1)))
    raw.close()
    with pytest.raises(CacheError, match=f"conflicting answers for key {key.hex()}"):
        merge_caches(tmp_path / "out", [tmp_path / "a", tmp_path / "b"])


@pytest.mark.parametrize("edit", ["UPDATE predictions SET value = 0.5", "UPDATE predictions SET value = 'é'",
                                  "UPDATE predictions SET text = x'ff'", "UPDATE predictions SET crc = crc + 1"])
def test_a_damaged_entry_is_refused_naming_its_file_and_nothing_is_written(tmp_path, edit):
    fill(tmp_path / "out", {"w": 0})
    before = state(tmp_path / "out")
    fill(tmp_path / "good", {"x": 1, "y": 0})
    fill(tmp_path / "bad", {"z": 1})
    with sqlite3.connect(tmp_path / "bad") as raw:
        raw.execute(edit)
    raw.close()
    with pytest.raises(CacheError, match=f"{tmp_path / 'bad'}'?: is damaged: the entry with key "
                                         f"{Request('z', LABELS).key()} fails its CRC check"):
        merge_caches(tmp_path / "out", [tmp_path / "good", tmp_path / "bad"])
    assert state(tmp_path / "out") == before


def damage_a_middle_page(path):
    with PredictionCache(path) as cache:
        cache.close()  # the WAL folded into the file
    pages = os.path.getsize(path) // 4096
    with open(path, "r+b") as handle:  # garbage over a page in the middle
        handle.seek((pages // 2) * 4096)
        handle.write(bytes(range(256)) * 16)


def test_a_file_damaged_deep_inside_is_named_and_nothing_is_written(tmp_path):
    fill(tmp_path / "out", {"w": 0})
    before = state(tmp_path / "out")
    fill(tmp_path / "good", {"x": 1})
    fill(tmp_path / "bad", {f"prompt {i} " + "x" * 300: [0.5, 0.5] for i in range(3000)})
    damage_a_middle_page(tmp_path / "bad")
    with pytest.raises(CacheError, match=f"prediction cache '{tmp_path / 'bad'}': is damaged .* nothing was merged"):
        merge_caches(tmp_path / "out", [tmp_path / "good", tmp_path / "bad"])
    assert state(tmp_path / "out") == before
    fill(tmp_path / "big", {f"prompt {i} " + "x" * 300: [0.5, 0.5] for i in range(3000)})
    damage_a_middle_page(tmp_path / "big")  # now the output is damaged, its inputs sound
    fill(tmp_path / "more", {f"prompt {i} " + "x" * 300: [0.5, 0.5] for i in range(3000)})
    with pytest.raises(CacheError, match=f"prediction cache '{tmp_path / 'big'}': is damaged"):
        merge_caches(tmp_path / "big", [tmp_path / "good", tmp_path / "more"])


def test_ctrl_c_during_the_copy_is_a_keyboard_interrupt_and_writes_nothing(tmp_path, monkeypatch):
    fill(tmp_path / "out", {"w": 0})
    before = state(tmp_path / "out")
    fill(tmp_path / "a", {f"p{i}": i % 2 for i in range(50)})
    calls = []

    def interrupting(*fields):
        calls.append(1)
        if len(calls) == 20:
            raise KeyboardInterrupt
        return real(*fields)
    real = merge_module._entry_crc
    monkeypatch.setattr(merge_module, "_entry_crc", interrupting)
    with pytest.raises(KeyboardInterrupt):
        merge_caches(tmp_path / "out", [tmp_path / "a"])
    monkeypatch.undo()
    assert state(tmp_path / "out") == before
    assert merge_caches(tmp_path / "out", [tmp_path / "a"])["added"] == 50  # the output is usable as before


def test_more_inputs_than_sqlite_attaches_merge_in_one_transaction(tmp_path):
    count = 2 * MAX_ATTACHED + 3
    paths = []
    for i in range(count):
        paths.append(tmp_path / f"in{i}")
        fill(paths[-1], {f"own {i}": i % 2, "shared": [0.5, 0.5]}, fingerprint=f"model {i % 3}")
    with PredictionCache(paths[4]) as cache:
        cache.register_model("no entries", {"backend": "idle"})
    fill(tmp_path / "out", {"shared": [0.5, 0.5]}, fingerprint="model 0")
    counts = merge_caches(tmp_path / "out", paths)
    assert counts == {"read": 2 * count, "added": count + 2, "equal": 1, "models": 4}
    with PredictionCache(tmp_path / "out") as out:
        for i in range(count):
            assert out.lookup(f"model {i % 3}", [Request(f"own {i}", LABELS)]) == [Answer(i % 2)]
        assert {m["fingerprint"] for m in out.models()} == {"model 0", "model 1", "model 2", "no entries"}
    assert not any(name.startswith(".staicc-merge-") for name in os.listdir(tmp_path))
    fill(paths[-1], {"own 0": 1}, fingerprint="model 0")  # the first input says 0 for it
    with pytest.raises(CacheError, match=f"in {tmp_path / 'out'} and {paths[-1]};"):
        merge_caches(tmp_path / "out", paths)
    with pytest.raises(CacheError, match=f"in {paths[0]} and {paths[-1]};"):
        merge_caches(tmp_path / "new", paths)
    assert not any(name.startswith(".staicc-merge-") for name in os.listdir(tmp_path))


def test_numerics_notes_are_merged_across_groups_and_a_refusal_writes_nothing(tmp_path):
    """The notes of every input reach the output through the grouped merge, in its one transaction;
    inputs computed on another device are refused before the output is touched."""
    cpu = {"device": "cpu", "dtype": "float32", "threads": 2}
    paths = []
    for i in range(MAX_ATTACHED + 2):
        paths.append(tmp_path / f"in{i}")
        fill(paths[-1], {f"own {i}": i % 2}, fingerprint="m")
        with PredictionCache(paths[-1]) as cache:
            cache.note_numerics("m", dict(cpu, threads=1 + i % 2))
    warnings = []
    assert merge_caches(tmp_path / "out", paths, warnings=warnings)["added"] == len(paths)
    assert len(warnings) == 1 and "threads" in warnings[0]
    with PredictionCache(tmp_path / "out") as out:
        assert out.numerics_notes() == {"m": [dict(cpu, threads=1), dict(cpu, threads=2)]}
    before = state(tmp_path / "out")
    fill(tmp_path / "gpu", {"own 0": 0, "gpu only": 1}, fingerprint="m")
    with PredictionCache(tmp_path / "gpu") as cache:
        cache.note_numerics("m", dict(cpu, device="cuda:0"))
    with pytest.raises(CacheError, match="beyond the last bits.*device.*nothing was merged"):
        merge_caches(tmp_path / "out", [tmp_path / "gpu"])
    assert state(tmp_path / "out") == before
    assert merge_caches(tmp_path / "out", [tmp_path / "gpu"], allow_mixed_numerics=True)["added"] == 1
    with PredictionCache(tmp_path / "out") as out:
        assert len(out.numerics_notes()["m"]) == 3


KILLED_MERGE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import StaICC.cache.merge as merge
real, calls = merge._entry_crc, [0]
def checked(*fields):  # the entry checks run inside the copy: stop there and say so
    calls[0] += 1
    if calls[0] == int(sys.argv[2]):
        open(sys.argv[3], "w").close()
        time.sleep(60)
    return real(*fields)
merge._entry_crc = checked
merge.merge_caches(sys.argv[4], sys.argv[5:])
"""


@pytest.mark.parametrize("killed_at", [100, 5000, 11000])  # in the first input, later in it, in the second
def test_a_merge_killed_mid_copy_leaves_the_output_as_it_was(tmp_path, killed_at):
    fill(tmp_path / "out", {"w": 0})
    before = state(tmp_path / "out")
    inputs = []
    for k in range(2):
        inputs.append(str(tmp_path / f"in{k}"))
        with PredictionCache(inputs[-1]) as cache:
            requests = [Request(f"shard {k} prompt {i}", LABELS) for i in range(6000)]
            cache.store("model", requests, [Answer([i / 7, 1.0]) for i in range(6000)])
    marker = tmp_path / "copying"
    child = subprocess.Popen([sys.executable, "-c", KILLED_MERGE, str(REPO_ROOT), str(killed_at), str(marker),
                              str(tmp_path / "out"), *inputs])
    deadline = time.monotonic() + 60
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), "the merge never reached its copy"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert state(tmp_path / "out") == before
    with PredictionCache(tmp_path / "out") as out:
        assert out.check() == []
    assert merge_caches(tmp_path / "out", inputs) == {"read": 12000, "added": 12000, "equal": 0, "models": 1}


def test_check_mergeable_compares_the_format_markers():
    target = CacheFacts("out", {"format": "staicc-prediction-cache", "schema": "2"}, {})
    check_mergeable(target, CacheFacts("in", dict(target.meta), {"m": None}))
    with pytest.raises(CacheError, match="in has schema '3' and out has '2'"):
        check_mergeable(target, CacheFacts("in", {"format": "staicc-prediction-cache", "schema": "3"}, {}))
