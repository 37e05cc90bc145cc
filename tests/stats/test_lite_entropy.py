"""The bias entropy with a proxy is the entropy of the power-tuned mean row (StaICC.stats.lite_entropy), checked
against a NumPy computation of the tuned row, its weights, widening, bias correction and interval; a proxy of
noise leaves the plain cell bit for bit; near the maximum the interval holds the plain one; and a seeded
simulation of a near-copy proxy whose full-run row is nearer uniform than the target's, where a difference of
plug-in entropies (computed here in NumPy) under-covers and the package's interval does not."""
import math
import random

import pytest

from StaICC.numeric import SOFTMAX
from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, _resample_weights, design, estimate_statistic, t_over_z
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_entropy import NONLINEAR, near_maximum, tuned_entropy
from StaICC.stats.lite_proxy import Proxy, TunedEstimator

np = pytest.importorskip("numpy")

NAMES = ["distribution", "entropy"]


def _records(rows):
    return [{"pass": 0, "repeat": 0, "test_index": t, "label": 0, "query_index": t, "prediction": [float(v) for v in row],
             "prompt_sha256": f"0/0/{t}"} for t, row in enumerate(rows)]


def _statistic(rows):
    """A Domain_bias part of probability rows under the model backends' rule (the mean row always softmaxed)."""
    return Statistic("Domain_bias", ItemTable("Domain_bias", "toy", _records(rows), SOFTMAX), NAMES)


def _softmax_entropy(mean):
    e = np.exp(mean - mean.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return -(p * np.log(p)).sum(axis=-1)


def _rows(rng, logits):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _tuned(proxy_full, subset, population, seed=1, resamples=400):
    estimator = TunedEstimator(Proxy("p", {}, _tables={("Domain_bias", "toy"): proxy_full}))
    return estimator(subset, population, resamples=resamples, seed=seed, level=0.95), estimator


@pytest.fixture(scope="module")
def three_labels():
    """400 pseudo-queries of three labels, a target far from uniform, a proxy its copy with noise on the log scale."""
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 1, (400, 3)) + np.array([1.0, 0.0, -0.5])
    target = _rows(rng, logits)
    proxy = _rows(rng, logits + 0.2 * rng.normal(0, 1, (400, 3)))
    return target, proxy, Population(((None, 400),))


def test_far_from_the_maximum_the_entropy_keeps_the_difference_of_entropies(three_labels, monkeypatch):
    """A target far from uniform: the entropy's own resamples are nearly linear in the row, so the cell is the
    power-tuned difference of entropies (the path every scalar metric takes, tested against NumPy in
    test_lite_proxy.py), bit for bit the cell computed with the row's path switched off."""
    import StaICC.stats.lite_proxy as lite_proxy
    target, proxy, population = three_labels
    positions = sorted(random.Random(5).sample(range(400), 60))
    full, helper = _statistic(target), _statistic(proxy)
    subset = Statistic("Domain_bias", full.table.restricted(positions), NAMES)
    cell, estimator = _tuned(helper, subset, population)
    assert "row_weights" not in estimator.details[("Domain_bias", "toy", "entropy")]
    monkeypatch.setattr(lite_proxy, "through_rows", lambda *args: [])  # every entropy as any scalar metric
    assert cell["entropy"][:3] == _tuned(helper, subset, population)[0]["entropy"][:3]
    assert estimator.details[("Domain_bias", "toy", "entropy")]["weight"] > 0.5  # the proxy is taken


