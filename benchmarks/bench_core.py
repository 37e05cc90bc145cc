#!/usr/bin/env python3
"""Construction time, peak memory and a trivial full run of every sub-benchmark.

Each measurement runs in a fresh interpreter so that peak RSS and first-load costs are
real.  With ``--original-python PATH`` (an interpreter where ``staicc==0.1.1`` is
installed, e.g. a separate venv) the original release is measured the same way and the
ratio is printed.  Never imported by the package.

    python benchmarks/bench_core.py [--original-python /tmp/origvenv/bin/python] [--benchmarks Normal GLER]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
import StaICC
name = sys.argv[1]
cls = getattr(StaICC, name)
t0 = time.perf_counter()
bench = cls()
construct = time.perf_counter() - t0
rss_construct = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def trivial(prompt, label_space):  # uniform probabilities: the original crashes on some int outputs
    return [1.0 / len(label_space)] * len(label_space)
t0 = time.perf_counter()
bench(trivial)
run = time.perf_counter() - t0
print("\nBENCH_RESULT " + json.dumps({"construct_s": construct, "run_s": run, "peak_rss_mb_after_construct": rss_construct,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)
"""


def measure(python: str, name: str, ours: bool) -> dict:
    env = dict(os.environ)
    cwd = ROOT if ours else "/"
    if ours:
        env["PYTHONPATH"] = ROOT
    else:
        env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-c", PROBE, name], capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    marker = "BENCH_RESULT "
    found = [line for line in done.stdout.replace("\r", "\n").splitlines() if line.startswith(marker)]
    if not found:
        return {"error": "no result line"}
    return json.loads(found[-1][len(marker):])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original-python", help="interpreter with staicc==0.1.1 installed")
    parser.add_argument("--benchmarks", nargs="+", default=["Normal", "Contextual_bias", "Domain_bias", "Post_bias",
                                                            "GLER", "Template_sens", "Demo_sens", "Triplet_bias"])
    args = parser.parse_args()
    print("construct s: building the benchmark; run s: a full run with a uniform-probability function;\n"
          "MB: peak RSS after construction / after the run (fresh interpreter each)\n")
    print(f"{'benchmark':16s} {'construct s':>11s} {'run s':>8s} {'MB':>11s}", end="")
    if args.original_python:
        print(f" | {'orig construct':>14s} {'orig run':>8s} {'orig MB':>11s} | {'construct x':>11s} {'total x':>7s}", end="")
    print()
    for name in args.benchmarks:
        ours = measure(sys.executable, name, ours=True)
        if "error" in ours:
            print(f"{name:16s} error: {ours['error']}")
            continue
        line = (f"{name:16s} {ours['construct_s']:11.3f} {ours['run_s']:8.3f} "
                f"{ours['peak_rss_mb_after_construct']:5.1f}/{ours['peak_rss_mb']:5.1f}")
        if args.original_python:
            orig = measure(args.original_python, name, ours=False)
            if "error" in orig:
                line += f" | original failed: {orig['error'][:60]}"
            else:
                total = (orig["construct_s"] + orig["run_s"]) / (ours["construct_s"] + ours["run_s"])
                line += (f" | {orig['construct_s']:14.3f} {orig['run_s']:8.3f} "
                         f"{orig['peak_rss_mb_after_construct']:5.1f}/{orig['peak_rss_mb']:5.1f} | "
                         f"{orig['construct_s'] / ours['construct_s']:11.0f} {total:7.1f}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
