"""The NumPy bootstrap equals the pure-Python one; the compact samples file equals the JSON Lines export."""
import builtins
import math
import os
import shutil

import pytest

from run_fixtures import fixture_runs
from StaICC.report.runs import load_run
from StaICC.stats import bootstrap_run, compare_runs, draw_resamples

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def paths():
    return fixture_runs()


def _close(a, b, where):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for x, y in zip(a, b):
            _close(x, y, where)
        return
    if math.isinf(a) or math.isnan(a):
        assert a == b or (math.isnan(a) and math.isnan(b)), where
        return
    assert abs(a - b) <= 1e-12 * max(1.0, abs(a)), (where, a, b)


def test_numpy_bootstrap_equals_python_bootstrap_on_every_sub_benchmark(paths):
    run = load_run(paths["lexical"])
    fast = bootstrap_run(run, resamples=25, seed=3, engine="numpy")
    slow = bootstrap_run(run, resamples=25, seed=3, engine="python")
    assert set(fast.parts) == set(slow.parts) and {"Normal", "GLER", "Post_bias", "Template_sens"} <= set(fast.parts)
    compared = 0
    for name, part in fast.parts.items():
        for dataset, metrics in part.distributions.items():
            for metric, values in metrics.items():
                _close(values, slow.parts[name].distributions[dataset][metric], (name, dataset, metric))
                compared += 1
    assert compared >= 40


def test_numpy_comparison_equals_python_comparison(paths):
    a, b = load_run(paths["lexical"]), load_run(paths["uniform"])
    fast = compare_runs(a, b, resamples=20, seed=5, engine="numpy").to_dict()
    slow = compare_runs(a, b, resamples=20, seed=5, engine="python").to_dict()
    for name, part in fast["benchmarks"].items():
        for dataset, metrics in part["datasets"].items():
            for metric, cell in metrics.items():
                other = slow["benchmarks"][name]["datasets"][dataset][metric]
                for key in ("delta", "low", "high"):
                    _close(cell[key], other[key], (name, dataset, metric, key))


def test_draws_are_the_same_with_and_without_numpy(monkeypatch):
    with_numpy = draw_resamples(37, 4, 11, "Normal", "TREC")
    assert with_numpy.matrix is not None and with_numpy.matrix.shape == (4, 37)
    real_import = builtins.__import__

    def no_numpy(name, *args, **kwargs):
        if name == "numpy":
            raise ImportError("no numpy here")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_numpy)
    without = draw_resamples(37, 4, 11, "Normal", "TREC")
    assert without.matrix is None and list(without) == list(with_numpy)
    assert all(0 <= i < 37 for row in without for i in row)


def test_compact_samples_file_gives_the_same_records_and_intervals(paths, tmp_path):
    source = paths["lexical"]
    assert os.path.isfile(os.path.join(source, "samples.columns.json"))
    jsonl_only = str(tmp_path / "jsonl")
    shutil.copytree(source, jsonl_only)
    os.remove(os.path.join(jsonl_only, "samples.columns.json"))
    compact, plain = load_run(source), load_run(jsonl_only)
    assert hasattr(compact.parts["Normal"].records[next(iter(compact.parts["Normal"].records))], "columns")
    for name, part in plain.parts.items():
        for dataset, records in part.records.items():
            other = compact.parts[name].records[dataset]
            assert len(other) == len(records)
            for i in (0, len(records) // 2, len(records) - 1):
                x, y = records[i], other[i]
                assert {k: x[k] for k in y if k != "prediction"} == {k: y[k] for k in y if k != "prediction"}
                assert y["prediction"] == [float(v) for v in x["prediction"]]
    a = bootstrap_run(compact, resamples=10, seed=1, benchmarks=["Normal", "Post_bias"]).to_dict()
    b = bootstrap_run(plain, resamples=10, seed=1, benchmarks=["Normal", "Post_bias"]).to_dict()
    assert a.pop("run") == "lexical" and b.pop("run") == "jsonl" and a == b
