"""Coverage study of the lite-run estimates: which metrics a subset of the test items estimates, and how well.

A lite run's records are exactly the full run's records of its test items, so a lite run
is simulated exactly by restricting a full run's records.  For each model, the full suite
is run once (with records); then, for each fraction and each seed, every (sub-benchmark,
dataset) is restricted to the stratified subset the picker gives with that seed as salt,
the metric is estimated with its interval (:mod:`StaICC.stats.lite`), and the estimate is
compared with the full run's value.  Per fraction and metric the study prints the mean
absolute error, the mean half-width of the interval and the coverage (the share of
intervals that hold the full run's value, within the metric's noise floor); a metric is
estimable where the coverage is at least 93 % (nominal 95 %) at that fraction and every
larger studied one.

Models: the built-in lexical model (``reference``), chance (``uniform``), a tiny random-weight
HF Llama (only on the datasets of ``--hf-datasets``: it runs at ~150 prompts/s on a CPU),
and plain functions made to be awkward: one that always answers label 0, one whose rows
are near-ties, one whose rows are dyadic and sum to exactly 1.0 (never softmaxed).

    python benchmarks/bench_lite_coverage.py                    # the study as committed (minutes on 2 cores)
    python benchmarks/bench_lite_coverage.py --seeds 5 --resamples 200 --models reference,uniform
    python benchmarks/bench_lite_coverage.py --output benchmarks/results/lite_coverage.txt
"""
import argparse
import hashlib
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

FRACTIONS = (0.0625, 0.125, 0.25)
MODELS = ("reference", "uniform", "tiny-hf", "always-0", "near-ties", "exact-sum")


# ----------------------------------------------------------------------------
# the awkward function models
# ----------------------------------------------------------------------------
def _byte(prompt: Any) -> int:
    text = prompt if isinstance(prompt, str) else "\x1f".join(prompt)
    return hashlib.sha256(text.encode("utf-8")).digest()[0]


def always_zero(prompt: Any, label_space: List[str]) -> List[float]:  # noqa: ARG001 (a model's signature)
    """Always label 0, with certainty: accuracy is label 0's share; every row the same."""
    return [1.0] + [0.0] * (len(label_space) - 1)


def near_ties(prompt: Any, label_space: List[str]) -> List[float]:
    """Scores that tie to 1e-12, the winner chosen by the prompt: argmax flips on a last bit."""
    n = len(label_space)
    row = [0.5] * n
    row[_byte(prompt) % n] += 1e-12
    return row


def exact_sum(prompt: Any, label_space: List[str]) -> List[float]:
    """Dyadic probabilities summing to exactly 1.0 (the standard keeps them unsoftmaxed): 3/4 on a label
    chosen by the prompt, then 1/8, 1/16, ... on the others, the last taking what is left."""
    n = len(label_space)
    top = _byte(prompt) % n
    row = [0.0] * n
    row[top] = 0.75
    rest = [j for j in range(n) if j != top]
    share = 0.25
    for j in rest[:-1]:
        share /= 2
        row[j] = share
    row[rest[-1]] = share if len(rest) > 1 else 0.25
    return row


FUNCTIONS = {"always-0": always_zero, "near-ties": near_ties, "exact-sum": exact_sum}


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
    if model == "tiny-hf":
        from backend_helpers import save_tiny
        directory = save_tiny(os.path.join(work, "tiny-llama"))
        command += ["--model", "hf", "--model-args", f"pretrained={directory},dtype=float32,threads=1",
                    "--datasets", *hf_datasets]
    else:
        command += ["--model", model]
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return target


# ----------------------------------------------------------------------------
# one model's study
# ----------------------------------------------------------------------------
def _tables(path: str):
    """(benchmark, dataset, full statistic, population, metric names) of every part of a run."""
    from StaICC.report.runs import load_run
    from StaICC.stats.bootstrap import dataset_statistic
    from StaICC.stats.flips import has_ground_truth
    from StaICC.stats.lite import Population
    run = load_run(path)
    out = []
    for name, part in run.parts.items():
        for dataset in part.datasets():
            statistic = dataset_statistic(part, dataset)
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


