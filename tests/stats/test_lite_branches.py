"""Lite estimates where the standard takes a branch: Post_bias's softmaxed means for score rows, the bias entropy's
hull of both exact-check branches, and the exact interval of a consistency -- each against NumPy/SciPy computed
here from the rows."""
import math
import random

import pytest

from StaICC.metrics import post_bias_dl_div, post_bias_distribution
from StaICC.stats import ItemTable, Statistic
from StaICC.stats.lite import Population, estimate_statistic
from StaICC.stats.lite_branches import item_flags, undecided
from StaICC.stats.lite_exact import SMALL_STRATUM
from StaICC.stats.vectorized import weighted_values

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")


def _records(rows_of, labels, repeats=1, passes=1):
    return [{"pass": p, "repeat": k, "test_index": t, "label": y, "query_index": k * len(labels) + t,
             "prediction": rows_of(p, k, t), "prompt_sha256": f"{p}/{k}/{t}"}
            for p in range(passes) for k in range(repeats) for t, y in enumerate(labels)]


def _softmax(row):
    e = np.exp(row - row.max())
    return e / e.sum()


def test_post_bias_of_score_rows_takes_the_softmaxed_branch_with_weights():
    rng = random.Random(3)
    labels = [t % 3 for t in range(30)]
    scores = [[rng.uniform(-2, 2) for _ in range(3)] for _ in labels]
    scores[0][1] = -40.0  # a mean that is not positive: the standard compares the softmaxed rows
    statistic = Statistic("Post_bias", ItemTable("Post_bias", "toy", _records(lambda p, k, t: scores[t], labels)),
                          ["DL div.", "distribution"])
    assert not (np.asarray(scores).mean(axis=0) > 0).all()
    weights = np.asarray([rng.uniform(0.2, 2.0) for _ in labels])
    weights *= len(labels) / weights.sum()
    # by hand: the weighted mean of the softmaxed rows against the weighted label frequencies
    mean = (weights[:, None] * np.asarray([_softmax(np.asarray(r)) for r in scores])).sum(axis=0) / weights.sum()
    freqs = np.asarray([weights[np.asarray(labels) == c].sum() for c in range(3)]) / weights.sum()
    found = weighted_values(statistic, [weights.tolist(), [1.0] * len(labels)])
    assert found["DL div."][0] == pytest.approx(float((mean * np.log(mean / freqs)).sum()), abs=1e-12)
    assert found["distribution"][0] == pytest.approx((mean - freqs).tolist(), abs=1e-12)
    # unit weights: the standard's own numbers
    truth = [labels, [list(r) for r in scores]]
    assert found["DL div."][1] == pytest.approx(post_bias_dl_div(*truth), abs=1e-12)
    assert found["distribution"][1] == pytest.approx(post_bias_distribution(*truth), abs=1e-12)


def _entropy(p):
    p = p[p != 0]
    return float(-(p * np.log(p)).sum())


def test_the_entropy_of_probability_rows_spans_both_exact_check_branches():
    rng = random.Random(8)
    rows = []
    for _ in range(200):
        raw = [rng.random() ** 3 + (3.0 if j == 0 else 0.0) for j in range(4)]
        rows.append([v / sum(raw) for v in raw])  # probability rows, summing to 1 up to rounding
    subset = list(range(40))
    table = ItemTable("Domain_bias", "toy", _records(lambda p, k, t: rows[t], [0] * 40))
    statistic = Statistic("Domain_bias", table, ["entropy"])
    flags = item_flags(statistic)
    assert undecided(flags, range(40))
    value, low, high, _ = estimate_statistic(statistic, Population(((None, 200),)), resamples=300, seed=2,
                                             level=0.95)["entropy"]
    mean = np.asarray([rows[t] for t in subset]).mean(axis=0)
    on_raw, on_softmax = _entropy(mean), _entropy(_softmax(mean))
    assert abs(on_raw - on_softmax) > 0.05  # the two branches are far apart
    own = on_raw if statistic.entropy_branch else on_softmax
    assert abs(value - own) < 0.02  # the estimate: the subset's own branch (bias-corrected)
    assert low < min(on_raw, on_softmax) and max(on_raw, on_softmax) < high  # the interval: both branches


def test_rows_that_pass_the_exact_check_or_are_scores_decide_the_branch():
    dyadic = [[0.5, 0.25, 0.25]] * 20
    scores = [[-1.0, 2.0, 0.5]] * 20
    for rows in (dyadic, scores):
        table = ItemTable("Domain_bias", "toy", _records(lambda p, k, t, rows=rows: rows[t], [0] * 20))
        assert not undecided(item_flags(Statistic("Domain_bias", table, ["entropy"])), range(20))
    table = ItemTable("Normal", "toy", _records(lambda p, k, t: dyadic[t], [0] * 20))
    assert item_flags(Statistic("Normal", table, ["accuracy"])) is None  # no bias entropy: nothing to decide


