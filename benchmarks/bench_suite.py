#!/usr/bin/env python3
"""The suite runner and its cache, measured in one run: prompts asked, framework time, cache cost,
kill -9 and resume, two processes on one cache, and the runner's footprint (peak RSS after GLER and
after the whole suite, framework CPU time, each in a fresh process).  Prints a table of figures and ratios.

    python benchmarks/bench_suite.py [--kills 20] [--datasets 0 1 2]
    python benchmarks/bench_suite.py --footprint-only [--compare REV]

``--compare REV`` measures the footprint of an earlier commit too (checked out in a temporary
git worktree), so before/after come from one run of this script.

Never imported by the package.  The model is a trivial deterministic function, so the
figures are the framework's own cost.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CHILD = r"""
import os, sys, json, time
sys.path.insert(0, {root!r})
from StaICC.subbenchmarks.suite import run_suite
counter = os.open({counter!r}, os.O_RDWR | os.O_CREAT)
calls = [0]
def model(prompt, label_space):
    calls[0] += 1
    os.pwrite(counter, calls[0].to_bytes(8, "little"), 0)
    time.sleep({delay})
    text = prompt if isinstance(prompt, str) else "\x01".join(prompt)
    h = sum(map(ord, text[-64:]))
    return [((h * (i + 7)) % 13) / 4.0 for i in range(len(label_space))]
result = run_suite(model, {benchmarks!r}, datasets={datasets!r}, cache={cache!r}, model_id="bench-model", progress=False)
with open({out!r}, "w") as fh:
    json.dump({{name: dict(r) for name, r in result.items()}}, fh, sort_keys=True)
"""


def child_source(cache, counter, out, benchmarks, datasets, delay):
    return CHILD.format(root=ROOT, cache=cache, counter=counter, out=out, benchmarks=benchmarks,
                        datasets=datasets, delay=delay)


def read_counter(path):
    try:
        with open(path, "rb") as fh:
            return int.from_bytes(fh.read(8) or b"\0", "little")
    except FileNotFoundError:
        return 0


def cached_count(cache_path, planned_requests, fingerprint):
    from StaICC.cache import PredictionCache
    with PredictionCache(cache_path) as cache:
        return sum(a is not None for a in cache.lookup(fingerprint, planned_requests))


def distinct_requests(benchmarks, datasets):
    from StaICC.backends import FunctionBackend
    from StaICC.subbenchmarks.suite import build_suite, plan_suite
    backend = FunctionBackend(lambda prompt, label_space: 0, model_id="bench-model")
    planned = plan_suite(backend, build_suite(benchmarks, datasets))
    seen = {}
    for runs in planned.values():
        for _plan, requests in runs:
            for r in requests:
                seen.setdefault(r.key(), r)
    return list(seen.values()), backend.fingerprint()


def trivial(prompt, label_space):
    return 0


FOOTPRINT_CHILD = r"""
import collections, json, os, resource, sys, tempfile, time, warnings
sys.path.insert(0, {root!r})
warnings.simplefilter("ignore")
from StaICC.subbenchmarks.builtin import GLER, Normal
from StaICC.subbenchmarks.suite import run_suite
import StaICC.engine.runner as runner, StaICC.engine.plan as plan
phases = collections.Counter()
def timed(owner, name, label):  # CPU seconds spent in owner.name, summed per label
    inner = getattr(owner, name, None)
    if inner is None:
        return
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[label] += time.process_time() - start
    setattr(owner, name, wrapper)
timed(plan.Work, "requests", "writing prompts")
timed(runner, "distinct_requests", "distinct requests")
timed(runner, "score_requests", "score_requests")
timed(runner, "summarize", "summarize")
def trivial(prompt, label_space):
    return 0
what = {what!r}
cache = None
if what == "warm suite":
    run_suite(trivial, "all", progress=False)  # data decoded, default rows and pseudo-queries drawn
elif what == "cached suite":
    cache = os.path.join(tempfile.mkdtemp(), "bench.cache")
    run_suite(trivial, "all", progress=False, cache=cache, model_id="bench")  # every answer stored
elif what != "GLER":
    Normal()(trivial)  # decode the bundled data first, as any first run does
