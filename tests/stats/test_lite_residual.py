"""A near-perfect proxy's rare disagreements (:mod:`StaICC.stats.lite_residual`): the exact difference interval
against SciPy's Beta quantiles and NumPy's stratified moments, macro-F1's reach by hand, a subset without a single
disagreement, a simulation in which the power-tuned interval under-covers and the hulled one covers, an ordinary
proxy's cells unchanged bit for bit, the fast path equal to the package's estimator, and a census still the full
run."""
import math
import random

import pytest

from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Design, Population, _resample_weights
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_proxy import Proxy, TunedEstimator, power_tuned
from StaICC.stats.lite_residual import SubsetItems, difference_interval, f1_reach, parts, residual_hulls, square_and_add

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")

ALPHA = 0.05


def _items(y, z, labels, full, wholes, weights=None, answers=None):
    return SubsetItems(list(y), [list(z)], [wholes], list(labels), dict(full), weights or [1.0] * len(y),
                       answers or [[label] for label in labels], 2)


def _kg(values, labels, full, level):
    """Korn-Graubard by hand: the stratified mean and finite-population variance with NumPy, n_eff, SciPy's Beta."""
    values, labels = np.asarray(values, dtype=float), np.asarray(labels)
    mean = variance = 0.0
    for s, count in full.items():
        x = values[labels == s]
        mean += count / sum(full.values()) * x.mean()
        variance += (count / sum(full.values())) ** 2 * (1 - len(x) / count) * x.var(ddof=1) / len(x)
    n = len(values)
    n_eff = n if variance <= 0 else min(n, mean * (1 - mean) / variance)
    x, a = mean * n_eff, 1 - level
    low = 0.0 if x <= 0 else stats.beta.ppf(a / 2, x, n_eff - x + 1)
    high = 1.0 if x >= n_eff else stats.beta.ppf(1 - a / 2, x + 1, n_eff - x)
    return low, high


def test_both_intervals_are_korn_graubards_of_each_part_as_the_formulas_say():
    """The trigger's interval: Z + low(d+) - high(d-) and Z + high(d+) - low(d-), each part's interval at
    1 - alpha/2 where both parts hold items; the hull's: Z + p+ - p- -/+ the square-and-add of each part's distances
    to its limits at 1 - alpha.  Here d+ on one item (1/2) and d- on two (1 and 1/2), 40 items of two labels drawn
    from 320."""
    y = [1.0] * 12 + [0.0] * 8 + [0.5] * 10 + [1.0] * 10
    z = list(y)
    z[0], z[25] = 0.5, 1.0  # d+ = 1/2 on item 0 (y 1, z 1/2); d- = 1/2 on item 25 (y 1/2, z 1)
    y[30], z[30] = 0.0, 1.0  # d- = 1 on item 30
    labels = [0] * 20 + [1] * 20
    full = {0: 160, 1: 160}
    found = parts(_items(y, z, labels, full, 0.6), [1.0])
    d_plus, d_minus = [max(a - b, 0) for a, b in zip(y, z)], [max(b - a, 0) for a, b in zip(y, z)]
    plus, minus = _kg(d_plus, labels, full, 1 - ALPHA / 2), _kg(d_minus, labels, full, 1 - ALPHA / 2)
    assert difference_interval(found, 0.95) == pytest.approx((0.6 + plus[0] - minus[1], 0.6 + plus[1] - minus[0]),
                                                             abs=1e-9)
    p_plus, p_minus = 0.5 * 0.5 / 20, 0.5 * 1.5 / 20  # the stratified means: one label each, half the weight
    (l_plus, u_plus), (l_minus, u_minus) = _kg(d_plus, labels, full, 0.95), _kg(d_minus, labels, full, 0.95)
    centre = 0.6 + p_plus - p_minus
    assert square_and_add(found, 0.95) == pytest.approx(
        (centre - math.sqrt((p_plus - l_plus) ** 2 + (u_minus - p_minus) ** 2),
         centre + math.sqrt((u_plus - p_plus) ** 2 + (p_minus - l_minus) ** 2)), abs=1e-9)


def test_a_subset_without_a_disagreement_gets_the_exact_zero_event_bound():
    """Target and proxy agree on every subset item: each part's lower limit is 0, so each end takes its whole
    alpha/2 and the interval is Z -/+ (1 - (alpha/2)^(1/n)), width not zero; several proxies combine with their
    weights (their Z too)."""
    n = 64
    y = [1.0, 0.5, 0.0, 1.0] * 16
    labels = [0, 1] * 32
    reach = 1 - (ALPHA / 2) ** (1 / n)
    found = parts(_items(y, y, labels, {0: 256, 1: 256}, 0.55), [0.9])
    for interval in (difference_interval(found, 0.95), square_and_add(found, 0.95)):
        assert interval == pytest.approx((0.55 - reach, 0.55 + reach), abs=1e-9)
    both = SubsetItems(y, [y, y], [0.5, 0.8], labels, {0: 256, 1: 256}, [1.0] * n, [[0]] * n, 2)
    centre = (0.2 * 0.5 + 0.6 * 0.8) / 0.8
    assert square_and_add(parts(both, [0.2, 0.6]), 0.95) == pytest.approx((centre - reach, centre + reach), abs=1e-9)


