"""Batch rows: a warm batch is read from one row, answers exactly what its entries answer, and a damaged or
missing row falls back to the entries, checked one by one."""
import hashlib
import sqlite3
import struct

import pytest

from StaICC.backends import FunctionBackend
from StaICC.cache import PredictionCache
from StaICC.cache.batches import BATCH_MIN, batch_crc, batch_key
from StaICC.cache.merge import merge_caches
from StaICC.engine.scoring import score_requests
from StaICC.requests import Answer, Request

LABELS = ("no", "maybe", "yes")


def requests_for(count, tag="p"):
    return [Request(f"{tag} {i} ✓ \x00\n\"", LABELS, "Normal", "toy", i) for i in range(count)]


def scores(prompt, label_space):
    """Scores fixed by the prompt's bytes alone (awkward doubles: -0.0, tiny, many digits)."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    values = [struct.unpack("<d", digest[8 * i:8 * i + 8])[0] % 7.0 - 3.5 for i in range(len(label_space))]
    return [-0.0 if digest[0] % 5 == 0 else values[0], *values[1:]]


def index(prompt, label_space):
    return hashlib.sha256(prompt.encode("utf-8")).digest()[0] % len(label_space)


class Counted:
    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, prompt, label_space):
        self.calls += 1
        return self.function(prompt, label_space)


def run(function, requests, cache=None):
    counted = Counted(function)
    answers = score_requests(FunctionBackend(counted, model_id="bench-model"), requests, cache=cache)
    return [bits(a.prediction) for a in answers], counted.calls


def bits(prediction):
    """A prediction as its exact bits (so -0.0 differs from 0.0 and NaN payloads count)."""
    return prediction if isinstance(prediction, int) else tuple(struct.pack("<d", v) for v in prediction)


def batch_rows(path):
    """Every batch row of the file ([] also where the table is not made yet: it is made on first use)."""
    with sqlite3.connect(path) as connection:
        made = connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'batches'").fetchone()
        rows = connection.execute("SELECT batch_key, size, form, value, crc FROM batches").fetchall() \
            if made else []
    connection.close()
    return rows


def tables_read(cache, action):
    """The tables the cache's SQL statements read while ``action`` runs."""
    seen = []
    cache._connection.set_trace_callback(seen.append)
    try:
        action()
    finally:
        cache._connection.set_trace_callback(None)
    return {table for table in ("predictions", "batches") if any(f"FROM {table}" in s for s in seen)}


@pytest.mark.parametrize("function", [scores, index])
def test_a_warm_batch_is_read_from_its_row_bit_identical_to_cold_and_uncached_runs(tmp_path, function):
    requests = requests_for(40) + requests_for(3)  # three repeats inside the batch
    path = tmp_path / "c.sqlite"
    uncached, asked = run(function, requests)
    assert asked == len(requests)
    with PredictionCache(path) as cache:
        cold, asked = run(function, requests, cache)
        assert asked == 40 and len(batch_rows(path)) == 1
        warm = []
        assert tables_read(cache, lambda: warm.append(run(function, requests, cache))) == {"batches"}
    assert warm[0][1] == 0
    assert warm[0][0] == cold == uncached
    with PredictionCache(path) as cache:
        assert cache.stats()["entries"] == 40  # the batch row is no entry


def test_batch_key_covers_every_part_of_the_entry_keys_and_the_model():
    base = requests_for(BATCH_MIN)
    key = batch_key("m", base)
    swapped = [base[1], base[0], *base[2:]]
    relabelled = [Request(r.prompt, ("no", "yes", "maybe"), r.benchmark, r.dataset, r.query_index) for r in base]
    hidden = [Request(r.prompt, LABELS, kind="hidden") for r in base]
    split_a = [Request(("ab", "c"), LABELS)] + base[1:]
    split_b = [Request(("a", "bc"), LABELS)] + base[1:]
    joined = [Request(base[0].prompt + base[1].prompt, LABELS), Request("", LABELS), *base[2:]]
    keys = {key, batch_key("n", base), batch_key("m", swapped), batch_key("m", relabelled), batch_key("m", hidden),
            batch_key("m", split_a), batch_key("m", split_b), batch_key("m", joined)}
    assert len(keys) == 8
    moved = [Request(r.prompt, LABELS, "Other", "other", 99) for r in base]  # where a prompt comes from: no part
    assert batch_key("m", moved) == key
    listed = batch_key("m", [Request(r.prompt, list(LABELS)) for r in base])  # unhashable: the general form
    assert listed not in keys and len(listed) == 32


