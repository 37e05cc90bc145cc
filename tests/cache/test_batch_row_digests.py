"""A batch row's second digest: like an entry, a row holds a BLAKE2b-64 of its batch's content beside its
SHA-256 key, so a row stored under a colliding key, or with a damaged check, never answers (real SQLite files)."""
import hashlib
import sqlite3

from StaICC.backends import FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.cache.batches import BATCHES_TABLE, batch_crc, batch_digests
from StaICC.engine.scoring import score_requests
from StaICC.requests import Request

LABELS = ("no", "maybe", "yes")
MODEL = "digest-model"


def requests_for(count, tag):
    return [Request(f"{tag} {i} ✓", LABELS, "Normal", "toy", i) for i in range(count)]


def index(prompt, label_space):
    return hashlib.sha256(prompt.encode("utf-8")).digest()[0] % len(label_space)


def run(requests, cache=None):
    calls = []

    def model(prompt, label_space):
        calls.append(prompt)
        return index(prompt, label_space)
    answers = score_requests(FunctionBackend(model, model_id=MODEL), requests, cache=cache)
    return [a.prediction for a in answers], len(calls)


def rows(path):
    with sqlite3.connect(path) as connection:
        found = connection.execute("SELECT batch_key, size, form, value, crc, check_key FROM batches "
                                   "ORDER BY batch_key").fetchall()
    connection.close()
    return found


def fingerprint_of(path):
    with sqlite3.connect(path) as connection:
        found = connection.execute("SELECT fingerprint FROM models").fetchone()[0]
    connection.close()
    return found


def test_every_batch_row_holds_the_blake2b_of_its_batch(tmp_path):
    path = tmp_path / "c.sqlite"
    first, second = requests_for(20, "a"), requests_for(20, "b")
    with PredictionCache(path) as cache:
        run(first, cache)
        run(second, cache)
    fingerprint = fingerprint_of(path)
    expected = sorted(batch_digests(fingerprint, batch) for batch in (first, second))
    assert [(key, check) for key, *_, check in rows(path)] == expected
    for key, check in expected:
        assert len(key) == 32 and len(check) == 8 and check != key[:8]


def test_a_row_under_a_colliding_key_never_answers_another_batchs_answers(tmp_path):
    """Batch B's key holding batch A's row, as a SHA-256 collision would leave it (its CRC well formed for the
    key it sits under): B's own entries answer, and B's row is written again."""
    path = tmp_path / "c.sqlite"
    a, b = requests_for(20, "a"), requests_for(20, "b")
    with PredictionCache(path) as cache:
        answers_a, _ = run(a, cache)
        answers_b, _ = run(b, cache)
    assert answers_a != answers_b
    fingerprint = fingerprint_of(path)
    (key_a, check_a), (key_b, check_b) = batch_digests(fingerprint, a), batch_digests(fingerprint, b)
    assert check_a != check_b
    good = rows(path)
    with sqlite3.connect(path) as connection:
        size, form, value = connection.execute("SELECT size, form, value FROM batches WHERE batch_key = ?",
                                               (key_a,)).fetchone()
        connection.execute("UPDATE batches SET value = ?, crc = ?, check_key = ? WHERE batch_key = ?",
                           (value, batch_crc(fingerprint, key_b, size, form, value), check_a, key_b))
    connection.close()
    with PredictionCache(path) as cache:
        assert run(b, cache) == (answers_b, 0)
    assert rows(path) == good


def test_a_damaged_check_never_answers_and_the_row_is_rewritten(tmp_path):
    path = tmp_path / "c.sqlite"
    batch = requests_for(20, "a")
    with PredictionCache(path) as cache:
        answers, _ = run(batch, cache)
    good = rows(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE batches SET check_key = ?", (bytes(8),))
    connection.close()
    seen = []
    with PredictionCache(path) as cache:
        cache._connection.set_trace_callback(seen.append)
        assert run(batch, cache) == (answers, 0)
        cache._connection.set_trace_callback(None)
    assert any("FROM predictions" in statement for statement in seen)  # the entries answered
    assert rows(path) == good


def test_a_batch_table_without_the_second_digest_is_rebuilt_and_entries_are_kept(tmp_path):
    """A cache whose batch table an earlier StaICC made (no check_key): its rows are dropped, never read."""
    path = tmp_path / "old.sqlite"
    batch = requests_for(20, "a")
    with PredictionCache(path) as cache:
        answers, _ = run(batch, cache)
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE batches")
        connection.execute(BATCHES_TABLE.replace(
            "    check_key BLOB NOT NULL,      -- BLAKE2b-64 of the same content as batch_key: differs only on a "
            "SHA-256 collision\n", ""))
        assert "check_key" not in {r[1] for r in connection.execute("PRAGMA table_info(batches)")}
        connection.execute("INSERT INTO batches VALUES (1, ?, 20, 0, ?, 0)", (b"x" * 32, b"\0" * 80))
    connection.close()
    with PredictionCache(path) as cache:
        assert cache.stats()["entries"] == 20
        assert run(batch, cache) == (answers, 0)
    assert [r[0] for r in rows(path)] == [batch_digests(fingerprint_of(path), batch)[0]]
