"""Statistics that do not report noise: the noise floor, and the test of metrics at the edge of their range."""
import hashlib
import math
import os

import pytest

from run_fixtures import fixture_runs, write_run
from StaICC.report.runs import load_run
from StaICC.stats import (ItemTable, bootstrap_p_value, compare_runs, draw_resamples, minimum_axis_span, noise_floor, part_statistics,
                          resolvable, resolved)
from StaICC.stats.resolution import RELATIVE_RESOLUTION

np = pytest.importorskip("numpy")


def test_noise_floor_per_metric():
    assert noise_floor("accuracy", 0.7, 0.8) == RELATIVE_RESOLUTION == 1e-9
    assert noise_floor("consistency_128", 0.9, 0.5) == 1e-9  # a bounded metric: scale 1 whatever the values
    assert noise_floor("entropy", math.log(6), math.log(6)) == pytest.approx(1e-9 * math.log(6), rel=1e-15)
    assert noise_floor("DL div.", 0.2, 0.3) == 1e-9  # small values: the absolute floor
    assert noise_floor("DL div.", 40.0, math.inf) == pytest.approx(4e-8)  # non-finite values do not count
    assert minimum_axis_span("entropy", 0.5, 0.7) == pytest.approx(1e-6)
    assert not resolvable("entropy", 2.2e-16, 1.79, 1.79)
    assert resolvable("accuracy", 1 / 1024, 0.5, 0.5)
    assert resolved(-3e-10, 1e-9) == 0.0 and resolved(2e-9, 1e-9) == 2e-9 and math.isnan(resolved(math.nan, 1))


def _scores(prompt, n):
    """Scores (not probabilities: always softmaxed) favouring a label chosen by the prompt's hash."""
    i = hashlib.sha256(prompt.encode("utf-8") if isinstance(prompt, str) else repr(prompt).encode()).digest()[0] % n
    return [3.0 if j == i else 1.0 for j in range(n)], i


def _scores_model(prompt, label_space):
    return _scores(prompt, len(label_space))[0]


def _last_bit_model(prompt, label_space):
    """The same scores, lowered by 1e-12 (a float32 model's last bits are 1e-7): every resample's
    likelihood falls by about 1e-13, so a bootstrap without a noise floor would star it."""
    row, i = _scores(prompt, len(label_space))
    row[i] -= 1e-12
    return row


@pytest.fixture(scope="module")
def last_bit_runs(tmp_path_factory):
    from StaICC import Normal, Triplet_bias
    root = str(tmp_path_factory.mktemp("last-bit"))
    benchmarks = {"Normal": Normal(datasets=["rotten_tomatoes", "TREC"]),
                  "Triplet_bias": Triplet_bias(datasets=["rotten_tomatoes", "TREC"])}
    a = write_run(os.path.join(root, "a"), "scores", _scores_model, benchmarks)
    b = write_run(os.path.join(root, "b"), "scores-last-bit", _last_bit_model, dict(benchmarks))
    return load_run(a), load_run(b)


def test_last_bit_differences_are_zero_and_never_significant(last_bit_runs):
    a, b = last_bit_runs
    comparison = compare_runs(a, b, resamples=200, seed=3)
    cells = [(name, dataset, metric, d) for name, part in comparison.parts.items()
             for dataset, row in list(part.datasets.items()) + [("Averaged", part.averaged)]
             for metric, d in row.items()]
    raw = [abs(d.b - d.a) for *_, d in cells if d.a != d.b]
    assert raw and max(raw) < 1e-10  # the runs do differ, by the arithmetic only
    unfloored = []  # p-values the resampled differences would give without the noise floor
    for name, part in comparison.parts.items():
        ea, eb = comparison.estimates_a.parts[name], comparison.estimates_b.parts[name]
        for dataset in part.datasets:
            for metric in part.datasets[dataset]:
                with np.errstate(invalid="ignore"):  # inf - inf of an unbounded KL resample
                    deltas = np.asarray(eb.distributions[dataset][metric]) - \
                        np.asarray(ea.distributions[dataset][metric])
                unfloored.append(bootstrap_p_value(list(deltas[np.isfinite(deltas)])))
    assert min(unfloored) < 0.01  # noise that a bootstrap without the floor would star
    for name, dataset, metric, d in cells:
        assert (d.delta, d.low, d.high) == (0.0, 0.0, 0.0), (name, dataset, metric, d)
        assert not d.significant and d.noise_floor >= 1e-9
    as_dict = comparison.to_dict()["benchmarks"]["Contextual_bias"]["datasets"]["TREC"]["entropy"]
    assert as_dict["delta"] == 0.0 and as_dict["noise_floor"] == pytest.approx(1e-9 * math.log(6))


