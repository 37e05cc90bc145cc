"""A batch of entries read or written at once: every entry still checked, the same answers and bytes as one by one."""
import dataclasses
import random
import sqlite3
import struct

import pytest

from StaICC.cache import CacheError, PredictionCache, request_digests
from StaICC.cache.codec import _crc
from StaICC.requests import HIDDEN, Answer, Request, state_vector

LABELS = ("a", "b", "c")


def requests_for(count, tag="p"):
    return [Request(f"{tag} {i} ✓ \x00\n\"", LABELS, "Normal", "toy", i) for i in range(count)]


def raw_rows(path):
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT content_key, check_key, value, text, parsed, crc FROM predictions "
                                  "ORDER BY content_key").fetchall()
    connection.close()
    return rows


def test_answers_read_back_equal_new_answers_and_stay_frozen(tmp_path):
    rng = random.Random(3)
    requests = requests_for(1200)  # more than one IN (...) chunk, in one lookup
    answers = [rng.choice([Answer([rng.uniform(-9, 9), 0.5, -0.0]), Answer(rng.randrange(3)),
                           Answer(2, text="c é", parsed=False), Answer(5 % 3, text="", parsed=True),
                           Answer([1.0, 2.0, 3.0], text="x", parsed=False)]) for _ in requests]
    with PredictionCache(tmp_path / "c.sqlite") as cache:
        cache.store("m", requests, answers)
        shuffled = list(range(len(requests)))
        rng.shuffle(shuffled)
        found = cache.lookup("m", [dataclasses.replace(requests[i]) for i in shuffled] + requests_for(3, "new"))
    assert found[-3:] == [None] * 3
    for i, answer in zip(shuffled, found):
        want = answers[i]
        assert answer == want and hash(answer) == hash(want) if not isinstance(want.prediction, list) else \
            answer == want
        assert repr(answer) == repr(want) and type(answer) is Answer
        assert type(answer.parsed) is bool
        with pytest.raises(dataclasses.FrozenInstanceError):
            answer.text = "changed"


def test_a_batch_mixing_text_and_no_text_is_stored_as_one_by_one_and_the_first_of_a_key_wins(tmp_path):
    requests = requests_for(6)
    answers = [Answer(0), Answer(1, text="b", parsed=True), Answer([0.5, 0.25, 0.25]), Answer(2, text="", parsed=False),
               Answer(1), Answer([1.0, 0.0, 0.0], text="a", parsed=True)]
    with PredictionCache(tmp_path / "batch.sqlite") as cache:
        cache.store("m", requests, answers)
    with PredictionCache(tmp_path / "single.sqlite") as cache:
        for request, answer in zip(requests, answers):
            cache.store("m", [request], [answer])
    assert raw_rows(tmp_path / "batch.sqlite") == raw_rows(tmp_path / "single.sqlite")
    repeated = [requests[0], requests[1], requests[0], requests[1]]
    with PredictionCache(tmp_path / "repeats.sqlite") as cache:
        cache.store("m", repeated, [Answer(2, text="c", parsed=True), Answer(0), Answer(1), Answer(1, text="b",
                                                                                           parsed=True)])
        assert cache.lookup("m", requests[:2]) == [Answer(2, text="c", parsed=True), Answer(0)]


def test_scores_of_numeric_subclasses_are_stored_and_bools_refused(tmp_path):
    class Score(float):
        pass

    class Index(int):
        pass
    requests = requests_for(3)
    with PredictionCache(tmp_path / "c.sqlite") as cache:
        cache.store("m", requests, [Answer([Score(0.5), 1, 0.25]), Answer(Index(2)), Answer((0.0, 0.5, 0.5))])
        assert cache.lookup("m", requests) == [Answer([0.5, 1.0, 0.25]), Answer(2), Answer([0.0, 0.5, 0.5])]
        with pytest.raises(TypeError, match=r"answers\[1\] holds a non-numeric score True"):
            cache.store("m", requests_for(2, "other"), [Answer([0.5, 0.5, 0.0]), Answer([0.5, True, 0.0])])
        with pytest.raises(TypeError, match=r"answers\[0\] holds a non-numeric score '1'"):
            cache.store("m", requests_for(1, "other"), [Answer([0.5, "1", 0.0])])
        with pytest.raises(TypeError, match=r"answers\[0\].prediction must be an int label index"):
            cache.store("m", requests_for(1, "other"), [Answer(True)])
        with pytest.raises(ValueError, match=r"answers\[1\].text holds a lone surrogate \('\\ud800' at character 1\)"):
            cache.store("m", requests_for(2, "other"), [Answer(0), Answer(0, text="a\ud800", parsed=False)])
        assert cache.stats()["entries"] == 3

    class Asked(Request):
        pass
    with PredictionCache(tmp_path / "c.sqlite") as cache:
        subclassed = [Asked(r.prompt, r.label_space) for r in requests]
        assert cache.lookup("m", subclassed) == cache.lookup("m", requests)
        with pytest.raises(TypeError, match=r"requests\[1\] must be a Request, got str"):
            cache.lookup("m", [requests[0], "p 1"])


