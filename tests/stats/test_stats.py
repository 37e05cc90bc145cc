"""Statistics over real runs: bootstrap intervals over test items, paired tests, refusals."""
import math
import random

import pytest

from run_fixtures import FIXTURE_DATASETS, fixture_runs
from StaICC import stats
from StaICC.report.runs import RunFormatError, load_run
from StaICC.stats import (ItemTable, UnpairedRunsError, bootstrap_p_value, bootstrap_run, compare_runs,
                          draw_resamples, holm, mcnemar_exact, part_statistics, percentile)

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def runs():
    paths = fixture_runs()
    return {name: load_run(path) for name, path in paths.items()}


# -- elementary statistics -----------------------------------------------------------------
@pytest.mark.parametrize("b, c, expected", [
    (0, 0, 1.0), (1, 0, 1.0), (5, 0, 2 / 32), (0, 5, 2 / 32), (2, 8, 2 * (1 + 10 + 45) / 1024),
    (3, 3, 1.0), (6, 1, 2 * (1 + 7) / 128), (10, 10, 1.0)])
def test_mcnemar_exact_against_hand_computed_tables(b, c, expected):
    assert mcnemar_exact(b, c) == expected


def test_mcnemar_matches_scipy_and_survives_large_counts():
    scipy_stats = pytest.importorskip("scipy.stats")
    for b, c in [(3, 17), (40, 61), (200, 260), (700, 650)]:
        assert math.isclose(mcnemar_exact(b, c), scipy_stats.binomtest(min(b, c), b + c, 0.5).pvalue, rel_tol=1e-9)
    assert mcnemar_exact(0, 1050) == 2.0 ** -1049  # exact integers: a subnormal result, not 0


def test_mcnemar_refuses_bad_counts():
    with pytest.raises(ValueError, match="non-negative ints: b = -1"):
        mcnemar_exact(-1, 3)


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.5, None, 0.01]) == [0.5, None, 0.02]
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # 2 x 0.8 capped at 1; never below an earlier step
    assert holm([0.2, 0.01]) == [0.2, 0.02]


def test_percentile_is_numpy_linear():
    values = sorted(random.Random(1).random() for _ in range(37))
    for q in (0, 0.025, 0.5, 0.975, 1):
        assert math.isclose(percentile(values, q), float(np.percentile(values, q * 100)), rel_tol=1e-12)


def test_bootstrap_p_value():
    assert bootstrap_p_value([0.0] * 99) == 1.0
    assert bootstrap_p_value([1.0] * 99) == 2 / 100
    assert bootstrap_p_value([-1.0] * 50 + [1.0] * 49) == 1.0


def test_resamples_depend_only_on_seed_and_tags():
    a = draw_resamples(50, 3, 7, "Normal", "TREC")
    assert a == draw_resamples(50, 3, 7, "Normal", "TREC")
    assert a != draw_resamples(50, 3, 8, "Normal", "TREC")
    assert a != draw_resamples(50, 3, 7, "Normal", "SST5")
    assert all(len(s) == 50 and all(0 <= i < 50 for i in s) for s in a)


# -- resampling unit: the test item -------------------------------------------------------
def test_repeats_of_an_item_move_together(runs):
    part = runs["lexical"].parts["Normal"]
    table = ItemTable("Normal", "TREC", part.records["TREC"])
    assert (table.passes, table.repeats, len(table)) == (1, 2, 512)
    truth, rows = table.layout([3, 3, 7], [0])
    by_key = {(r["repeat"], r["test_index"]): r for r in part.records["TREC"]}
    expected = [by_key[(rep, t)] for rep in (0, 1) for t in (3, 3, 7)]
    assert rows == [r["prediction"] for r in expected]
    assert truth == [r["label"] for r in expected]


def test_identity_resample_reproduces_every_recorded_number(runs):
    from StaICC.report.tables import flatten
    for run in (runs["lexical"], runs["uniform"]):
        for name, part in run.parts.items():
            for dataset, statistic in part_statistics(part).items():
                point = statistic(statistic.table.identity())
                recorded = flatten(part.divided[dataset])
                assert point and set(point) <= set(recorded)
                for metric, value in point.items():
                    assert value == recorded[metric], (name, dataset, metric)


