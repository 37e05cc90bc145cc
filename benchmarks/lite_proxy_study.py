"""The proxies side by side on the same subsets: plain, the lexical model, a related model, and the other models.

For each model of the coverage study (``bench_lite_coverage.py``; its full runs are made
once and reused), every subset at the fraction is estimated four ways by
:func:`StaICC.stats.lite_batch.subset_estimates` (the package's estimators): plain; with the
lexical reference model as the proxy (``reference``; not for itself); with the related model
(``sibling``: the target's own scores plus fixed noise, :func:`bench_lite_coverage.sibling`);
and with **the other study models' full runs together** (``others``, leave-one-out: every model
of the study but the target, one weight each, the multi-proxy power-tuned estimator of
:mod:`StaICC.stats.lite_proxy_weights`) -- the setting of a cache of past models' answers on
the same prompts.  Nothing is tuned on the outcome: the estimator, the level, the related
model's noise and the proxies are fixed before the run.

Work is split in blocks of seeds, every model's block before the next block, and each block's
raw rows are written to ``--work``/proxy-study/ as they finish, so a run stopped early still
has every model on the same number of subsets; ``--tables`` prints the tables of what is there.

    python benchmarks/lite_proxy_study.py --seeds 100 --block 10 --resamples 200 --jobs 2
    python benchmarks/lite_proxy_study.py --tables --upto 30       # the tables of the blocks of subsets 0-29
"""
import argparse
import glob
import json
import math
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_lite_coverage as study  # noqa: E402 (beside this script)
from lite_models import FUNCTIONS  # noqa: E402 (beside this script)

MODELS = ("reference", "uniform", *FUNCTIONS)
MODES = ("reference", "sibling", "others")
FRACTION = 0.125


def study_block(job: Tuple[str, Dict[str, str], int, int, int, str]) -> str:
    """One model's block of seeds, every mode; its raw rows written to a JSON file (returned)."""
    model, paths, first, seeds, resamples, out = job
    from StaICC.stats.lite_averaged import reach
    from StaICC.stats.lite_bounds import cell_bounds, subset_rows_of
    from StaICC.stats.lite_batch import subset_estimates
    others = sorted(m for m in paths if m != model)
    tables = {m: {(n, d): full for n, d, full, _, _ in study._tables(paths[m])} for m in others}
    results: study.Results = defaultdict(list)
    averaged: Dict[Tuple[str, float, str, str, int], List[Any]] = defaultdict(list)
    for name, dataset, full, population, _ in study._tables(paths[model]):
        subsets = study._subsets(full, population, name, dataset, range(first, first + seeds), (FRACTION,))
        proxies = [study.sibling(full)] + [tables[m][(name, dataset)] for m in others]
        modes = ["sibling", "others"]
        groups = [(0,), tuple(range(1, len(proxies)))]
        if "reference" in others:
            modes.insert(0, "reference")
            groups.insert(0, (1 + others.index("reference"),))
        found = subset_estimates(full, population, [s for _, _, s in subsets], resamples=resamples,
                                 seed=[seed for seed, _, _ in subsets], level=0.95, proxies=proxies, groups=groups)
        truth = full.point()
        rows = subset_rows_of(name, full.table)  # whether a subset's rows are probabilities (its ranges)
        for (seed, fraction, subset), (plain, tuned) in zip(subsets, found):
            for mode, cells in [("plain", plain)] + list(zip(modes, tuned)):
                for metric, (value, low, high, scaled) in cells.items():
                    study._record(results, (mode, fraction, name, metric), model, truth[metric], value, low, high,
                                  metric)
                    if not isinstance(value, list):
                        extra = reach(low, high, scaled, 0.95)
                        bounds = cell_bounds(name, metric, cells, rows(subset))  # the averaged row: its datasets' range
                        averaged[(mode, fraction, name, metric, seed)].append((truth[metric], (value, scaled, extra, bounds)))
    study._averaged_rows(results, averaged, model)
    path = os.path.join(out, f"{model}-{first:04d}-{seeds}.json")
    with open(path + ".part", "w", encoding="utf-8") as fh:
        json.dump([[*key, rows] for key, rows in results.items()], fh)
    os.replace(path + ".part", path)
    return path


def load_blocks(out: str, upto: int = 1 << 30) -> Tuple[study.Results, Dict[str, int]]:
    """Every finished block's rows (of the blocks starting below subset ``upto``), and the subsets per model
    they hold."""
    found: study.Results = defaultdict(list)
    seeds: Dict[str, int] = defaultdict(int)
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        model, first, count = os.path.basename(path)[:-5].rsplit("-", 2)
        if int(first) >= upto:
            continue
        seeds[model] += int(count)
        with open(path, encoding="utf-8") as fh:
            for mode, fraction, name, metric, rows in json.load(fh):
                found[(mode, fraction, name, metric)].extend(tuple(r) for r in rows)
    return found, dict(seeds)