def test_the_entropy_is_the_entropy_of_the_tuned_row(three_labels, monkeypatch):
    """Where the row's path is taken (here forced: this toy is far from the maximum, where the difference of
    entropies is used), the estimate, bias correction and interval computed here from the same design and resample
    weights: per label
    lambda_j = Cov(t_j*, p_j*) / Var(p_j*) clipped to [0, 1], the tuned row t + lambda (P - p), its resamples
    t* - lambda p* + lambda P widened about their mean by sqrt(d / (d - 2)), the softmaxed entropy of each, the
    bootstrap bias subtracted, the resamples' deviations t-widened at d - 1 degrees of freedom."""
    import StaICC.stats.lite_entropy as lite_entropy
    monkeypatch.setattr(lite_entropy, "path", lambda *args: "row")  # the row's path
    target, proxy, population = three_labels
    positions = sorted(random.Random(5).sample(range(400), 60))
    full, helper = _statistic(target), _statistic(proxy)
    subset = Statistic("Domain_bias", full.table.restricted(positions), NAMES)
    cell, estimator = _tuned(helper, subset, population)
    plan = design(subset.table, population)
    rows = _resample_weights(plan, 400, 1, ("lite", "Domain_bias", "toy"))
    w = np.asarray(plan.weights)
    t_point, p_point = w @ target[positions] / w.sum(), w @ proxy[positions] / w.sum()
    t_star = rows @ target[positions] / rows.sum(axis=1, keepdims=True)
    p_star = rows @ proxy[positions] / rows.sum(axis=1, keepdims=True)
    dt, dp = t_star - t_star.mean(axis=0), p_star - p_star.mean(axis=0)
    lam = np.clip((dt * dp).sum(axis=0) / (dp * dp).sum(axis=0), 0, 1)
    detail = estimator.details[("Domain_bias", "toy", "entropy")]
    assert detail["row_weights"] == pytest.approx(lam.tolist(), rel=1e-9) and min(lam) > 0.5  # every label pays
    assert detail["weight"] == pytest.approx(lam.mean(), rel=1e-9) and detail["correlation"] is None
    P = proxy.mean(axis=0)
    point = t_point + lam * (P - p_point)
    combined = t_star - lam * p_star + lam * P
    d = plan.freedom
    widened = combined.mean(axis=0) + math.sqrt(d / (d - 2)) * (combined - combined.mean(axis=0))
    h, h_star = float(_softmax_entropy(point)), _softmax_entropy(widened)
    bias = h_star.mean() - h
    value, low, high, _ = cell["entropy"]
    assert value == pytest.approx(h - bias, rel=1e-12, abs=1e-14)
    scale = t_over_z(0.95, d - 1)
    scaled = h + scale * (h_star - h) - (1 + scale) * bias
    assert not near_maximum(h_star.tolist(), h)  # far from uniform: the percentile interval alone
    assert low == pytest.approx(np.quantile(scaled, 0.025), abs=2 * np.ptp(scaled) / 400)
    assert high == pytest.approx(np.quantile(scaled, 0.975), abs=2 * np.ptp(scaled) / 400)
    plain = estimate_statistic(subset, population, resamples=400, seed=1, level=0.95)["entropy"]
    assert high - low < 0.5 * (plain[2] - plain[1])  # the proxy narrows it
    (_, (fast,)), = subset_estimates(full, population, [positions], resamples=400, seed=1, level=0.95, proxies=[helper])
    assert fast["entropy"][:3] == pytest.approx(cell["entropy"][:3], rel=1e-9, abs=1e-12)  # the study's path


def test_a_proxy_of_noise_leaves_the_entropy_plain_bit_for_bit(three_labels):
    target, _, population = three_labels
    rng = np.random.default_rng(9)
    noise = _statistic(_rows(rng, rng.normal(0, 1, (400, 3))))
    positions = sorted(random.Random(6).sample(range(400), 60))
    subset = Statistic("Domain_bias", _statistic(target).table.restricted(positions), NAMES)
    cell, estimator = _tuned(noise, subset, population)
    if any(estimator.details[("Domain_bias", "toy", "entropy")]["row_weights"]):
        pytest.skip("the noise happened to pay on a label")  # not with this seed: the row takes no proxy
    plain = estimate_statistic(subset, population, resamples=400, seed=1, level=0.95)
    assert cell["entropy"][:3] == plain["entropy"][:3]
    assert estimator.details[("Domain_bias", "toy", "entropy")]["weight"] == 0.0


def test_the_target_as_its_own_proxy_gives_the_full_runs_entropy(three_labels):
    """lambda = 1 on every label: every tuned resample is the full run's mean row, whose entropy NumPy computes."""
    target, _, population = three_labels
    full = _statistic(target)
    subset = Statistic("Domain_bias", full.table.restricted(sorted(random.Random(7).sample(range(400), 60))), NAMES)
    value, low, high, _ = _tuned(full, subset, population)[0]["entropy"]
    truth = float(_softmax_entropy(target.mean(axis=0)))
    assert value == pytest.approx(truth, abs=1e-12) and low == pytest.approx(truth, abs=1e-12)
    assert high == pytest.approx(truth, abs=1e-12)


def test_near_maximum_reads_the_bootstrap_bias_against_the_spread():
    """By hand: resamples 1, 2, 3 about a plug-in of 2 + b have mean 2, bias -b and a standard deviation of
    sqrt(2/3); the regime is non-linear from |b| = NONLINEAR * sqrt(2/3) on."""
    edge = NONLINEAR * math.sqrt(2 / 3)
    assert not near_maximum([1.0, 2.0, 3.0], 2.0 + 0.99 * edge)
    assert near_maximum([1.0, 2.0, 3.0], 2.0 + 1.01 * edge) and near_maximum([1.0, 2.0, 3.0], 2.0 - 1.01 * edge)
    assert not near_maximum([2.0, 2.0, 2.0], 1.0)  # no spread: nothing to compare with


