#!/usr/bin/env python3
"""A first real model on CPU: ``staicc run --model hf --benchmarks all --limit 16`` on the tiny preset, an earlier
commit against this checkout, side by side on this machine.

The earlier commit is checked out into a temporary ``git worktree`` (removed at the end); both
run the same command with default arguments on the same model folder (made once by
``make_random_model.py --preset tiny``), in alternating order, ``--rounds`` times each.
Printed: each run's wall and CPU time (CPU time is steadier on a shared machine), the medians,
the ratio old / new, the threads each used, and the largest difference between the two
runs' averaged numbers (threads change float rounding only).  Never imported by the package.

    python benchmarks/bench_cpu_first_run.py [--old 85c43c4] [--rounds 2] [--model DIR]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the commit before the CPU fixes (one thread for small models, the loading bars)
DEFAULT_OLD = "85c43c4"
COMMAND = ["run", "--model", "hf", "--benchmarks", "all", "--limit", "16"]


def timed_run(checkout: str, model: str, out: str) -> Tuple[float, float]:
    """(wall, CPU) seconds of ``python -m StaICC run ...`` importing the package from ``checkout``."""
    env = dict(os.environ, PYTHONPATH=checkout)
    env.pop("OMP_NUM_THREADS", None)  # default arguments: nothing chooses the threads from outside
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "StaICC", *COMMAND, "--model-args", f"pretrained={model}",
                           "--output-dir", out, "--overwrite"], cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the run in {checkout} failed:\n{done.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def averaged(out: str) -> Dict[str, float]:
    """Every averaged number of the run's results.json, by path."""
    with open(os.path.join(out, "results.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    found: Dict[str, float] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}/{key}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and "Averaged results" in path:
            found[path] = float(value)
    walk(document["benchmarks"], "")
    return found


def threads_of(out: str) -> str:
    with open(os.path.join(out, "results.json"), encoding="utf-8") as handle:
        runtime = json.load(handle)["provenance"]["model"].get("runtime")
    return f"{runtime['threads']} ({runtime['threads_rule']})" if runtime else "torch's default (not recorded)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default=DEFAULT_OLD, help=f"the earlier commit (default {DEFAULT_OLD})")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating (default 2)")
    parser.add_argument("--model", help="a model folder to use (default: make the tiny preset in a temporary folder)")
    args = parser.parse_args()
    old_commit = subprocess.run(["git", "-C", ROOT, "rev-parse", args.old], capture_output=True, text=True,
                                check=True).stdout.strip()
    new_commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="staicc-bench-") as scratch:
        model = args.model or os.path.join(scratch, "tiny")
        if args.model is None:
            subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "make_random_model.py"), "--preset",
                            "tiny", "--out", model], check=True, capture_output=True)
        old_tree = os.path.join(scratch, "old")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", old_tree, old_commit], check=True,
                       capture_output=True)
        try:
            times = {"old": [], "new": []}  # type: Dict[str, List[Tuple[float, float]]]
            for round_index in range(args.rounds):
                order = ("old", "new") if round_index % 2 == 0 else ("new", "old")
                for which in order:
                    checkout = old_tree if which == "old" else ROOT
                    times[which].append(timed_run(checkout, model, os.path.join(scratch, which)))
                    wall, cpu = times[which][-1]
                    print(f"round {round_index + 1} {which}: {wall:7.1f} s wall, {cpu:7.1f} s CPU", flush=True)
            report(times, old_commit, new_commit, scratch)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", old_tree], capture_output=True)


def report(times: Dict[str, List[Tuple[float, float]]], old_commit: str, new_commit: str, scratch: str) -> None:
    medians = {which: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for which, runs in times.items()}
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end")
    print(f"command: staicc {' '.join(COMMAND)} --model-args pretrained=<tiny preset, 0.3 M parameters>")
    print(f"old {old_commit[:10]}: median {medians['old'][0]:.1f} s wall, {medians['old'][1]:.1f} s CPU; threads "
          f"{threads_of(os.path.join(scratch, 'old'))}")
    print(f"new {new_commit[:10]}: median {medians['new'][0]:.1f} s wall, {medians['new'][1]:.1f} s CPU; threads "
          f"{threads_of(os.path.join(scratch, 'new'))}")
    print(f"old / new: {medians['old'][0] / medians['new'][0]:.2f}x wall, "
          f"{medians['old'][1] / medians['new'][1]:.2f}x CPU")
    old_numbers, new_numbers = averaged(os.path.join(scratch, "old")), averaged(os.path.join(scratch, "new"))
    shared = sorted(set(old_numbers) & set(new_numbers))
    if shared:
        print(f"largest difference of {len(shared)} averaged numbers: "
              f"{max(abs(old_numbers[k] - new_numbers[k]) for k in shared):.2e}")


if __name__ == "__main__":
    main()
