"""Coverage study of the lite-run estimates: which metrics a subset of the test items estimates, and how well.

A lite run's records are exactly the full run's records of its test items, so a lite run
is simulated exactly by restricting a full run's records.  For each model, the full suite
is run once (with records) and each (sub-benchmark, dataset)'s full table built once; then,
for each seed, the stratified subset the picker gives with that seed as salt is taken at each
fraction, every metric is estimated with its interval, and the estimate is compared with the
full run's value.  The estimates of all subsets of a part come from
:func:`StaICC.stats.lite_batch.subset_estimates`: the package's own estimators (design,
resample weights, widening, bias correction, exact interval, power-tuned proxy), with each
subset's weights laid on the full table (zero off the subset) so that one matrix product
serves many subsets; ``tests/stats/test_lite_batch.py`` checks that it equals
:func:`StaICC.stats.lite.estimate_statistic` on each subset's own table.  Per fraction and
metric the study prints the mean absolute error, the mean half-width and the coverage (the
share of intervals that hold the full run's value, within the metric's noise floor), over
all models and for the worst one; a metric is estimable where the coverage is at least
``REQUIRED_COVERAGE`` over all models and ``REQUIRED_MODEL_COVERAGE`` for each
(:mod:`StaICC.stats.lite`) at that fraction and every larger studied one.

Models: the built-in lexical model (``reference``), chance (``uniform``), random-weight HF Llamas of
two sizes (``tiny-hf``, the tests' 0.3 M-parameter model, and ``small-hf``, the 27 M-parameter ``small``
preset of ``make_random_model.py``; only on the datasets of ``--hf-datasets``; slow on a CPU, the small
one about 1.3 ms of one core per token), and the function models
of ``lite_models.py``: awkward rows (always label 0, near-ties, rows summing to exactly 1.0),
synthetic models with a known bias, label noise and over-confidence, and random models of
three seeds.

With the proxies (the default; ``--no-proxy`` leaves them out) every model is also estimated
with the power-tuned difference estimator (:mod:`StaICC.stats.lite_proxy`) of two proxies:
``reference``, the lexical model's full run (not for itself), and ``sibling``, a related model
(:func:`sibling`: the target's own scores with independent noise); a table per proxy puts each
cell's coverage and median half-width without and with it side by side, on the same subsets.

    python benchmarks/bench_lite_coverage.py                    # 200 subsets per fraction and model
    python benchmarks/bench_lite_coverage.py --seeds 10 --resamples 200 --models reference,uniform,biased
    python benchmarks/bench_lite_coverage.py --fractions 0.125 --output benchmarks/results/lite_coverage.txt
    python benchmarks/bench_lite_coverage.py --fractions 0.0625,0.25 --no-proxy --until --seeds 12

``--until`` adds the coverage of ``--lite-until`` at the look each run stops at (:mod:`lite_until_coverage`),
without a proxy and with each proxy (unless ``--no-proxy``), and where the runs stopped;
each proxy's table ends with each model's median width ratio and the correlation it implies.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import lite_until_coverage  # noqa: E402 (beside this script)
from lite_models import FUNCTIONS  # noqa: E402 (beside this script)

FRACTIONS = (0.0625, 0.125, 0.25)
MODELS = ("reference", "uniform", "tiny-hf", "small-hf", *FUNCTIONS)
#: the admission study's twelve models (the small HF model's 50 CPU minutes are asked for by name: ``--models small-hf``)
DEFAULT_MODELS = tuple(m for m in MODELS if m != "small-hf")
#: the proxy of the proxy-assisted estimates: the lexical reference model's full run (not studied as its own
#: proxy, where it would be exact)
PROXY = "reference"
#: the noise (on log-scores) of the related proxy, :func:`sibling`
SIBLING_SIGMA = 1.0


# ----------------------------------------------------------------------------
# full runs, made once
# ----------------------------------------------------------------------------
def make_run(model: str, work: str, hf_datasets: List[str]) -> str:
    target = os.path.join(work, model)
    if os.path.isfile(os.path.join(target, "results.json")):
        return target
    print(f"full run of {model} (once, in {target})", flush=True)
    if model in FUNCTIONS:
        from StaICC.backends import FunctionBackend
        from StaICC.errors import TamperingWarning
        from StaICC.results.provenance import collect, utc_now
        from StaICC.results.rundir import write_run_dir
        from StaICC.subbenchmarks.suite import run_suite
        backend = FunctionBackend(FUNCTIONS[model], model_id=model)
        started = utc_now()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TamperingWarning)
            result = run_suite(backend, benchmarks="all", progress=False)
        write_run_dir(target, dict(result), collect(backend, {}, started, 1.0, ["bench_lite_coverage"]), True)
        return target
    command = [sys.executable, "-m", "StaICC", "run", "--benchmarks", "all", "--log-samples", "--no-progress",
               "--overwrite", "--output-dir", target]
    if model in ("tiny-hf", "small-hf"):
        directory = _random_llama(model, work)
        command += ["--model", "hf", "--model-args", f"pretrained={directory},dtype=float32,threads=1",
                    "--datasets", *hf_datasets]
    else:
        command += ["--model", model]
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return target


def _random_llama(model: str, work: str) -> str:
    """The folder of a random-weight HF Llama, made once: the tests' tiny one, or the ``small`` preset."""
    if model == "tiny-hf":
        from backend_helpers import save_tiny
        return save_tiny(os.path.join(work, "tiny-llama"))
    directory = os.path.join(work, "small-llama")
    if not os.path.isfile(os.path.join(directory, "config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "make_random_model.py"), "--preset", "small",
                        "--out", directory], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return directory


# ----------------------------------------------------------------------------
# one model's study
# ----------------------------------------------------------------------------
def _tables(path: str):
    """(benchmark, dataset, full statistic, population, metric names) of every part of a run."""
    from StaICC.report.runs import load_run
    from StaICC.stats.bootstrap import dataset_statistic
    from StaICC.stats.flips import has_ground_truth
    from StaICC.stats.lite import Population
    from StaICC.stats.statistic import Statistic
    run = load_run(path)
    out = []
    for name, part in run.parts.items():
        for dataset in part.datasets():
            statistic = dataset_statistic(part, dataset)  # checked against the run's results.json
            standard = [n for n in statistic.names() if not n.endswith("_nonstandard")]
            statistic = Statistic(name, statistic.table, standard, part.metadata)
            labels = statistic.table.labels if has_ground_truth(name) else [None] * len(statistic.table)
            out.append((name, dataset, statistic, Population.from_labels(labels), part.metadata))
    return out


def _covered(truth: Any, low: Any, high: Any, metric: str) -> List[bool]:
    from StaICC.stats.resolution import noise_floor
    if isinstance(truth, list):
        return [c for t, a, b in zip(truth, low, high) for c in _covered(t, a, b, metric)]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (truth, low, high)):
        return [False]
    floor = noise_floor(metric, truth)
    return [low - floor <= truth <= high + floor]


