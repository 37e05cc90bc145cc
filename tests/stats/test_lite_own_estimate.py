"""Every lite interval holds its own estimate: the chance model's Post_bias, whose KL divergence moves in the
seventh decimal only (its rows are uniform up to a tilt of 1e-6), on many subsets."""
import pytest

from run_fixtures import fixture_runs
from StaICC.report.runs import load_run
from StaICC.sampling.subsets import stratified_order, subset_size
from StaICC.stats.bootstrap import dataset_statistic
from StaICC.stats.lite import Population
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.resolution import noise_floor

pytest.importorskip("numpy")


def _inside(value, low, high, metric):
    if isinstance(value, list):
        return all(_inside(v, a, b, metric) for v, a, b in zip(value, low, high))
    floor = noise_floor(metric, value)
    return low - floor <= value <= high + floor


def test_the_chance_models_post_bias_intervals_hold_their_estimates():
    part = load_run(fixture_runs()["uniform"]).parts["Post_bias"]
    checked = held = 0
    datasets = part.datasets()[:4]
    for dataset in datasets:
        full = dataset_statistic(part, dataset)
        population = Population.from_labels(full.table.labels)
        subsets = [stratified_order(full.table.labels, ("Post_bias", dataset), salt=f"own {seed}")
                   [:subset_size(len(full.table), 0.125)] for seed in range(12)]
        truth = full.point()["DL div."]
        for plain, _ in subset_estimates(full, population, subsets, resamples=200, seed=list(range(12)), level=0.95):
            for metric, (value, low, high, _) in plain.items():
                assert _inside(value, low, high, metric), (dataset, metric, value, low, high)
            checked += 1
            held += _inside(truth, plain["DL div."][1], plain["DL div."][2], "DL div.")
    assert checked == 12 * len(datasets) and held >= 0.8 * checked  # the full run's value too, near 95 % of the time
