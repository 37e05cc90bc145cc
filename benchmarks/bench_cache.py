#!/usr/bin/env python3
"""The prediction cache's cost against the run it saves and against bare SQLite, side by side in one run.

Three parts, each printed as figures and ratios:

* **suite**: the standard suite with a trivial function (so the figures are the framework's own cost),
  in a fresh process after a warm-up suite: without a cache, with a new cache (a cold cache: every
  answer stored) and again over that file (a warm cache: every answer found), in turns ``--repeats``
  times.  CPU seconds.  A warm run reads each lookup batch from its batch row (one row per batch, keyed by the
  whole batch's content: :mod:`StaICC.cache.batches`); it is also timed with the batch rows deleted first (as
  after ``cache merge``): every entry looked up one by one.  Then the warm suite again with every request's digests given (looked up by prompt in a
  dictionary the run before filled): the least any cache keyed by each prompt's content can cost.
* **per prompt**: ~1 KB prompts (label spaces of 2 to 6 words; nine answers in ten a float vector, one
  an int label with generated text), per batch size (prompts per lookup/store call).  A lookup (all
  hits) and a store against a bare sqlite3 table (``k BLOB PRIMARY KEY, v``, WAL, the same keys and
  value bytes): ``SELECT k, v ... WHERE k IN (...)`` per 500 keys, ``executemany`` INSERT, one
  transaction per batch.  Lookups and stores get their request digests computed before the clock
  starts, as the bare table gets its keys; the digests themselves (canonical JSON, SHA-256 and
  BLAKE2b, which the cache format fixes) are timed apart, and a lookup with them included is set
  against a bare SELECT plus the SHA-256 of each prompt; the cache's own six-column SELECT, nothing decoded,
  shows what the table's shape costs apart from the checks.  CPU µs per prompt.
* **merge**: ``merge_caches`` of K shard caches into a new file, and again into that full file (every
  answer already there), against ``ATTACH`` + ``INSERT OR IGNORE INTO predictions SELECT * FROM
  src.predictions`` of the same files into a file of the same schema.  CPU seconds (wall beside).

``--compare REV`` measures REV as well (checked out in a temporary git worktree and measured by this
same script), in turns with the working tree round by round, so before and after come from one run.
Each figure is the least of ``--rounds`` rounds and of ``--repeats`` measurements in each round.
Never imported by the package.

    python benchmarks/bench_cache.py [--rounds 3] [--prompts 20000] [--batch-sizes 64 1024]
                                     [--shards 4] [--merge-prompts 40000] [--compare REV]
"""
import argparse
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = ("the film was a great pleasure to watch and the acting never felt false even when the plot "
        "wandered off into places nobody had asked for review sentiment positive negative")
WORDS = TEXT.split()
LABEL_SPACES = [("negative", "positive"), ("negative", "neutral", "positive"),
                ("very negative", "negative", "neutral", "positive", "very positive"),
                ("abbreviation", "entity", "description", "human", "location", "number")]
FINGERPRINT = "f" * 64
PARTS = ("suite", "prompt", "merge")
READS = 5  # a read-only phase (lookups that find everything, bare SELECTs) is timed this often in a row