def _error(truth: Any, value: Any) -> List[float]:
    if isinstance(truth, list):
        return [e for t, v in zip(truth, value) for e in _error(t, v)]
    return [abs(value - truth)] if math.isfinite(value) and math.isfinite(truth) else [math.inf]


Results = Dict[Tuple[str, float, str, str], List[Tuple[Any, ...]]]


def _record(results: Results, key: Tuple[str, float, str, str], model: str, truth: Any, value: Any, low: Any,
            high: Any, metric: str) -> None:
    """One (model, |error|, half-width, covered) row per scalar estimate (a vector: one per element)."""
    for e, c, w in zip(_error(truth, value), _covered(truth, low, high, metric), _error(high, low)):
        results[key].append((model, e, w / 2, c))


def sibling(statistic: Any, sigma: float = SIBLING_SIGMA) -> Any:
    """A related model's full table: the target's own scores on every prompt (log-probabilities where a row is a
    probability vector, else the raw scores) plus independent Gaussian noise of ``sigma`` (seeded by the part's
    name) -- a stand-in for a smaller model of the same family, known on every item and on the same prompts."""
    import hashlib

    import numpy as np

    from StaICC.stats.items import ItemTable
    from StaICC.stats.statistic import Statistic
    table = statistic.table
    rows = np.asarray(table.rows, dtype=np.float64)  # passes x repeats x items x labels
    probability = (rows.min(axis=-1, keepdims=True) >= 0) & (np.abs(rows.sum(axis=-1, keepdims=True) - 1) < 1e-6)
    scores = np.where(probability, np.log(np.maximum(rows, 1e-12)), rows)
    seed = int.from_bytes(hashlib.sha256(f"sibling {table.benchmark} {table.dataset}".encode()).digest()[:8], "little")
    noisy = (scores + sigma * np.random.default_rng(seed).standard_normal(rows.shape)).tolist()
    records = [{"benchmark": table.benchmark, "dataset": table.dataset, "pass": p, "repeat": k, "test_index": test,
                "label": table.labels[i], "prompt_sha256": table.hashes[p][k][i], "query_index": 0,
                "prediction": noisy[p][k][i]}
               for p in range(table.passes) for k in range(table.repeats) for i, test in enumerate(table.items)]
    related = Statistic(table.benchmark, ItemTable(table.benchmark, table.dataset, records), statistic.names())
    related.x_values = statistic.x_values
    return related


