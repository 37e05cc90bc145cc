"""Why the proxy path's likelihood (and label distribution) intervals run a few per cent narrow: the fitted weight.

The power-tuned difference estimator (:mod:`StaICC.stats.lite_proxy`) fits lambda on the subset's bootstrap resamples
and holds it fixed while the same resamples give the interval.  For a metric that is a mean over items (Normal's
likelihood, Domain_bias's label distribution) every resample's value is the weighted mean of the items' values, so
each rule below is computed from the items' values (checked against the package's resampled values) on the study's
subsets and resample weights:

* ``today``: the package's rule before :func:`~StaICC.stats.lite_proxy_weights.weight_widening` (lambda from the
  resamples, held fixed; checked equal to ``lite_batch.subset_estimates`` then);
* ``today-sd``, ``plain-sd``, ``refit-sd``: the same resamples' standard deviation times 1.96 t, a symmetric
  interval instead of the percentile one (how much of a difference is the percentile interval's shape);
* ``refit``: lambda re-fitted in each resample (the within-label weighted regression slope, in closed form), the
  bootstrap of the whole procedure;
* ``split``: lambda from an independent second set of resamples, the interval from the first (decoupling);
* ``jackknife``: the delete-one-item jackknife of the whole procedure (lambda re-fitted), a t interval;
  ``jack-fixed`` the same with lambda held at the subset's fit; ``jack-ratio``: today's interval widened by the
  ratio of the two (the jackknife's measure of lambda's variability);
* ``leverage``: today's deviations widened by the HC2 factor of the slope fit, sqrt(sum e^2 / (1 - g)) /
  sqrt(sum e^2) (g an item's leverage in the slope, e its residual);
* ``df``: today's interval widened by sqrt(d / (d - 2)), the regression estimator's small-sample variance over the
  resampled one (:func:`~StaICC.stats.lite_proxy_weights.weight_widening` of one proxy: the rule now);
* ``plain``: no proxy.

Per rule: coverage of the full run's value, the spread of (estimate - truth) / (half-width / 1.96), and the
median half-width over today's.

    python benchmarks/lite_proxy_lambda_trace.py --work /tmp/cov --models overconfident --seeds 50
"""
import argparse
import os
import sys
from collections import defaultdict
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

import bench_lite_coverage as study  # noqa: E402 (beside this script)
from StaICC.stats.lite import _resample_weights, design, t_over_z  # noqa: E402
from StaICC.stats.lite_batch import SubsetLabels  # noqa: E402
from StaICC.stats.lite_proxy import tuned_weight  # noqa: E402
from StaICC.stats.resolution import noise_floor  # noqa: E402
from StaICC.stats.vectorized import weighted_values  # noqa: E402

RULES = ("plain", "plain-sd", "today", "today-sd", "refit", "refit-sd", "split", "jackknife", "jack-fixed", "leverage",
         "jack-ratio", "df")
CELLS = {"Normal": "averaged_truelabel_likelihood", "Domain_bias": "distribution"}


def item_values(statistic: Any, metric: str) -> Any:
    """Each item's value of a mean metric (items x elements): the metric with all weight on one item."""
    eye = np.eye(len(statistic.table)) * len(statistic.table)
    return np.atleast_2d(np.asarray(weighted_values(statistic, eye)[metric], dtype=np.float64).T).T.reshape(
        len(statistic.table), -1)


def strata_of(plan: Any, n: int) -> List[np.ndarray]:
    """Each resampled group's items (labels with one item are pooled, as the design pools them)."""
    found = [np.asarray(items) for items, _ in plan.groups]
    seen = {i for g in found for i in g}
    rest = [i for i in range(n) if i not in seen]
    return found + ([np.asarray(rest)] if rest else [])


def slope(weights: Any, t: Any, p: Any, groups: List[np.ndarray], scale: Any) -> Any:
    """The within-group weighted regression slope of t on p (rows of ``weights``: one slope per row and element),
    each group's moments weighted by ``scale`` (its share of the resampled variance), clipped to [0, 1]."""
    cross = spread = 0.0
    for g, a in zip(groups, scale):
        w = weights[:, g][..., None]
        total = w.sum(axis=1, keepdims=True)
        mt, mp = (w * t[g]).sum(axis=1, keepdims=True) / total, (w * p[g]).sum(axis=1, keepdims=True) / total
        cross = cross + a * (w * (t[g] - mt) * (p[g] - mp)).sum(axis=1) / total[:, 0]
        spread = spread + a * (w * (p[g] - mp) ** 2).sum(axis=1) / total[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(spread > 1e-20, cross / spread, 0.0), 0.0, 1.0)


