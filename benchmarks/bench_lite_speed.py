"""CPU seconds of lite runs' exact limits: the Beta quantile by bisection (before) against Halley's search (after).

The exact intervals (:mod:`StaICC.stats.lite_exact`) and the rule for a proxy that rarely disagrees with the target
(:mod:`StaICC.stats.lite_residual`) ask for Beta quantiles per cell, bound and subset.  Each case is a lite run (or
the proxy study's path), run twice in its own process: with the bisection it replaced (the copy in
``tests/stats/test_lite_exact_quantile.py``, the specification of the old numbers, patched in) and with the package's
``beta_quantile``; per case the process's CPU seconds, those spent inside the quantile, its calls (distinct), and
whether the printed output is the same (timing lines aside); "share before": the bisection's part of the case's
CPU seconds, the most a faster quantile could save there.  Then the calls one case made are replayed: the bisection,
the search uncached, the search with its cache; evaluations of I_x per call and the largest difference from the
bisection.  CPU seconds (time.process_time) and ratios within one run: on a shared machine they say more than
wall time.  The runs it needs are made once under ``--runs-dir``::

    python benchmarks/bench_lite_speed.py --runs-dir /tmp/lite-speed --output benchmarks/results/lite_speed.txt
"""
import argparse
import importlib.util
import json
import os
import platform
import runpy
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "tests", "stats", "test_lite_exact_quantile.py")
SUITE = ["--model", "reference", "--benchmarks", "all"]
#: the cases: a name and the command after ``staicc run`` ({full}: the full run used as its own proxy, the oracle),
#: or ``study`` (the proxy study's path on Normal with the sigma-0.1 copy of the target as the proxy)
CASES = {
    "plain 12.5 %": SUITE + ["--lite", "0.125"],
    "lexical proxy": SUITE + ["--lite", "0.125", "--lite-proxy"],
    "oracle proxy": SUITE + ["--lite", "0.125", "--lite-proxy", "{full}"],
    "16 items oracle": SUITE + ["--lite-items", "16", "--lite-proxy", "{full}"],
    "until 0.05 oracle": SUITE + ["--lite", "0.125", "--lite-until", "0.05", "--lite-proxy", "{full}"],
    "study sigma 0.1": ["study"],
}


def old_quantile() -> Callable[[float, float, float], float]:
    """The bisection as it was, from the test that holds it as the specification."""
    spec = importlib.util.spec_from_file_location("lite_quantile_reference", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.old_beta_quantile


def make_runs(runs: str, seeds: int) -> None:
    """The full runs the cases read, made only when missing: the whole suite (the oracle proxy), Normal alone and
    its noisy copy (``lite_noisy_proxy.py``, sigma 0.1, 0.9 of it per item)."""
    for name, benchmarks in (("full", "all"), ("normal", "Normal")):
        if not os.path.isfile(os.path.join(runs, name, "results.json")):
            subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "reference", "--benchmarks", benchmarks,
                            "--log-samples", "--no-progress", "--overwrite", "--output-dir", os.path.join(runs, name)],
                           check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    if not os.path.isdir(os.path.join(runs, "normal_s010")):
        subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "lite_noisy_proxy.py"), "--target",
                        os.path.join(runs, "normal"), "--out", os.path.join(runs, "normal_s010"), "--sigma", "0.1",
                        "--shared", "0.9"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def timed(quantile: Callable[[float, float, float], float], calls: List[Tuple[float, float, float]],
          spent: List[float]) -> Callable[[float, float, float], float]:
    """``quantile`` recording each call and adding its CPU seconds to spent[0]."""
    def wrapper(q: float, a: float, b: float) -> float:
        started = time.process_time()
        found = quantile(q, a, b)
        spent[0] += time.process_time() - started
        calls.append((q, a, b))
        return found
    return wrapper