def corrupt(path, how):
    with sqlite3.connect(path) as connection:
        key, size, form, value, crc = connection.execute("SELECT batch_key, size, form, value, crc FROM batches").fetchone()
        fingerprint = connection.execute("SELECT fingerprint FROM models").fetchone()[0]
        if how == "byte":  # a changed byte, CRC left as it was
            value = bytes([value[0] ^ 1]) + value[1:]
        elif how == "crc":
            crc ^= 1
        elif how in ("short", "index"):  # a well-formed CRC over a value that does not fit the batch
            value = value[:-4] if how == "short" else struct.pack("<I", 7) + value[4:]
            crc = batch_crc(fingerprint, key, size, form, value)
        elif how in ("size", "form"):
            size, form = (size - 1, form) if how == "size" else (size, 1 - form)
            crc = batch_crc(fingerprint, key, size, form, value)
        elif how == "text":
            value = "not bytes"
        connection.execute("UPDATE batches SET size = ?, form = ?, value = ?, crc = ?", (size, form, value, crc))
    connection.close()


@pytest.mark.parametrize("how", ["byte", "crc", "short", "index", "size", "form", "text"])
def test_a_damaged_batch_row_never_answers_the_entries_do_and_the_row_is_rewritten(tmp_path, how):
    requests = requests_for(30)
    path = tmp_path / "c.sqlite"
    with PredictionCache(path) as cache:
        cold, _ = run(index, requests, cache)
    good = batch_rows(path)
    corrupt(path, how)
    assert batch_rows(path) != good
    with PredictionCache(path) as cache:
        warm = []
        assert tables_read(cache, lambda: warm.append(run(index, requests, cache))) == {"batches", "predictions"}
    assert warm[0] == (cold, 0)
    assert batch_rows(path) == good  # rewritten from the entries, checked one by one


def test_a_merged_cache_answers_from_its_entries_then_from_a_new_batch_row(tmp_path):
    requests = requests_for(24)
    shards = [tmp_path / "a.sqlite", tmp_path / "b.sqlite"]
    for shard, part in zip(shards, (requests[:12], requests[12:])):
        with PredictionCache(shard) as cache:
            run(scores, part, cache)
    merged = tmp_path / "merged.sqlite"
    merge_caches(merged, shards)
    uncached, _ = run(scores, requests)
    assert batch_rows(merged) == []  # merging copies entries only
    with PredictionCache(merged) as cache:
        assert run(scores, requests, cache) == (uncached, 0)
        assert len(batch_rows(merged)) == 1
        warm = []
        assert tables_read(cache, lambda: warm.append(run(scores, requests, cache))) == {"batches"}
    assert warm[0] == (uncached, 0)


def test_a_cache_written_before_batch_rows_opens_and_gets_its_table(tmp_path):
    requests = requests_for(20)
    path = tmp_path / "old.sqlite"
    with PredictionCache(path) as cache:
        cold, _ = run(scores, requests, cache)
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE batches")  # the file as an earlier StaICC wrote it
    connection.close()
    with PredictionCache(path) as cache:
        assert cache.stats()["entries"] == 20
        assert run(scores, requests, cache) == (cold, 0)
    assert len(batch_rows(path)) == 1


def test_no_batch_row_when_another_writer_stored_an_entry_first(tmp_path):
    """Another process stores a different answer for one prompt while this run asks the model (a sampling model):
    its entry wins, so a batch row of this run's answers would answer what the entries do not; none is written."""
    requests = requests_for(16)
    path = tmp_path / "c.sqlite"

    def racing(prompt, labels):
        if prompt == requests[0].prompt:
            with PredictionCache(path) as other:
                other.store(FunctionBackend(index, model_id="bench-model").fingerprint(), requests[5:6], [Answer(1)])
        return 2

    with PredictionCache(path) as cache:
        first, asked = run(racing, requests, cache)
        assert asked == 16 and first == [2] * 16 and batch_rows(path) == []
        again, asked = run(lambda prompt, labels: 0, requests, cache)  # answered from the entries, row written
        assert asked == 0 and again == [2] * 5 + [1] + [2] * 10 and len(batch_rows(path)) == 1
        assert run(lambda prompt, labels: 0, requests, cache) == (again, 0)


def test_small_and_text_batches_keep_the_per_entry_path(tmp_path):
    path = tmp_path / "c.sqlite"
    with PredictionCache(path) as cache:
        small = requests_for(BATCH_MIN - 1)
        cold, _ = run(index, small, cache)
        assert run(index, small, cache) == (cold, 0) and batch_rows(path) == []
        assert cache.lookup_batch("bench-model", small) == (None, None)


def test_a_batch_row_of_non_finite_scores_never_answers(tmp_path):
    """The engine refuses NaN and infinite scores from a model; a row holding one (an edited file with a matching
    CRC) is refused too, and the entries answer."""
    requests = requests_for(12)
    path = tmp_path / "c.sqlite"
    with PredictionCache(path) as cache:
        cold, _ = run(scores, requests, cache)
    with sqlite3.connect(path) as connection:
        key, size, form, value = connection.execute("SELECT batch_key, size, form, value FROM batches").fetchone()
        fingerprint = connection.execute("SELECT fingerprint FROM models").fetchone()[0]
        value = struct.pack("<d", float("nan")) + value[8:]
        connection.execute("UPDATE batches SET value = ?, crc = ?", (value, batch_crc(fingerprint, key, size, form, value)))
    connection.close()
    with PredictionCache(path) as cache:
        assert run(scores, requests, cache) == (cold, 0)