def test_a_consistency_on_small_strata_gets_the_korn_graubard_interval_of_its_rescaled_shares():
    rng = random.Random(4)
    labels = [0] * 6 + [1] * 7  # both labels under SMALL_STRATUM: the design gives the exact interval
    assert max(labels.count(0), labels.count(1)) < SMALL_STRATUM
    passes = 9
    flips = {2: {3}, 9: {0, 5}}  # items whose answer changes on some templates

    def row(p, k, t):
        first = 1 if p in flips.get(t, ()) else 0
        return [0.9, 0.1] if first == 0 else [0.2, 0.8 + rng.random() * 0.1]
    table = ItemTable("Template_sens", "toy", _records(row, labels, passes=passes))
    statistic = Statistic("Template_sens", table, ["consistency"])
    full = {0: 50, 1: 50}
    value, low, high, _ = estimate_statistic(statistic, Population(tuple(full.items())), resamples=200, seed=1,
                                             level=0.95)["consistency"]
    # by hand: each item's majority share c over its 9 answers, u = (c - a) / (1 - a), a = ceil(9 / 2) / 9
    shares = np.asarray([(passes - len(flips.get(t, ()))) / passes for t in range(len(labels))])
    a = math.ceil(passes / 2) / passes
    u = (shares - a) / (1 - a)
    p = v = 0.0
    for c, N in full.items():
        x = u[np.asarray(labels) == c]
        W = N / 100
        p += W * x.mean()
        v += W ** 2 * (1 - len(x) / N) * x.var(ddof=1) / len(x)
    n_eff = min(len(labels), p * (1 - p) / v)
    expected = (scipy_stats.beta.ppf(0.025, p * n_eff, n_eff - p * n_eff + 1),
                scipy_stats.beta.ppf(0.975, p * n_eff + 1, n_eff - p * n_eff))
    assert value == pytest.approx(a + (1 - a) * p, abs=1e-12)
    assert (low, high) == pytest.approx((a + (1 - a) * expected[0], a + (1 - a) * expected[1]), abs=1e-7)
    # every item consistent: the bootstrap's interval would have width zero, the exact one does not
    steady = ItemTable("Template_sens", "toy", _records(lambda p, k, t: [0.9, 0.1], labels, passes=passes))
    value, low, high, _ = estimate_statistic(Statistic("Template_sens", steady, ["consistency"]),
                                             Population(tuple(full.items())), resamples=200, seed=1,
                                             level=0.95)["consistency"]
    assert value == pytest.approx(1.0, abs=1e-12) and high == pytest.approx(1.0, abs=1e-12)
    assert low == pytest.approx(a + (1 - a) * 0.025 ** (1 / len(labels)), abs=1e-9)


def test_a_consistency_gets_the_exact_interval_on_large_strata_too():
    labels = [0] * 12 + [1] * 12  # no small label: accuracy would get the bootstrap's interval here
    table = ItemTable("Template_sens", "toy", _records(lambda p, k, t: [0.9, 0.1], labels, passes=9))
    value, low, high, _ = estimate_statistic(Statistic("Template_sens", table, ["consistency"]),
                                             Population(((0, 50), (1, 50))), resamples=200, seed=1,
                                             level=0.95)["consistency"]
    a = 5 / 9
    assert low == pytest.approx(a + (1 - a) * 0.025 ** (1 / 24), abs=1e-9) and high == pytest.approx(1.0)


# -- Post_bias where the subset cannot tell the full run's branch ---------------------------------------------------
def _kl(mean, freqs):
    keep = mean != 0
    return float((mean[keep] * np.log(mean[keep] / freqs[keep])).sum())


def _scores_near_zero(n, seed):
    """Two-label scores uniform in [-2, 2]: raw means near zero, so resamples fall on both branches."""
    rng = random.Random(seed)
    return np.asarray([[rng.uniform(-2, 2), rng.uniform(-2, 2)] for _ in range(n)])


def _branch_values(scores, labels, weights):
    """By hand, per weight row: (the raw branch's means clipped at zero, the softmaxed rows' means, the label
    frequencies, whether the standard takes the softmaxed branch there)."""
    soft = np.asarray([_softmax(r) for r in scores])
    found = []
    for w in weights:
        raw = (w[:, None] * scores).sum(axis=0) / w.sum()
        drawn_score = bool((scores[w > 0] < 0).any())
        freqs = np.asarray([w[labels == c].sum() for c in range(scores.shape[1])]) / w.sum()
        found.append((np.maximum(raw, 0.0), (w[:, None] * soft).sum(axis=0) / w.sum(), freqs,
                      not (raw > 0).all() and drawn_score))
    return found