def study_model(job: Tuple[str, str, int, int, int]) -> Dict[Tuple[float, str, str], List[Tuple[Any, ...]]]:
    """(fraction, benchmark, metric) -> one (model, error, half-width, covered) tuple per estimate."""
    model, path, seeds, resamples, first_seed = job
    from StaICC.sampling.subsets import stratified_order, subset_size
    from StaICC.stats.lite import estimate_statistic
    from StaICC.stats.significance import percentile_interval
    from StaICC.stats.statistic import Statistic
    results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]] = defaultdict(list)
    tables = _tables(path)
    for seed in range(first_seed, first_seed + seeds):
        averaged: Dict[Tuple[float, str, str], List[Any]] = defaultdict(list)
        for name, dataset, full, population, metadata in tables:
            unlabelled = [label for label, _ in population.strata] == [None]
            # one order per seed: the subsets of the three fractions are its prefixes (they are nested)
            order = stratified_order(len(full.table) if unlabelled else full.table.labels, (name, dataset),
                                     salt=f"study {seed}")
            truth = full.point()
            for fraction in FRACTIONS:
                picked = order[:subset_size(len(full.table), fraction)]
                subset = Statistic(name, full.table.restricted(picked), full.names(), metadata)
                for metric, (value, low, high, scaled) in estimate_statistic(
                        subset, population, resamples=resamples, seed=seed, level=0.95).items():
                    errors, covered = _error(truth[metric], value), _covered(truth[metric], low, high, metric)
                    for e, c, w in zip(errors, covered, _error(high, low)):
                        results[(fraction, name, metric)].append((model, e, w / 2, c))
                    if not isinstance(value, list):
                        averaged[(fraction, name, metric)].append((truth[metric], value, scaled))
        for (fraction, name, metric), rows in averaged.items():
            truth = math.fsum(t for t, _, _ in rows) / len(rows)
            value = math.fsum(v for _, v, _ in rows) / len(rows)
            columns = [math.fsum(c) / len(c) for c in zip(*(s for _, _, s in rows))]
            low, high = percentile_interval(columns, 0.95)
            results[(fraction, name, f"{metric} (averaged)")].append(
                (model, abs(value - truth), (high - low) / 2, _covered(truth, low, high, metric)[0]))
    return dict(results)


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
        passing = [f for f in FRACTIONS if all(per.get(g, False) for g in FRACTIONS if g >= f)]
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
                     f"{overall:>8.1%}  {f'{worst} ({per_model[worst]:.0%})':<28} {'yes' if ok else 'no'}")
    lines += ["", "StaICC.stats.lite.ESTIMABLE as this study finds it:", "ESTIMABLE = {"]
    lines += [f"    {key!r}: {start}," for key, start in table.items()]
    lines.append("}")
    return lines


def _cpu_seconds() -> float:
    import resource
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "staicc-lite-coverage"),
                        help="where the full runs are made once and kept (default: a folder in the temp dir)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--seeds", type=int, default=20, help="subsets per fraction and model (default: 20)")
    parser.add_argument("--resamples", type=int, default=400, help="bootstrap resamples per estimate (default: 400)")
    parser.add_argument("--hf-datasets", default="rotten_tomatoes,TREC", help="datasets the tiny HF model runs on")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default: 2)")
    parser.add_argument("--output", help="also write the table to this file")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    os.makedirs(args.work, exist_ok=True)
    started = time.perf_counter()
    paths = {m: make_run(m, args.work, args.hf_datasets.split(",")) for m in models}
    made = time.perf_counter() - started
    jobs = [(m, paths[m], args.seeds // 2 + args.seeds % 2 if half == 0 else args.seeds // 2, args.resamples,
             0 if half == 0 else args.seeds // 2 + args.seeds % 2) for m in models for half in (0, 1)]
    results: Dict[Tuple[float, str, str], List[Tuple[Any, ...]]] = defaultdict(list)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for part in pool.map(study_model, [j for j in jobs if j[2] > 0]):
            for key, rows in part.items():
                results[key].extend(rows)
    from StaICC.stats.lite import ESTIMABLE, REQUIRED_COVERAGE, REQUIRED_MODEL_COVERAGE
    lines = [f"lite-run coverage study: models {', '.join(models)}; {args.seeds} subsets per fraction and model; "
             f"{args.resamples} resamples per interval; nominal 95 %; estimable: coverage >= "
             f"{REQUIRED_COVERAGE:.0%} over all models and >= {REQUIRED_MODEL_COVERAGE:.0%} for each, at the fraction "
             f"and every larger one; full runs {made:.0f} s, study {time.perf_counter() - started - made:.0f} s "
             f"wall ({args.jobs} processes), {_cpu_seconds():.0f} CPU s", ""] + summarize(results)
    same = estimable_table(results) == ESTIMABLE
    lines.append(f"the table in StaICC/stats/lite.py {'is' if same else 'is NOT'} the one this study finds")
    text = "\n".join(lines)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