@pytest.mark.parametrize("value", [0.5, "é", "1", b"\x00" * 23, 7])
def test_a_stored_value_of_the_wrong_kind_is_refused_as_damage(tmp_path, value):
    requests = requests_for(2)
    path = tmp_path / "c.sqlite"
    with PredictionCache(path) as cache:
        cache.store("m", requests[:1], [Answer(0)])
    key, check = request_digests(requests[1])
    with sqlite3.connect(path) as raw:  # a value no StaICC writes, with a CRC that holds or not
        raw.execute("INSERT INTO predictions VALUES (1, ?, ?, ?, NULL, 1, ?)", (key, check, value, 12345))
    raw.close()
    with PredictionCache(path) as cache, pytest.raises(CacheError, match=r"damaged: the entry of requests\[1\].*fails its CRC"):
        cache.lookup("m", requests)
    if isinstance(value, str):
        return  # a text value's CRC cannot be forged by the str() of an int
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE predictions SET crc = ? WHERE content_key = ?", (_crc("m", key, check, value, None, 1), key))
    raw.close()
    with PredictionCache(path) as cache:
        if value == 7:  # a label index beyond the label space: read, then refused when a run uses it
            assert cache.lookup("m", requests)[1] == Answer(7)
            return
        with pytest.raises(CacheError, match="does not fit its label space of 3"):
            cache.lookup("m", requests)


def test_registering_a_model_again_takes_no_write_lock(tmp_path):
    path = tmp_path / "c.sqlite"
    with PredictionCache(path, timeout=0.2) as cache:
        cache.register_model("m", {"backend": "test"})
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing
        try:
            cache.register_model("m", {"backend": "test"})  # known: returns at once
            with pytest.raises(CacheError, match="stayed locked by another process"):
                cache.register_model("other", {"backend": "test"})
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert [m["fingerprint"] for m in cache.models()] == ["m"]
        path.unlink()
        with pytest.raises(CacheError, match="was deleted while in use"):
            cache.register_model("m", {"backend": "test"})  # known, but the file is gone


def test_a_stored_double_keeps_every_bit(tmp_path):
    bits = [0x7FF8000000000001, 0xFFF0000000000000, 0x8000000000000000, 0x0000000000000001]
    values = [struct.unpack("<d", struct.pack("<Q", b))[0] for b in bits]
    requests = requests_for(1)
    with PredictionCache(tmp_path / "c.sqlite") as cache:
        cache.store("m", requests, [Answer(values[:3])])
        found = cache.lookup("m", requests)[0].prediction
    assert [struct.unpack("<Q", struct.pack("<d", v))[0] for v in found] == bits[:3]


@pytest.mark.parametrize("value", [b"", b"\x00" * 6, 3])
def test_a_representation_entry_that_is_not_float32_values_is_refused_as_damage(tmp_path, value):
    request = Request("p", ("a", "b", "c"), kind=HIDDEN)
    path = tmp_path / "c.sqlite"
    with PredictionCache(path) as cache:
        cache.store("m", [request], [Answer(state_vector([0.5, -1.25]))])
        assert cache.lookup("m", [request])[0].prediction == state_vector([0.5, -1.25])
    key, check = request_digests(request)
    with sqlite3.connect(path) as raw:  # a value with a CRC that holds, of a shape no StaICC writes
        raw.execute("UPDATE predictions SET value = ?, crc = ?", (value, _crc("m", key, check, value, None, 1)))
    raw.close()
    with PredictionCache(path) as cache, pytest.raises(CacheError, match="is not a vector of float32 values"):
        cache.lookup("m", [request])