def test_differences_above_the_floor_are_unchanged():
    runs = {name: load_run(path) for name, path in fixture_runs().items()}
    comparison = compare_runs(runs["lexical"], runs["uniform"], resamples=200, seed=3)
    d = comparison.parts["Normal"].datasets["TREC"]["accuracy"]
    assert d.delta == d.b - d.a != 0 and d.significant


def _hotelling_p(rows):
    """Hotelling's T^2 test that an item-level mean distribution is uniform (an independent test)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    item = np.asarray(rows).mean(axis=0)  # items x labels, averaged over repeats
    T, W = item.shape
    d = item[:, :-1] - 1.0 / W
    m = d.mean(axis=0)
    S = np.cov(d, rowvar=False).reshape(W - 1, W - 1) / T
    t2 = float(m @ np.linalg.solve(S, m))
    return float(scipy_stats.f.sf(t2 * (T - W + 1) / ((T - 1) * (W - 1)), W - 1, T - W + 1))


def test_entropy_near_its_maximum_is_starred_only_where_the_mean_is_not_uniform():
    """The lexical model's Domain_bias mean on rotten_tomatoes is uniform within its noise (Hotelling p ~ 0.25):
    its entropy, 2e-5 below the maximum, used to be starred against the chance model (every resample of a
    near-uniform mean is less uniform); on TREC the mean is far from uniform and the difference is starred."""
    runs = {name: load_run(path) for name, path in fixture_runs().items()}
    comparison = compare_runs(runs["lexical"], runs["uniform"], resamples=500, seed=5)
    part = runs["lexical"].parts["Domain_bias"]
    for dataset, row in comparison.parts["Domain_bias"].datasets.items():
        d = row["entropy"]
        p = _hotelling_p(ItemTable("Domain_bias", dataset, part.records[dataset]).rows[0])
        assert d.test == "paired bootstrap (basic)"
        if p > 0.1:
            assert not d.significant and d.low <= 0 <= d.high, (dataset, p, d)
        if p < 1e-6:
            assert d.significant and d.low > 0, (dataset, p, d)
    assert {True, False} == {row["entropy"].significant
                             for row in comparison.parts["Domain_bias"].datasets.values()}


def test_basic_bootstrap_reflects_the_resamples_about_the_estimate():
    runs = {name: load_run(path) for name, path in fixture_runs().items()}
    comparison = compare_runs(runs["lexical"], runs["uniform"], resamples=300, seed=9)
    ea, eb = comparison.estimates_a.parts["Post_bias"], comparison.estimates_b.parts["Post_bias"]
    d = comparison.parts["Post_bias"].datasets["TREC"]["DL div."]
    deltas = np.asarray(eb.distributions["TREC"]["DL div."]) - np.asarray(ea.distributions["TREC"]["DL div."])
    reflected = 2 * d.delta - deltas[np.isfinite(deltas)]
    assert d.low == pytest.approx(np.percentile(reflected, 2.5), rel=1e-12)
    assert d.high == pytest.approx(np.percentile(reflected, 97.5), rel=1e-12)


def test_every_resample_takes_the_runs_entropy_branch():
    """The standard softmaxes a mean row unless it sums to exactly 1.0; the bootstrap keeps the whole run's
    branch, so its distribution is not a mixture of two functionals decided by last bits."""
    run = load_run(fixture_runs()["lexical"])
    for dataset, statistic in part_statistics(run.parts["Domain_bias"]).items():
        raw = np.asarray(statistic.table.rows[0])
        means_exact = math.fsum(raw.reshape(-1, raw.shape[-1]).mean(axis=0)) == 1
        for sample in draw_resamples(len(statistic.table), 20, 1, "Domain_bias", dataset):
            mean = raw[:, sample].reshape(-1, raw.shape[-1]).mean(axis=0)
            p = mean if statistic.entropy_branch else np.exp(mean - mean.max()) / np.exp(mean - mean.max()).sum()
            assert statistic(sample)["entropy"] == pytest.approx(float(-(p * np.log(p)).sum()), rel=1e-12)
        assert statistic.entropy_branch in (True, False) and (means_exact or not statistic.entropy_branch)
