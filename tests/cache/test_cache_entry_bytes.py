"""The cache's bytes, pinned to their plain definitions: keys, checks and CRCs.

The key is the SHA-256 of ``json.dumps([prompt, labels], ensure_ascii=False, separators=(",", ":"))``
in UTF-8 ("surrogatepass"), the check its BLAKE2b-64, the CRC-32 runs over fingerprint, NUL, key,
check, value, text marker and parsed flag.  Entries written by that plain rule (as an older
StaICC wrote them) are read back, entries written now carry exactly those bytes, and answers
read from the cache are still validated when a run uses them.
"""
import binascii
import hashlib
import json
import random
import sqlite3
import struct

import pytest

from StaICC.backends.base import FunctionBackend
from StaICC.cache import PredictionCache, request_digests
from StaICC.cache.codec import _crc
from StaICC.engine.scoring import score_requests
from StaICC.requests import Answer, Request, canonical_content


def plain_content(prompt, labels):
    body = [list(prompt) if isinstance(prompt, tuple) else prompt, list(labels)]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def plain_crc(fingerprint, key, check, value, text, parsed):
    crc = binascii.crc32(fingerprint.encode("utf-8", "surrogatepass") + b"\x00")
    for part in (key, check, value if isinstance(value, bytes) else str(value).encode("ascii"),
                 b"\x00" if text is None else b"\x01" + text.encode("utf-8", "surrogatepass"),
                 b"\x01" if parsed else b"\x00"):
        crc = binascii.crc32(part, crc)
    return crc


def random_text(rng, surrogates=True):
    """Up to 60 characters: controls, quotes, backslashes, any code point, lone surrogates (unless told)."""
    pool = ['"', "\\", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "\u2028", "é", "✓", "\U0001F600",
            "\\n", '\\"'] + (["\ud800", "\udfff"] if surrogates else [])
    chars = []
    for _ in range(rng.randrange(60)):
        kind = rng.randrange(4)
        code = rng.randrange(0x110000)
        if not surrogates and 0xD800 <= code < 0xE000:
            code = 0xFFFD
        chars.append(chr(code) if kind == 0 else chr(rng.randrange(0x20)) if kind == 1
                     else chr(rng.randrange(128)) if kind == 2 else rng.choice(pool))
    return "".join(chars)


def random_request(rng):
    labels = tuple(random_text(rng) for _ in range(rng.randrange(0, 4)))
    prompt = random_text(rng) if rng.random() < 0.6 else tuple(random_text(rng) for _ in range(rng.randrange(0, 4)))
    return Request(prompt, labels)


def test_canonical_content_is_compact_json_for_any_text():
    rng = random.Random(11)
    for _ in range(5000):
        request = random_request(rng)
        body = plain_content(request.prompt, request.label_space)
        assert canonical_content(request.prompt, request.label_space) == body
        assert request_digests(request) == (hashlib.sha256(body).digest(),
                                            hashlib.blake2b(body, digest_size=8).digest())


def test_the_crc_is_the_plain_crc_of_every_field():
    rng = random.Random(12)
    for _ in range(3000):
        fields = (random_text(rng) or "m", rng.randbytes(32), rng.randbytes(8),
                  rng.choice([rng.randrange(50), rng.randbytes(8 * rng.randrange(1, 4))]),
                  rng.choice([None, random_text(rng)]), rng.randrange(2))
        assert _crc(*fields) == plain_crc(*fields)


def _plain_rows(fingerprint, requests, answers):
    rows = []
    for request, answer in zip(requests, answers):
        body = plain_content(request.prompt, request.label_space)
        key, check = hashlib.sha256(body).digest(), hashlib.blake2b(body, digest_size=8).digest()
        value = answer.prediction if isinstance(answer.prediction, int) else \
            struct.pack(f"<{len(answer.prediction)}d", *answer.prediction)
        parsed = int(answer.parsed)
        rows.append((key, check, value, answer.text, parsed, plain_crc(fingerprint, key, check, value,
                                                                         answer.text, parsed)))
    return rows


def _sample(rng, count):
    requests, answers = [], []
    for i in range(count):
        labels = ("a", "b", "c")
        requests.append(Request(f"{random_text(rng)} {i}", labels, "Normal", "toy", i))
        answers.append(rng.choice([Answer(rng.randrange(3)), Answer([rng.random(), -1.5, 2.0]),
                                   Answer(1, text=random_text(rng, surrogates=False), parsed=rng.random() < 0.5)]))
    return requests, answers


def test_entries_written_by_the_plain_rule_are_read_and_entries_written_now_follow_it(tmp_path):
    rng = random.Random(13)
    requests, answers = _sample(rng, 700)  # more than one IN (...) chunk
    old_path, new_path = str(tmp_path / "old.sqlite"), str(tmp_path / "new.sqlite")
    with PredictionCache(old_path) as cache:
        cache.register_model("model", {"backend": "test"})
    connection = sqlite3.connect(old_path, isolation_level=None)
    model = connection.execute("SELECT id FROM models WHERE fingerprint = 'model'").fetchone()[0]
    connection.executemany("INSERT INTO predictions (model, content_key, check_key, value, text, parsed, crc) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           [(model, *row) for row in _plain_rows("model", requests, answers)])
    connection.close()
    with PredictionCache(old_path) as cache:
        assert cache.lookup("model", requests) == answers
        assert cache.lookup("other model", requests) == [None] * len(requests)
    with PredictionCache(new_path) as cache:
        cache.store("model", requests, answers)
    connection = sqlite3.connect(new_path)
    written = connection.execute("SELECT content_key, check_key, value, text, parsed, crc FROM predictions "
                                 "ORDER BY content_key").fetchall()
    connection.close()
    assert written == sorted(_plain_rows("model", requests, answers))


@pytest.mark.parametrize("stored, error, message", [
    (7, ValueError, r"label index 7 at dataset 'toy', query 1; expected an int in \[0, 3\)"),
    (-1, ValueError, r"label index -1 at dataset 'toy', query 1"),
    (struct.pack("<3d", 0.5, float("nan"), 0.5), ValueError, r"non-finite score nan at dataset 'toy', query 1"),
])
def test_a_stored_answer_is_still_validated_when_a_run_uses_it(tmp_path, stored, error, message):
    path = str(tmp_path / "c.sqlite")
    backend = FunctionBackend(lambda prompt, label_space: 0, model_id="m")
    requests = [Request(f"p{i}", ("a", "b", "c"), "Normal", "toy", i) for i in range(3)]
    fingerprint = backend.fingerprint()
    with PredictionCache(path) as cache:
        cache.register_model(fingerprint, backend.identity())
    key, check = request_digests(requests[1])
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("INSERT INTO predictions VALUES (1, ?, ?, ?, NULL, 1, ?)",
                       (key, check, stored, _crc(fingerprint, key, check, stored, None, 1)))
    connection.close()
    with PredictionCache(path) as cache, pytest.raises(error, match=message):
        score_requests(backend, requests, cache=cache)


def test_a_stored_label_index_is_one_shared_answer_equal_to_a_new_one(tmp_path):
    requests = [Request(f"p{i}", ("a", "b"), "Normal", "toy", i) for i in range(4)]
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        cache.store("m", requests, [Answer(1), Answer(1), Answer(0), Answer(1, text="b", parsed=False)])
        found = cache.lookup("m", requests)
    assert found == [Answer(1), Answer(1), Answer(0), Answer(1, text="b", parsed=False)]
    assert found[0] is found[1] and found[3] is not found[0]
