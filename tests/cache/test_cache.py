"""The SQLite prediction cache: real files; refusals of foreign, newer, damaged and unusable ones.

Processes (forks, another user, locks, kill -9, concurrent writers) are in test_cache_processes.py.
"""
import json
import os
import random
import sqlite3
import struct

import pytest

from StaICC.cache import (APPLICATION_ID, SCHEMA_VERSION, CacheError, PredictionCache, open_cache,
                          request_digests)
from StaICC.requests import Answer, Request

LABELS = ("negative", "positive")


def requests_for(n, labels=LABELS, tag="p"):
    return [Request(f"{tag} prompt number {i}: ünïcødé ✓ \x00 text", labels, "Normal", "GLUE-SST2", i) for i in range(n)]


def bits(values):
    return [struct.pack("<d", v) for v in values]


def snapshot(directory):
    """Every file in a directory with its bytes: a refused file must leave all of them unchanged."""
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


# ---------------------------------------------------------------------------- round trip
def test_round_trip_is_bit_exact(tmp_path):
    path = str(tmp_path / "c.sqlite")
    rng = random.Random(0)
    specials = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                -1.7976931348623157e308, 0.1, 1 / 3, float("inf"), float("-inf"), float("nan")]
    requests = requests_for(40, labels=("a", "b", "c"))
    answers = []
    for i in range(30):
        answers.append(Answer([rng.uniform(-50, 50), struct.unpack("<d", rng.randbytes(8))[0],
                               specials[i % len(specials)]]))
    answers += [Answer(i % 3, text=f"génerated {i}\n\ttext", parsed=i % 2 == 0) for i in range(9)]
    answers.append(Answer([1.0, 2.0, 3.0], text="", parsed=False))
    with PredictionCache(path) as cache:
        assert cache.lookup("model", requests) == [None] * 40
        cache.store("model", requests, answers)
    with PredictionCache(path) as cache:
        found = cache.lookup("model", list(reversed(requests)) + requests[:3])
    found = list(reversed(found[:40])) + found[40:]
    for want, got in zip(answers + answers[:3], found):
        assert got is not None
        assert got.text == want.text and got.parsed is want.parsed
        if isinstance(want.prediction, int):
            assert type(got.prediction) is int and got.prediction == want.prediction
        else:
            assert type(got.prediction) is list and bits(got.prediction) == bits(want.prediction)


def test_noisy_channel_and_duplicates(tmp_path):
    noisy = Request(("prompt for a", "prompt for b"), ("a", "b"))
    plain = Request("prompt for a\x01prompt for b", ("a", "b"))  # same bytes joined: a different request
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        cache.store("m", [noisy, noisy], [Answer([-1.5, -0.5]), Answer([-1.5, -0.5])])
        first, second, other = cache.lookup("m", [noisy, noisy, plain])
        assert first == second == Answer([-1.5, -0.5]) and first.prediction is not second.prediction
        assert other is None
        assert cache.stats()["entries"] == 1


def test_digest_is_the_request_key():
    for request in [Request("x", ("a",)), Request(("é", "✓"), ("pos", "neg")), Request("", ("a", "b"), "GLER"),
                    Request('quote " back\\slash \n\t\x00\x1f \u2028 \U0001F600', ("\"", "\\"))]:
        assert request_digests(request)[0].hex() == request.key()


def _random_text(rng):
    """Up to 30 characters from the whole Unicode range (lone surrogates excepted), quotes and controls."""
    pool = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "✓", "\U0001F600"]
    chars = []
    for _ in range(rng.randrange(30)):
        kind = rng.randrange(3)
        code = rng.randrange(0x110000) if kind == 0 else rng.randrange(128)
        chars.append(rng.choice(pool) if kind == 2 else "?" if 0xD800 <= code < 0xE000 else chr(code))
    return "".join(chars)


def test_digest_is_the_request_key_for_any_text():
    rng = random.Random(4)
    for _ in range(3000):
        labels = tuple(_random_text(rng) for _ in range(rng.randrange(1, 5)))
        prompt = _random_text(rng) if rng.random() < 0.5 else tuple(_random_text(rng) for _ in labels)
        request = Request(prompt, labels)
        assert request_digests(request)[0].hex() == request.key()


def test_label_space_is_part_of_the_key(tmp_path):
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        cache.store("m", [Request("p", ("a", "b"))], [Answer(1)])
        assert cache.lookup("m", [Request("p", ("b", "a")), Request("p", ("a", "b"))]) == [None, Answer(1)]