def interval(point: Any, values: Any, scale: float) -> Any:
    """The package's expanded percentile interval: the deviations from the estimate times ``scale``."""
    scaled = point + scale * (values - point)
    return np.percentile(scaled, 2.5, axis=0), np.percentile(scaled, 97.5, axis=0)


def one_subset(t: Any, p: Any, truth: Any, full_p: Any, positions: List[int], labels: List[Any], population: Any,
               seed: int, resamples: int, benchmark: str, dataset: str) -> Dict[str, Any]:
    """Each rule's (estimate, low, high) of one subset (arrays over the metric's elements)."""
    plan = design(SubsetLabels(benchmark, dataset, labels), population)
    tags = ("lite", benchmark, dataset)
    rows = _resample_weights(plan, resamples, seed, tags)
    other = _resample_weights(plan, resamples, seed + 10 ** 6, tags)
    w0 = np.asarray(plan.weights)
    ts, ps = t[positions], p[positions]
    mean = lambda w: (w @ ts) / w.sum(axis=-1)[..., None]  # noqa: E731
    pmean = lambda w: (w @ ps) / w.sum(axis=-1)[..., None]  # noqa: E731
    t0, p0, tr, pr = mean(w0), pmean(w0), mean(rows), pmean(rows)
    lam = tuned_weight(tr, pr)
    base, fitted = t_over_z(0.95, plan.freedom), t_over_z(0.95, max(plan.freedom - 1, 1))
    found = {"plain": (t0, *interval(t0, tr, base))}
    point = t0 + lam * (full_p - p0)
    found["today"] = (point, *interval(point, tr - lam * pr + lam * full_p, fitted))
    groups = strata_of(plan, len(positions))
    share = [w0[g].sum() ** 2 * (1 - len(g) / max(len(g), population_of(population, labels, g))) / len(g)
             for g in groups]
    lam0 = slope(w0[None], ts, ps, groups, share)[0]
    refit = slope(rows, ts, ps, groups, share)
    point0 = t0 + lam0 * (full_p - p0)
    found["refit"] = (point0, *interval(point0, tr + refit * (full_p - pr), fitted))
    lam_b = tuned_weight(mean(other), pmean(other))
    point_b = t0 + lam_b * (full_p - p0)
    found["split"] = (point_b, *interval(point_b, tr - lam_b * pr + lam_b * full_p, fitted))
    found["jackknife"] = jackknife(ts, ps, w0, groups, share, full_p, point0, population, labels, fitted, True)
    found["jack-fixed"] = jackknife(ts, ps, w0, groups, share, full_p, point0, population, labels, fitted, False)
    half = 1.959964 * fitted * (tr - lam * pr).std(axis=0, ddof=1)
    found["today-sd"] = (point, point - half, point + half)
    found["plain-sd"] = symmetric(t0, tr, base)
    found["refit-sd"] = symmetric(point0, tr + refit * (full_p - pr), fitted)
    found["leverage"] = leverage(ts, ps, lam, w0, groups, share, found["today"])
    jack, held = found["jackknife"], found["jack-fixed"]
    ratio = np.where(held[2] > held[1], (jack[2] - jack[1]) / np.where(held[2] > held[1], held[2] - held[1], 1.0), 1.0)
    found["jack-ratio"] = widened(found["today"], ratio)
    d = plan.freedom
    found["df"] = widened(found["today"], np.sqrt(d / (d - 1) * (1 + 1 / (d - 2))))
    return {rule: (value, low, high) for rule, (value, low, high) in found.items()} | {"truth": truth, "lam": lam}


def widened(found: Any, factor: Any) -> Any:
    """An interval's ends moved away from its estimate by ``factor``."""
    point, low, high = found
    return point, point - factor * (point - low), point + factor * (high - point)


def symmetric(point: Any, values: Any, scale: float) -> Any:
    """point -+ 1.96 t times the resamples' standard deviation."""
    half = 1.959964 * scale * values.std(axis=0, ddof=1)
    return point, point - half, point + half


def population_of(population: Any, labels: List[Any], group: Any) -> int:
    """The full test set's items of a group's labels."""
    strata = dict(population.strata)
    return sum(strata[label] for label in {labels[i] for i in group})


def jackknife(ts, ps, w0, groups, share, full_p, point, population, labels, scale, refit) -> Any:
    """The stratified delete-one jackknife of the estimator (lambda re-fitted, or held at the subset's), a t
    interval."""
    held = slope(w0[None], ts, ps, groups, share)[0]
    variance = 0.0
    for g in groups:
        values = []
        for i in g:
            w = w0.copy()
            w[g] *= len(g) / (len(g) - 1)
            w[i] = 0.0
            lam = slope(w[None], ts, ps, groups, share)[0] if refit else held
            tw, pw = (w @ ts) / w.sum(), (w @ ps) / w.sum()
            values.append(tw + lam * (full_p - pw))
        values = np.asarray(values)
        f = len(g) / population_of(population, labels, g)
        variance = variance + (1 - f) * (len(g) - 1) / len(g) * ((values - values.mean(axis=0)) ** 2).sum(axis=0)
    half = 1.959964 * scale * np.sqrt(variance)
    return point, point - half, point + half