SUITE_CHILD = r"""
import json, os, sys, tempfile, time, warnings
sys.path.insert(0, {root!r})
warnings.simplefilter("ignore")
from StaICC.subbenchmarks.suite import run_suite
def trivial(prompt, label_space):
    return 0
def cpu(cache):
    start = time.process_time()
    run_suite(trivial, "all", progress=False, cache=cache, model_id="bench" if cache else None)
    return time.process_time() - start
run_suite(trivial, "all", progress=False)  # data decoded, default rows and pseudo-queries drawn
runs = []
for repeat in range({repeats}):  # in turns, so that a busy moment of the machine falls on all three alike
    path = os.path.join(tempfile.mkdtemp(), "suite.sqlite")
    runs.append({{"suite: no cache (s)": cpu(None), "suite: cold cache (s)": cpu(path),
                 "suite: warm cache (s)": cpu(path)}})
figures = {{name: min(run[name] for run in runs) for name in runs[0]}}
# a warm run over a cache whose batch rows are gone (as after `cache merge`, which copies entries only): every
# entry looked up and checked one by one, and each batch's row written again for the next run
import sqlite3
def without_batch_rows(path):
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM batches")
    connection.close()
try:
    spans = []
    for repeat in range({repeats}):
        without_batch_rows(path)
        spans.append(cpu(path))
    figures["suite: warm cache, batch rows gone (s)"] = min(spans)
except sqlite3.OperationalError:  # a revision without batch rows
    pass
# the floor of any cache that keys an entry by its content: the warm suite again with every request's digests
# looked up in a dictionary filled by the run before (a dict lookup by prompt instead of the hashing)
from StaICC import requests as staicc_requests
compute, memo = staicc_requests.Request.digests.compute, {{}}
def remembered(request):
    key = (request.prompt, request.label_space, request.kind)
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute(request)
    return found
staicc_requests.Request.digests.compute = remembered
def per_entry(path):  # the per-entry path: batch rows deleted first (the run writes them again)
    try:
        without_batch_rows(path)
    except sqlite3.OperationalError:  # a revision without batch rows
        pass
    return cpu(path)
per_entry(path)
figures["suite: warm cache, batch rows gone, digests given (s)"] = min(per_entry(path) for _ in range({repeats}))
staicc_requests.Request.digests.compute = compute
try:  # the digests of the suite's distinct prompts, which any run with this cache format computes
    import dataclasses
    from StaICC.backends import FunctionBackend
    from StaICC.subbenchmarks.suite import build_suite, plan_suite
    distinct = {{}}
    for works in plan_suite(FunctionBackend(trivial, model_id="bench"), build_suite("all")).values():
        for _plan, requests in works:
            for request in requests:
                distinct.setdefault((request.prompt, request.label_space), request)
    fresh = [dataclasses.replace(r) for r in distinct.values()]
    start = time.process_time()
    for request in fresh:
        request.digests
    figures["suite: digests of its distinct prompts (s)"] = time.process_time() - start
except ImportError:  # a revision without these names
    pass
print(json.dumps(figures))
"""


def workload(count: int, seed: int = 0):
    """``count`` requests of about 1 KB and their answers."""
    from StaICC.requests import Answer, Request
    rng = random.Random(seed)
    requests, answers = [], []
    for i in range(count):
        labels = LABEL_SPACES[i % len(LABEL_SPACES)]
        lines, size = [], 0
        while size < 1000:  # k demonstrations and the query
            line = " ".join(rng.choice(WORDS) for _ in range(14)) + f"\nsentiment: {rng.choice(labels)}\n"
            lines.append(line)
            size += len(line)
        requests.append(Request(f"{i} " + "".join(lines) + "review:", labels, "Normal", "SST5", i))
        if i % 10 == 9:
            answers.append(Answer(rng.randrange(len(labels)), text=rng.choice(labels), parsed=True))
        else:
            answers.append(Answer([rng.gauss(0, 5) for _ in labels]))
    return requests, answers