def admitted_ratios(results: Dict[Tuple[float, str, str], List[Any]],
                    helped: Dict[Tuple[float, str, str], List[Any]]) -> List[str]:
    """The median width ratio and the coverage with and without the proxy over the cells a lite run prints at
    the fraction (:data:`StaICC.stats.lite.ESTIMABLE`), over all models and per model."""
    from StaICC.stats.lite import ESTIMABLE
    printed = [k for k in helped if ESTIMABLE.get((k[1], k[2].replace(" (averaged)", ""),
                                                   "averaged" if k[2].endswith(" (averaged)") else "dataset"),
                                                  2.0) <= k[0]]
    lines = [f"over the {len(printed)} cells a lite run prints at {FRACTION}:"]
    models = sorted({m for k in printed for m, *_ in helped[k]})
    for model in [None, *models]:
        ratios, plain_c, tuned_c = [], [], []
        for key in printed:
            plain = [r for r in results.get(key, []) if r[0] == model or model is None and
                     r[0] in {m for m, *_ in helped[key]}]
            tuned = [r for r in helped[key] if model is None or r[0] == model]
            a, b = study._cell(plain)[2], study._cell(tuned)[2]
            if a > 0 and math.isfinite(a) and math.isfinite(b):
                ratios.append(b / a)
            plain_c += [r[3] for r in plain]
            tuned_c += [r[3] for r in tuned]
        ratios.sort()
        median = ratios[len(ratios) // 2] if ratios else math.nan
        lines.append(f"  {model or 'all models':<14} median width ratio {median:.3f} over {len(ratios)} cells; "
                     f"coverage {sum(plain_c) / max(len(plain_c), 1):.1%} plain, "
                     f"{sum(tuned_c) / max(len(tuned_c), 1):.1%} with the proxy")
    return lines


def tables(out: str, header: str = "", upto: int = 1 << 30) -> str:
    found, seeds = load_blocks(out, upto)
    results = {key[1:]: rows for key, rows in found.items() if key[0] == "plain"}
    lines = [header or "lite proxy study (tables of the blocks written so far)",
             "subsets per model: " + ", ".join(f"{m} {n}" for m, n in sorted(seeds.items()))]
    for mode in MODES:
        helped = {key[1:]: rows for key, rows in found.items() if key[0] == mode}
        if helped:
            lines += ["", study.side_by_side(results, helped, mode)] + admitted_ratios(results, helped)
    return "\n".join(lines)


def markdown(out: str, upto: int = 1 << 30) -> str:
    """One markdown table of every cell: the plain coverage (worst model) and median half-width, and per proxy
    the coverage (worst model) and the width ratio (median half-width with the proxy / without, on the same
    models and subsets); then per model the median width ratio over the printed cells."""
    from StaICC.stats.lite import ESTIMABLE
    found, _ = load_blocks(out, upto)
    plain = {key[1:]: rows for key, rows in found.items() if key[0] == "plain"}
    helped = {mode: {key[1:]: rows for key, rows in found.items() if key[0] == mode} for mode in MODES}
    lines = ["| sub-benchmark: metric | printed | coverage (worst) | median half-width | "
             + " | ".join(f"{m}: coverage (worst) | width ratio" for m in MODES) + " |",
             "|---" * (4 + 2 * len(MODES)) + "|"]
    for key in sorted(plain, key=lambda k: (k[1], k[2])):
        row = (key[1], key[2].replace(" (averaged)", ""), "averaged" if key[2].endswith(" (averaged)") else "dataset")
        coverage, worst, half = study._cell(plain[key])
        cells = [f"{key[1]}: {key[2]}", "yes" if ESTIMABLE.get(row, 2.0) <= key[0] else "no",
                 f"{coverage:.1%} ({worst:.0%})", f"{half:.3g}"]
        for mode in MODES:
            rows = helped[mode].get(key, [])
            models = {m for m, *_ in rows}
            base = study._cell([r for r in plain[key] if r[0] in models])[2] if rows else math.nan
            tuned = study._cell(rows) if rows else (math.nan, math.nan, math.nan)
            ratio = tuned[2] / base if base > 0 and math.isfinite(base) else math.nan
            cells += [f"{tuned[0]:.1%} ({tuned[1]:.0%})", f"{ratio:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join("/tmp", "staicc-lite-proxy-study"),
                        help="where the full runs are made once and the blocks written")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--seeds", type=int, default=100, help="subsets per model (default: 100)")
    parser.add_argument("--block", type=int, default=10, help="subsets per job (default: 10)")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples per estimate")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default: 2)")
    parser.add_argument("--tables", action="store_true", help="only print the tables of the blocks written")
    parser.add_argument("--upto", type=int, default=1 << 30,
                        help="with --tables: only the blocks of the subsets below this one (every model's rounds "
                             "that finished)")
    parser.add_argument("--markdown", action="store_true", help="with --tables: one markdown table of every cell")
    parser.add_argument("--output", help="also write the tables to this file")
    args = parser.parse_args()
    out = os.path.join(args.work, "proxy-study")
    if not args.tables:
        models = [m for m in args.models.split(",") if m]
        os.makedirs(out, exist_ok=True)
        started = time.perf_counter()
        paths = {m: study.make_run(m, args.work, []) for m in models}
        jobs = [(m, paths, first, min(args.block, args.seeds - first), args.resamples, out)
                for first in range(0, args.seeds, args.block) for m in models
                if not glob.glob(os.path.join(out, f"{m}-{first:04d}-*.json"))]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            for path in pool.map(study_block, jobs):
                print(f"{time.perf_counter() - started:.0f} s: {os.path.basename(path)}", flush=True)
        header = (f"lite proxy study: models {', '.join(models)}; {args.seeds} subsets per model at {FRACTION}; "
                  f"{args.resamples} resamples per interval; nominal 95 %; {time.perf_counter() - started:.0f} s "
                  f"wall ({args.jobs} processes), {study._cpu_seconds():.0f} CPU s")
    text = markdown(out, args.upto) if args.tables and args.markdown else \
        tables(out, "" if args.tables else header, args.upto)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