def leverage(ts, ps, lam, w0, groups, share, today) -> Any:
    """Today's interval widened by the HC2 factor of the slope fit: sqrt(sum c e^2 / (1 - g)) / sqrt(sum c e^2)."""
    num = den = 0.0
    centred = [(g, a, ps[g] - ps[g].mean(axis=0), ts[g] - ts[g].mean(axis=0)) for g, a in zip(groups, share)]
    sxx = sum(a / len(g) * (dp ** 2).sum(axis=0) for g, a, dp, _ in centred)
    for g, a, dp, dt in centred:
        e = dt - lam * dp
        h = np.minimum(a / len(g) * dp ** 2 / np.where(sxx > 0, sxx, 1.0), 0.9)
        num = num + a / len(g) * (e ** 2 / (1 - h)).sum(axis=0)
        den = den + a / len(g) * (e ** 2).sum(axis=0)
    factor = np.sqrt(np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0))
    point, low, high = today
    return point, point - factor * (point - low), point + factor * (high - point)


def study_model(model: str, work: str, seeds: int, resamples: int) -> Dict[Any, List[Any]]:
    """(sub-benchmark, rule) -> (error, half-width, scale, covered) of every subset and element."""
    rows: Dict[Any, List[Any]] = defaultdict(list)
    for name, dataset, full, population, _ in study._tables(os.path.join(work, model)):
        if name not in CELLS:
            continue
        metric, related = CELLS[name], study.sibling(full)
        t, p = item_values(full, metric), item_values(related, metric)
        truth = np.atleast_1d(np.asarray(full.point()[metric], dtype=np.float64))
        full_p = np.atleast_1d(np.asarray(related.point()[metric], dtype=np.float64))
        assert np.allclose(t.mean(axis=0), truth, atol=1e-9), (name, dataset)  # a mean over items
        for seed, _, positions in study._subsets(full, population, name, dataset, range(seeds), (0.125,)):
            positions = sorted(set(positions))
            labels = [full.table.labels[i] if population.strata[0][0] is not None else None for i in positions]
            found = one_subset(t, p, truth, full_p, positions, labels, population, seed, resamples, name, dataset)
            for rule in RULES:
                value, low, high = found[rule]
                for e, lo, hi, tr in zip(value - truth, low, high, truth):
                    floor = noise_floor(metric, float(tr))  # as the coverage study counts
                    rows[(name, rule)].append((e, (hi - lo) / 2, lo - floor <= tr <= hi + floor))
    return rows


def report(rows: Dict[Any, List[Any]], model: str) -> List[str]:
    lines = []
    for name in CELLS:
        today = np.asarray([w for _, w, _ in rows[(name, "today")]])
        for rule in RULES:
            found = rows[(name, rule)]
            e, w, c = (np.asarray(x, dtype=np.float64) for x in zip(*found))
            keep = w > 1e-12
            z = e[keep] / (w[keep] / 1.959964)
            ratio = np.median(w[keep] / np.where(today[keep] > 0, today[keep], 1.0))
            lines.append(f"{model:<14} {name:<12} {rule:<10} {len(c):>5} {c.mean():>8.1%} {z.std():>9.3f} "
                         f"{np.median(w):>10.4g} {ratio:>10.3f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="the coverage study's full runs (bench_lite_coverage --work)")
    parser.add_argument("--models", default="overconfident")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--resamples", type=int, default=200)
    args = parser.parse_args()
    print(f"the related proxy (sibling), 12.5 %, {args.seeds} subsets per model, {args.resamples} resamples; "
          "z: (estimate - truth) / (half-width / 1.96), its spread 1 at a well-sized interval")
    print(f"{'model':<14} {'cell':<12} {'rule':<10} {'n':>5} {'coverage':>8} {'z spread':>9} {'median hw':>10} "
          f"{'hw / today':>10}")
    pooled: Dict[Any, List[Any]] = defaultdict(list)
    for model in args.models.split(","):
        found = study_model(model, args.work, args.seeds, args.resamples)
        for key, rows in found.items():
            pooled[key].extend(rows)
        for line in report(found, model):
            print(line, flush=True)
    print()
    for line in report(pooled, "all models"):
        print(line)


if __name__ == "__main__":
    main()