def _subsets(full: Any, population: Any, name: str, dataset: str, seeds: range,
             fractions: Tuple[float, ...] = FRACTIONS) -> List[Tuple[int, float, List[int]]]:
    """(seed, fraction, positions) of every studied subset: one stratified order per seed, the fractions its
    prefixes (they are nested)."""
    from StaICC.sampling.subsets import stratified_order, subset_size
    unlabelled = [label for label, _ in population.strata] == [None]
    found = []
    for seed in seeds:
        order = stratified_order(len(full.table) if unlabelled else full.table.labels, (name, dataset),
                                 salt=f"study {seed}")
        found += [(seed, f, order[:subset_size(len(full.table), f)]) for f in fractions]
    return found


def study_model(job: Tuple[str, str, int, int, int, str, bool, Tuple[float, ...], bool, Tuple[str, ...]]) -> Results:
    """(mode, fraction, benchmark, metric) -> one (model, error, half-width, covered) tuple per estimate; mode
    "plain", "reference" (the lexical model as the proxy; not for itself), "sibling" (:func:`sibling`) or
    "until" (``--lite-until``, :mod:`lite_until_coverage`).  Each part's full table is built once; every
    subset's estimates come from :func:`StaICC.stats.lite_batch.subset_estimates` (the package's estimators,
    many subsets per product)."""
    model, path, seeds, resamples, first_seed, proxy_path, related, fractions, until, benchmarks = job
    looks: Dict[Tuple[str, int, float], List[Any]] = defaultdict(list)
    from StaICC.stats.lite_averaged import reach
    from StaICC.stats.lite_bounds import cell_bounds, subset_rows_of
    from StaICC.stats.lite_batch import subset_estimates
    results: Results = defaultdict(list)
    proxies = {(n, d): full for n, d, full, _, _ in _tables(proxy_path)} if proxy_path and model != PROXY else {}
    averaged: Dict[Tuple[str, float, str, str, int], List[Any]] = defaultdict(list)
    for name, dataset, full, population, _ in _tables(path):
        if benchmarks and name not in benchmarks:  # --benchmarks: only these sub-benchmarks
            continue
        subsets = _subsets(full, population, name, dataset, range(first_seed, first_seed + seeds), fractions)
        helpers = ([("reference", proxies[(name, dataset)])] if proxies else []) + \
            ([("sibling", sibling(full))] if related else [])
        found = subset_estimates(full, population, [s for _, _, s in subsets], resamples=resamples,
                                 seed=[seed for seed, _, _ in subsets], level=0.95,
                                 proxies=[p for _, p in helpers])
        truth = full.point()
        rows = subset_rows_of(name, full.table)  # whether a subset's rows are probabilities (its ranges)
        for (seed, fraction, subset), (plain, tuned) in zip(subsets, found):
            for mode, cells in [("plain", plain)] + [(m, t) for (m, _), t in zip(helpers, tuned)]:
                for metric, (value, low, high, scaled) in cells.items():
                    _record(results, (mode, fraction, name, metric), model, truth[metric], value, low, high, metric)
                    if not isinstance(value, list):
                        extra = reach(low, high, scaled, 0.95)
                        bounds = cell_bounds(name, metric, cells, rows(subset))  # the averaged row: its datasets' range
                        averaged[(mode, fraction, name, metric, seed)].append((truth[metric], (value, scaled, extra, bounds)))
        if until:
            for key, entries in lite_until_coverage.part_entries(
                    full, population, name, dataset, range(first_seed, first_seed + seeds), _subsets,
                    resamples, helpers).items():
                looks[key].extend(entries)
    _averaged_rows(results, averaged, model)
    if until:
        lite_until_coverage.stopped(looks, model, _record, results)
    return dict(results)


