"""The proxies side by side on a trained family: a target model, its smaller siblings, the lexical model.

The function and random models of ``lite_proxy_study.py`` share no item difficulty with one another;
the toy family of ``lite_trained_family.py`` (tiny Llamas trained here on the demonstration sets) does,
as real models of one family do.  Given the full runs (records kept) of the target and of the proxies
on the same prompts, every seeded subset of the target at the fraction is estimated with the package's
estimators (:func:`StaICC.stats.lite_batch.subset_estimates`, as the coverage study does): plain, and
with each proxy mode (a proxy alone, or several as one, one weight each, as ``--lite-proxy A,B`` does).
Per cell: the coverage of the nominal 95 % intervals (the full run's value inside, within the metric's
noise floor) and the median half-width, plain and per mode, and the width ratio (median half-width with
the proxy / plain, on the same subsets); then the median ratio over the cells a lite run prints at the
fraction.  Also the item-level correlation of the target and each proxy on Normal (correctness and
true-label probability, each item's mean over its repeats).  Nothing is tuned on the outcome: the
family, the fraction, the modes and the estimator are fixed before the run.

    python benchmarks/lite_proxy_trained.py --target /tmp/41e/runs/target \
        --proxies small=/tmp/41e/runs/small,reference=/tmp/41e/runs/reference \
        --modes small,reference,small+reference --seeds 200 --resamples 200 \
        --output benchmarks/results/lite_proxy_trained.txt

``--fractions 0.0625,0.125,0.25`` studies nested subsets at each (the cells counted as printed below 12.5 % are
those printed at it).  The target's own run named as a proxy (``oracle=/tmp/41e/runs/target``) is the limit
of a proxy that follows the target exactly (rho = 1): what remains of a cell's width is what no proxy narrows
(the exact intervals and the bounds for what the subset has not seen).
"""
import argparse
import math
import os
import sys
import time
from collections import defaultdict
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_lite_coverage as study  # noqa: E402 (beside this script)

#: the fraction studied by default; the cells counted as printed at a smaller one are those printed here (a lite run
#: prints nothing below it)
FRACTION = 0.125


def correlations(target: Any, proxy: Any) -> Tuple[float, float]:
    """Pearson correlation over items of (correctness, true-label probability), each item's mean over the
    repeats of pass 0, between two full tables of the same items."""
    import numpy as np

    def means(table: Any, field: int) -> Any:
        values = [[(s[0] == table.labels[i]) if field == 0 else s[2] for i, s in enumerate(rep)]
                  for rep in table.summaries[0]]
        return np.asarray(values, dtype=np.float64).mean(axis=0)
    return tuple(float(np.corrcoef(means(target.table, f), means(proxy.table, f))[0, 1]) for f in (0, 2))


def slope_correlations(target: Any, proxy: Any) -> Tuple[float, float, int, int]:
    """GLER: the Pearson correlation over items of each item's contribution to the slope, sum_p c_p y_p with
    c_p = (x_p - mean x) / sum (x - mean x)^2 and y_p its value in pass p (its mean over the repeats), for
    correctness and the true-label probability; and how many items contribute to the accuracy's slope (target,
    proxy).  A difference estimator of a slope can use only this correlation."""
    import numpy as np
    x = np.asarray(target.x_values, dtype=np.float64)
    c = (x - x.mean()) / ((x - x.mean()) ** 2).sum()

    def contributions(table: Any, field: int) -> Any:
        values = np.asarray([[[(s[0] == table.labels[i]) if field == 0 else s[2] for i, s in enumerate(rep)]
                              for rep in reps] for reps in table.summaries], dtype=np.float64).mean(axis=1)
        return (c[:, None] * values).sum(axis=0)
    pairs = [(contributions(target.table, f), contributions(proxy.table, f)) for f in (0, 2)]
    (a, b), (u, v) = pairs
    return (float(np.corrcoef(a, b)[0, 1]), float(np.corrcoef(u, v)[0, 1]),
            int((np.abs(a) > 1e-12).sum()), int((np.abs(b) > 1e-12).sum()))


