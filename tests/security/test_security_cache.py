"""A cache that cannot lie: edits that move answers between models are refused, and a
cache file deleted or replaced while in use fails the run instead of losing answers.
Real SQLite files, edited the way the audit edited them."""
import hashlib
import os
import sqlite3
import subprocess
import sys

import pytest

from StaICC.cache import SCHEMA_VERSION, CacheError, PredictionCache
from StaICC.requests import Answer, Request

LABELS = ("negative", "positive")
MODEL_A = hashlib.sha256(b"model A").hexdigest()


def requests_for(n):
    return [Request(f"prompt {i}", LABELS, "Normal", "GLUE-SST2", i) for i in range(n)]


def one_byte_changed(text: str) -> str:
    """``text`` with its first character replaced: the audit's one-byte edit."""
    return ("0" if text[0] != "0" else "1") + text[1:]


def test_a_one_byte_edit_of_a_stored_fingerprint_is_refused(tmp_path):
    path = str(tmp_path / "c.sqlite")
    requests = requests_for(4)
    with PredictionCache(path) as cache:
        cache.store(MODEL_A, requests, [Answer([0.1, 0.9])] * 4)
    model_b = one_byte_changed(MODEL_A)
    raw = sqlite3.connect(path)
    with raw:
        assert raw.execute("UPDATE models SET fingerprint = ? WHERE fingerprint = ?", (model_b, MODEL_A)).rowcount == 1
    raw.close()
    with PredictionCache(path) as cache:
        with pytest.raises(CacheError, match=r"requests\[0\].*fails its CRC check \(which covers the model"):
            cache.lookup(model_b, requests)
        assert cache.lookup(MODEL_A, requests) == [None] * 4  # model A's answers are gone, never misattributed


def test_moving_an_entry_to_another_model_row_is_refused(tmp_path):
    path = str(tmp_path / "c.sqlite")
    requests = requests_for(2)
    model_b = hashlib.sha256(b"model B").hexdigest()
    with PredictionCache(path) as cache:
        cache.store(MODEL_A, requests[:1], [Answer(1)])
        cache.store(model_b, requests[1:], [Answer(0)])
    raw = sqlite3.connect(path)
    with raw:
        b_id = raw.execute("SELECT id FROM models WHERE fingerprint = ?", (model_b,)).fetchone()[0]
        raw.execute("UPDATE predictions SET model = ?", (b_id,))
    raw.close()
    with PredictionCache(path) as cache, pytest.raises(CacheError, match=r"requests\[0\].*CRC"):
        cache.lookup(model_b, requests)


def test_an_old_schema_cache_is_refused_with_a_clear_message(tmp_path):
    path = str(tmp_path / "old.sqlite")
    with PredictionCache(path) as cache:
        cache.store(MODEL_A, requests_for(1), [Answer(1)])
    raw = sqlite3.connect(path)
    with raw:
        raw.execute("PRAGMA user_version = 1")
        raw.execute("UPDATE meta SET value = '1' WHERE name = 'schema'")
    raw.close()
    with open(path, "rb") as fh:
        before = fh.read()
    with pytest.raises(CacheError, match=r"older StaICC \(cache schema 1\).*do not cover the model.*move it away"):
        PredictionCache(path)
    with open(path, "rb") as fh:
        assert fh.read() == before
    assert SCHEMA_VERSION == 2


def test_a_cache_deleted_while_in_use_fails_instead_of_losing_answers(tmp_path):
    path = str(tmp_path / "c.sqlite")
    requests = requests_for(3)
    with PredictionCache(path) as cache:
        cache.store(MODEL_A, requests[:1], [Answer(1)])
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        with pytest.raises(CacheError, match="was deleted while in use.*does not recreate it"):
            cache.store(MODEL_A, requests[1:], [Answer(0)] * 2)
        with pytest.raises(CacheError, match="was deleted while in use"):
            cache.lookup(MODEL_A, requests)
    assert not os.path.exists(path)  # never silently recreated


def test_a_cache_replaced_while_in_use_is_detected(tmp_path):
    path = str(tmp_path / "c.sqlite")
    other = str(tmp_path / "other.sqlite")
    with PredictionCache(other) as cache:
        cache.store(MODEL_A, requests_for(1), [Answer(0)])
    with PredictionCache(path) as cache:
        cache.store(MODEL_A, requests_for(1), [Answer(1)])
        os.replace(other, path)
        with pytest.raises(CacheError, match="was replaced by another file while in use"):
            cache.lookup(MODEL_A, requests_for(1))


def test_the_cli_fails_when_the_cache_is_deleted_mid_run(tmp_path):
    """A real `staicc run` whose cache disappears after the first batch: exit 1, one clear line."""
    cache = str(tmp_path / "c.sqlite")
    script = (
        "import os, sys\n"
        "from StaICC.cache import store\n"
        "original = store.PredictionCache.store\n"
        "calls = []\n"
        "def store_then_delete(self, *args, **kwargs):\n"
        "    original(self, *args, **kwargs)\n"
        "    calls.append(1)\n"
        "    if len(calls) == 1:\n"
        "        for suffix in ('', '-wal', '-shm'):\n"
        "            if os.path.exists(self.path + suffix): os.remove(self.path + suffix)\n"
        "store.PredictionCache.store = store_then_delete\n"
        "from StaICC.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run([sys.executable, "-c", script, "run", "--datasets", "0", "--limit", "8",
                           "--batch-size", "2", "--cache", cache, "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "was deleted while in use" in done.stderr
    assert not os.path.exists(cache)
