#!/usr/bin/env python3
"""Cost of the prediction cache per prompt, in µs: a miss then a store, and a hit.

A realistic workload: N prompts of about 1 KB (demonstrations + query), label spaces
of 2 to 6 words, float predictions (one in ten an int label with generated text).
For each batch size (prompts per lookup/store call, i.e. per model call) a fresh
cache file is filled (lookup -> all miss -> store, one transaction per call), then
read back (lookup -> all hit).  Each phase gets fresh request objects, as a new run
does, so the hashing of every prompt (canonical JSON, SHA-256, BLAKE2b) is inside the
timed region; ``bare sqlite3`` times the same rows in a plain keyed table, for scale.
Also prints the file size, the cost of opening, of
``PRAGMA quick_check`` and of ``PRAGMA integrity_check`` on the full file, and the
hashing cost alone.  One run, one table; never imported by the package.

    python benchmarks/bench_cache.py [--prompts 100000] [--batch-sizes 1 64 1024] [--dir /tmp]
"""
import argparse
import dataclasses
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from StaICC.cache import PredictionCache, request_digests  # noqa: E402
from StaICC.requests import Answer, Request  # noqa: E402

WORDS = ["the", "film", "was", "a", "great", "pleasure", "to", "watch", "and", "the", "acting", "never", "felt", "false", "even", "when", "the", "plot", "wandered", "off", "into", "places", "nobody", "had", "asked", "for", "review", "sentiment", "positive", "negative"]
LABEL_SPACES = [("negative", "positive"), ("negative", "neutral", "positive"),
                ("very negative", "negative", "neutral", "positive", "very positive"),
                ("abbreviation", "entity", "description", "human", "location", "number")]