def test_models_are_isolated(tmp_path):
    requests = requests_for(5)
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        cache.store("model-A", requests, [Answer([1.0, 0.0])] * 5)
        assert cache.lookup("model-B", requests) == [None] * 5
        cache.store("model-B", requests[:2], [Answer([0.0, 1.0])] * 2)
        assert cache.lookup("model-A", requests) == [Answer([1.0, 0.0])] * 5
        assert cache.lookup("model-B", requests) == [Answer([0.0, 1.0])] * 2 + [None] * 3
        cache.register_model("model-A", {"backend": "hf", "pretrained": "tiny"})
        listed = {m["fingerprint"]: m for m in cache.models()}
        assert listed["model-A"]["identity"] == {"backend": "hf", "pretrained": "tiny"}
        assert listed["model-A"]["entries"] == 5 and listed["model-B"]["entries"] == 2
        assert listed["model-B"]["identity"] is None
        assert cache.stats()["models"] == 2 and cache.stats()["entries"] == 7


def test_first_writer_wins(tmp_path):
    request = requests_for(1)
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        cache.store("m", request, [Answer([0.25, 0.75])])
        cache.store("m", request, [Answer([0.5, 0.5])])
        assert cache.lookup("m", request) == [Answer([0.25, 0.75])]


def test_store_checks_its_arguments(tmp_path):
    requests = requests_for(2)
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        with pytest.raises(ValueError, match="1 answers for 2 requests"):
            cache.store("m", requests, [Answer(0)])
        with pytest.raises(ValueError, match=r"answers\[1\] predicts label index 2"):
            cache.store("m", requests, [Answer(0), Answer(2)])
        with pytest.raises(ValueError, match=r"answers\[0\] has 3 scores"):
            cache.store("m", requests, [Answer([1.0, 2.0, 3.0]), Answer(0)])
        with pytest.raises(TypeError, match=r"answers\[0\].prediction must be"):
            cache.store("m", requests, [Answer("positive"), Answer(0)])
        with pytest.raises(TypeError, match=r"answers\[1\] must be an Answer"):
            cache.store("m", requests, [Answer(0), 1])
        with pytest.raises(TypeError, match="fingerprint"):
            cache.lookup("", requests)
        with pytest.raises(TypeError, match=r"requests\[0\] must be a Request"):
            cache.lookup("m", ["a prompt"])
        assert cache.stats()["entries"] == 0  # nothing of a refused batch was stored


def test_closed_cache_and_open_cache(tmp_path):
    path = str(tmp_path / "c.sqlite")
    cache = open_cache(path)
    assert isinstance(cache, PredictionCache) and open_cache(cache) is cache and open_cache(None) is None
    cache.close()
    cache.close()
    with pytest.raises(CacheError, match="is closed"):
        cache.lookup("m", requests_for(1))
    with pytest.raises(TypeError, match="cache must be a file path"):
        open_cache(3)


# ---------------------------------------------------------------------------- integrity
def test_collision_is_detected_on_lookup_and_store(tmp_path):
    path = str(tmp_path / "c.sqlite")
    requests = requests_for(3)
    with PredictionCache(path) as cache:
        cache.store("m", requests[:1], [Answer(0)])
    key, check = request_digests(requests[1])
    forged_check = bytes(b ^ 0xFF for b in check)
    value = struct.pack("<2d", 0.5, 0.5)
    from StaICC.cache.codec import _crc
    with sqlite3.connect(path) as raw:  # an entry with requests[1]'s SHA-256 but other content
        model = raw.execute("SELECT id FROM models").fetchone()[0]
        raw.execute("INSERT INTO predictions VALUES (?, ?, ?, ?, NULL, 1, ?)",
                    (model, key, forged_check, value, _crc("m", key, forged_check, value, None, 1)))
    raw.close()
    with PredictionCache(path) as cache:
        with pytest.raises(CacheError, match=r"SHA-256 collision: requests\[1\] has content key " + key.hex()):
            cache.lookup("m", requests)
        with pytest.raises(CacheError, match=r"SHA-256 collision: requests\[1\]"):
            cache.store("m", requests, [Answer(1)] * 3)
        assert cache.lookup("m", requests[2:]) == [None]  # the refused batch was rolled back


def test_changed_bytes_of_an_entry_fail_the_crc(tmp_path):
    path = str(tmp_path / "c.sqlite")
    requests = requests_for(2)
    with PredictionCache(path) as cache:
        cache.store("m", requests, [Answer([0.25, 0.75]), Answer([0.5, 0.5])])
    with sqlite3.connect(path) as raw:  # one bit of one stored double flipped
        key = request_digests(requests[1])[0]
        value = raw.execute("SELECT value FROM predictions WHERE content_key = ?", (key,)).fetchone()[0]
        raw.execute("UPDATE predictions SET value = ? WHERE content_key = ?",
                    (bytes([value[0] ^ 1]) + value[1:], key))
    raw.close()
    with PredictionCache(path) as cache:
        assert cache.lookup("m", requests[:1]) == [Answer([0.25, 0.75])]
        with pytest.raises(CacheError, match=r"damaged: the entry of requests\[1\].*CRC"):
            cache.lookup("m", requests)


