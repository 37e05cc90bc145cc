"""The coverage study's fast path (many subsets of one full run in one product) against the package's estimators
on each subset's own table: the same estimates, intervals and resamples within rounding, for every sub-benchmark
of the suite, plain and power-tuned, including subsets on another entropy branch and subsets computed alone."""
import hashlib
import math
import warnings

import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.sampling.subsets import stratified_order, subset_size
from StaICC.stats.flips import has_ground_truth
from StaICC.stats.items import ItemTable
from StaICC.stats.lite import Population, _grouped, estimate_statistic
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_proxy import Proxy, TunedEstimator
from StaICC.stats.statistic import Statistic, _metric_table
from StaICC.subbenchmarks.suite import build_suite, run_suite

np = pytest.importorskip("numpy")


def target(prompt, label_space):
    """The lexical model with a prompt-seeded perturbation: correlated with it, not equal to it."""
    row = lexical_icl(prompt, label_space)
    text = prompt if isinstance(prompt, str) else "".join(prompt)
    return [v + 0.05 * ((len(text) * (j + 7)) % 11) for j, v in enumerate(row)]


@pytest.fixture(scope="module")
def parts():
    """(benchmark, dataset) -> (target's full statistic, the proxy's, the population), every sub-benchmark."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        suite = build_suite("all", ["TREC"], 4)
        runs = [_grouped(run_suite(model, suite=suite, progress=False).records) for model in (target, lexical_icl)]
    found = {}
    for key in runs[0]:
        names = [n for n in _metric_table(key[0]) if not n.endswith("_nonstandard")]
        full, proxy = (Statistic(key[0], ItemTable(*key, run[key]), names, {}) for run in runs)
        labels = full.table.labels if has_ground_truth(key[0]) else [None] * len(full.table)
        found[key] = (full, proxy, Population.from_labels(labels))
    return found


def _close(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _same(fast, slow, where=""):
    assert set(fast) == set(slow)
    for metric, (value, low, high, scaled) in fast.items():
        assert _close([value, low, high], list(slow[metric][:3])), (metric, where)
        assert _close(scaled, slow[metric][3]), metric


def _subsets(full, population, key, seeds=3):
    labels = len(full.table) if population.strata[0][0] is None else full.table.labels
    orders = [stratified_order(labels, key, salt=f"test {s}") for s in range(seeds)]
    return [order[:subset_size(len(full.table), f)] for order in orders for f in (0.125, 0.25)]


def test_the_fast_path_equals_the_packages_estimators_on_every_part(parts):
    for key, (full, proxy, population) in parts.items():
        subsets = _subsets(full, population, key)
        found = subset_estimates(full, population, subsets, resamples=60, seed=list(range(len(subsets))),
                                 level=0.95, proxies=[proxy])
        for j, (subset, (plain, (tuned,))) in enumerate(zip(subsets, found)):
            own = Statistic(key[0], full.table.restricted(subset), full.names(), {})
            own.x_values = full.x_values
            _same(plain, estimate_statistic(own, population, resamples=60, seed=j, level=0.95), (key, j, "plain"))
            estimator = TunedEstimator(Proxy("p", {}, _tables={key: proxy}))
            _same(tuned, estimator(own, population, resamples=60, seed=j, level=0.95), (key, j, "tuned"))


def random_scores(prompt, label_space):
    """Scores uniform in [-2, 2] from the prompt: raw means near zero, so Post_bias's resamples cross branches."""
    digest = hashlib.sha256(("scores" + (prompt if isinstance(prompt, str) else "".join(prompt))).encode()).digest()
    return [digest[j] / 255.0 * 4 - 2 for j in range(len(label_space))]


def test_the_fast_path_equals_the_packages_estimators_where_post_bias_crosses_branches():
    from StaICC.stats.lite_averaged import Resamples
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        suite = build_suite("Triplet_bias", ["rotten_tomatoes"], 4)
        runs = [_grouped(run_suite(model, suite=suite, progress=False).records) for model in (random_scores, target)]
    key = ("Post_bias", "rotten_tomatoes")
    full, proxy = (Statistic(*key[:1], ItemTable(*key, run[key]), ["DL div.", "distribution"], {}) for run in runs)
    population = Population.from_labels(full.table.labels)
    subsets = _subsets(full, population, key, seeds=6)
    found = subset_estimates(full, population, subsets, resamples=60, seed=list(range(len(subsets))), level=0.95,
                             proxies=[proxy])
    hulled = 0
    for j, (subset, (plain, (tuned,))) in enumerate(zip(subsets, found)):
        own = Statistic(key[0], full.table.restricted(subset), full.names(), {})
        _same(plain, estimate_statistic(own, population, resamples=60, seed=j, level=0.95), (key, j, "plain"))
        estimator = TunedEstimator(Proxy("p", {}, _tables={key: proxy}))
        _same(tuned, estimator(own, population, resamples=60, seed=j, level=0.95), (key, j, "tuned"))
        hulled += isinstance(plain["DL div."][3], Resamples)
    assert hulled  # subsets whose resamples cross the branches: the hull, on both paths


def test_a_census_and_a_proxy_of_other_items_are_handled(parts):
    full, proxy, population = parts[("Normal", "TREC")]
    everything = list(range(len(full.table)))
    (plain, _), = subset_estimates(full, population, [everything], resamples=20, seed=1, level=0.95)
    point = full.point()
    assert all(plain[m][0] == point[m] and plain[m][1] == plain[m][2] == point[m] for m in plain)
    fewer = Statistic("Normal", full.table.restricted(everything[:-1]), full.names(), {})
    with pytest.raises(ValueError, match="a proxy's full table has other items"):
        subset_estimates(full, population, [everything[:5]], resamples=20, seed=1, level=0.95, proxies=[fewer])


def test_the_element_wise_slopes_are_linear_regressions_bits():
    from StaICC.numeric import linear_regression
    from StaICC.stats.vectorized import _slopes
    rng = np.random.default_rng(3)
    x = [0.0, 0.25, 0.5, 0.75, 1.0]
    ys = [rng.random(50) for _ in x]
    expected = [linear_regression(x, [float(y[b]) for y in ys])[0] for b in range(50)]
    assert _slopes(x, ys) == expected
    with pytest.raises(ValueError, match="same length"):
        _slopes(x[:3], ys)
