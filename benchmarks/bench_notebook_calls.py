#!/usr/bin/env python3
"""What a notebook's small run costs through each road, measured in one process: the engine's
``run_suite`` (``StaICC.subbenchmarks.suite``), the public ``StaICC.run_suite`` (``execute`` of its
configuration, no record), ``execute`` without and with its record (provenance; a methods run's
tests against vanilla), and the same for ``run_methods``.  Prints the median milliseconds per call and the ratios to the engine.

    python benchmarks/bench_notebook_calls.py [--items 8] [--repeats 50]

Never imported by the package.  The model is the reference model, on TREC's first test items.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def medians_ms(calls, repeats):
    """The median milliseconds of each call, the calls taken in turn within each repeat so that a machine's
    changing load falls on all of them alike."""
    for call in calls.values():
        call()  # the first call loads the data and imports; not what a notebook loop pays
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # a smoke run's departures from the standard, warned about on every call
    from dataclasses import replace

    import StaICC
    from StaICC.backends.reference_model import lexical_icl
    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.files import resolve_methods
    from StaICC.methods.run import run_methods as engine_methods
    from StaICC.runs import RunConfig, execute
    from StaICC.subbenchmarks.suite import run_suite as engine_suite
    items = QuerySubset.first(args.items)
    common = {"datasets": ["TREC"], "test_items": items, "progress": False}
    config = RunConfig(datasets=("TREC",), test_items=items, progress=False,
                       suite_options={"own_distribution": False})
    methods = replace(config, methods=tuple(resolve_methods(["contextual"])))
    rows = [("engine run_suite", lambda: engine_suite(lexical_icl, "Normal", **common)),
            ("StaICC.run_suite", lambda: StaICC.run_suite(lexical_icl, "Normal", **common)),
            ("execute, no record", lambda: execute(config, backend=lexical_icl, recorded=False)),
            ("execute, full record", lambda: execute(config, backend=lexical_icl)),
            ("engine run_methods", lambda: engine_methods(lexical_icl, ["contextual"], "Normal", **common)),
            ("StaICC.run_methods", lambda: StaICC.run_methods(lexical_icl, ["contextual"], "Normal", **common)),
            ("execute methods, full record", lambda: execute(methods, backend=lexical_icl))]
    figures = medians_ms(dict(rows), args.repeats)
    print(f"{'call':30} {'ms/call':>8} {'x engine':>9}   (TREC, first {args.items} test items, "
          f"median of {args.repeats})")
    for name, ms in figures.items():
        base = figures["engine run_methods" if "methods" in name else "engine run_suite"]
        print(f"{name:30} {ms:8.2f} {ms / base:9.2f}")


if __name__ == "__main__":
    main()
