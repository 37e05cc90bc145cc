"""Every metric a run reports is resampled by NumPy, never one resample at a time in Python.

The registry check fails when a metric is added to a sub-benchmark (or beside the standard's)
without a vectorised form; the runtime checks fail when a reported metric's vectorised form is
missing or disagrees with the metric itself, which sends every resample to the Python path.
The reference for each resample is the metric function called on the laid-out rows: a
computation independent of the per-row summaries the vectorised form reads.
"""
import math
import random

import pytest

from run_fixtures import fixture_runs
from StaICC import metrics
from StaICC.metrics.agreement import GROUPED_METRICS
from StaICC.report.runs import load_run
from StaICC.stats.bootstrap import dataset_statistic
from StaICC.stats.items import ItemTable, draw_resamples
from StaICC.stats.statistic import Statistic
from StaICC.stats.vectorized import PER_RESAMPLE, VECTORISED, resample_values

np = pytest.importorskip("numpy")

OWN = tuple(metrics.OWN_DISTRIBUTION_METRICS.values())


class _Counting(Statistic):
    """A statistic that counts the resamples computed by its pure-Python path."""

    python_calls = 0

    def __call__(self, sample):
        self.python_calls += 1
        return super().__call__(sample)


def _python_calls(statistic, draws):
    statistic.point()  # the identity resample, computed once before resampling
    statistic.__class__ = _Counting
    values = resample_values(statistic, draws, "numpy")
    return statistic.python_calls, values


def test_every_metric_a_run_reports_has_a_vectorised_form():
    reported = {name for names in metrics.BENCHMARK_METRICS.values() for name in names} | set(OWN)
    assert reported and not reported - set(VECTORISED), sorted(reported - set(VECTORISED))


def test_every_registered_metric_is_vectorised_or_says_why_not():
    known = set(metrics.METRICS) | set(GROUPED_METRICS)
    assert not set(VECTORISED) & set(PER_RESAMPLE)
    assert not known - set(VECTORISED) - set(PER_RESAMPLE), sorted(known - set(VECTORISED) - set(PER_RESAMPLE))
    assert all(len(reason) > 20 for reason in PER_RESAMPLE.values())


def test_no_metric_of_a_standard_run_falls_back_to_python():
    run = load_run(fixture_runs()["lexical"])
    checked = set()
    for name, part in run.parts.items():
        for dataset in part.datasets():
            statistic = dataset_statistic(part, dataset)
            calls, _ = _python_calls(statistic, draw_resamples(len(statistic.table), 30, 7, name, dataset))
            assert calls == 0, (name, dataset)
            checked.update(statistic.names())
    assert {"accuracy", "expected_calibration_error_1", "entropy", "DL div.", "consistency"} <= checked


def _rows(rng, kind, width):
    if kind == "logits":
        return [rng.gauss(0, 3) for _ in range(width)]
    raw = [rng.random() ** 3 for _ in range(width)]
    total = sum(raw)
    return [v / total for v in raw]  # probabilities whose exact sum is 1 only by chance


def _table(rng, kinds, width=3, repeats=2):
    records = []
    for k in range(repeats):
        for i, kind in enumerate(kinds):
            records.append({"pass": 0, "repeat": k, "test_index": i, "label": i % width, "query_index": i,
                            "prediction": _rows(rng, kind, width), "prompt_sha256": f"{k}-{i}"})
    return ItemTable("Normal", "synthetic", records)


@pytest.mark.parametrize("mix", ["probabilities", "logits", "one item of logits"])
def test_own_distribution_metrics_equal_the_metric_on_every_resample(mix):
    rng = random.Random(mix)
    kinds = {"probabilities": ["p"] * 30, "logits": ["logits"] * 30,
             "one item of logits": ["p"] * 29 + ["logits"]}[mix]
    table = _table(rng, kinds)
    statistic = Statistic("Normal", table, ["accuracy", "averaged_truelabel_likelihood"] + list(OWN))
    draws = draw_resamples(len(table), 60, 3, "Normal", mix)
    calls, values = _python_calls(statistic, draws)
    assert calls == 0
    branches = set()
    for b, sample in enumerate(draws):
        truth, rows = table.layout(sample, [0])
        branches.add(all(abs(math.fsum(r) - 1) <= 1e-9 for r in rows))
        for name in OWN:
            expected = metrics.METRICS[name].function(truth, rows)
            assert abs(values[name][b] - expected) <= 1e-12, (mix, name, b)
    if mix == "one item of logits":
        assert branches == {True, False}  # both branches of own_distribution were drawn