def cpu_of(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def copies(requests, digested: bool):
    """New request objects (no digest kept yet); digested before any clock starts when ``digested``."""
    out = [dataclasses.replace(r) for r in requests]
    if digested:
        for request in out:
            request.digests  # noqa: B018 -- computed once and kept on the request
    return out


def stored_value(answer):
    """The bytes the cache stores for an answer's prediction (for a bare table of the same row sizes)."""
    prediction = answer.prediction
    return prediction if isinstance(prediction, int) else struct.pack(f"<{len(prediction)}d", *prediction)


# ---------------------------------------------------------------------------- per prompt
def per_prompt(directory: str, count: int, batch: int, repeats: int) -> dict:
    """CPU µs per prompt of the cache's lookups and stores and of a bare table, at one batch size.

    Each figure is the least of ``repeats`` measurements (a store into a new file each time; the
    reads of each file the least of READS).
    """
    requests, answers = workload(count)
    spans = [(s, min(s + batch, count)) for s in range(0, count, batch)]
    keys, values = [r.digests[0] for r in copies(requests, True)], [stored_value(a) for a in answers]
    runs = []
    for number in range(repeats):
        fresh = copies(requests, False)
        figures = {"digests": cpu_of(lambda r=fresh: [request.digests for request in r]),
                   "sha256 of the prompt": cpu_of(lambda: [hashlib.sha256(r.prompt.encode("utf-8")).digest()
                                                           for r in requests])}
        figures.update(cache_phases(os.path.join(directory, f"cache-{batch}-{number}.sqlite"), requests, answers,
                                    spans))
        figures.update(bare_table(os.path.join(directory, f"bare-{batch}-{number}.sqlite"), keys, values, spans))
        runs.append(figures)
    return {f"per prompt, batch {batch}: {name} (µs)": min(r[name] for r in runs) / count * 1e6 for name in runs[0]}


def cache_phases(path: str, requests, answers, spans) -> dict:
    """CPU seconds of a new cache: each batch looked up (nothing found) then stored, as a run does; then read back."""
    from StaICC.cache import PredictionCache
    seconds = {"miss": 0.0, "store": 0.0}
    with PredictionCache(path) as cache:
        asked = copies(requests, True)
        for s, e in spans:
            batch_requests, batch_answers = asked[s:e], answers[s:e]
            seconds["miss"] += cpu_of(lambda r=batch_requests: cache.lookup(FINGERPRINT, r))
            seconds["store"] += cpu_of(lambda r=batch_requests, a=batch_answers: cache.store(FINGERPRINT, r, a))
        for name, digested in (("hit", True), ("hit + digests", False)):
            times = []
            for _ in range(READS):
                again = copies(requests, digested)
                times.append(cpu_of(lambda r=again: [cache.lookup(FINGERPRINT, r[s:e]) for s, e in spans]))
            seconds[name] = min(times)
            assert cache.lookup(FINGERPRINT, again[-1:]) == answers[-1:]
        seconds["select of the cache's own rows"] = own_rows_select(cache, [r.digests[0] for r in asked], spans)
    return seconds


def own_rows_select(cache, keys, spans) -> float:
    """CPU seconds of the cache's own SELECT (its six columns, 500 keys a query) in sqlite3, nothing decoded or
    checked: what a lookup costs before it reads an entry."""
    connection = cache._db()
    model = connection.execute("SELECT id FROM models WHERE fingerprint = ?", (FINGERPRINT,)).fetchone()[0]

    def select():
        for s, e in spans:
            for c in range(s, e, 500):
                chunk = keys[c:min(c + 500, e)]
                connection.execute("SELECT content_key, check_key, value, text, parsed, crc FROM predictions "
                                   f"WHERE model = ? AND content_key IN ({','.join('?' * len(chunk))})",
                                   [model, *chunk]).fetchall()
    return min(cpu_of(select) for _ in range(READS))


def bare_table(path: str, keys, values, spans) -> dict:
    """CPU seconds of a bare keyed table: the batches inserted (a transaction each), then read back."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("CREATE TABLE t (k BLOB PRIMARY KEY, v ANY NOT NULL) WITHOUT ROWID")

    def insert():
        for s, e in spans:
            connection.execute("BEGIN")
            connection.executemany("INSERT OR IGNORE INTO t VALUES (?, ?)", zip(keys[s:e], values[s:e]))
            connection.execute("COMMIT")

    def select():
        for s, e in spans:
            for c in range(s, e, 500):
                chunk = keys[c:min(c + 500, e)]
                connection.execute(f"SELECT k, v FROM t WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    try:
        return {"bare insert": cpu_of(insert), "bare select": min(cpu_of(select) for _ in range(READS))}
    finally:
        connection.close()


# ---------------------------------------------------------------------------- merge
def shard_caches(directory: str, count: int, shards: int) -> list:
    """``shards`` caches holding a round-robin share each of ``count`` answers (one model)."""
    from StaICC.cache import PredictionCache
    requests, answers = workload(count, seed=1)
    paths = []
    for k in range(shards):
        paths.append(os.path.join(directory, f"shard-{k}.sqlite"))
        with PredictionCache(paths[-1]) as cache:
            cache.register_model(FINGERPRINT, {"backend": "bench"})
            mine = list(range(k, count, shards))
            for s in range(0, len(mine), 1024):
                part = mine[s:s + 1024]
                cache.store(FINGERPRINT, [requests[i] for i in part], [answers[i] for i in part])
    return paths


def timed(function) -> tuple:
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.process_time() - cpu, time.perf_counter() - wall


def bare_merge(output: str, inputs) -> None:
    """ATTACH + INSERT OR IGNORE ... SELECT * of every input into a new file of the cache's schema."""
    from StaICC.cache import PredictionCache
    PredictionCache(output).close()
    connection = sqlite3.connect(output, isolation_level=None)
    connection.execute("INSERT INTO models (fingerprint, identity, created) VALUES (?, NULL, '')", (FINGERPRINT,))
    for path in inputs:
        connection.execute("ATTACH DATABASE ? AS src", (path,))
        connection.execute("INSERT OR IGNORE INTO main.predictions SELECT * FROM src.predictions")
        connection.execute("DETACH DATABASE src")
    connection.close()


def merge_figures(directory: str, count: int, shards: int, repeats: int) -> dict:
    """Seconds of merge_caches and of a bare copy, each the least of ``repeats`` (into a new file each time)."""
    from StaICC.cache.merge import merge_caches
    inputs = shard_caches(directory, count, shards)
    label = f"merge, {shards} x {count // shards}"
    runs = []
    for number in range(repeats):
        merged, bare = (os.path.join(directory, f"{name}-{number}.sqlite") for name in ("merged", "bare"))
        figures = {}
        for name, function in (("merge_caches into a new file", lambda m=merged: merge_caches(m, inputs)),
                               ("merge_caches again (every answer there)", lambda m=merged: merge_caches(m, inputs)),
                               ("ATTACH + INSERT OR IGNORE into a new file", lambda b=bare: bare_merge(b, inputs))):
            figures[f"{label}: {name} (s)"], figures[f"{label}: {name}, wall (s)"] = timed(function)
        with sqlite3.connect(merged) as a, sqlite3.connect(bare) as b:
            query = "SELECT content_key, check_key, value, text, parsed, crc FROM predictions ORDER BY content_key"
            assert a.execute(query).fetchall() == b.execute(query).fetchall(), "the merge differs from the bare copy"
        runs.append(figures)
    return {name: min(r[name] for r in runs) for name in runs[0]}


# ---------------------------------------------------------------------------- one round, one tree
def measure(args: argparse.Namespace) -> dict:
    """Every figure of the parts asked for, measured with the StaICC of this process's path."""
    figures = {}
    if "suite" in args.parts:
        out = subprocess.run([sys.executable, "-c", SUITE_CHILD.format(root=args.root, repeats=args.repeats)],
                             capture_output=True, text=True, check=True)
        figures.update(json.loads(out.stdout.strip().splitlines()[-1]))
    directory = tempfile.mkdtemp(prefix="staicc-bench-cache-")
    try:
        if "prompt" in args.parts:
            for batch in args.batch_sizes:
                figures.update(per_prompt(directory, args.prompts, batch, args.repeats))
        if "merge" in args.parts:
            figures.update(merge_figures(directory, args.merge_prompts, args.shards, args.repeats))
    finally:
        shutil.rmtree(directory)
    return figures


def ratios(figures: dict, batch_sizes) -> list:
    """(name, value, target) of each ratio the targets are stated in."""
    rows = []
    suite = {k.split(": ")[1].split(" (")[0]: v for k, v in figures.items() if k.startswith("suite: ")}
    if suite:
        rows.append(("warm-cache suite / suite without a cache", suite["warm cache"] / suite["no cache"], 1.2))
        rows.append(("cold-cache suite / suite without a cache", suite["cold cache"] / suite["no cache"], 2.0))
        rows.append(("warm-cache suite, batch rows gone (first run after a merge) / suite without a cache",
                     suite.get("warm cache, batch rows gone", float("nan")) / suite["no cache"], None))
        rows.append(("digests of the suite's distinct prompts / suite without a cache",
                     suite.get("digests of its distinct prompts", float("nan")) / suite["no cache"], None))
        rows.append(("warm-cache suite, batch rows gone, digests given / suite without a cache (the floor of "
                     "per-entry keys)", suite.get("warm cache, batch rows gone, digests given", float("nan"))
                     / suite["no cache"], None))
    for batch in batch_sizes:
        f = {k.split(": ")[1][:-5]: v for k, v in figures.items() if k.startswith(f"per prompt, batch {batch}: ")}
        if f:
            rows.append((f"batch {batch}: lookup / bare SELECT (digests given)", f["hit"] / f["bare select"], 1.5))
            rows.append((f"batch {batch}: the cache's own SELECT, nothing read / bare SELECT",
                         f.get("select of the cache's own rows", float("nan")) / f["bare select"], None))
            rows.append((f"batch {batch}: lookup with its digests / bare SELECT with SHA-256 of the prompt",
                         f["hit + digests"] / (f["bare select"] + f["sha256 of the prompt"]), None))
            rows.append((f"batch {batch}: store / bare INSERT (digests given)", f["store"] / f["bare insert"], None))
    merge = {k.split(": ")[1][:-4]: v for k, v in figures.items() if k.startswith("merge, ") and "wall" not in k}
    if merge:
        bare = merge["ATTACH + INSERT OR IGNORE into a new file"]
        rows.append(("merge into a new file / ATTACH + INSERT OR IGNORE", merge["merge_caches into a new file"] / bare, 2.0))
        rows.append(("merge again (every answer there) / ATTACH + INSERT OR IGNORE",
                     merge["merge_caches again (every answer there)"] / bare, None))
    return rows


def worktree_of(revision: str, directory: str) -> str:
    tree = os.path.join(directory, "tree")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, revision], check=True, capture_output=True)
    return tree


