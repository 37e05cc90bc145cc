"""The coverage of ``--lite-until HALFWIDTH`` in the lite-run coverage study (``bench_lite_coverage.py``).

A run stopped by ``--lite-until`` asks the looks of :func:`StaICC.stats.lite_until.look_schedule`
(f, 2f, 4f, ... and 1) with every interval at :func:`~StaICC.stats.lite_until.look_level`, and
stops at the first look whose widest *reported* half-width (every estimable metric of every
dataset and averaged row, :func:`~StaICC.stats.lite_until.widest_half`) is at most the target.
The study's subsets of one seed are prefixes of one stratified order, so they are nested as the
looks are; this module estimates each look of each seed at the look level, finds where the run
stops, and counts, per metric, whether the stopped look's interval holds the full run's value.
The last look (every item) is the full run: exact, so it always holds.
"""
import math
from collections import defaultdict
from typing import Any, Dict, List, Sequence, Tuple

#: the target half-width the study stops at
HALFWIDTH = 0.2
#: the first look's fraction
START = 0.0625


def looks() -> Tuple[Tuple[float, ...], float]:
    """(the looks below 1, the level of each look's intervals) of a run from :data:`START`."""
    from StaICC.stats.lite_until import look_level, look_schedule
    schedule = look_schedule(START)
    return schedule[:-1], look_level(0.95, len(schedule))


Entry = Tuple[str, str, Any, Any, Any, Any]  # (benchmark, metric with " (averaged)", truth, value, low, high)
PLAIN = "plain"


def part_entries(full: Any, population: Any, name: str, dataset: str, seeds: range, subsets_of: Any,
                 resamples: int, helpers: Sequence[Tuple[str, Any]] = ()) -> Dict[Tuple[str, int, float], List[Entry]]:
    """(mode, seed, look) -> this part's estimates at the look level, each with the full run's value; mode
    :data:`PLAIN` (no proxy) or the name of one of ``helpers`` ((mode, the proxy's full statistic): a
    ``--lite-until`` run with that ``--lite-proxy``).  The averaged rows' inputs ride along as
    (benchmark, metric, truth, (value, scaled, reach, bounds), None, None) entries, the bounds cutting the
    averaged row to its datasets' range as a run's averaged row is cut."""
    from StaICC.stats.lite_averaged import reach
    from StaICC.stats.lite_batch import subset_estimates
    from StaICC.stats.lite_bounds import cell_bounds, subset_rows_of
    fractions, level = looks()
    subsets = subsets_of(full, population, name, dataset, seeds, fractions)
    found = subset_estimates(full, population, [s for _, _, s in subsets], resamples=resamples,
                             seed=[seed for seed, _, _ in subsets], level=level, proxies=[p for _, p in helpers])
    truth = full.point()
    rows = subset_rows_of(name, full.table)  # whether a subset's rows are probabilities (its ranges)
    out: Dict[Tuple[str, int, float], List[Entry]] = defaultdict(list)
    for (seed, fraction, subset), (plain, tuned) in zip(subsets, found):
        for mode, cells in [(PLAIN, plain)] + [(m, t) for (m, _), t in zip(helpers, tuned)]:
            for metric, (value, low, high, scaled) in cells.items():
                out[(mode, seed, fraction)].append((name, metric, truth[metric], value, low, high))
                if not isinstance(value, list):
                    bounds = cell_bounds(name, metric, cells, rows(subset))  # the averaged row: its datasets' range
                    out[(mode, seed, fraction)].append((name, f"{metric} (averaged)", truth[metric],
                                                        (value, scaled, reach(low, high, scaled, level), bounds),
                                                        None, None))
    return out


def _finished(entries: List[Entry], level: float) -> List[Entry]:
    """The look's estimates with the averaged rows made (each resample averaged over the datasets)."""
    from StaICC.stats.lite_averaged import averaged as _averaged
    rows = [e for e in entries if e[4] is not None or e[5] is not None]
    averaged: Dict[Tuple[str, str], List[Any]] = defaultdict(list)
    for name, metric, truth, pair, low, high in entries:
        if low is None and high is None and metric.endswith(" (averaged)"):
            averaged[(name, metric)].append((truth, pair))
    for (name, metric), per_dataset in averaged.items():
        truth = math.fsum(t for t, _ in per_dataset) / len(per_dataset)
        value, low, high = _averaged([p for _, p in per_dataset], level, False)
        rows.append((name, metric, truth, value, low, high))
    return rows


def _reported(name: str, metric: str, fraction: float) -> bool:
    from StaICC.stats.lite import estimable
    row = "averaged" if metric.endswith(" (averaged)") else "dataset"
    return estimable(name, metric.replace(" (averaged)", ""), fraction, row)