def _averaged_rows(results: Results, averaged: Dict[Tuple[str, float, str, str, int], List[Any]], model: str) -> None:
    """The averaged row of each (mode, fraction, sub-benchmark, metric, subset): each resample averaged over the
    datasets (:func:`StaICC.stats.lite_averaged.averaged`)."""
    from StaICC.stats.lite_averaged import averaged as averaged_row
    for (mode, fraction, name, metric, _), rows in averaged.items():
        truth = math.fsum(t for t, _ in rows) / len(rows)
        value, low, high = averaged_row([c for _, c in rows], 0.95, False)
        _record(results, (mode, fraction, name, f"{metric} (averaged)"), model, truth, value, low, high, metric)


# ----------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------
def _coverages(rows: List[Tuple[Any, ...]]) -> Tuple[float, Dict[str, float]]:
    """The coverage of a cell, and per model."""
    by_model: Dict[str, List[bool]] = defaultdict(list)
    for model, *_, covered in rows:
        by_model[model].append(covered)
    return (sum(1 for *_, c in rows if c) / len(rows),
            {m: sum(c) / len(c) for m, c in by_model.items()})


def estimable_table(results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]]) -> Dict[Tuple[str, ...], float]:
    """(sub-benchmark, metric, "dataset" or "averaged") -> the smallest studied fraction from which on every
    studied fraction has the required coverage over all models and the required floor for each model."""
    from StaICC.stats.lite import REQUIRED_COVERAGE, REQUIRED_MODEL_COVERAGE
    passes: Dict[Tuple[str, str], Dict[float, bool]] = defaultdict(dict)
    for (fraction, name, metric), rows in results.items():
        overall, per_model = _coverages(rows)
        passes[(name, metric)][fraction] = overall >= REQUIRED_COVERAGE and \
            min(per_model.values()) >= REQUIRED_MODEL_COVERAGE
    table = {}
    for (name, metric), per in sorted(passes.items()):
        studied = sorted(per)
        passing = [f for f in studied if all(per[g] for g in studied if g >= f)]
        if passing:
            row = "averaged" if metric.endswith(" (averaged)") else "dataset"
            table[(name, metric.replace(" (averaged)", ""), row)] = min(passing)
    return table


def summarize(results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]]) -> List[str]:
    table = estimable_table(results)
    lines = [f"{'fraction':>8}  {'sub-benchmark':<16} {'metric':<42} {'n':>6} {'mean |error|':>12} "
             f"{'mean half-width':>15} {'coverage':>8}  {'worst model (coverage)':<28} estimable"]
    for (fraction, name, metric), rows in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        overall, per_model = _coverages(rows)
        worst = min(per_model, key=per_model.get)
        finite = [e for _, e, _, _ in rows if math.isfinite(e)]
        mean_error = math.fsum(finite) / len(finite) if finite else math.inf
        widths = [w for _, _, w, _ in rows if math.isfinite(w)]
        half = math.fsum(widths) / len(widths) if widths else math.inf
        key = (name, metric.replace(" (averaged)", ""), "averaged" if metric.endswith(" (averaged)") else "dataset")
        ok = key in table and fraction >= table[key]
        lines.append(f"{fraction:>8.4f}  {name:<16} {metric:<42} {len(rows):>6} {mean_error:>12.4g} {half:>15.4g} "
                     f"{overall:>8.2%}  {f'{worst} ({per_model[worst]:.1%})':<28} {'yes' if ok else 'no'}")
    lines += ["", "StaICC.stats.lite.ESTIMABLE as this study finds it:", "ESTIMABLE = {"]
    lines += [f"    {key!r}: {start}," for key, start in table.items()]
    lines.append("}")
    return lines