def test_a_tuned_row_outside_the_entropys_domain_leaves_it_plain():
    entropy = lambda row: -sum(v * math.log(v) for v in row if v)  # noqa: E731 (the raw branch's formula)
    assert tuned_entropy([0.5, 0.5], [[0.6, 0.4]], entropy) == (pytest.approx(math.log(2)), [pytest.approx(0.673, abs=1e-3)])
    assert tuned_entropy([0.5, 0.5], [[1.01, -0.01]], entropy) is None
    assert tuned_entropy([0.5, math.nan], [], entropy) is None


def _near_copy(seed=5, lean=0.08, noise=0.1, items=512):
    """Two labels: the target's rows sigmoid(a + lean) about a per-item a, the proxy's sigmoid(a + noise e): a
    near-copy whose full-run row is nearer uniform than the target's (its entropy at the maximum)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1.0, items)
    t = 1 / (1 + np.exp(-(a + lean)))
    p = 1 / (1 + np.exp(-(a + noise * rng.normal(0, 1, items))))
    return np.stack([t, 1 - t], axis=1), np.stack([p, 1 - p], axis=1)


def _difference_of_entropies(target, proxy, subset, seed, items, resamples=200):
    """The former estimator in NumPy: H_t(subset) + lambda [H_p(all) - H_p(subset)], lambda the clipped ratio over
    the rescaling bootstrap's resamples, the bootstrap bias subtracted, the percentile interval cut at ln 2."""
    n, rng = len(subset), np.random.default_rng(1000 + seed)
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], rng.integers(0, n, (resamples, n - 1))), 1.0)
    shrink = math.sqrt(1 - n / items)
    weights = 1 - shrink + shrink * n / (n - 1) * counts
    weights /= weights.sum(axis=1, keepdims=True)
    h_t, h_p = _softmax_entropy(target[subset].mean(axis=0)), _softmax_entropy(proxy[subset].mean(axis=0))
    t_star, p_star = _softmax_entropy(weights @ target[subset]), _softmax_entropy(weights @ proxy[subset])
    lam = float(np.clip(np.cov(t_star, p_star)[0, 1] / p_star.var(ddof=1), 0, 1))
    combined, point = t_star - lam * p_star, h_t - lam * h_p
    estimate = point - (combined.mean() - point) + lam * _softmax_entropy(proxy.mean(axis=0))
    deviations = combined - combined.mean()
    return min(estimate + np.quantile(deviations, 0.025), math.log(2)), min(estimate + np.quantile(deviations, 0.975),
                                                                             math.log(2))


def test_a_near_copy_proxy_near_the_maximum_covers():
    """300 seeded subsets of 64 of 512 items, 200 resamples: the difference of plug-in entropies held the full
    run's entropy about 92 % of the time (its proxy part is a square of the proxy's error, added to every subset),
    the package's cell (the entropy of the tuned row where its resamples show the maximum's non-linear regime, the
    difference of entropies elsewhere) at least 95 %, narrower than the plain interval."""
    target, proxy = _near_copy()
    full, helper = _statistic(target), _statistic(proxy)
    truth = full.point()["entropy"]
    assert truth == pytest.approx(float(_softmax_entropy(target.mean(axis=0))), abs=1e-12)
    assert math.log(2) - truth < 2e-4 and math.log(2) - helper.point()["entropy"] < 1e-5  # both near ln 2
    population = Population(((None, 512),))
    subsets = [sorted(random.Random(s).sample(range(512), 64)) for s in range(300)]
    former = [_difference_of_entropies(target, proxy, s, seed, 512) for seed, s in enumerate(subsets)]
    found = subset_estimates(full, population, subsets, resamples=200, seed=list(range(300)), level=0.95,
                             proxies=[helper])
    held = [cells[1][0]["entropy"][1] <= truth <= cells[1][0]["entropy"][2] for cells in found]
    assert np.mean([low <= truth <= high for low, high in former]) < 0.93
    assert np.mean(held) >= 0.95
    widths = [(c[1][0]["entropy"][2] - c[1][0]["entropy"][1]) / (c[0]["entropy"][2] - c[0]["entropy"][1]) for c in found]
    assert np.median(widths) < 0.8


def test_where_the_tuned_row_is_near_the_maximum_the_entropy_is_plain(monkeypatch):
    """A target within a few of the tuned row's standard errors of uniform: on every subset whose tuned row's
    resamples show the non-linear regime (computed here from the row's own path), the printed cell is the plain one
    bit for bit and records no weight; on the others the proxy is taken and the interval is narrower."""
    import StaICC.stats.lite_entropy as lite_entropy
    target, proxy = _near_copy(lean=0.02, noise=0.05)
    full, helper = _statistic(target), _statistic(proxy)
    population = Population(((None, 512),))
    regimes, seen, real_path = [], [], lite_entropy.path
    monkeypatch.setattr(lite_entropy, "path", lambda taken, *rest: seen.append(taken) or real_path(taken, *rest))
    for seed in range(8):
        positions = sorted(random.Random(seed).sample(range(512), 64))
        subset = Statistic("Domain_bias", full.table.restricted(positions), NAMES)
        plain = estimate_statistic(subset, population, resamples=200, seed=seed, level=0.95)["entropy"]
        seen.clear()
        cell, estimator = _tuned(helper, subset, population, seed, 200)
        (taken,) = seen
        near = near_maximum(taken[1], taken[0])
        regimes.append(near)
        detail = estimator.details[("Domain_bias", "toy", "entropy")]
        if near:
            assert cell["entropy"][:3] == plain[:3] and not any(detail["row_weights"])
        else:
            assert cell["entropy"][2] - cell["entropy"][1] < plain[2] - plain[1]
    assert sum(regimes) >= 4


