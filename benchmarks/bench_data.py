#!/usr/bin/env python3
"""Cost of the data layer: import, Normal() construction, bundled-data verification.

Each figure is the minimum over ``--repeat`` fresh interpreters (the machine may be shared).
"Verification" is ``verify_datasets`` over the ten standard datasets, cold: it reads,
hash-checks and decodes every bundled file, which a run does anyway; "plain decode" is the
same reading without the row checks, so their difference is what verifying adds.

    python benchmarks/bench_data.py [--repeat 5]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import StaICC
t_import_all = time.perf_counter() - t0
from StaICC.datasets import bundled, resolve_datasets, verify_datasets
t0 = time.perf_counter()
normal = StaICC.Normal()
t_normal = time.perf_counter() - t0
datasets = resolve_datasets(None)
t0 = time.perf_counter()
verify_datasets(datasets)
t_verify = time.perf_counter() - t0
t0 = time.perf_counter()
verify_datasets(datasets)
t_again = time.perf_counter() - t0
import gzip, hashlib, io
t0 = time.perf_counter()
for name, info in bundled.manifest()["files"].items():
    payload = bundled._read_data_file(info["file"])
    hashlib.sha256(payload).hexdigest()
    rows = []
    with io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(payload)), encoding="utf-8", newline="\n") as lines:
        for line in lines:
            index, inputs, label = json.loads(line)
            rows.append((tuple(inputs), label))
t_plain = time.perf_counter() - t0
print("RESULT " + json.dumps({"import_StaICC_s": t_import_all, "Normal_construct_s": t_normal,
                              "verify_cold_s": t_verify, "verify_cached_s": t_again, "plain_decode_s": t_plain}))
"""


def run(code, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    return done


def import_datasets_ms() -> float:
    """Cumulative -X importtime of StaICC.datasets (its own modules and what they import first)."""
    lines = run("import StaICC.datasets", "-X", "importtime").stderr.splitlines()
    return min(int(line.split("|")[1]) for line in lines if line.rstrip().endswith(" StaICC.datasets")) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    best = {}
    for _ in range(args.repeat):
        found = [line for line in run(PROBE).stdout.splitlines() if line.startswith("RESULT ")]
        for key, value in json.loads(found[-1][7:]).items():
            best[key] = min(best.get(key, value), value)
        best["import_StaICC.datasets_ms"] = min(best.get("import_StaICC.datasets_ms", 1e9), import_datasets_ms())
    print(f"import StaICC.datasets (own modules, cumulative): {best['import_StaICC.datasets_ms']:.1f} ms")
    print(f"import StaICC (everything):                       {best['import_StaICC_s'] * 1000:.1f} ms")
    print(f"Normal() construction:                            {best['Normal_construct_s'] * 1000:.1f} ms")
    print(f"verify_datasets, 10 datasets, cold:               {best['verify_cold_s'] * 1000:.1f} ms")
    print(f"  same files, plain decode without checks:        {best['plain_decode_s'] * 1000:.1f} ms")
    print(f"  added by verification:                          "
          f"{(best['verify_cold_s'] - best['plain_decode_s']) * 1000:.1f} ms")
    print(f"verify_datasets again (cached):                   {best['verify_cached_s'] * 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