def _cell(rows: List[Tuple[Any, ...]]) -> Tuple[float, float, float]:
    """(coverage, the worst model's coverage, the median half-width) of a cell."""
    overall, per_model = _coverages(rows)
    widths = sorted(w for _, _, w, _ in rows if math.isfinite(w))
    return overall, min(per_model.values()), widths[len(widths) // 2] if widths else math.inf


def side_by_side(results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]],
                 helped: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]], proxy: str) -> str:
    """Each cell's coverage and median half-width without and with the proxy, on the same models (a proxy that is
    a model of the study left out) and subsets, and the median of the width ratios at each fraction."""
    lines = [f"without and with the proxy {proxy!r} (power-tuned difference estimator, one interval at 95 %; the "
             "same models and subsets):",
             f"{'fraction':>8}  {'sub-benchmark':<16} {'metric':<42} {'cov.':>6} {'worst':>6} {'median hw':>10}  "
             f"{'cov.+proxy':>10} {'worst':>6} {'median hw':>10} {'width ratio':>11}"]
    ratios: Dict[float, List[float]] = defaultdict(list)
    for key in sorted(helped, key=lambda k: (k[1], k[2], k[0])):
        models = {m for m, *_ in helped[key]}
        plain = _cell([r for r in results.get(key, []) if r[0] in models])
        tuned = _cell(helped[key])
        ratio = tuned[2] / plain[2] if plain[2] > 0 and math.isfinite(plain[2]) else math.nan
        if math.isfinite(ratio):
            ratios[key[0]].append(ratio)
        fraction, name, metric = key
        lines.append(f"{fraction:>8.4f}  {name:<16} {metric:<42} {plain[0]:>6.1%} {plain[1]:>6.0%} {plain[2]:>10.4g}  "
                     f"{tuned[0]:>10.1%} {tuned[1]:>6.0%} {tuned[2]:>10.4g} {ratio:>11.2f}")
    for fraction, found in sorted(ratios.items()):
        found.sort()
        lines.append(f"median width ratio at {fraction:.4f} over {len(found)} rows: {found[len(found) // 2]:.3f}")
    lines += per_model_ratios(results, helped)
    return "\n".join(lines)