def workload(count: int, seed: int = 0):
    rng = random.Random(seed)
    requests, answers = [], []
    for i in range(count):
        labels = LABEL_SPACES[i % len(LABEL_SPACES)]
        lines = []
        size = 0
        while size < 1000:  # about 1 KB: k demonstrations and the query
            line = " ".join(rng.choice(WORDS) for _ in range(14)) + f"\nsentiment: {rng.choice(labels)}\n"
            lines.append(line)
            size += len(line)
        requests.append(Request(f"{i} " + "".join(lines) + "review:", labels, "Normal", "SST5", i))
        if i % 10 == 9:
            answers.append(Answer(rng.randrange(len(labels)), text=rng.choice(labels), parsed=True))
        else:
            answers.append(Answer([rng.gauss(0, 5) for _ in labels]))
    return requests, answers


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def timed_cpu(function) -> tuple:
    """(wall, CPU) seconds: on a shared machine the CPU time is the steadier figure."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def _bare_sqlite_hit(directory: str, requests, batch: int) -> float:
    """Seconds to read every prompt back from a plain sqlite3 table keyed by the prompt's SHA-256 (hashed in
    the timed region too): the floor a cache on SQLite cannot go under."""
    import hashlib
    path = os.path.join(directory, f"bare-{batch}.sqlite")
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE IF NOT EXISTS t (k BLOB PRIMARY KEY, v BLOB)")
    with connection:
        connection.executemany("INSERT OR REPLACE INTO t VALUES (?, ?)",
                               ((hashlib.sha256(r.prompt.encode()).digest(), b"x" * 40) for r in requests))

    def read():
        for s in range(0, len(requests), batch):
            keys = [hashlib.sha256(r.prompt.encode()).digest() for r in requests[s:s + batch]]
            marks = ",".join("?" * len(keys))
            rows = connection.execute(f"SELECT k, v FROM t WHERE k IN ({marks})", keys).fetchall()
            assert len(rows) == len(set(keys))
    seconds = timed(read)
    connection.close()
    return seconds


def run(directory: str, requests, answers, batch: int, prompts: int) -> dict:
    path = os.path.join(directory, f"bench-{batch}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    requests, answers = requests[:prompts], answers[:prompts]
    spans = [(s, min(s + batch, prompts)) for s in range(0, prompts, batch)]
    fingerprint = "f" * 64
    with PredictionCache(path) as cache:
        fresh = [dataclasses.replace(r) for r in requests]  # no digest computed yet: hashing is timed

        def fill():
            for s, e in spans:
                missing = cache.lookup(fingerprint, fresh[s:e])
                assert missing[0] is None
                cache.store(fingerprint, fresh[s:e], answers[s:e])
        miss_store, miss_store_cpu = timed_cpu(fill)
        fresh = [dataclasses.replace(r) for r in requests]

        def read():
            for s, e in spans:
                found = cache.lookup(fingerprint, fresh[s:e])
                assert found[-1] is not None
        hit, hit_cpu = timed_cpu(read)
    bare_hit = _bare_sqlite_hit(directory, requests, batch)
    size = os.path.getsize(path)
    opened = timed(lambda: PredictionCache(path).close())
    raw = sqlite3.connect(path)
    quick = timed(lambda: raw.execute("PRAGMA quick_check").fetchall())
    full = timed(lambda: raw.execute("PRAGMA integrity_check").fetchall())
    raw.close()
    return {"batch": batch, "prompts": prompts, "bare_hit_us": bare_hit / prompts * 1e6,
            "miss_store_us": miss_store / prompts * 1e6,
            "hit_us": hit / prompts * 1e6,
            "miss_store_cpu_us": miss_store_cpu / prompts * 1e6, "hit_cpu_us": hit_cpu / prompts * 1e6, "bytes": size, "open_ms": opened * 1e3,
            "quick_check_ms": quick * 1e3, "integrity_check_ms": full * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=100_000)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--batch-1-prompts", type=int, default=None,
                        help="prompts for batch size 1 (one transaction each; default: --prompts)")
    parser.add_argument("--dir", default=None, help="where the cache files go (default: a temporary folder)")
    args = parser.parse_args()
    requests, answers = workload(args.prompts)
    mean_prompt = sum(len(r.prompt) for r in requests) / len(requests)
    fresh = [dataclasses.replace(r) for r in requests]
    hashing = timed(lambda: [request_digests(r) for r in fresh]) / len(requests) * 1e6
    directory = args.dir or tempfile.mkdtemp(prefix="staicc-bench-cache-")
    try:
        rows = []
        for batch in args.batch_sizes:
            prompts = args.batch_1_prompts if batch == 1 and args.batch_1_prompts else args.prompts
            rows.append(run(directory, requests, answers, batch, prompts))
    finally:
        if args.dir is None:
            shutil.rmtree(directory)
    print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}; {args.prompts} prompts, "
          f"mean {mean_prompt:.0f} characters; hashing (SHA-256 + BLAKE2b of the canonical JSON) "
          f"{hashing:.2f} µs/prompt, inside every timed figure below")
    print("µs per prompt, wall (CPU of this process); the CPU figure is steadier on a busy machine")
    header = (f"{'batch':>6} {'prompts':>8} {'miss+store µs':>18} {'hit µs':>14} {'bare sqlite3':>12} {'MB/100k':>8} "
              f"{'open ms':>8} {'quick_check ms':>15} {'integrity ms':>13}")
    print(header)
    print("-" * len(header))
    for r in rows:
        miss = f"{r['miss_store_us']:.1f} ({r['miss_store_cpu_us']:.1f})"
        hit = f"{r['hit_us']:.1f} ({r['hit_cpu_us']:.1f})"
        print(f"{r['batch']:>6} {r['prompts']:>8} {miss:>18} {hit:>14} {r['bare_hit_us']:>12.1f} "
              f"{r['bytes'] / r['prompts'] * 100_000 / 1e6:>8.2f} {r['open_ms']:>8.2f} "
              f"{r['quick_check_ms']:>15.1f} {r['integrity_check_ms']:>13.1f}")


if __name__ == "__main__":
    main()