def within_label_correlation(target: Any, proxy: Any) -> float:
    """Pearson correlation over items of the true-label probability (each item's mean over the repeats of pass
    0), each centred on its label's mean: the correlation a label-stratified difference estimator of the mean
    can use, whose interval it narrows by sqrt(1 - rho^2)."""
    import numpy as np

    def centred(table: Any) -> Any:
        values = np.asarray([[s[2] for s in rep] for rep in table.summaries[0]], dtype=np.float64).mean(axis=0)
        labels = np.asarray(table.labels)
        return values - np.asarray([values[labels == label].mean() for label in labels])
    a, b = centred(target.table), centred(proxy.table)
    return float((a * b).sum() / math.sqrt((a * a).sum() * (b * b).sum()))


def bound_line(dataset: str, proxy: str, found: List[Any], position: int, rho: float, fraction: float) -> str:
    """Normal's likelihood (a mean over items) on one dataset: the median half-width ratio with one proxy
    against the bound sqrt(1 - rho^2) of its within-label correlation."""
    def median(values: List[float]) -> float:
        return sorted(values)[len(values) // 2]
    metric = "averaged_truelabel_likelihood"
    plain = median([(cells[metric][2] - cells[metric][1]) / 2 for cells, _ in found])
    tuned = median([(helped[position][metric][2] - helped[position][metric][1]) / 2 for _, helped in found])
    return (f"Normal / {dataset} at {fraction}: likelihood width ratio with {proxy} {tuned / plain:.3f}; its within-label "
            f"correlation {rho:.3f}, sqrt(1 - rho^2) = {math.sqrt(max(0.0, 1 - rho * rho)):.3f}")


def tables(path: str, notes: List[str]) -> List[Tuple[Any, ...]]:
    """:func:`bench_lite_coverage._tables` of a run, each part's statistic built from its records; a part whose
    records recompute another value than results.json records is kept (the records are what a lite run of them
    estimates) and named in ``notes``."""
    from StaICC.errors import InvalidValueError
    from StaICC.report.runs import load_run
    from StaICC.stats import bootstrap
    from StaICC.stats.flips import has_ground_truth
    from StaICC.stats.lite import Population
    from StaICC.stats.statistic import Statistic
    out = []
    for name, part in load_run(path).parts.items():
        for dataset in part.datasets():
            try:
                statistic = bootstrap.dataset_statistic(part, dataset)
            except InvalidValueError as error:
                notes.append(f"{path}: {error}")
                statistic = bootstrap.dataset_statistic(part, dataset, check=False)
            standard = [n for n in statistic.names() if not n.endswith("_nonstandard")]
            statistic = Statistic(name, statistic.table, standard, part.metadata)
            labels = statistic.table.labels if has_ground_truth(name) else [None] * len(statistic.table)
            out.append((name, dataset, statistic, Population.from_labels(labels), part.metadata))
    return out


def run_study(target: str, proxies: Dict[str, str], modes: List[str], seeds: int, resamples: int,
              fractions: Tuple[float, ...] = (FRACTION,)) -> Tuple[study.Results, List[str]]:
    """(mode, fraction, benchmark, metric) -> rows, as the coverage study records them, and the lines of the
    correlations and accuracies."""
    from StaICC.stats.lite_averaged import reach
    from StaICC.stats.lite_bounds import cell_bounds, subset_rows_of
    from StaICC.stats.lite_batch import subset_estimates
    names = list(proxies)
    lines: List[str] = []
    found_tables = {p: {(n, d): full for n, d, full, _, _ in tables(path, lines)} for p, path in proxies.items()}
    groups = [tuple(names.index(p) for p in mode.split("+")) for mode in modes]
    results: study.Results = defaultdict(list)
    averaged: Dict[Tuple[str, float, str, str, int], List[Any]] = defaultdict(list)
    for name, dataset, full, population, _ in tables(target, lines):
        helpers = [found_tables[p][(name, dataset)] for p in names]
        truth = full.point()
        if name == "Normal":
            lines.append(f"Normal / {dataset}: target accuracy {truth['accuracy']:.3f}; " + "; ".join(
                f"{p} accuracy {h.point()['accuracy']:.3f}, item correlation with the target: correctness "
                f"{c:.2f}, true-label probability {q:.2f}" for p, h in zip(names, helpers)
                for c, q in [correlations(full, h)]))
        if name == "GLER":
            lines.append(f"GLER / {dataset}: item correlation of the slope contributions with the target: " + "; ".join(
                f"{p} accuracy {a:.2f}, true-label probability {q:.2f} (items moving the accuracy's slope: target "
                f"{m}, {p} {k})" for p, h in zip(names, helpers) for a, q, m, k in [slope_correlations(full, h)]))
        subsets = study._subsets(full, population, name, dataset, range(seeds), fractions)
        found = subset_estimates(full, population, [s for _, _, s in subsets], resamples=resamples,
                                 seed=[seed for seed, _, _ in subsets], level=0.95, proxies=helpers, groups=groups)
        if name == "Normal":
            lines += [bound_line(dataset, mode, [e for e, (_, f, _) in zip(found, subsets) if f == fraction], j,
                                 within_label_correlation(full, helpers[names.index(mode)]), fraction)
                      for fraction in fractions for j, mode in enumerate(modes) if mode in names]
        rows = subset_rows_of(name, full.table)  # whether a subset's rows are probabilities (its ranges)
        for (seed, fraction, subset), (plain, tuned) in zip(subsets, found):
            for mode, cells in [("plain", plain)] + list(zip(modes, tuned)):
                for metric, (value, low, high, scaled) in cells.items():
                    study._record(results, (mode, fraction, name, metric), dataset, truth[metric], value, low,
                                  high, metric)
                    if not isinstance(value, list):
                        extra = reach(low, high, scaled, 0.95)
                        bounds = cell_bounds(name, metric, cells, rows(subset))  # the averaged row: its datasets' range
                        averaged[(mode, fraction, name, metric, seed)].append((truth[metric], (value, scaled, extra, bounds)))
    study._averaged_rows(results, averaged, "averaged")
    return results, lines


def side_by_side(results: study.Results, modes: List[str], fraction: float = FRACTION) -> List[str]:
    """One markdown row per cell at ``fraction`` (printed or not), then per mode the median width ratio and the
    coverage over the printed cells (below :data:`FRACTION`, the cells printed at it)."""
    from StaICC.stats.lite import ESTIMABLE
    lines = [f"at {fraction}:", "", "| sub-benchmark: metric | printed | plain: coverage | median half-width | "
             + " | ".join(f"{m}: coverage | width ratio" for m in modes) + " |", "|---" * (4 + 2 * len(modes)) + "|"]
    ratios: Dict[str, List[float]] = defaultdict(list)
    covered: Dict[str, List[bool]] = defaultdict(list)
    keys = sorted({k[1:] for k in results if k[0] == "plain" and k[1] == fraction}, key=lambda k: (k[1], k[2]))
    for key in keys:
        metric = key[2].replace(" (averaged)", "")
        printed = ESTIMABLE.get((key[1], metric, "averaged" if key[2].endswith(" (averaged)") else "dataset"),
                                2.0) <= max(key[0], FRACTION)
        coverage, _, half = study._cell(results[("plain", *key)])
        cells = [f"{key[1]}: {key[2]}", "yes" if printed else "no", f"{coverage:.1%}", f"{half:.3g}"]
        if printed:
            covered["plain"] += [r[3] for r in results[("plain", *key)]]
        for mode in modes:
            rows = results[(mode, *key)]
            tuned = study._cell(rows)
            ratio = tuned[2] / half if half > 0 and math.isfinite(half) else math.nan
            cells += [f"{tuned[0]:.1%}", f"{ratio:.3f}"]
            if printed:
                covered[mode] += [r[3] for r in rows]
                if math.isfinite(ratio):
                    ratios[mode].append(ratio)
        lines.append("| " + " | ".join(cells) + " |")
    plain = covered["plain"]
    lines += ["", f"over the printed cells at {fraction}: plain coverage {sum(plain) / len(plain):.1%} "
              f"({len(plain)} intervals)"]
    for mode in modes:
        found = sorted(ratios[mode])
        median = found[len(found) // 2] if len(found) % 2 else (found[len(found) // 2 - 1] + found[len(found) // 2]) / 2
        lines.append(f"  {mode:<28} median width ratio {median:.3f} over {len(found)} cells (best {found[0]:.3f}, "
                     f"worst {found[-1]:.3f}); coverage {sum(covered[mode]) / len(covered[mode]):.1%}; "
                     f"{sum(r >= 0.99 for r in found)} cells at 0.99 or more, the others' median {_median(found):.3f}")
    return lines


def per_dataset(results: study.Results, modes: List[str], fraction: float = FRACTION) -> List[str]:
    """Each per-dataset cell's width ratio per mode on each dataset alone (a cell's ratio above pools its datasets'
    half-widths, so where one dataset's intervals are wider the pooled median is that dataset's)."""
    lines = [f"per dataset at {fraction} (median half-width ratio with each mode on the dataset's subsets):", "",
             "| sub-benchmark: metric | dataset | plain: median half-width | " + " | ".join(modes) + " |",
             "|---" * (3 + len(modes)) + "|"]
    for key in sorted(k[1:] for k in results if k[0] == "plain" and k[1] == fraction and "(averaged)" not in k[3]):
        datasets = sorted({r[0] for r in results[("plain", *key)]})
        for dataset in datasets:
            half = study._cell([r for r in results[("plain", *key)] if r[0] == dataset])[2]
            ratios = [study._cell([r for r in results[(m, *key)] if r[0] == dataset])[2] / half
                      if half > 0 and math.isfinite(half) else math.nan for m in modes]
            lines.append(f"| {key[1]}: {key[2]} | {dataset} | {half:.3g} | " + " | ".join(f"{r:.3f}" for r in ratios)
                         + " |")
    return lines


def _median(ratios: List[float]) -> float:
    """The median of the width ratios below 0.99 (the cells a proxy moves), NaN where there is none."""
    moved = sorted(r for r in ratios if r < 0.99)
    if not moved:
        return math.nan
    middle = len(moved) // 2
    return moved[middle] if len(moved) % 2 else (moved[middle - 1] + moved[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="the target's full run (with records)")
    parser.add_argument("--proxies", required=True, help="name=DIR,... : the proxies' full runs on the same prompts")
    parser.add_argument("--modes", required=True, help="comma-separated; a mode is a proxy name or names joined by +")
    parser.add_argument("--seeds", type=int, default=200, help="subsets (default: 200)")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples per interval (default: 200)")
    parser.add_argument("--fractions", default=str(FRACTION),
                        help=f"comma-separated fractions (default: {FRACTION}); the subsets are nested, one per seed")
    parser.add_argument("--output", help="also write the tables to this file")
    parser.add_argument("--note", action="append", default=[],
                        help="a line for the header (how the runs were made: commands, times, machine); repeatable")
    args = parser.parse_args()
    fractions = tuple(float(f) for f in args.fractions.split(",") if f)
    proxies = dict(item.split("=", 1) for item in args.proxies.split(",") if item)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted({p for m in modes for p in m.split("+")} - set(proxies))
    if unknown:
        parser.error(f"--modes names proxies not in --proxies: {', '.join(unknown)}")
    started = time.perf_counter()
    results, lines = run_study(args.target, proxies, modes, args.seeds, args.resamples, fractions)
    header = [f"lite proxy study on a trained family: target {args.target}; proxies "
              + ", ".join(f"{p} {d}" for p, d in proxies.items()) + f"; {args.seeds} subsets at "
              f"{', '.join(map(str, fractions))}; {args.resamples} resamples per interval; nominal 95 %; "
              f"{time.perf_counter() - started:.0f} s wall, {study._cpu_seconds():.0f} CPU s",
              "command: python " + " ".join(a for i, a in enumerate(sys.argv)
                                            if a != "--note" and sys.argv[i - 1] != "--note")] + args.note + [""]
    sections = [line for f in fractions for line in [""] + side_by_side(results, modes, f) + [""]
                + per_dataset(results, modes, f)]
    text = "\n".join(header + lines + sections)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