phases.clear()
c0 = time.process_time()
if what == "GLER":
    result = GLER()(trivial)
else:
    result = run_suite(trivial, "all", progress=False, cache=cache, model_id="bench" if cache else None)
cpu = time.process_time() - c0
print(json.dumps({{"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "cpu_s": cpu,
                  "score_calls": result.metadata.get("score_calls"), "phases": dict(phases)}}))
"""


def footprint(root):
    """Peak RSS after GLER and after run_suite(f, "all"), and the suite's CPU time, each in a fresh process."""
    figures = {}
    for what in ("GLER", "suite", "warm suite", "cached suite"):
        out = subprocess.run([sys.executable, "-c", FOOTPRINT_CHILD.format(root=root, what=what)],
                             capture_output=True, text=True, check=True)
        figures[what] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def footprint_rows(label, figures):
    return [(f"{label}: peak RSS after GLER (MB)", f"{figures['GLER']['rss_mb']:.1f}"),
            (f"{label}: peak RSS after run_suite(f, 'all') (MB)", f"{figures['suite']['rss_mb']:.1f}"),
            (f"{label}: suite framework CPU, data decoded (s)", f"{figures['suite']['cpu_s']:.2f}"),
            (f"{label}: suite framework CPU, second suite in the process (s)", f"{figures['warm suite']['cpu_s']:.2f}"),
            (f"{label}: suite again, every answer from the cache, CPU (s)", f"{figures['cached suite']['cpu_s']:.2f}"),
            (f"{label}: cached rerun / second suite without a cache",
             f"{figures['cached suite']['cpu_s'] / figures['warm suite']['cpu_s']:.2f}")] + [
            (f"{label}:   of the data-decoded suite: {phase} (s)", f"{seconds:.2f}")
            for phase, seconds in figures["suite"].get("phases", {}).items()]