def _widest(rows: List[Entry], fraction: float) -> float:
    """:func:`StaICC.stats.lite_until.widest_half` of a look's rows: a metric estimable only at a larger fraction
    counts as infinitely wide."""
    from StaICC.stats.lite import ESTIMABLE
    widest = 0.0
    for name, metric, _, _, low, high in rows:
        if not _reported(name, metric, fraction):
            row = "averaged" if metric.endswith(" (averaged)") else "dataset"
            if (name, metric.replace(" (averaged)", ""), row) in ESTIMABLE:
                return math.inf
            continue
        for a, b in zip(*(v if isinstance(v, list) else [v] for v in (low, high))):
            half = (b - a) / 2 if all(isinstance(v, (int, float)) and math.isfinite(v) for v in (a, b)) else math.inf
            widest = max(widest, half)
    return widest


def _key(kind: str, mode: str) -> str:
    """The results key of ``kind`` ("until" or "until-stops") for ``mode``: the plain runs' keys are unchanged."""
    return kind if mode == PLAIN else f"{kind} {mode}"


def stopped(entries: Dict[Tuple[str, int, float], List[Entry]], model: str, record: Any, results: Any) -> None:
    """For each mode and seed, the look the run stops at, and per reported metric there one coverage row
    (``record(results, key, model, truth, value, low, high, metric)``, key ("until[ mode]", look, benchmark,
    metric)); a run that reaches every item is exact there and adds a covered row per metric of the last look."""
    fractions, level = looks()
    for mode, seed in sorted({(m, s) for m, s, _ in entries}):
        rows = []
        for fraction in fractions:
            rows = _finished(entries[(mode, seed, fraction)], level)
            if _widest(rows, fraction) <= HALFWIDTH:
                break
        else:
            fraction = 1.0
        results[(_key("until-stops", mode), fraction, "", "")].append((model, 0.0, 0.0, True))
        for name, metric, truth, value, low, high in rows:
            if fraction == 1.0:
                value = low = high = truth  # every item asked: the full run's own number
            if fraction == 1.0 or _reported(name, metric, fraction):
                record(results, (_key("until", mode), fraction, name, metric), model, truth, value, low, high,
                       metric.replace(" (averaged)", ""))


def summary(found: Dict[Tuple[str, float, str, str], List[Tuple[Any, ...]]]) -> List[str]:
    """Per mode: where the runs stopped, the share of the items they asked, and each reported metric's coverage at
    the look it stopped at (all looks together)."""
    modes = sorted({key[0][len("until-stops"):].strip() or PLAIN for key in found if key[0].startswith("until-stops")},
                   key=lambda m: (m != PLAIN, m))
    lines: List[str] = []
    for mode in modes:
        lines += ([""] if lines else []) + _mode_summary(found, mode)
    return lines


def _mode_summary(found: Dict[Tuple[str, float, str, str], List[Tuple[Any, ...]]], mode: str) -> List[str]:
    """:func:`summary` of one mode."""
    fractions, level = looks()
    rows = {key[1:]: r for key, r in found.items() if key[0] == _key("until", mode)}
    per_metric: Dict[Tuple[str, str], List[Tuple[Any, ...]]] = defaultdict(list)
    stops: Dict[float, int] = defaultdict(int)
    for (_, name, metric), cells in rows.items():
        per_metric[(name, metric)].extend(cells)
    proxy = "without a proxy" if mode == PLAIN else f"with the proxy {mode!r}"
    lines = [f"--lite-until {HALFWIDTH} from {START} {proxy}: looks {', '.join(f'{f:g}' for f in fractions)}, 1; "
             f"every interval at {level:.1%}; coverage of each reported metric at the look the run stopped at:",
             f"{'sub-benchmark':<16} {'metric':<42} {'n':>6} {'coverage':>8}  worst model"]
    for (name, metric), cells in sorted(per_metric.items()):
        by_model: Dict[str, List[bool]] = defaultdict(list)
        for model, *_, covered in cells:
            by_model[model].append(covered)
        worst = min(by_model, key=lambda m: sum(by_model[m]) / len(by_model[m]))
        share = sum(1 for *_, c in cells if c) / len(cells)
        lines.append(f"{name:<16} {metric:<42} {len(cells):>6} {share:>8.1%}  {worst} "
                     f"({sum(by_model[worst]) / len(by_model[worst]):.0%})")
    for key, cells in found.items():
        if key[0] == _key("until-stops", mode):
            stops[key[1]] += len(cells)
    models = {cell[0] for key, cells in found.items() if key[0] == _key("until-stops", mode) for cell in cells}
    same = "" if mode == PLAIN else f"; without a proxy, on the same models: {_asked(found, PLAIN, models):.3f}"
    lines.append("runs stopped at each look: " + ", ".join(f"{f:g}: {n}" for f, n in sorted(stops.items())) +
                 f" (the mean share of the items asked: {_asked(found, mode, models):.3f}{same})")
    return lines


def _asked(found: Dict[Tuple[str, float, str, str], List[Tuple[Any, ...]]], mode: str, models: set) -> float:
    """The mean share of the items the runs of ``mode`` asked, over the runs of ``models`` (a proxy that is one of
    the study's models is not its own proxy, so its mode has one model fewer than the plain runs)."""
    shares = [key[1] for key, cells in found.items() if key[0] == _key("until-stops", mode)
              for cell in cells if cell[0] in models]
    return math.fsum(shares) / len(shares) if shares else math.nan
