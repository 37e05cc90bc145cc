#!/usr/bin/env python3
"""Prompt-writing speed: ``prompt_set()`` of every Normal experimentor, and O(1) refusals.

Prints, per dataset and in total, the best of ``--repeat`` timings of ``prompt_set()``
(data already loaded: a first untimed call warms the tables), then the time
``demonstration_sampler`` takes to refuse a k larger than the demonstration set, and
``import StaICC`` in a fresh interpreter.  Never imported by the package.

    python benchmarks/bench_prompt.py [--repeat 3]
"""
import argparse
import os
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import StaICC
    from StaICC.sampling.rows import demonstration_sampler

    bench = StaICC.Normal()
    total = 0.0
    for experimentor in bench:
        experimentor.prompt_set()  # warm: loads the table
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            prompts = experimentor.prompt_set()
            best = min(best, time.perf_counter() - t0)
        total += best
        print(f"prompt_set {experimentor.dataset_name:24s} {len(prompts):5d} prompts {best * 1000:8.1f} ms")
    print(f"prompt_set Normal, all 10 datasets: {total * 1000:.1f} ms (sum of per-dataset best of {args.repeat})")

    for k in (100_000, 2 ** 31):
        t0 = time.perf_counter()
        try:
            demonstration_sampler(k, 4096, 1024)
            outcome = "built"
        except ValueError:
            outcome = "refused"
        print(f"demonstration_sampler(k={k}, D=4096, rows=1024): {outcome} in {(time.perf_counter() - t0) * 1000:.3f} ms")

    code = "import time; t0 = time.perf_counter(); import StaICC; print(time.perf_counter() - t0)"
    runs = [float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout) for _ in range(5)]
    print(f"import StaICC: best of 5 {min(runs) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