def test_each_post_bias_branch_is_evaluated_on_every_weight_row_as_numpy_computes_it():
    import copy
    from StaICC.stats.lite_branches import crosses
    rng = np.random.default_rng(5)
    labels, scores = np.arange(60) % 2, _scores_near_zero(60, 5)
    statistic = Statistic("Post_bias", ItemTable("Post_bias", "toy", _records(lambda p, k, t: list(scores[t]),
                                                                             labels.tolist())),
                          ["DL div.", "distribution"])
    weights = rng.uniform(0, 2, (40, 60)) * (rng.random((40, 60)) < 0.5)
    weights *= 60 / weights.sum(axis=1, keepdims=True)
    expected = _branch_values(scores, labels, weights)
    own = weighted_values(statistic, weights)
    for at, branch in enumerate(("raw", "softmax")):
        forced = copy.copy(statistic)
        forced.post_branch = branch
        found = weighted_values(forced, weights)
        for kl, distribution, row in zip(found["DL div."], found["distribution"], expected):
            mean, freqs = row[at], row[2]
            assert kl == pytest.approx(_kl(mean, freqs), abs=1e-12)
            assert distribution == pytest.approx((mean - freqs).tolist(), abs=1e-12)
    for kl, row in zip(own["DL div."], expected):  # the standard's own branch: one of the two on each row
        assert kl == pytest.approx(_kl(row[1] if row[3] else row[0], row[2]), abs=1e-12)
    softmaxed = [row[3] for row in expected]
    assert any(softmaxed) and not all(softmaxed)
    assert crosses(statistic, weights[0], weights[1:])
    assert not crosses(statistic, weights[0], weights[[i for i, s in enumerate(softmaxed) if s == softmaxed[0]]])


def test_a_subset_whose_resamples_cross_the_post_bias_branches_gets_the_hull_of_both():
    from StaICC.stats.lite import _resample_weights, design, t_over_z
    from StaICC.stats.lite_averaged import Resamples
    from StaICC.stats.significance import percentile_interval
    labels, scores = np.arange(400) % 2, _scores_near_zero(400, 11)
    subset = list(range(48))
    table = ItemTable("Post_bias", "toy", _records(lambda p, k, t: list(scores[t]), labels[subset].tolist()))
    statistic = Statistic("Post_bias", table, ["DL div.", "distribution"])
    population = Population(((0, 200), (1, 200)))
    found = estimate_statistic(statistic, population, resamples=300, seed=4, level=0.95)
    plan = design(table, population)
    rows = np.vstack([plan.weights, _resample_weights(plan, 300, 4, ("lite", "Post_bias", "toy"))])
    by_hand = _branch_values(scores[subset], labels[subset], rows)
    assert len({row[3] for row in by_hand[1:]}) == 2  # the resamples take both branches
    scale = t_over_z(0.95, plan.freedom)

    def interval(values):  # the t-widened percentile interval around the first (the estimate)
        scaled = [values[0] + scale * (v - values[0]) for v in values[1:]]
        return percentile_interval(scaled, 0.95), scaled
    kls = [[_kl(row[b], row[2]) for row in by_hand] for b in (0, 1)]
    own = [kls[1][i] if row[3] else kls[0][i] for i, row in enumerate(by_hand)]
    (own_interval, own_scaled), *branches = [interval(v) for v in (own, *kls)]
    value, low, high, scaled = found["DL div."]
    assert value == pytest.approx(own[0], abs=1e-12)  # the estimate: the subset's own branch, uncorrected
    assert low == pytest.approx(min(own_interval[0], *(b[0][0] for b in branches)), abs=1e-12)
    assert high == pytest.approx(max(own_interval[1], *(b[0][1] for b in branches)), abs=1e-12)
    assert isinstance(scaled, Resamples) and scaled == pytest.approx(own_scaled, abs=1e-12)
    lowest = [min(a, b) for a, b in zip(branches[0][1], branches[1][1])]
    highest = [max(a, b) for a, b in zip(branches[0][1], branches[1][1])]
    assert scaled.down == pytest.approx([max(v - m, 0.0) for v, m in zip(own_scaled, lowest)], abs=1e-12)
    assert scaled.up == pytest.approx([max(m - v, 0.0) for v, m in zip(own_scaled, highest)], abs=1e-12)
    distribution = found["distribution"]  # element-wise: the hull of each label's branches
    raw_ends = percentile_interval([by_hand[0][0][0] - by_hand[0][2][0] + scale * (
        (row[0][0] - row[2][0]) - (by_hand[0][0][0] - by_hand[0][2][0])) for row in by_hand[1:]], 0.95)
    assert distribution[1][0] <= raw_ends[0] + 1e-12 and distribution[2][0] >= raw_ends[1] - 1e-12