def test_fast_path_gives_the_metric_functions_bits(runs):
    for name, part in runs["lexical"].parts.items():
        for dataset, statistic in part_statistics(part).items():
            if name in ("Normal", "GLER", "Template_sens", "Demo_sens"):
                assert statistic.fast, (name, dataset)
            for sample in draw_resamples(len(statistic.table), 5, 3, name, dataset):
                assert statistic._evaluate(sample, True) == statistic._evaluate(sample, False)


# -- intervals against an independent NumPy computation -------------------------------------
def _normalized(records, T, R):
    rows = np.zeros((R, T, len(records[0]["prediction"])))
    labels = np.zeros(T, dtype=int)
    for r in records:
        rows[r["repeat"], r["test_index"]] = r["prediction"]
        labels[r["test_index"]] = r["label"]
    if not all(math.fsum(r["prediction"]) == 1 for r in records):  # approximate check is enough here
        pass
    return rows, labels


def test_normal_intervals_match_numpy(runs):
    run = runs["lexical"]
    estimates = bootstrap_run(run, resamples=300, seed=11, benchmarks=["Normal"])
    for dataset in FIXTURE_DATASETS:
        records = run.parts["Normal"].records[dataset]
        rows, labels = _normalized(records, 512, 2)
        table = ItemTable("Normal", dataset, records)
        if table.normalized[0][0][0] != table.rows[0][0][0]:
            e = np.exp(rows - rows.max(axis=2, keepdims=True))
            rows = e / e.sum(axis=2, keepdims=True)
        draws = np.array(draw_resamples(512, 300, 11, "Normal", dataset))
        sampled = rows[:, draws]                       # R x B x T x C: both repeats of each drawn item
        truth = labels[draws]                          # B x T
        predicted = sampled.argmax(axis=3)
        accuracy = (predicted == truth[None]).mean(axis=(0, 2))
        likelihood = np.take_along_axis(sampled, np.broadcast_to(truth[None, :, :, None], sampled.shape[:3] + (1,)),
                                        axis=3)[..., 0].mean(axis=(0, 2))
        confidence = sampled.max(axis=3)
        correct = predicted == truth[None]
        ece = np.zeros(len(draws))
        for j in range(10):
            inside = (confidence >= j / 10) & (confidence < (j + 1) / 10)
            count = inside.sum(axis=(0, 2))
            with np.errstate(invalid="ignore", divide="ignore"):
                gap = np.abs((correct & inside).sum(axis=(0, 2)) / count - (confidence * inside).sum(axis=(0, 2)) / count)
            ece += np.where(count > 0, count / (2 * 512) * np.nan_to_num(gap), 0)
        got = estimates.parts["Normal"].datasets[dataset]
        for metric, values in (("accuracy", accuracy), ("averaged_truelabel_likelihood", likelihood),
                               ("expected_calibration_error_1", ece)):
            low, high = np.percentile(values, [2.5, 97.5])
            assert math.isclose(got[metric].low, low, rel_tol=1e-9, abs_tol=1e-12), (dataset, metric)
            assert math.isclose(got[metric].high, high, rel_tol=1e-9, abs_tol=1e-12), (dataset, metric)
        assert got["accuracy"].low < got["accuracy"].value < got["accuracy"].high


def test_demo_sens_and_gler_intervals_match_numpy(runs):
    run = runs["lexical"]
    estimates = bootstrap_run(run, resamples=100, seed=5, benchmarks=["Demo_sens", "GLER"])
    dataset = "TREC"
    records = run.parts["Demo_sens"].records[dataset]
    predicted = np.zeros((8, 128), dtype=int)
    for r in records:
        predicted[r["repeat"], r["test_index"]] = np.argmax(r["prediction"])
    draws = np.array(draw_resamples(128, 100, 5, "Demo_sens", dataset))
    shares = np.array([max(np.bincount(predicted[:, i])) / 8 for i in range(128)])
    consistency = shares[draws].mean(axis=1)
    got = estimates.parts["Demo_sens"].datasets[dataset]["consistency"]
    assert np.allclose([got.low, got.high], np.percentile(consistency, [2.5, 97.5]), rtol=1e-12)

    records = run.parts["GLER"].records[dataset]
    correct = np.zeros((5, 2, 512))
    for r in records:
        correct[r["pass"], r["repeat"], r["test_index"]] = np.argmax(r["prediction"]) == r["label"]
    draws = np.array(draw_resamples(512, 100, 5, "GLER", dataset))
    per_pass = correct[:, :, draws].mean(axis=(1, 3))       # 5 x B
    x = np.array([1, 0.75, 0.25, -0.5, -1.5])
    slopes = np.polyfit(x, per_pass, 1)[0]
    got = estimates.parts["GLER"].datasets[dataset]["accuracy"]
    assert np.allclose([got.low, got.high], np.percentile(slopes, [2.5, 97.5]), rtol=1e-9, atol=1e-12)


