"""The SQLite prediction cache across processes: forks, another user, a held lock, kill -9, concurrent writers."""
import os
import random
import sqlite3
import subprocess
import sys
import time

import pytest

from StaICC.cache import CacheError, PredictionCache
from StaICC.requests import Answer
from conftest import TESTS_DIR
from test_cache import _cache_file, requests_for

WORKER = str(TESTS_DIR / "cache_worker.py")
sys.path.insert(0, os.path.dirname(WORKER))
import cache_worker  # noqa: E402


def _in_forked_child(action):
    """What ``action()`` (a str) returns when run in a forked child process, which exits right after."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, b"-" + action().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        message = handle.read().decode()
    os.waitpid(pid, 0)
    return message[1:]


def _error_opening(path):
    """The error of opening ``path`` as a cache ('' if it opened)."""
    try:
        PredictionCache(path).close()
    except CacheError as exc:
        return str(exc)
    return ""


def _open_as_unprivileged(path):
    """The error of opening ``path`` as a user without write access ('' if it opened)."""
    if os.geteuid() != 0:
        return _error_opening(path)

    def as_nobody():  # the child drops root for good, then tries; the parent reads its verdict
        os.setgid(65534)
        os.setuid(65534)
        return _error_opening(path)
    return _in_forked_child(as_nobody)


def test_read_only_directory_and_file_fail_at_open():
    import tempfile
    directory = tempfile.mkdtemp(prefix="staicc-ro-")  # outside tmp_path: its parents may be private
    try:
        os.chmod(directory, 0o555)
        message = _open_as_unprivileged(os.path.join(directory, "c.sqlite"))
        assert "c.sqlite" in message and "not writable" in message
        os.chmod(directory, 0o755)
        path = os.path.join(directory, "existing.sqlite")
        with PredictionCache(path) as cache:
            cache.store("m", requests_for(1), [Answer(0)])
        os.chmod(path, 0o444)
        os.chmod(directory, 0o555)
        with open(path, "rb") as handle:
            before = handle.read()
        message = _open_as_unprivileged(path)
        assert "existing.sqlite" in message and "not writable" in message
        with open(path, "rb") as handle:
            assert handle.read() == before
    finally:
        os.chmod(directory, 0o755)
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        os.rmdir(directory)


def test_a_held_lock_gives_a_clear_error_after_the_timeout(tmp_path):
    path = _cache_file(tmp_path)
    cache = PredictionCache(path, timeout=0.3)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction that does not end
    try:
        with pytest.raises(CacheError, match=r"stayed locked by another process for more than 0.3 s"):
            PredictionCache(path, timeout=0.3)  # opening proves the file is writable now
        started = time.monotonic()
        with pytest.raises(CacheError, match=r"stayed locked by another process for more than 0.3 s"):
            cache.store("m", requests_for(1, tag="new"), [Answer(0)])
        assert time.monotonic() - started < 10
        assert cache.lookup("m", requests_for(1)) == [Answer([0.0, 0.0])]  # readers are never blocked
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    cache.store("m", requests_for(1, tag="new"), [Answer(0)])
    assert cache.lookup("m", requests_for(1, tag="new")) == [Answer(0)]
    cache.close()


# ---------------------------------------------------------------------------- processes
def _spawn(*args):
    return subprocess.Popen([sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_kill_9_loses_at_most_the_transaction_in_flight(tmp_path):
    path = str(tmp_path / "c.sqlite")
    rng = random.Random(3)
    size = 40
    committed = []
    for round_ in range(20):
        first = round_ * 100_000
        child = _spawn("loop", path, first, size)
        if round_ % 4 == 3:
            time.sleep(rng.uniform(0.0, 0.6))  # anywhere: import, open, creation, a store
        else:
            line = child.stdout.readline()  # after a first commit, then within the next stores
            assert line.startswith("committed"), child.stderr.read()
            time.sleep(rng.uniform(0.0, 0.05))
        child.kill()
        child.wait()
        out, err = child.stdout.read(), child.stderr.read()  # after readline: the buffered rest too
        child.stdout.close()
        child.stderr.close()
        assert child.returncode == -9, err
        done = [int(w.split()[1]) for w in ([line] if round_ % 4 != 3 else []) + out.splitlines() if w.strip()]
        committed += done
        with PredictionCache(path) as cache:
            assert cache.check() == []
            last = max(done) if done else first - 1
            for batch in done:
                requests = [cache_worker.request(batch, i) for i in range(size)]
                assert cache.lookup(cache_worker.FINGERPRINT, requests) == \
                    [cache_worker.answer(batch, i) for i in range(size)]
            # the batch in flight is all there (committed, not yet reported) or not at all
            flight = cache.lookup(cache_worker.FINGERPRINT, [cache_worker.request(last + 1, i) for i in range(size)])
            assert flight in ([None] * size, [cache_worker.answer(last + 1, i) for i in range(size)])
            assert cache.lookup(cache_worker.FINGERPRINT, [cache_worker.request(last + 2, 0)]) == [None]
            entries = cache.stats()["entries"]
        assert len(committed) * size <= entries <= (len(committed) + round_ + 1) * size
    assert len(committed) > 20
    with PredictionCache(path) as cache:  # everything reported committed over all rounds is still there
        for batch in committed:
            assert cache.lookup(cache_worker.FINGERPRINT, [cache_worker.request(batch, size - 1)]) == \
                [cache_worker.answer(batch, size - 1)]


def test_concurrent_writers_of_overlapping_keys(tmp_path):
    path = str(tmp_path / "c.sqlite")
    batches, size = 25, 64
    workers = [_spawn("overlap", path, w, batches, size) for w in range(4)]
    results = [w.communicate(timeout=300) for w in workers]
    for worker, (out, err) in zip(workers, results):
        assert worker.returncode == 0 and out.strip() == "done", err
    written = set()
    for w in range(4):
        rng = random.Random(w)
        for _ in range(batches):
            written.update((rng.randrange(batches), rng.randrange(size)) for _ in range(size))
    keys = sorted(written)
    with PredictionCache(path) as cache:
        assert cache.check() == []
        assert cache.stats()["entries"] == len(keys)
        assert cache.lookup(cache_worker.FINGERPRINT, [cache_worker.request(b, i) for b, i in keys]) == \
            [cache_worker.answer(b, i) for b, i in keys]


def test_concurrent_creation_of_one_new_file(tmp_path):
    path = str(tmp_path / "fresh.sqlite")
    workers = [_spawn("open", path) for _ in range(4)]
    results = [w.communicate(timeout=120) for w in workers]
    for worker, (out, err) in zip(workers, results):
        assert worker.returncode == 0 and out.strip() == "opened", err
    with PredictionCache(path) as cache:
        assert cache.stats()["entries"] == 4
        assert [m["fingerprint"] for m in cache.models()] == [cache_worker.FINGERPRINT]


def test_a_cache_is_not_used_across_fork(tmp_path):
    cache = PredictionCache(str(tmp_path / "c.sqlite"))

    def lookup():
        try:
            cache.lookup("m", requests_for(1))
        except CacheError as exc:
            return str(exc)
        return "no error"
    message = _in_forked_child(lookup)
    assert "opened in another process" in message
    assert cache.lookup("m", requests_for(1)) == [None]
    cache.close()


def test_pure_stdlib():
    out = subprocess.run([sys.executable, "-c", "import sys, StaICC.cache; "
                          "print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))"],
                         capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(WORKER)))
    assert out.stdout.strip() == "[]", out.stderr