def per_model_ratios(results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]],
                     helped: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]]) -> List[str]:
    """Per model and fraction: the median over the rows of (median half-width with the proxy / without), and
    the correlation it implies for a difference estimator (width ratio = sqrt(1 - rho^2))."""
    ratios: Dict[Tuple[str, float], List[float]] = defaultdict(list)
    for key, rows in helped.items():
        for model in {m for m, *_ in rows}:
            plain = _cell([r for r in results.get(key, []) if r[0] == model])[2]
            tuned = _cell([r for r in rows if r[0] == model])[2]
            if plain > 0 and math.isfinite(plain) and math.isfinite(tuned):
                ratios[(model, key[0])].append(tuned / plain)
    lines = []
    for (model, fraction), found in sorted(ratios.items()):
        found.sort()
        median = found[len(found) // 2]
        rho = math.sqrt(max(0.0, 1 - median ** 2))
        lines.append(f"  {model:<14} at {fraction:.4f}: median width ratio {median:.3f} over {len(found)} rows "
                     f"(a correlation of {rho:.2f}), best row {found[0]:.3f}")
    return lines


def _cpu_seconds() -> float:
    import resource
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "staicc-lite-coverage"),
                        help="where the full runs are made once and kept (default: a folder in the temp dir)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)} (default: all but small-hf)")
    parser.add_argument("--seeds", type=int, default=200, help="subsets per fraction and model (default: 200)")
    parser.add_argument("--resamples", type=int, default=400, help="bootstrap resamples per estimate (default: 400)")
    parser.add_argument("--hf-datasets", default="rotten_tomatoes,TREC", help="datasets the HF models run on")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default: 2)")
    parser.add_argument("--output", help="also write the table to this file")
    parser.add_argument("--fractions", default=",".join(map(str, FRACTIONS)),
                        help="the fractions studied (empty: none, e.g. with --until alone)")
    parser.add_argument("--benchmarks", default="",
                        help="comma-separated sub-benchmarks to study (default: all of the full runs')")
    parser.add_argument("--no-proxy", action="store_true", help="only the plain estimates (no proxy-assisted ones)")
    parser.add_argument("--until", action="store_true",
                        help=f"also the coverage of --lite-until {lite_until_coverage.HALFWIDTH} from "
                             f"{lite_until_coverage.START} (lite_until_coverage.py)")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    from StaICC.subbenchmarks.builtin import SUB_BENCHMARKS
    strange = [b for b in args.benchmarks.split(",") if b and b not in SUB_BENCHMARKS]
    if strange:
        parser.error(f"unknown sub-benchmarks {strange}; known: {', '.join(SUB_BENCHMARKS)}")
    text = study(args, models)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


def study(args: Any, models: List[str]) -> str:
    """Full runs made once, the models' studies in ``args.jobs`` processes (each model's subsets split in two
    halves), and the tables."""
    os.makedirs(args.work, exist_ok=True)
    started = time.perf_counter()
    paths = {m: make_run(m, args.work, args.hf_datasets.split(",")) for m in models}
    proxy = None if args.no_proxy else make_run(PROXY, args.work, [])
    made = time.perf_counter() - started
    first = args.seeds // 2 + args.seeds % 2
    jobs = [(m, paths[m], first if half == 0 else args.seeds - first, args.resamples, 0 if half == 0 else first,
             proxy, not args.no_proxy, tuple(float(f) for f in args.fractions.split(",") if f), args.until,
             tuple(b for b in args.benchmarks.split(",") if b))
            for m in models for half in (0, 1)]
    found: Results = defaultdict(list)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for part in pool.map(study_model, [j for j in jobs if j[2] > 0]):
            for key, rows in part.items():
                found[key].extend(rows)
    results = {key[1:]: rows for key, rows in found.items() if key[0] == "plain"}
    chosen = {b for b in args.benchmarks.split(",") if b}
    from StaICC.stats.lite import ESTIMABLE, REQUIRED_COVERAGE, REQUIRED_MODEL_COVERAGE
    lines = [f"lite-run coverage study: models {', '.join(models)}; "
             f"{'sub-benchmarks ' + args.benchmarks + '; ' if chosen else ''}{args.seeds} subsets per fraction and model; "
             f"{args.resamples} resamples per interval; nominal 95 %; estimable: coverage >= "
             f"{REQUIRED_COVERAGE:.0%} over all models and >= {REQUIRED_MODEL_COVERAGE:.0%} for each, at the fraction "
             f"and every larger one; full runs {made:.0f} s, study {time.perf_counter() - started - made:.0f} s "
             f"wall ({args.jobs} processes), {_cpu_seconds():.0f} CPU s"]
    if results:  # with no fraction studied (``--fractions "" --until``) there is no admission table to compare
        same = estimable_table(results) == {k: v for k, v in ESTIMABLE.items() if not chosen or k[0] in chosen}
        lines += [""] + summarize(results)
        lines.append(f"the table in StaICC/stats/lite.py {'is' if same else 'is NOT'} the one this study finds")
    for mode in ("reference", "sibling"):
        helped = {key[1:]: rows for key, rows in found.items() if key[0] == mode}
        if helped:
            lines += ["", side_by_side(results, helped, mode)]
    until = lite_until_coverage.summary(found)
    return "\n".join(lines + ([""] + until if until else []))

if __name__ == "__main__":
    main()