def _percentile_coverage(ratio, rng, sigma=0.01, subsets=4000, resamples=200):
    """The two-label entropy H(1/2 + x) estimated from d ~ N(x, sigma^2), its resamples d + N(0, sigma^2): the
    coverage of the bias-corrected percentile interval (cut at ln 2) at x = ratio * sigma, and the median of the
    bootstrap bias over the resamples' spread that :func:`near_maximum` reads."""
    def entropy(p):
        return -(p * np.log(p) + (1 - p) * np.log1p(-p))
    x = ratio * sigma
    truth = entropy(0.5 + x)
    d = x + sigma * rng.standard_normal(subsets)
    star = entropy(0.5 + d[:, None] + sigma * rng.standard_normal((subsets, resamples)))
    plug_in = entropy(0.5 + d)
    bias = star.mean(axis=1) - plug_in
    deviations = star - star.mean(axis=1, keepdims=True)
    low = np.minimum(plug_in - bias + np.quantile(deviations, 0.025, axis=1), math.log(2))
    high = np.minimum(plug_in - bias + np.quantile(deviations, 0.975, axis=1), math.log(2))
    return float(np.mean((low <= truth) & (truth <= high))), float(np.median(np.abs(bias) / star.std(axis=1)))


def test_the_threshold_separates_where_the_percentile_interval_under_covers():
    """The simulation behind NONLINEAR: the percentile interval of the entropy covers at the maximum (x = 0) and
    far from it, under-covers at two to three standard errors, where the bias is above an eighth of the spread,
    and from six standard errors on the bias is below it."""
    rng = np.random.default_rng(0)
    at_maximum, _ = _percentile_coverage(0.0, rng)
    near, near_ratio = _percentile_coverage(2.5, rng)
    _, far_ratio = _percentile_coverage(6.0, rng)
    assert at_maximum > 0.98 and near < 0.94
    assert near_ratio > NONLINEAR > far_ratio


def test_on_the_raw_branch_the_tuned_row_is_divided_by_its_sum():
    """Dyadic rows whose mean sums to exactly 1 under the exact check: the raw branch, whose entropy -sum v log v
    is read of the tuned row divided by its sum (the full run's row sums to 1 there); the softmax branch's entropy
    does not move along the sum, and is read as it is."""
    from StaICC.stats.lite_entropy import row_entropy
    rows = [[0.75, 0.25], [0.5, 0.5]] * 8
    raw = Statistic("Domain_bias", ItemTable("Domain_bias", "toy", _records(rows)), NAMES)
    assert raw.entropy_branch is True
    entropy = row_entropy(raw)
    assert entropy([0.3, 0.6]) == pytest.approx(-(1 / 3) * math.log(1 / 3) - (2 / 3) * math.log(2 / 3), rel=1e-12)
    assert tuned_entropy([0.5, 0.5], [[-0.2, 0.1]], entropy) is None  # a sum below 0: no entropy, the cell plain
    softmaxed = row_entropy(_statistic(rows))
    assert softmaxed([0.3, 0.6]) == pytest.approx(float(_softmax_entropy(np.array([0.3, 0.6]))), rel=1e-12)
    assert softmaxed([0.3, 0.6]) == pytest.approx(softmaxed([0.5, 0.8]), rel=1e-12)


def test_the_entropy_through_its_row_is_kept_only_where_it_pays():
    """By hand: the same spread does not pay (the fitted weight's degree of freedom costs the t factor), a spread
    narrower by more than the t factors' ratio does; too few resamples never pay."""
    from StaICC.stats.lite_entropy import pays
    spread = [float(v) for v in range(-20, 21)]
    assert not pays(spread, spread, 10, 1, 0.95)
    ratio = t_over_z(0.95, 9) / t_over_z(0.95, 10)
    assert pays([v / (ratio * 1.001) for v in spread], spread, 10, 1, 0.95)
    assert not pays([v / (ratio * 0.999) for v in spread], spread, 10, 1, 0.95)
    assert not pays([0.0, 1.0], spread, 10, 1, 0.95)
