#!/usr/bin/env python3
"""Start-up wall time: ``import StaICC`` and ``python -m StaICC`` (best of N fresh interpreters).

Also prints the modules ``import StaICC`` loads, which should be the package alone (the
public names are resolved on first access).  Never imported by the package.

    python benchmarks/bench_startup.py [--repeat 5]
"""
import argparse
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_wall(command, repeat):
    """(best wall time, best CPU time) over ``repeat`` runs; CPU time is steadier on a loaded machine."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return f"{min(walls):.3f} s wall, {min(cpus):.3f} s CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    python = sys.executable
    print(f"python -c pass        {best_wall([python, '-c', 'pass'], args.repeat)} (interpreter start-up)")
    print(f"import StaICC         {best_wall([python, '-c', 'import StaICC'], args.repeat)}")
    print(f"python -m StaICC      {best_wall([python, '-m', 'StaICC'], args.repeat)} (Normal, lexical model)")
    loaded = subprocess.run([python, "-c", "import StaICC, sys; print(sorted(m for m in sys.modules "
                             "if m.startswith('StaICC')))"], cwd=ROOT, capture_output=True, text=True, check=True)
    print(f"modules after import  {loaded.stdout.strip()}")


if __name__ == "__main__":
    main()
