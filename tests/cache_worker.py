"""A process that writes to a prediction cache, for the crash and concurrency tests.

    python tests/cache_worker.py loop PATH FIRST_BATCH BATCH_SIZE
        store batch FIRST_BATCH, FIRST_BATCH+1, ... forever; print "committed N" after each
    python tests/cache_worker.py overlap PATH WORKER BATCHES BATCH_SIZE
        store BATCHES batches of keys that overlap with the other workers' keys; print "done"
    python tests/cache_worker.py open PATH
        open (create) the cache, store one entry, print "opened"

Entries are deterministic functions of their key, so any process can check them.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from StaICC.cache import PredictionCache  # noqa: E402
from StaICC.requests import Answer, Request  # noqa: E402

FINGERPRINT = "worker-model"
LABELS = ("negative", "neutral", "positive")


def request(batch: int, item: int) -> Request:
    return Request(f"batch {batch} item {item} " + "x" * 200, LABELS)


def answer(batch: int, item: int) -> Answer:
    return Answer([batch + item / 7.0, -1.0 / (item + 1), float(batch * item)], text=f"b{batch}i{item}",
                  parsed=item % 2 == 0)


def loop(path: str, first: int, size: int) -> None:
    with PredictionCache(path) as cache:
        batch = first
        while True:
            cache.store(FINGERPRINT, [request(batch, i) for i in range(size)],
                        [answer(batch, i) for i in range(size)])
            print(f"committed {batch}", flush=True)
            batch += 1


def overlap(path: str, worker: int, batches: int, size: int) -> None:
    rng = random.Random(worker)
    with PredictionCache(path) as cache:
        for _ in range(batches):
            # every worker draws from the same key range: most keys are written by several workers
            keys = [(rng.randrange(batches), rng.randrange(size)) for _ in range(size)]
            cache.store(FINGERPRINT, [request(b, i) for b, i in keys], [answer(b, i) for b, i in keys])
            found = cache.lookup(FINGERPRINT, [request(b, i) for b, i in keys])
            assert found == [answer(b, i) for b, i in keys]
    print("done", flush=True)


def open_one(path: str) -> None:
    with PredictionCache(path) as cache:
        cache.store(FINGERPRINT, [request(0, os.getpid())], [answer(0, os.getpid())])
    print("opened", flush=True)


if __name__ == "__main__":
    command, path, *numbers = sys.argv[1:]
    if command == "loop":
        loop(path, int(numbers[0]), int(numbers[1]))
    elif command == "overlap":
        overlap(path, int(numbers[0]), int(numbers[1]), int(numbers[2]))
    elif command == "open":
        open_one(path)
    else:
        raise SystemExit(f"unknown command {command!r}")