def child(name: str, which: str, runs: str, seeds: int, calls_file: str) -> Dict[str, Any]:
    """One case in this process with the ``which`` quantile patched in; its printed output is kept to compare."""
    sys.path.insert(0, ROOT)
    from StaICC.stats import lite_exact
    calls: List[Tuple[float, float, float]] = []
    spent = [0.0]
    lite_exact.beta_quantile = timed(old_quantile() if which == "before" else lite_exact.beta_quantile, calls, spent)
    out = os.path.join(os.path.dirname(calls_file), f"{which}.out")
    started = time.process_time()
    with open(out, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            if CASES[name] == ["study"]:
                sys.argv = ["lite_proxy_trained.py", "--target", os.path.join(runs, "normal"), "--proxies",
                            "s010=" + os.path.join(runs, "normal_s010"), "--modes", "s010", "--seeds", str(seeds)]
                runpy.run_path(os.path.join(ROOT, "benchmarks", "lite_proxy_trained.py"), run_name="__main__")
            else:
                from StaICC.cli import main
                main(["run"] + [a.format(full=os.path.join(runs, "full")) for a in CASES[name]] + ["--no-progress"])
        finally:
            sys.stdout = saved
    with open(calls_file, "w") as fh:
        json.dump(calls, fh)
    return {"cpu_s": time.process_time() - started, "quantile_s": spent[0], "calls": len(calls),
            "distinct": len(set(calls))}


def printed(path: str) -> List[str]:
    """A case's printed lines without those that time it (seconds, wall, CPU)."""
    with open(path) as fh:
        return [line for line in fh if not any(word in line for word in (" s,", " s\n", "wall", "CPU"))]


def measure(name: str, args: argparse.Namespace, scratch: str) -> Dict[str, Dict[str, Any]]:
    """Both quantiles on case ``name``, each in its own process."""
    found = {}
    for which in ("before", "after"):
        command = [sys.executable, os.path.abspath(__file__), "--runs-dir", args.runs_dir, "--seeds", str(args.seeds),
                   "--case", name, "--which", which, "--calls", os.path.join(scratch, f"{which}.json")]
        out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        found[which] = json.loads(out.strip().splitlines()[-1])
    found["same"] = printed(os.path.join(scratch, "before.out")) == printed(os.path.join(scratch, "after.out"))
    return found


def replay(calls: List[Tuple[float, float, float]]) -> str:
    """The calls of one case again, in this process: bisection, search uncached, search cached."""
    sys.path.insert(0, ROOT)
    from StaICC.stats import lite_exact
    old, search = old_quantile(), lite_exact.beta_quantile.__wrapped__
    times = {}
    for label, quantile in (("bisection", old), ("search, uncached", search), ("search, cached", None)):
        lite_exact.beta_quantile.cache_clear()
        quantile = quantile or lite_exact.beta_quantile
        started = time.process_time()
        for q, a, b in calls:
            quantile(q, a, b)
        times[label] = time.process_time() - started
    evaluations, real = [], lite_exact._distribution_and_density
    lite_exact._distribution_and_density = lambda x, a, b: evaluations.append(x) or real(x, a, b)
    counts, worst = [], 0.0
    for q, a, b in sorted(set(calls)):
        evaluations.clear()
        found = search(q, a, b)
        counts.append(len(evaluations))
        worst = max(worst, abs(found - old(q, a, b)))
    lite_exact._distribution_and_density = real
    base = times["bisection"]
    return "\n".join([f"replay of {len(calls)} calls ({len(set(calls))} distinct):"]
                     + [f"  {label:18s} {t:7.3f} CPU s  {base / t:6.1f}x" for label, t in times.items()]
                     + [f"  evaluations of I_x per distinct call: the search {sum(counts) / len(counts):.2f} (at most "
                        f"{max(counts)}), the bisection 40; largest |search - bisection| {worst:.2e}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", required=True, help="the runs the cases read (made once when missing)")
    parser.add_argument("--seeds", type=int, default=50, help="the study case's subsets (default: 50)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names (default: all)")
    parser.add_argument("--output", help="also write the report to this file")
    parser.add_argument("--machine", default=f"{platform.machine()}, {os.cpu_count()} cores",
                        help="the machine, in words, for the report's header (default: its architecture and cores)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--which", help=argparse.SUPPRESS)
    parser.add_argument("--calls", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(child(args.case, args.which, args.runs_dir, args.seeds, args.calls)))
        return
    make_runs(args.runs_dir, args.seeds)
    lines = [f"command: python benchmarks/bench_lite_speed.py {' '.join(sys.argv[1:])}",
             f"machine: {args.machine}, load average {os.getloadavg()[0]:.1f} at the start; Python {platform.python_version()}; CPU seconds of each case in its own process (imports "
             "excluded), the quantile's own within them",
             "", f"{'case':20s} {'before CPU s':>12s} {'after':>7s} {'ratio':>6s}   {'quantile s before':>17s} "
             f"{'after':>6s} {'ratio':>6s} {'share before':>12s}   {'calls (distinct)':>16s}  same output"]
    print("\n".join(lines), flush=True)
    replayed = ""
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.cases.split(","):
            found = measure(name, args, scratch)
            before, after = found["before"], found["after"]
            row = (f"{name:20s} {before['cpu_s']:12.2f} {after['cpu_s']:7.2f} {before['cpu_s'] / after['cpu_s']:5.2f}x"
                   f"   {before['quantile_s']:17.3f} {after['quantile_s']:6.3f} "
                   f"{before['quantile_s'] / max(after['quantile_s'], 1e-9):5.1f}x "
                   f"{100 * before['quantile_s'] / before['cpu_s']:11.1f}%   "
                   f"{before['calls']:>7d} ({before['distinct']:>5d})  {'yes' if found['same'] else 'NO'}")
            print(row, flush=True)
            lines.append(row)
            if before["calls"] and not replayed or name.startswith("study"):
                with open(os.path.join(scratch, "after.json")) as fh:
                    replayed = f"{name}: " + replay([tuple(call) for call in json.load(fh)])
    lines += ["", replayed]
    print("\n" + replayed)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