def measured_in(root: str, args: argparse.Namespace) -> dict:
    """One round of this script with the StaICC at ``root``, in its own process."""
    command = [sys.executable, os.path.abspath(__file__), "--json", "--root", root, "--prompts", str(args.prompts),
               "--shards", str(args.shards), "--merge-prompts", str(args.merge_prompts), "--repeats", str(args.repeats),
               "--batch-sizes", *map(str, args.batch_sizes), "--parts", *args.parts]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def least(rounds: list) -> dict:
    return {name: min(r[name] for r in rounds) for name in rounds[0]}


def print_table(trees: dict, batch_sizes) -> None:
    labels = list(trees)
    print(f"StaICC cache benchmark - python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cores; least of each figure over the rounds; CPU unless it says wall")
    names = list(trees[labels[-1]])
    width = max(len(n) for n in names) + 2
    print("".join([f"{'figure':<{width}}"] + [f"{label:>14}" for label in labels]))
    for name in names:
        print("".join([f"{name:<{width}}"] + [f"{trees[label].get(name, float('nan')):>14.3f}" for label in labels]))
    print()
    rows = {label: ratios(figures, batch_sizes) for label, figures in trees.items()}
    width = max(len(r[0]) for r in rows[labels[-1]]) + 2
    print("".join([f"{'ratio':<{width}}"] + [f"{label:>14}" for label in labels] + [f"{'target':>8}"]))
    for i, (name, _value, target) in enumerate(rows[labels[-1]]):
        cells = [f"{rows[label][i][1]:>14.2f}" for label in labels]
        print("".join([f"{name:<{width}}"] + cells + [f"{'<= ' + str(target) if target else '':>8}"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree, in turns with the other tree")
    parser.add_argument("--repeats", type=int, default=3, help="measurements of each figure in each round")
    parser.add_argument("--prompts", type=int, default=20_000, help="prompts of the per-prompt part")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--merge-prompts", type=int, default=40_000, help="answers over all shards of the merge part")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--compare", metavar="REV", help="also measure this git revision, in turns with this tree")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        sys.path.insert(0, args.root)
        print(json.dumps(measure(args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        roots = {f"before {args.compare}": worktree_of(args.compare, tmp)} if args.compare else {}
        roots["now"] = ROOT
        try:
            rounds = {label: [] for label in roots}
            for _ in range(args.rounds):
                for label, root in roots.items():
                    rounds[label].append(measured_in(root, args))
        finally:
            if args.compare:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", roots[f"before {args.compare}"]],
                               check=True, capture_output=True)
    print_table({label: least(r) for label, r in rounds.items()}, args.batch_sizes)


if __name__ == "__main__":
    main()
