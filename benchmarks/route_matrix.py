#!/usr/bin/env python3
"""Route x largest difference per metric: one tiny random Llama through every route the package offers.

Runs the routes of ``tests/route_matrix.py`` (the same ones ``tests/routes/test_route_matrix.py``
asserts) on the ``--limit 8`` Normal + GLER workload on TREC and rotten_tomatoes, compares
each with its baseline (an ``hf`` backend run in one process), and prints one Markdown table:
the largest absolute difference of every number of each metric (per dataset, averaged, GLER's
passes, slopes and intercepts), what the route promises, and its wall time.  The last rows
keep the standard's exact-sum rule (the scorer as a plain function, log-likelihoods handed
back without ``prediction_kind``): what every route did before the package's backends took
the softmax branch always.  One run, one table; never imported by the package.

    python benchmarks/route_matrix.py [--only NAME-SUBSTRING ...] [--keep DIR] [--device cuda] [--dtype bfloat16]
                                      [--standard-rule]

``--standard-rule`` shows what the package did before: the ``hf`` backend's rows under the standard's
check instead of the softmax branch (in this process only: routes run in other processes, torchrun
and Ray, keep the softmax branch, so leave them out with ``--only``).
"""
import argparse
import os
import shutil
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]


SHORT = {"accuracy": "acc.", "averaged_truelabel_likelihood": "likelihood", "macro_F1": "macro-F1",
         "expected_calibration_error_1": "ECE", "own_likelihood_nonstandard": "own lik.",
         "own_ece_nonstandard": "own ECE"}


def cell(gap: float) -> str:
    return "0" if gap == 0 else f"{gap:.1e}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="run only routes whose name contains one of these")
    parser.add_argument("--keep", metavar="DIR", help="keep the model and the runs' files in DIR")
    parser.add_argument("--device", default="cpu", help="where the model runs (default cpu; e.g. cuda)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--standard-rule", action="store_true",
                        help="the hf backend's rows under the standard's exact-sum check (the package before)")
    args = parser.parse_args()
    os.environ["STAICC_ROUTES_DEVICE"], os.environ["STAICC_ROUTES_DTYPE"] = args.device, args.dtype
    import torch
    import transformers

    import route_matrix
    from route_matrix import (BASELINES, METRIC_NAMES, ROUTES, STANDARD_RULE_ROUTES, TOLERANCE, Context,
                              RouteUnavailable, differences, make_model, timed)
    from route_workload import _hf

    from StaICC.backends.numerics import answer_numerics
    if args.standard_rule:
        from StaICC.backends.hf import HFBackend
        HFBackend.prediction_kind = None  # the class attribute hides the log-probability modes' declaration
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()  # one table on stdout, no loading bars on stderr
    warnings.simplefilter("ignore")
    scratch = args.keep or tempfile.mkdtemp(prefix="staicc-routes-")
    os.makedirs(scratch, exist_ok=True)
    try:
        context = Context(make_model(os.path.join(scratch, "model")), scratch)
        baselines = {}
        settings = answer_numerics(_hf(context))
        print(f"Normal + GLER, {', '.join(route_matrix.DATASETS)}, --limit {route_matrix.LIMIT}; baseline: hf on "
              f"{settings['device']}, {settings['dtype']}, packing {settings['packing']}, torch "
              f"{torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} thread(s); "
              "tolerances: " + ", ".join(f"{SHORT[m]} {TOLERANCE[m]:g}" for m in METRIC_NAMES) + "\n")
        print("| route | baseline | promise | " + " | ".join(SHORT[m] for m in METRIC_NAMES) + " | s |")
        print("|---|---|---|" + "---|" * len(METRIC_NAMES) + "---|")
        for route in ROUTES + STANDARD_RULE_ROUTES:
            if args.only and not any(word in route.name for word in args.only):
                continue
            if route.baseline not in baselines:
                baselines[route.baseline] = BASELINES[route.baseline](context)
            promise = "bit-identical" if route.bit_identical else "tolerance"
            if route in STANDARD_RULE_ROUTES:
                promise = "equal or a notice"
            try:
                numbers, seconds = timed(route.run, context)
            except RouteUnavailable as missing:
                print(f"| {route.name} | {route.baseline} | {promise} | "
                      + f"not run: {missing} |" + " |" * (len(METRIC_NAMES) - 1) + " |")
                continue
            worst = differences(baselines[route.baseline], numbers)
            if route.bit_identical:
                promise += " (holds)" if numbers == baselines[route.baseline] else " (BROKEN)"
            elif route in STANDARD_RULE_ROUTES:
                notices = context.cache.get(route.note) or []
                within = all(worst[m] <= TOLERANCE[m] for m in METRIC_NAMES)
                promise += " (equal)" if within else f" ({len(notices)} notice line(s))"
            else:
                tolerance = route.tolerance or TOLERANCE
                within = all(worst[m] <= tolerance[m] for m in METRIC_NAMES)
                promise += (" (holds)" if within else " (BROKEN)") + (" [own tolerance]" if route.tolerance else "")
            print(f"| {route.name} | {route.baseline} | {promise} | "
                  + " | ".join(cell(worst[m]) for m in METRIC_NAMES) + f" | {seconds:.1f} |", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
