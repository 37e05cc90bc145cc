"""Why an averaged consistency missed: the stretched resamples against the pooled exact interval, on one model.

The coverage study's subsets of a model's full run (``bench_lite_coverage.py``'s runs and subset draw), each
dataset estimated by the package (:func:`StaICC.stats.lite_batch.subset_estimates`).  For each fraction it
prints, for the averaged row built the earlier way (the datasets' resamples, stretched to their exact
intervals, averaged; the percentile interval widened by the mean reach: :func:`~StaICC.stats.lite_averaged.averaged`
of plain lists) and the way it is built now (the Korn-Graubard interval of every dataset's items together:
:class:`~StaICC.stats.lite_averaged.Pooled`): the misses on each side, the subsets whose upper end is the
estimate, and the mean half-width; and, for the dataset subsets that saw no changed answer, the share of
their stretched resamples below the estimate (none lie above) and the averaged resamples' mean shift.

    python benchmarks/lite_consistency_trace.py --work DIR --model biased --benchmark Template_sens
"""
import argparse
import math
import os
import sys
from collections import Counter, defaultdict
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_lite_coverage as study  # noqa: E402  (the study's runs and subsets)


def trace(work: str, model: str, benchmark: str, fraction: float, seeds: int, resamples: int) -> List[str]:
    import numpy as np

    from StaICC.stats.lite_averaged import averaged, reach
    from StaICC.stats.lite_batch import subset_estimates
    from StaICC.stats.lite_exact import item_values
    per_subset: Dict[int, List[Any]] = defaultdict(list)
    truths, calm = [], Counter()
    for name, dataset, full, population, _ in study._tables(study.make_run(model, work, [])):
        if name != benchmark:
            continue
        values, _ = item_values(full.table)
        truths.append(full.point()["consistency"])
        subsets = study._subsets(full, population, name, dataset, range(seeds), (fraction,))
        found = subset_estimates(full, population, [s for _, _, s in subsets], resamples=resamples,
                                 seed=[s for s, _, _ in subsets], level=0.95)
        for (seed, _, positions), (plain, _) in zip(subsets, found):
            value, low, high, scaled = plain["consistency"]
            per_subset[seed].append((value, scaled, reach(low, high, list(scaled), 0.95)))
            if all(values[i] == 1 for i in positions):  # the subset saw no changed answer
                drawn = np.asarray(scaled)
                calm["subsets"] += 1
                calm["below"] += int((drawn < value - 1e-9).sum())
                calm["above"] += int((drawn > value + 1e-9).sum())
                calm["drawn"] += drawn.size
    truth = math.fsum(truths) / len(truths)
    lines = [f"{model}, {benchmark}, fraction {fraction}: {seeds} subsets, {len(truths)} datasets, full run's "
             f"averaged consistency {truth:.4f}; dataset subsets that saw no changed answer: {calm['subsets']} of "
             f"{seeds * len(truths)}, their stretched resamples below the estimate {calm['below'] / max(calm['drawn'], 1):.1%}, "
             f"above {calm['above'] / max(calm['drawn'], 1):.1%}"]
    for way in ("stretched", "pooled"):
        misses, on_estimate, widths, shifts = Counter(), 0, [], []
        for entries in per_subset.values():
            shown = entries if way == "pooled" else [(v, list(s), r) for v, s, r in entries]
            value, low, high = averaged(shown, 0.95, False)
            misses["above"] += truth > high + 1e-12
            misses["below"] += truth < low - 1e-12
            on_estimate += high == value
            widths.append((high - low) / 2)
            shifts.append(float(np.mean(np.mean([s for _, s, _ in entries], axis=0))) - value)
        shift = f"; averaged resamples' mean - estimate {np.mean(shifts):+.4f}" if way == "stretched" else ""
        lines.append(f"  {way:<9}: coverage {1 - (misses['above'] + misses['below']) / seeds:.1%} (truth above the "
                     f"interval {misses['above']}, below {misses['below']}); upper end = estimate on {on_estimate}; "
                     f"mean half-width {np.mean(widths):.4f}{shift}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="the coverage study's folder of full runs (--work)")
    parser.add_argument("--model", default="biased", help=f"one of {', '.join(study.MODELS)}")
    parser.add_argument("--benchmark", default="Template_sens", choices=["Template_sens", "Demo_sens"])
    parser.add_argument("--fractions", default="0.0625,0.125,0.25")
    parser.add_argument("--seeds", type=int, default=200, help="subsets per fraction (default: 200)")
    parser.add_argument("--resamples", type=int, default=200, help="resamples per interval (default: 200)")
    args = parser.parse_args()
    if args.model not in study.MODELS:
        parser.error(f"unknown model {args.model!r}; known: {', '.join(study.MODELS)}")
    for fraction in (float(f) for f in args.fractions.split(",") if f):
        print("\n".join(trace(args.work, args.model, args.benchmark, fraction, args.seeds, args.resamples)))


if __name__ == "__main__":
    main()