# ---------------------------------------------------------------------------- refusals
FOREIGN = {
    "results.json": (json.dumps({"format": "staicc-results/1", "benchmarks": {}}).encode(), "results file"),
    "checkpoint.json": (json.dumps({"format": "staicc-checkpoint-v1", "datasets": {"SST2": {}}}).encode(),
                        "old StaICC JSON checkpoint"),
    "other.json": (b'[1, 2, 3]', "JSON file"),
    "random.bin": (bytes(random.Random(1).randbytes(5000)), "not an SQLite database"),
    "blank.txt": (b"\n  \n", "only whitespace"),
    "header-only.db": (b"SQLite format 3\x00" + b"\x00" * 84, None),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_foreign_files_are_refused_and_left_unchanged(tmp_path, name):
    content, reason = FOREIGN[name]
    path = tmp_path / name
    path.write_bytes(content)
    before = snapshot(tmp_path)
    with pytest.raises(CacheError) as error:
        PredictionCache(str(path))
    assert str(path) in str(error.value) and (reason is None or reason in str(error.value))
    assert snapshot(tmp_path) == before


def test_old_checkpoint_message_says_what_to_do(tmp_path):
    path = tmp_path / "run.ckpt"
    path.write_text(json.dumps({"format": "staicc-checkpoint-v1", "datasets": {}}))
    with pytest.raises(CacheError, match="checkpoint= now names an SQLite prediction cache: give a new path"):
        PredictionCache(str(path))


@pytest.mark.parametrize("application_id", [0, 0x12345678])
def test_another_applications_database_is_refused(tmp_path, application_id):
    path = tmp_path / "app.db"
    raw = sqlite3.connect(str(path))
    raw.execute(f"PRAGMA application_id = {application_id}")
    raw.execute("CREATE TABLE predictions (a, b)")
    raw.execute("INSERT INTO predictions VALUES (1, 2)")
    raw.commit()
    raw.close()
    before = snapshot(tmp_path)
    with pytest.raises(CacheError, match="SQLite database of another application"):
        PredictionCache(str(path))
    assert snapshot(tmp_path) == before


def _cache_file(tmp_path, entries=10):
    path = str(tmp_path / "c.sqlite")
    with PredictionCache(path) as cache:
        cache.store("m", requests_for(entries), [Answer([float(i), 0.0]) for i in range(entries)])
    assert not os.path.exists(path + "-wal")  # the last close folded the WAL in
    return path


def test_newer_schema_is_refused(tmp_path):
    path = _cache_file(tmp_path)
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.commit()
    raw.close()
    before = snapshot(tmp_path)
    with pytest.raises(CacheError, match=f"newer StaICC \\(cache schema {SCHEMA_VERSION + 1}\\).*upgrade StaICC"):
        PredictionCache(path)
    assert snapshot(tmp_path) == before


def test_a_cache_without_its_format_marker_is_refused(tmp_path):
    path = _cache_file(tmp_path)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value = 'something-else' WHERE name = 'format'")
    raw.commit()
    raw.close()
    with pytest.raises(CacheError, match="damaged: its format marker reads format='something-else'"):
        PredictionCache(path)


def test_corrupt_database_is_refused_with_the_file_name(tmp_path):
    path = _cache_file(tmp_path, entries=3000)
    size = os.path.getsize(path)
    pages = size // 4096
    assert pages > 20
    with open(path, "r+b") as handle:  # garbage over a page in the middle of the file
        handle.seek((pages // 2) * 4096)
        handle.write(random.Random(2).randbytes(4096))
    with pytest.raises(CacheError, match=r"prediction cache .*c\.sqlite.*damaged") as error, \
            PredictionCache(path) as cache:
        cache.lookup("m", requests_for(3000))
    assert not isinstance(error.value, sqlite3.Error)
    # the header and schema pages are intact: it opens
    with PredictionCache(path) as cache, pytest.raises(CacheError, match="damaged .*while checking integrity"):
        cache.check()


def test_zero_byte_file_becomes_a_cache(tmp_path):
    path = tmp_path / "new.sqlite"
    path.write_bytes(b"")
    with PredictionCache(str(path)) as cache:
        cache.store("m", requests_for(1), [Answer(1)])
    raw = sqlite3.connect(str(path))
    assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(raw.execute("SELECT name, value FROM meta"))["format"] == "staicc-prediction-cache"
    raw.close()


def test_an_existing_cache_is_put_back_in_wal_mode(tmp_path):
    path = _cache_file(tmp_path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    raw.close()
    with PredictionCache(path) as cache:
        assert cache.lookup("m", requests_for(1)) == [Answer([0.0, 0.0])]
        raw = sqlite3.connect(path)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        raw.close()


def test_unusable_paths_fail_at_open(tmp_path):
    with pytest.raises(CacheError, match="is a directory"):
        PredictionCache(str(tmp_path))
    with pytest.raises(CacheError, match="does not exist"):
        PredictionCache(str(tmp_path / "missing" / "c.sqlite"))
    with pytest.raises(TypeError, match="cache path"):
        PredictionCache(3)