def test_macro_f1s_reach_is_its_least_and_largest_with_the_items_moved_across_the_diagonal():
    """Two labels of 100 items each, confusion [[70, 30], [20, 80]]: 10 items leave the diagonal (5 per label, as the
    labels share the items), each class's F1 at its least by hand; 10 enter it, each at its largest."""
    labels = [0] * 100 + [1] * 100
    answers = [[0]] * 70 + [[1]] * 30 + [[0]] * 20 + [[1]] * 80
    items = SubsetItems([0.0] * 200, [[0.0] * 200], [0.0], labels, {0: 100, 1: 100}, [1.0] * 200, answers, 2)

    def f1(tp, answered, true):
        return 2 * tp / (answered + true)
    at = (f1(70, 90, 100) + f1(80, 110, 100)) / 2
    least = (f1(65, 90, 100) + f1(75, 110, 100)) / 2  # class 0: 5 leave (0, 0), 5 of label 1 answer 0; and so on
    largest = (f1(75, 90, 100) + f1(85, 110, 100)) / 2  # class 0: 5 enter (0, 0), 5 of label 1 stop answering 0
    down, up = f1_reach(items, 10, 10)
    assert down == pytest.approx(at - least, abs=1e-12) and up == pytest.approx(largest - at, abs=1e-12)


def _population(rng, total, disagree):
    """Item values in {0, 1/2, 1} (two repeats) of a target and a proxy that differs on a share ``disagree``."""
    y = rng.choice([0.0, 0.5, 1.0], size=total, p=[0.35, 0.1, 0.55])
    z = y.copy()
    moved = rng.random(total) < disagree
    z[moved] = np.where(y[moved] >= 0.5, y[moved] - 0.5, y[moved] + 0.5)
    return y, z


