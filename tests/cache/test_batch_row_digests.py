"""A batch row's second digest: like an entry, a row holds a check of its batch's content beside its key (the
two parts of one BLAKE2b-320), so a row stored under a colliding key, or with a damaged check, never answers; rows
keyed the earlier way (SHA-256 key, BLAKE2b-64 check) never answer and are dropped once (real SQLite files)."""
import hashlib
import sqlite3
import struct

from StaICC.backends import FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.cache.batches import batch_crc, batch_digests
from StaICC.engine.scoring import score_requests
from StaICC.requests import Request

LABELS = ("no", "maybe", "yes")
MODEL = "digest-model"
#: the batch table as StaICC made it before batch rows had a second digest
FIRST_TABLE = """CREATE TABLE IF NOT EXISTS batches (
    model     INTEGER NOT NULL,
    batch_key BLOB NOT NULL,
    size      INTEGER NOT NULL,
    form      INTEGER NOT NULL,
    value     BLOB NOT NULL,
    crc       INTEGER NOT NULL,
    PRIMARY KEY (model, batch_key)
) WITHOUT ROWID"""


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


def counted(numbers):
    return struct.pack(f"<q{len(numbers)}q", len(numbers), *numbers)


def content(fingerprint, batch):
    """The documented bytes of a batch of one label space and kind: head, texts' UTF-8, their UTF-8 lengths."""
    texts = [fingerprint, batch[0].kind, *LABELS, *(r.prompt for r in batch)]
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    head = b"S" + struct.pack("<qq", len(LABELS), len(batch))
    return head + b"".join(encoded) + counted([len(e) for e in encoded])


def earlier_digests(fingerprint, batch):
    """A row's (key, check) as StaICC computed them before: SHA-256 and BLAKE2b-64 of the lengths, then the texts."""
    texts = [t.encode("utf-8") for t in [fingerprint, batch[0].kind, *LABELS, *(r.prompt for r in batch)]]
    data = b"S" + struct.pack("<qq", len(LABELS), len(batch)) + counted([len(t) for t in texts]) + b"".join(texts)
    return hashlib.sha256(data).digest(), hashlib.blake2b(data, digest_size=8).digest()


def test_a_batchs_key_and_check_are_the_two_parts_of_one_blake2b_320_of_its_content():
    batch = requests_for(20, "a")
    whole = hashlib.blake2b(content("fp", batch), digest_size=40).digest()
    assert batch_digests("fp", batch) == (whole[:32], whole[32:])
    assert hashlib.blake2b(content("fp", batch), digest_size=32).digest() != whole[:32]  # no truncation of another


def test_a_lone_surrogate_is_hashed_as_its_surrogatepass_bytes():
    batch = requests_for(19, "a") + [Request("lone \ud800 surrogate", LABELS)]
    whole = hashlib.blake2b(content("fp", batch), digest_size=40).digest()
    assert batch_digests("fp", batch) == (whole[:32], whole[32:])


def test_every_batch_row_holds_the_check_of_its_batch(tmp_path):
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
        connection.execute(FIRST_TABLE)
        assert "check_key" not in {r[1] for r in connection.execute("PRAGMA table_info(batches)")}
        connection.execute("INSERT INTO batches VALUES (1, ?, 20, 0, ?, 0)", (b"x" * 32, b"\0" * 80))
    connection.close()
    with PredictionCache(path) as cache:
        assert cache.stats()["entries"] == 20
        assert run(batch, cache) == (answers, 0)
    assert [r[0] for r in rows(path)] == [batch_digests(fingerprint_of(path), batch)[0]]


def write_earlier_row(path, batch, value, marker):
    """A row as the StaICC before this one wrote it (SHA-256 key, BLAKE2b-64 check, well-formed CRC), holding
    ``value``; the ``meta`` row naming the keys deleted first unless ``marker``."""
    fingerprint = fingerprint_of(path)
    key, check = earlier_digests(fingerprint, batch)
    with sqlite3.connect(path) as connection:
        if not marker:
            connection.execute("DELETE FROM meta WHERE name = 'batch_keys'")
        connection.execute("INSERT INTO batches VALUES (1, ?, ?, 0, ?, ?, ?)",
                           (key, len(batch), value, batch_crc(fingerprint, key, len(batch), 0, value), check))
    connection.close()
    return key


def test_rows_keyed_the_earlier_way_never_answer_and_are_dropped_once(tmp_path):
    """Rows of the earlier keys holding wrong answers: before the file names the keys, they are dropped on the
    first batch lookup; a row an earlier StaICC writes afterwards stays and is never read."""
    path = tmp_path / "c.sqlite"
    batch = requests_for(20, "a")
    with PredictionCache(path) as cache:
        answers, _ = run(batch, cache)
    new_key = rows(path)[0][0]
    wrong = struct.pack("<20I", *[(a + 1) % len(LABELS) for a in answers])
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM batches")
    connection.close()
    write_earlier_row(path, batch, wrong, marker=False)
    with PredictionCache(path) as cache:
        assert run(batch, cache) == (answers, 0)
    assert [r[0] for r in rows(path)] == [new_key]
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT value FROM meta WHERE name = 'batch_keys'").fetchone() == ("blake2b-320",)
    connection.close()
    old_key = write_earlier_row(path, batch, wrong, marker=True)
    with PredictionCache(path) as cache:
        assert run(batch, cache) == (answers, 0)
    assert sorted(r[0] for r in rows(path)) == sorted([new_key, old_key])
