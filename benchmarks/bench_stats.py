"""Time and memory of the statistics: compare, report --html and export of two full-suite runs, in one run.

Each case is the command itself (``staicc compare A B``, ``staicc report A B --html``,
``staicc export A --format eee`` with intervals), run in its own process, so its CPU seconds
(user + system, imports included) and peak memory (max RSS) are its own; CPU seconds are
reported beside wall seconds because a shared machine's wall time says more about the neighbours.

"before" is compare on the per-resample Python path (what a metric without a vectorised form
costs on every resample: before the own-distribution metrics had one, every statistic of the
suite took it), measured on ``--before-resamples`` and on three times as many resamples and
extrapolated linearly to ``--resamples`` (its cost is linear in the resamples), so the ratio is
measured in the same run.

The two runs are the reference model and chance on the whole standard suite, made once
(a few seconds) and reused::

    python benchmarks/bench_stats.py --runs-dir runs/bench            # full: 1000 resamples
    python benchmarks/bench_stats.py --runs-dir runs/bench --skip-before
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_runs(runs_dir: str) -> None:
    """The two full-suite runs with samples, made only when missing."""
    for name, model in (("reference", "reference"), ("chance", "uniform")):
        target = os.path.join(runs_dir, name)
        if os.path.isfile(os.path.join(target, "results.json")):
            continue
        print(f"making the {name} run in {target} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", model, "--benchmarks", "all",
                        "--log-samples", "--no-progress", "--overwrite", "--output-dir", target],
                       check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def case(name: str, a: str, b: str, resamples: int, scratch: str) -> dict:
    """One measurement, in this process: the command of case ``name``, its output thrown away."""
    sys.path.insert(0, ROOT)
    started = time.perf_counter()
    if name.startswith("before"):  # the per-resample Python path for every metric
        import StaICC.stats.vectorized as vectorized
        vectorized.numpy_module = lambda engine="auto": None
    from StaICC.cli import main
    common = ["--resamples", str(resamples)]
    argv = {"compare": ["compare", a, b, "--no-progress"] + common,
            "report": ["report", a, b, "--html", os.path.join(scratch, "report.html"), "--no-progress"] + common,
            "export": ["export", a, "--format", "eee", "--output", os.path.join(scratch, "eee")] + common,
            }[name.split("-")[-1]]
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            code = main(argv)
        finally:
            sys.stdout = saved
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"case": name, "code": code, "wall_s": round(time.perf_counter() - started, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def measure(name: str, args: argparse.Namespace, resamples: int, scratch: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--runs-dir", args.runs_dir, "--resamples",
               str(resamples), "--case", name.replace(" ", "-"), "--scratch", scratch]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    result = json.loads(out.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"{name} failed with exit code {result['code']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", default=os.path.join(ROOT, "runs", "bench-stats"))
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--before-resamples", type=int, default=20,
                        help="resamples of the per-resample Python case (scaled to --resamples)")
    parser.add_argument("--skip-before", action="store_true", help="only the commands as they are")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    a, b = os.path.join(args.runs_dir, "reference"), os.path.join(args.runs_dir, "chance")
    if args.case:
        print(json.dumps(case(args.case, a, b, args.resamples, args.scratch)))
        return
    make_runs(args.runs_dir)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.resamples} resamples; "
          f"samples.jsonl {os.path.getsize(os.path.join(a, 'samples.jsonl')) / 1e6:.0f} MB, "
          f"samples.columns.json {os.path.getsize(os.path.join(a, 'samples.columns.json')) / 1e6:.0f} MB")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("compare", "report", "export"):
            results[name] = r = measure(name, args, args.resamples, tmp)
            print(f"{'staicc ' + name:15s} wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  peak {r['peak_mb']:.0f} MB",
                  flush=True)
        if not args.skip_before:
            few, more = (measure("before compare", args, n, tmp)["cpu_s"]
                         for n in (args.before_resamples, 3 * args.before_resamples))
            per_resample = (more - few) / (2 * args.before_resamples)
            scaled = few + per_resample * (args.resamples - args.before_resamples)
            print(f"{'before compare':15s} cpu {few:7.2f} s on {args.before_resamples} resamples, {more:.2f} s on "
                  f"{3 * args.before_resamples}: {per_resample:.3f} s per resample, {scaled:.0f} s on "
                  f"{args.resamples}; before / after: {scaled / results['compare']['cpu_s']:.0f}x", flush=True)


if __name__ == "__main__":
    main()