def _draw(y, z, labels, rng, n, seed):
    """One stratified subset: the power-tuned accuracy cell and details, and the subset's :class:`SubsetItems`."""
    pick = np.concatenate([rng.choice(np.flatnonzero(labels == s), n // 2, replace=False) for s in (0, 1)])
    half = len(y) // 2
    plan = Design([1.0] * n, [(list(range(n // 2)), math.sqrt(1 - n / 2 / half)),
                              (list(range(n // 2, n)), math.sqrt(1 - n / 2 / half))], n - 2)
    rows = _resample_weights(plan, 200, seed, ("simulation",))
    ts, ps = y[pick], z[pick]
    target = ({"accuracy": float(ts.mean())}, {"accuracy": (rows @ ts / n).tolist()})
    found, details = power_tuned("Normal", target, [({"accuracy": float(ps.mean())}, {"accuracy": (rows @ ps / n).tolist()})],
                                 [{"accuracy": float(z.mean())}], plan.freedom, 0.95)
    items = _items(ts, ps, labels[pick], {0: half, 1: half}, float(z.mean()))
    return found, details, items


def test_a_near_perfect_proxy_covers_with_the_hull_where_the_power_tuned_interval_does_not():
    """512 items, 64 drawn (32 per label), a proxy that differs on 2 % of the items by half an item: the
    power-tuned interval holds the full mean on under 90 % of 400 draws (a subset holds 0-3 disagreements), the
    hulled one on at least 95 %."""
    rng = np.random.default_rng(20261129)
    hits = [0, 0]
    for draw in range(400):
        y, z = _population(rng, 512, 0.02)
        labels = np.repeat([0, 1], 256)
        found, details, items = _draw(y, z, labels, rng, 64, draw)
        hulled = residual_hulls("Normal", found, details, lambda items=items: items, 0.95)
        for k, cells in enumerate((found, hulled)):
            hits[k] += cells["accuracy"][1] - 1e-12 <= y.mean() <= cells["accuracy"][2] + 1e-12
    assert hits[0] / 400 < 0.90 and hits[1] / 400 >= 0.95


def test_an_ordinary_proxys_cell_is_unchanged_bit_for_bit():
    """A proxy that differs on 30 % of the items: its difference interval is wider than the target's own, the rule
    does not trigger on any of 200 draws, and the cell is the power-tuned one, every number the same."""
    rng = np.random.default_rng(7)
    for draw in range(200):
        y, z = _population(rng, 512, 0.3)
        found, details, items = _draw(y, z, np.repeat([0, 1], 256), rng, 64, draw)
        assert residual_hulls("Normal", found, details, lambda items=items: items, 0.95) == found


def _normal(rows, labels):
    records = [{"pass": 0, "repeat": k, "test_index": t, "label": y, "query_index": k * len(labels) + t,
                "prediction": list(rows[k][t]), "prompt_sha256": f"0/{k}/{t}"} for k in range(2)
               for t, y in enumerate(labels)]
    return Statistic("Normal", ItemTable("Normal", "toy", records), ["accuracy", "macro_F1"])


@pytest.fixture(scope="module")
def near():
    """A Normal part of 512 items, two labels, two repeats: a target and a proxy that answers as it does but on
    12 items (a near-perfect proxy)."""
    rng = random.Random(11)
    labels = [t % 2 for t in range(512)]
    target = [[[rng.random(), rng.random()] for _ in labels] for _ in range(2)]
    proxy = [[list(row) for row in rep] for rep in target]
    for t in rng.sample(range(512), 12):
        proxy[0][t] = proxy[0][t][::-1]
    return _normal(target, labels), _normal(proxy, labels), Population.from_labels(labels)


def _agreeing_subset(full, proxy):
    """32 items of each label on which target and proxy give the same answers."""
    same = [t for t in range(512) if full.table.summaries[0][0][t][0] == proxy.table.summaries[0][0][t][0]]
    return sorted([t for t in same if t % 2 == 0][:32] + [t for t in same if t % 2 == 1][:32])


def test_a_subset_with_no_disagreement_gets_a_non_zero_interval_from_the_package(near, monkeypatch):
    """The package's estimator on a subset where target and proxy never disagree: without the rule the residual
    is constant and the interval has width zero; with it, the accuracy's holds Z -/+ (1 - (alpha/2)^(1/64)) and
    macro-F1's is not zero wide either."""
    full, proxy, population = near
    subset = Statistic("Normal", full.table.restricted(_agreeing_subset(full, proxy)), full.names())
    found = TunedEstimator(Proxy("p", {}, _tables={("Normal", "toy"): proxy}))(subset, population, resamples=200,
                                                                                 seed=3, level=0.95)
    z = np.mean([np.mean([rep[t][0] == t % 2 for rep in proxy.table.summaries[0]]) for t in range(512)])
    reach = 1 - (ALPHA / 2) ** (1 / 64)
    _, low, high, _ = found["accuracy"]
    assert low <= z - reach + 1e-9 and high >= z + reach - 1e-9
    assert found["macro_F1"][2] - found["macro_F1"][1] > 0.05
    monkeypatch.setattr("StaICC.stats.lite_proxy.residual_hulls", lambda benchmark, found, *_: found)  # the rule before
    before = TunedEstimator(Proxy("p", {}, _tables={("Normal", "toy"): proxy}))(subset, population, resamples=200,
                                                                                  seed=3, level=0.95)
    assert before["accuracy"][2] - before["accuracy"][1] < 1e-9 and before["macro_F1"][2] - before["macro_F1"][1] < 1e-9


def test_the_fast_path_takes_the_rule_as_the_package_does(near):
    """lite_batch's subsets with the near-perfect proxy: each cell equal to the package's estimator's."""
    full, proxy, population = near
    subsets = [_agreeing_subset(full, proxy)] + [sorted(random.Random(s).sample(range(0, 512, 2), 32)
                                                        + random.Random(s).sample(range(1, 512, 2), 32)) for s in range(3)]
    found = subset_estimates(full, population, subsets, resamples=60, seed=list(range(4)), level=0.95, proxies=[proxy])
    for j, (subset, (_, (tuned,))) in enumerate(zip(subsets, found)):
        own = Statistic("Normal", full.table.restricted(subset), full.names())
        slow = TunedEstimator(Proxy("p", {}, _tables={("Normal", "toy"): proxy}))(own, population, resamples=60,
                                                                                  seed=j, level=0.95)
        for metric in ("accuracy", "macro_F1"):
            assert tuned[metric][:3] == pytest.approx(slow[metric][:3], abs=1e-12)


def test_several_proxies_take_the_rule_alike_on_both_paths(near):
    """Two proxies as one estimate (their weights combine z): the fast path's cells equal the package's, and a subset
    where neither disagrees with the target gets an interval of non-zero width."""
    full, proxy, population = near
    subsets = [_agreeing_subset(full, proxy), sorted(random.Random(5).sample(range(512), 64))]
    found = subset_estimates(full, population, subsets, resamples=60, seed=[0, 1], level=0.95, proxies=[proxy, proxy],
                             groups=[(0, 1)])
    for j, (subset, (_, (tuned,))) in enumerate(zip(subsets, found)):
        own = Statistic("Normal", full.table.restricted(subset), full.names())
        slow = TunedEstimator([Proxy(name, {}, _tables={("Normal", "toy"): proxy}) for name in "pq"])(
            own, population, resamples=60, seed=j, level=0.95)
        for metric in ("accuracy", "macro_F1"):
            assert tuned[metric][:3] == pytest.approx(slow[metric][:3], abs=1e-12)
    assert found[0][1][0]["accuracy"][2] - found[0][1][0]["accuracy"][1] > 0.05


def test_a_census_is_still_the_full_run(near):
    """Every item asked: the full run's own numbers with width zero, whatever the proxy."""
    full, proxy, population = near
    found = TunedEstimator(Proxy("p", {}, _tables={("Normal", "toy"): proxy}))(full, population, resamples=50,
                                                                               seed=1, level=0.95)
    for metric, value in full.point().items():
        assert found[metric][:3] == (value, value, value)