def test_averaged_row_averages_each_resample(runs):
    estimates = bootstrap_run(runs["lexical"], resamples=50, seed=2, benchmarks=["Normal"])
    part = estimates.parts["Normal"]
    per_dataset = [part.distributions[d]["accuracy"] for d in FIXTURE_DATASETS]
    assert part.distributions["Averaged"]["accuracy"] == [sum(v) / len(v) for v in zip(*per_dataset)]
    assert part.averaged["accuracy"].value == runs["lexical"].parts["Normal"].averaged["accuracy"]


def test_seed_is_recorded_and_fixes_the_numbers(runs):
    only = ["Normal", "Demo_sens"]
    a = bootstrap_run(runs["lexical"], resamples=40, seed=3, benchmarks=only).to_dict()
    assert a == bootstrap_run(runs["lexical"], resamples=40, seed=3, benchmarks=only).to_dict()
    assert a["seed"] == 3 and a["resamples"] == 40 and list(a["benchmarks"]) == only
    assert a != bootstrap_run(runs["lexical"], resamples=40, seed=4, benchmarks=only).to_dict()


def test_bad_options_are_refused(runs):
    with pytest.raises(ValueError, match="resamples must be >= 1"):
        bootstrap_run(runs["lexical"], resamples=0)
    with pytest.raises(ValueError, match="level must be strictly between 0 and 1"):
        bootstrap_run(runs["lexical"], level=1.5)


# -- comparisons ---------------------------------------------------------------------------
def test_paired_comparison_mcnemar_and_holm(runs):
    a, b = runs["lexical"], runs["uniform"]
    result = compare_runs(a, b, resamples=60, seed=1)
    assert result.paired and set(result.parts) == set(a.parts)
    normal = result.parts["Normal"]
    p_values = []
    for dataset in FIXTURE_DATASETS:
        ra, rb = a.parts["Normal"].records[dataset], b.parts["Normal"].records[dataset]
        right_a = [r["predicted"] == r["label"] for r in ra]
        right_b = [r["predicted"] == r["label"] for r in rb]
        only_a = sum(x and not y for x, y in zip(right_a, right_b))
        only_b = sum(y and not x for x, y in zip(right_a, right_b))
        d = normal.datasets[dataset]["accuracy"]
        assert d.test == "McNemar exact" and d.counts == {"only_a": only_a, "only_b": only_b, "prompts": 1024}
        assert d.p_value == mcnemar_exact(only_a, only_b)
        assert d.delta == b.parts["Normal"].divided[dataset]["accuracy"] - a.parts["Normal"].divided[dataset]["accuracy"]
        assert d.low <= d.delta <= d.high
        p_values.append(d.p_value)
    assert [normal.datasets[d]["accuracy"].p_adjusted for d in FIXTURE_DATASETS] == holm(p_values)
    trec = normal.datasets["TREC"]["accuracy"]
    assert trec.significant and trec.high < 0  # chance is far below the lexical model on TREC
    assert normal.averaged["accuracy"].test == "paired bootstrap"
    assert result.parts["GLER"].datasets["TREC"]["accuracy"].test == "paired bootstrap"


def test_a_run_against_itself_differs_by_nothing(runs):
    result = compare_runs(runs["lexical"], runs["lexical"], resamples=10)
    for part in result.parts.values():
        for row in list(part.datasets.values()) + [part.averaged]:
            for d in row.values():
                assert d.delta == 0 and d.low == 0 == d.high and d.p_value == 1 and not d.significant


def test_paired_resamples_are_shared(runs):
    result = compare_runs(runs["lexical"], runs["uniform"], resamples=30, seed=9)
    alone = bootstrap_run(runs["lexical"], resamples=30, seed=9, benchmarks=["Normal"])
    assert result.estimates_a.parts["Normal"].distributions == alone.parts["Normal"].distributions


