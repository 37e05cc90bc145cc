#!/usr/bin/env python3
"""Wall time of 1, 2 and 4 shards of one run (separate processes, then merge and summarise), measured once.

    python benchmarks/bench_shards.py [--limit 48] [--hidden 256] [--layers 4] [--model-dir DIR]

A random-weight Llama (tokenizer trained on the datasets' texts, nothing downloaded) is
saved to a temporary directory, unless ``--model-dir`` names one (for example one made by
``make_random_model.py`` on a GPU machine).  For N shards, N ``staicc run --shard I/N``
processes start together (``OMP_NUM_THREADS=1`` each unless ``--threads``), then ``staicc cache
merge`` and the final ``staicc run --cache`` (which asks nothing) run.  Printed per N:
wall time of the shard phase, of merge + final run, total, the speed-up over one shard,
and the scoring seconds each shard reports (its process start-up excluded).  The last
table compares the answers of a sharded run with the one-process run's: at the backend's
default ``requests_per_call`` (query shards), at ``requests_per_call=1`` (every prompt
alone) and with ``--shard-unit call`` (each shard makes the one-process run's calls).
Never imported by the package.
"""
import argparse
import os
import re
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def make_model(directory: str, hidden: int, layers: int, datasets: list) -> str:
    from StaICC.backends.tiny_models import tiny_causal_lm, tiny_tokenizer
    from bench_kernel import suite_groups
    _, texts = suite_groups([int(d) for d in datasets], 4, 200)
    tokenizer = tiny_tokenizer(texts, vocab_size=4096)
    model = tiny_causal_lm("llama", vocab_size=len(tokenizer), hidden_size=hidden, layers=layers)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def staicc(args, threads: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, "-m", "StaICC", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def waited(process: subprocess.Popen) -> str:
    out, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"staicc failed ({process.returncode}): {err[-2000:]}")
    return out


def sharded(run: list, count: int, work: str, threads: int, unit: str = "query") -> dict:
    """Wall times of a run split in ``count`` shards; the merged cache path."""
    caches = [os.path.join(work, f"n{count}-shard{i}.sqlite") for i in range(count)]
    started = time.perf_counter()
    processes = [staicc(run + ["--shard", f"{i}/{count}", "--shard-unit", unit, "--cache", caches[i]], threads)
                 for i in range(count)]
    outputs = [waited(p) for p in processes]
    shard_wall = time.perf_counter() - started
    merged = os.path.join(work, f"n{count}.sqlite")
    waited(staicc(["cache", "merge", merged, *caches], threads))
    final = waited(staicc(run + ["--cache", merged], threads))
    total = time.perf_counter() - started
    scoring = [float(re.search(r"cache, ([0-9.]+) s;", out).group(1)) for out in outputs]
    asked = int(re.search(r"(\d+) asked", final.splitlines()[-1]).group(1))
    return {"count": count, "shard_wall": shard_wall, "final_wall": total - shard_wall, "total": total,
            "scoring": scoring, "final_asked": asked, "cache": merged}


def answers(path: str) -> dict:
    connection = sqlite3.connect(path)
    rows = connection.execute("SELECT content_key, value FROM predictions").fetchall()
    connection.close()
    return {key: struct.unpack(f"<{len(value) // 8}d", value) if isinstance(value, bytes) else (value,)
            for key, value in rows}


def largest_difference(a: str, b: str) -> float:
    first, second = answers(a), answers(b)
    assert first.keys() == second.keys()
    return max(abs(x - y) for key in first for x, y in zip(first[key], second[key]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=48, help="test items per dataset (default 48)")
    parser.add_argument("--datasets", nargs="+", default=["0", "4", "5"])
    parser.add_argument("--benchmarks", default="Normal,GLER")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--model-dir", help="an existing HF model directory instead of the random one")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS of every process (default 1: the thread count changes the float "
                             "summation order, so runs are compared at one setting)")
    args = parser.parse_args()
    cores, threads = os.cpu_count() or 1, args.threads
    with tempfile.TemporaryDirectory() as work:
        model = args.model_dir or make_model(os.path.join(work, "model"), args.hidden, args.layers, args.datasets)
        base = ["run", "--model", "hf", "--benchmarks", args.benchmarks, "--datasets", *args.datasets,
                "--limit", str(args.limit), "--no-progress"]
        pinned = base[:3] + ["--model-args", f"pretrained={model},requests_per_call=1"] + base[3:]
        batched = base[:3] + ["--model-args", f"pretrained={model}"] + base[3:]
        print(f"{cores} CPU cores, {threads} thread(s) per process; workload: {' '.join(base[3:])}; model hidden={args.hidden} layers={args.layers}")
        print(f"{'shards':>6} {'shard phase s':>14} {'merge+final s':>14} {'total s':>8} {'speed-up':>9}  "
              "scoring s per shard (start-up excluded)")
        for sub in ("batched", "pinned", "calls"):  # one cache set per variant: they share the model's fingerprint
            os.makedirs(os.path.join(work, sub))
        rows = [sharded(batched, n, os.path.join(work, "batched"), threads) for n in args.counts]
        for row in rows:
            print(f"{row['count']:>6} {row['shard_wall']:>14.1f} {row['final_wall']:>14.1f} {row['total']:>8.1f} "
                  f"{rows[0]['total'] / row['total']:>8.2f}x  {', '.join(f'{s:.1f}' for s in row['scoring'])}"
                  f"  (final run asked {row['final_asked']})")
        print("\nlargest |difference| of a probability between the 1-shard and the N-shard answers:")
        for row in rows[1:]:
            print(f"  requests_per_call default, {row['count']} shards: {largest_difference(rows[0]['cache'], row['cache']):.3g}")
        one = sharded(pinned, 1, os.path.join(work, "pinned"), threads)
        two = sharded(pinned, 2, os.path.join(work, "pinned"), threads)
        print(f"  requests_per_call=1 (pinned), 2 shards: {largest_difference(one['cache'], two['cache']):.3g}")
        calls = sharded(batched, 2, os.path.join(work, "calls"), threads, unit="call")
        print(f"  requests_per_call default, 2 shards of one-process calls (--shard-unit call): "
              f"{largest_difference(rows[0]['cache'], calls['cache']):.3g}; total {calls['total']:.1f} s, "
              f"scoring {', '.join(f'{s:.1f}' for s in calls['scoring'])} s")


if __name__ == "__main__":
    main()
