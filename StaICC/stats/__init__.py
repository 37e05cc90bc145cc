"""Statistics over runs: bootstrap confidence intervals over test items, paired comparisons.

The unit of resampling is the **test item**: the R repeats of an item (and its GLER
passes, its Template_sens templates, its Demo_sens demonstration sets) move together,
because they share the query; resampling prompts would understate the variance.  A
resample draws T test items with replacement and takes every record of each drawn
item; the metrics are then recomputed with the package's own metric functions, on
rows laid out exactly as the run laid them out (pass-major, then repeat-major), so the
identity resample reproduces the recorded numbers bit for bit.

Two runs on the same prompts are compared *paired*: both are resampled with the same
items.  Accuracy also gets McNemar's exact test on the discordant prompts.  p-values of
one metric are Holm-corrected across datasets; the averaged row is a test of its own.

The package is split by job; every name is importable from ``StaICC.stats`` itself:

- :mod:`.significance`: McNemar's exact test, Holm's correction, percentiles, bootstrap p-values;
- :mod:`.items`: :class:`ItemTable` (a dataset's records by item) and :func:`draw_resamples`;
- :mod:`.statistic`: :class:`Statistic` (metric values of a resample, with the fast path);
- :mod:`.bootstrap`: :func:`bootstrap_run` and the estimates it returns;
- :mod:`.resolution`: each metric's noise floor, below which a difference is reported as zero;
- :mod:`.compare`: :func:`compare_runs`, the prompt checks, :class:`UnpairedRunsError`.

Only the standard library and :mod:`StaICC.metrics` are imported.
"""
from .bootstrap import (DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Cell, Estimate, PartEstimates,
                        RunEstimates, bootstrap_run, estimate_part, part_statistics)
from .compare import (Comparison, Difference, PartComparison, UnpairedRunsError, at_boundary, check_same_prompts,
                      compare_runs, prompt_differences)
from .items import CONSISTENCY_BENCHMARKS, SLOPE_BENCHMARKS, ItemTable, draw_resamples
from .resolution import RELATIVE_RESOLUTION, metric_scale, minimum_axis_span, noise_floor, resolvable, resolved
from .significance import bootstrap_p_value, holm, mcnemar_exact, percentile, percentile_interval
from .statistic import FAST_METRICS, Statistic, higher_is_better, metric_function

__all__ = [
    "DEFAULT_SEED", "DEFAULT_RESAMPLES", "DEFAULT_LEVEL", "DEFAULT_ALPHA", "CONSISTENCY_BENCHMARKS",
    "SLOPE_BENCHMARKS",
    # significance
    "mcnemar_exact", "holm", "percentile", "percentile_interval", "bootstrap_p_value",
    # items
    "ItemTable", "draw_resamples",
    # statistic
    "Statistic", "FAST_METRICS", "metric_function", "higher_is_better",
    # bootstrap
    "Estimate", "Cell", "PartEstimates", "RunEstimates", "part_statistics", "estimate_part", "bootstrap_run",
    # resolution
    "RELATIVE_RESOLUTION", "metric_scale", "noise_floor", "resolvable", "resolved", "minimum_axis_span",
    # compare
    "at_boundary", "UnpairedRunsError", "prompt_differences", "check_same_prompts", "Difference", "PartComparison", "Comparison",
    "compare_runs",
]