def test_runs_on_other_prompts_are_refused_with_what_differs(runs):
    with pytest.raises(UnpairedRunsError) as info:
        compare_runs(runs["lexical"], runs["bm25"], resamples=10)
    message = str(info.value)
    assert "retriever None vs 'BM25Retriever'" in message and "Normal / TREC: prompt set sha256" in message
    assert "paired=False" in message and "--unpaired" in message
    with pytest.raises(UnpairedRunsError, match="Normal: k 4 vs 2"):
        compare_runs(runs["lexical"], runs["k2"], resamples=10)


def test_record_level_prompt_check_without_metadata_hashes(runs):
    import copy
    b = copy.deepcopy(runs["k2"])
    for part in b.parts.values():
        part.metadata.clear()
    with pytest.raises(UnpairedRunsError, match=r"Normal / rotten_tomatoes: prompt of query 0 \(test item 0, repeat 0\)"):
        compare_runs(runs["lexical"], b, resamples=10)


def test_unpaired_comparison_is_explicit(runs):
    result = compare_runs(runs["lexical"], runs["bm25"], paired=False, resamples=100, seed=1)
    assert not result.paired and list(result.parts) == ["Normal"]
    assert any("only in lexical" in s for s in result.skipped)
    d = result.parts["Normal"].datasets["TREC"]["accuracy"]
    assert d.test == "bootstrap" and d.counts is None
    assert d.delta > 0 and d.low > 0 and d.significant  # BM25 demonstrations help the lexical model


# -- malformed inputs ---------------------------------------------------------------------
def _copy_run(tmp_path, source):
    import shutil
    target = tmp_path / "run"
    shutil.copytree(source, target)
    return target


def test_malformed_records_name_file_and_line(runs, tmp_path):
    target = _copy_run(tmp_path, fixture_runs()["k2"])
    lines = (target / "samples.jsonl").read_text().splitlines()
    (target / "samples.jsonl").write_text("\n".join(lines[:2] + ["{not json"] + lines[3:]) + "\n")
    with pytest.raises(RunFormatError, match=r"samples.jsonl, line 3: not valid JSON"):
        load_run(target)
    (target / "samples.jsonl").write_text("\n".join(lines[:4] + [lines[4].replace('"label"', '"lable"')]) + "\n")
    with pytest.raises(RunFormatError, match=r"samples.jsonl, line 5: missing field 'label'"):
        load_run(target)
    (target / "samples.jsonl").write_text(lines[0].replace('"benchmark": "Normal"', '"benchmark": "GLER"') + "\n")
    with pytest.raises(RunFormatError, match=r"line 1: benchmark 'GLER' is not in results.json"):
        load_run(target)


def test_records_that_do_not_match_the_results_are_refused(tmp_path):
    import json
    target = _copy_run(tmp_path, fixture_runs()["k2"])
    document = json.loads((target / "results.json").read_text())
    document["benchmarks"]["Normal"]["results"]["Divided results"]["TREC"]["accuracy"] = 0.123
    (target / "results.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="Normal / TREC: accuracy recomputed from the records is .* but results.json "
                                         "records 0.123"):
        bootstrap_run(load_run(target), resamples=5)
    lines = (target / "samples.jsonl").read_text().splitlines()
    (target / "samples.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ValueError, match=r"Normal / TREC: 1023 records, expected 1024 \(1 passes x 2 repeats x 512 test items\)"):
        bootstrap_run(load_run(target), resamples=5)


def test_results_file_errors(tmp_path):
    (tmp_path / "results.json").write_text('{"format": "other"}')
    with pytest.raises(RunFormatError, match="results.json: format is 'other'; expected 'staicc-results/1'"):
        load_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="has no results.json"):
        load_run(tmp_path / ".." / tmp_path.name / "nothing" if False else tmp_path.parent)


def test_a_run_without_records_has_no_intervals(tmp_path):
    import json
    target = _copy_run(tmp_path, fixture_runs()["k2"])
    document = json.loads((target / "results.json").read_text())
    del document["samples"]
    (target / "results.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="no per-query records: confidence intervals need samples.jsonl"):
        bootstrap_run(load_run(target), resamples=5)


def test_higher_is_better():
    assert stats.higher_is_better("accuracy") is True
    assert stats.higher_is_better("expected_calibration_error_1") is False
    assert stats.higher_is_better("distribution") is None
