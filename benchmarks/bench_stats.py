"""Time and memory of the statistics: compare of two full-suite runs, before and after, in one run.

"before" is the pure-Python bootstrap (one resample at a time) reading the JSON Lines
export; "after" is the NumPy bootstrap reading the compact samples file.  Each case runs
in its own process, so its peak memory (max RSS) is its own; CPU seconds are reported
beside wall seconds because a shared machine's wall time says more about the neighbours.

The two runs are the reference model and chance on the whole standard suite, made once
(a few minutes) and reused::

    python benchmarks/bench_stats.py --runs-dir runs/bench            # full: 1000 resamples
    python benchmarks/bench_stats.py --runs-dir runs/bench --resamples 200 --skip-report
"""
import argparse
import json
import os
import resource
import shutil
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


def jsonl_copy(source: str, directory: str) -> str:
    """A copy of a run without its compact samples file: what a run directory held before it existed."""
    target = os.path.join(directory, os.path.basename(source))
    os.makedirs(target, exist_ok=True)
    for name in ("results.json", "samples.jsonl"):
        shutil.copy(os.path.join(source, name), target)
    return target


def case(name: str, a: str, b: str, resamples: int, html: str) -> dict:
    """One measurement, in this process: the work of ``staicc compare`` or ``staicc report --html``."""
    sys.path.insert(0, ROOT)
    from StaICC.report.runs import load_run
    from StaICC.stats import compare_runs
    started, cpu = time.perf_counter(), time.process_time()
    runs = [load_run(a, "A"), load_run(b, "B")]
    loaded = time.perf_counter() - started
    engine = "python" if name.startswith("before") else "numpy"
    comparison = compare_runs(runs[0], runs[1], resamples=resamples, engine=engine)
    if name.endswith("report"):
        from StaICC.report.html import build_report
        page, _ = build_report(runs, [comparison.estimates_a, comparison.estimates_b], [comparison])
        with open(html, "w", encoding="utf-8") as fh:
            fh.write(page)
    return {"case": name, "wall_s": round(time.perf_counter() - started, 2), "load_s": round(loaded, 2),
            "cpu_s": round(time.process_time() - cpu, 2),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", default=os.path.join(ROOT, "runs", "bench-stats"))
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--skip-before", action="store_true", help="only the new path (the old takes minutes)")
    parser.add_argument("--skip-report", action="store_true", help="only compare, not the HTML report")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--html", help=argparse.SUPPRESS)
    args = parser.parse_args()
    a, b = os.path.join(args.runs_dir, "reference"), os.path.join(args.runs_dir, "chance")
    if args.case:
        if args.case.startswith("before"):  # the JSON-Lines-only copies, handed over by the parent
            a, b = os.environ["BENCH_A"], os.environ["BENCH_B"]
        print(json.dumps(case(args.case, a, b, args.resamples, args.html)))
        return
    make_runs(args.runs_dir)
    cases = ["after compare"] + ([] if args.skip_report else ["after report"])
    if not args.skip_before:
        cases = ["before compare"] + cases
    with tempfile.TemporaryDirectory() as tmp:
        old_a, old_b = jsonl_copy(a, os.path.join(tmp, "old")), jsonl_copy(b, os.path.join(tmp, "old"))
        print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.resamples} resamples; "
              f"samples.jsonl {os.path.getsize(os.path.join(a, 'samples.jsonl')) / 1e6:.0f} MB, "
              f"samples.columns.json {os.path.getsize(os.path.join(a, 'samples.columns.json')) / 1e6:.0f} MB")
        for name in cases:
            command = [sys.executable, os.path.abspath(__file__), "--runs-dir", args.runs_dir, "--resamples",
                       str(args.resamples), "--case", name.replace(" ", "-"), "--html",
                       os.path.join(tmp, "report.html")]
            env = dict(os.environ, BENCH_A=old_a, BENCH_B=old_b)
            out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            print(f"{name:15s} wall {result['wall_s']:7.2f} s  cpu {result['cpu_s']:7.2f} s  "
                  f"(loading {result['load_s']:.2f} s)  peak {result['peak_mb']:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