def compared_footprint(revision):
    """The footprint of ``revision``, checked out in a temporary worktree that is removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, revision], check=True,
                       capture_output=True)
        try:
            return footprint(tree)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=True, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--datasets", nargs="+", default=["financial_phrasebank", "TREC", "SST5"])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--footprint-only", action="store_true", help="only the footprint section")
    parser.add_argument("--compare", metavar="REV", help="also measure the footprint of this git revision")
    args = parser.parse_args()
    import warnings
    warnings.simplefilter("ignore")
    from StaICC.subbenchmarks.builtin import SUB_BENCHMARKS
    from StaICC.subbenchmarks.suite import STANDARD_SUITE, run_suite
    rows = []

    # 0. footprint: each figure in a fresh process
    if args.compare:
        rows.extend(footprint_rows(f"before ({args.compare})", compared_footprint(args.compare)))
    now = footprint(ROOT)
    rows.extend(footprint_rows("now", now))
    rows.append(("score_requests calls, run_suite(f, 'all') over the ten datasets", now["suite"]["score_calls"]))
    if args.footprint_only:
        print_rows(rows)
        return

    # 1. prompts asked by the standard suite vs the naive sum, framework time
    calls = [0]

    def counting(prompt, label_space):
        calls[0] += 1
        return 0
    # a suite first: the data decoded, the default rows and the domain pseudo-queries drawn, so that the suite
    # and the five calls below find the same work done (the footprint above times a first suite)
    run_suite(trivial, "all", progress=False)
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_suite(counting, "all", progress=False)
    suite_s, suite_cpu = time.perf_counter() - t0, time.process_time() - c0
    naive_s = naive_cpu = 0.0
    for name in STANDARD_SUITE:
        t0, c0 = time.perf_counter(), time.process_time()
        SUB_BENCHMARKS[name]()(trivial)
        naive_s += time.perf_counter() - t0
        naive_cpu += time.process_time() - c0
    rows.append(("prompts in the standard suite (naive sum)", result.metadata["prompts"]))
    rows.append(("prompts asked by run_suite", calls[0]))
    rows.append(("asked / naive", f"{calls[0] / result.metadata['prompts']:.3f}"))
    rows.append(("framework time, whole suite, trivial function, second suite (s wall / CPU)", f"{suite_s:.2f} / {suite_cpu:.2f}"))
    rows.append(("the 5 sub-benchmark calls one by one (s wall / CPU)", f"{naive_s:.2f} / {naive_cpu:.2f}"))

    # 2. cache cost per prompt: the suite with a fresh cache (all misses) and again (all hits)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "suite.cache")
        t0 = time.perf_counter()
        run_suite(trivial, "all", cache=path, model_id="bench", progress=False)
        miss_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = run_suite(trivial, "all", cache=path, model_id="bench", progress=False)
        hit_s = time.perf_counter() - t0
        distinct = again.metadata["distinct_prompts"]
        rows.append(("suite with a new cache (s)", f"{miss_s:.2f}"))
        rows.append(("cache cost per distinct prompt, miss + store (us)", f"{(miss_s - suite_s) / distinct * 1e6:.1f}"))
        rows.append(("suite again, every answer from the cache (s)", f"{hit_s:.2f}"))
        rows.append(("asked on the re-run", again.metadata["asked"]))
        rows.append(("cache file size (MB)", f"{os.path.getsize(path) / 1e6:.1f}"))

    # 3. kill -9 at random moments, resume until done; compare with an uninterrupted run
    rng = random.Random(args.seed)
    benchmarks = "Normal,GLER,Triplet_bias"
    requests, fingerprint = distinct_requests(benchmarks, args.datasets)
    with tempfile.TemporaryDirectory() as tmp:
        reference_out = os.path.join(tmp, "reference.json")
        subprocess.run([sys.executable, "-c", child_source(os.path.join(tmp, "ref.cache"), os.path.join(tmp, "c0"),
                                                           reference_out, benchmarks, args.datasets, 0.0)], check=True)
        path = os.path.join(tmp, "killed.cache")
        out = os.path.join(tmp, "killed.json")
        lost, kills, attempts = [], 0, 0
        while not os.path.exists(out):
            attempts += 1
            counter = os.path.join(tmp, f"counter{attempts}")
            before = cached_count(path, requests, fingerprint) if os.path.exists(path) else 0
            child = subprocess.Popen([sys.executable, "-c", child_source(path, counter, out, benchmarks,
                                                                         args.datasets, 0.0002)])
            if kills < args.kills:
                time.sleep(rng.uniform(0.3, 2.0))
                if child.poll() is None:
                    child.send_signal(signal.SIGKILL)
                    child.wait()
                    kills += 1
                    asked = read_counter(counter)
                    after = cached_count(path, requests, fingerprint)
                    lost.append(asked - (after - before))
                    continue
            if child.wait() != 0:
                raise SystemExit("the resumed run failed")
        identical = json.load(open(out)) == json.load(open(reference_out))
        rows.append((f"kill -9: kills / runs to finish ({len(requests)} distinct prompts)", f"{kills} / {attempts}"))
        rows.append(("prompts answered but lost per kill (max, mean)",
                     f"{max(lost) if lost else 0}, {sum(lost) / max(len(lost), 1):.1f}"))
        rows.append(("final results identical to an uninterrupted run", identical))

        # 4. two processes on one cache
        shared = os.path.join(tmp, "shared.cache")
        outs = [os.path.join(tmp, f"p{i}.json") for i in range(2)]
        procs = [subprocess.Popen([sys.executable, "-c", child_source(shared, os.path.join(tmp, f"pc{i}"), outs[i],
                                                                      benchmarks, args.datasets, 0.0001)],
                                  stderr=subprocess.PIPE) for i in range(2)]
        codes = [p.wait() for p in procs]
        errors = [p.stderr.read().decode() for p in procs]
        both = [json.load(open(o)) for o in outs if os.path.exists(o)]
        complete = cached_count(shared, requests, fingerprint)
        rows.append(("two processes on one cache: exit codes", codes))
        rows.append(("  errors", sum(bool(e.strip()) for e in errors)))
        rows.append(("  both results identical to the reference", len(both) == 2 and all(b == json.load(open(reference_out)) for b in both)))
        rows.append(("  distinct prompts in the cache afterwards", f"{complete} / {len(requests)}"))

    print_rows(rows)


def print_rows(rows):
    width = max(len(r[0]) for r in rows)
    print(f"StaICC suite benchmark - python {sys.version.split()[0]}, {os.cpu_count()} cores")
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
