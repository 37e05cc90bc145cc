"""A lite run's estimates against computations that share no code with StaICC.stats: the full run's records
restricted to the lite items and weighted by hand, the textbook stratified standard error for the interval's
width, the standard numbers themselves at fraction 1, and a paired comparison's difference from the two runs'
records."""
import json
import math
import os
import statistics
import warnings
from collections import defaultdict

import pytest

from StaICC.cli import main
from StaICC.errors import TamperingWarning
from StaICC.backends.reference_model import lexical_icl
from StaICC.runs.lite import run_lite
from StaICC.subbenchmarks.suite import build_suite, run_suite

pytest.importorskip("numpy")

DATASETS = ["financial_phrasebank", "TREC"]
FRACTION = 0.125


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def runs():
    full = run_suite(lexical_icl, suite=build_suite("Normal", DATASETS, 4), progress=False)
    lite = quiet(run_lite, lexical_icl, FRACTION, "Normal", datasets=DATASETS, progress=False)
    return full, lite


def exact_probabilities(row):
    total = 0.0
    for v in row:
        total += v
    return all(0 <= v <= 1 for v in row) and total == 1


def softmaxed(row):
    exps = [math.exp(v - max(row)) for v in row]
    return [e / sum(exps) for e in exps]


def per_item(records, dataset, value):
    """{test_index: (label, the item's value averaged over its repeats)} of one dataset's Normal records; the
    standard's rule for scores: every row softmaxed unless every row of the table is exactly a probability row."""
    mine = [r for r in records if r["benchmark"] == "Normal" and r["dataset"] == dataset]
    keep = all(exact_probabilities(r["prediction"]) for r in mine)
    values, labels = defaultdict(list), {}
    for record in mine:
        row = record["prediction"] if keep else softmaxed(record["prediction"])
        values[record["test_index"]].append(value(dict(record, prediction=row)))
        labels[record["test_index"]] = record["label"]
    return {index: (labels[index], sum(v) / len(v)) for index, v in values.items()}


def correct(record):
    return float(record["predicted"] == record["label"])


def true_label_probability(record):
    return record["prediction"][record["label"]]


def stratified(full_items, lite_indexes):
    """The weighted plug-in estimate and its textbook standard error (finite-population correction per label)."""
    population, sample = defaultdict(int), defaultdict(list)
    for index, (label, value) in full_items.items():
        population[label] += 1
        if index in lite_indexes:
            sample[label].append(value)
    total = sum(population.values())
    estimate = sum(population[label] / total * statistics.fmean(values) for label, values in sample.items())
    variance = sum((population[label] / total) ** 2 * (1 - len(values) / population[label])
                   * statistics.variance(values) / len(values) for label, values in sample.items())
    return estimate, math.sqrt(variance)


def small_label(items):
    """Whether a label has fewer than 10 items in the subset (then accuracy's interval is the exact one)."""
    counts = defaultdict(int)
    for label, _ in items.values():
        counts[label] += 1
    return min(counts.values()) < 10


@pytest.mark.parametrize("metric, value", [("accuracy", correct),
                                           ("averaged_truelabel_likelihood", true_label_probability)])
def test_the_estimate_is_the_full_runs_items_weighted_by_label_and_the_interval_is_the_stratified_error(
        runs, metric, value):
    full, lite = runs
    estimates = lite.lite.to_dict()["benchmarks"]["Normal"]
    for dataset in DATASETS:
        full_items = per_item(full.records, dataset, value)
        lite_items = per_item(lite.records, dataset, value)
        assert all(full_items[index] == item for index, item in lite_items.items())  # the full run's own answers
        expected, error = stratified(full_items, set(lite_items))
        found = estimates[dataset][metric]
        assert found["estimable"] and found["value"] == pytest.approx(expected, abs=1e-12)
        assert found["low"] < found["value"] < found["high"]
        half_width = (found["high"] - found["low"]) / 2
        if metric == "accuracy" and small_label(lite_items):  # the Korn-Graubard (Clopper-Pearson) interval, widened
            n_eff = min(len(lite_items), expected * (1 - expected) / error ** 2)  # for unseen answers (lite_unseen)
            x = expected * n_eff
            from scipy.stats import beta
            assert found["low"] <= beta.ppf(0.025, x, n_eff - x + 1) + 1e-7
            assert found["high"] >= beta.ppf(0.975, x + 1, n_eff - x) - 1e-7
        else:
            assert 0.8 < half_width / (1.96 * error) < 1.25, (dataset, metric, half_width, error)
        truth = full["Normal"]["Divided results"][dataset][metric]
        assert abs(found["value"] - truth) < 3 * half_width  # the estimate is of the full run's number


def test_at_fraction_one_every_estimate_is_the_standard_number_with_no_width():
    full = run_suite(lexical_icl, suite=build_suite("Normal", ["TREC"], 4), progress=False)
    lite = quiet(run_lite, lexical_icl, 1.0, "Normal", datasets=["TREC"], progress=False)
    estimates = lite.lite.to_dict()["benchmarks"]["Normal"]["TREC"]
    reported = [metric for metric, found in estimates.items() if found["estimable"]]
    assert {"accuracy", "averaged_truelabel_likelihood", "macro_F1"} <= set(reported)
    for metric in reported:
        truth = full["Normal"]["Divided results"]["TREC"][metric]
        assert estimates[metric]["value"] == pytest.approx(truth, abs=1e-12)
        assert estimates[metric]["low"] == pytest.approx(truth, abs=1e-12) == estimates[metric]["high"]


def subset_answers(run_dir, dataset):
    """{(test_index, repeat): correct?} of one lite run's Normal answers on one dataset, read from samples.jsonl."""
    hits = {}
    with open(os.path.join(run_dir, "samples.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["benchmark"] == "Normal" and row["dataset"] == dataset:
                hits[(row["test_index"], row["repeat"])] = row["predicted"] == row["label"]
    return hits


def test_compare_of_two_lite_runs_pairs_the_same_items_and_reports_their_difference(tmp_path, capsys):
    dirs = {}
    for model in ("reference", "uniform"):
        dirs[model] = str(tmp_path / model)
        assert main(["run", "--model", model, "--lite", str(FRACTION), "--benchmarks", "Normal", "--datasets",
                     *DATASETS, "--log-samples", "--no-progress", "--output-dir", dirs[model]]) == 0
    capsys.readouterr()
    assert main(["compare", dirs["reference"], dirs["uniform"], "--format", "json", "--no-progress",
                 "--resamples", "50"]) == 0
    comparison = json.loads(capsys.readouterr().out)["comparisons"][0]
    assert comparison["paired"] is True
    for dataset in DATASETS:
        a, b = (subset_answers(dirs[model], dataset) for model in ("reference", "uniform"))
        assert set(a) == set(b)  # the same queries on both sides
        found = comparison["benchmarks"]["Normal"]["datasets"][dataset]["accuracy"]
        accuracy_a, accuracy_b = (sum(hits.values()) / len(hits) for hits in (a, b))
        assert (found["a"], found["b"]) == (pytest.approx(accuracy_a), pytest.approx(accuracy_b))
        assert found["delta"] == pytest.approx(accuracy_b - accuracy_a) and found["low"] < found["delta"] < found["high"]
        assert found["test"] == "McNemar exact" and found["counts"] == {
            "only_a": sum(a[q] and not b[q] for q in a), "only_b": sum(b[q] and not a[q] for q in a), "prompts": len(a)}
