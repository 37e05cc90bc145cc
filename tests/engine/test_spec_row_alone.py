"""A sub-benchmark whose procedure is generic is one row of the spec table: no class, no registry entry."""
import pytest

from StaICC.cli import main
from StaICC.spec import SPECS, SubBenchmarkSpec, specs_by_name
from StaICC.subbenchmarks.builtin import sub_benchmark, sub_benchmark_names
from StaICC.subbenchmarks.generic import SubBenchmark
from StaICC.subbenchmarks.suite import run_suite

SMALL = {"datasets": ["financial_phrasebank"], "progress": False}


def first_label(prompt, label_space):
    return [0.5 + 0.25 * (i == len(prompt) % len(label_space)) for i in range(len(label_space))]


@pytest.fixture
def throwaway_row(monkeypatch):
    row = SubBenchmarkSpec("Normal_small", test_size=32, in_standard_suite=False)
    monkeypatch.setitem(SPECS, row.name, row)
    return row


def test_a_row_alone_runs_by_name(throwaway_row, capsys):
    assert throwaway_row.name in sub_benchmark_names()
    assert sub_benchmark(throwaway_row.name).benchmark_name == "Normal_small"
    result = run_suite(first_label, "Normal_small", **SMALL)["Normal_small"]
    assert result.metadata["benchmark"] == "Normal_small"
    assert len(result.records) == 32 * SPECS["Normal"].repeat_times

    class Normal_small(SubBenchmark):  # the way before: a one-line class with the row
        spec = throwaway_row

    by_class = run_suite(first_label, suite={"Normal_small": Normal_small(datasets=SMALL["datasets"])},
                         progress=False)["Normal_small"]
    assert result == by_class and result["Averaged results"]["accuracy"] == by_class["Averaged results"]["accuracy"]
    assert main(["run", "--model", "reference", "--benchmarks", "Normal_small", "--datasets",
                 "financial_phrasebank", "--no-progress"]) == 0
    assert "Normal_small (k=4, model=reference)" in capsys.readouterr().out


def test_a_row_that_needs_its_own_procedure_is_not_made_from_the_row(monkeypatch):
    row = SubBenchmarkSpec("Order_again", procedure="demonstration_order", metrics=("consistency",),
                           result="sensitivity", averaging="sensitivity")
    monkeypatch.setitem(SPECS, row.name, row)
    assert row.name not in sub_benchmark_names()
    with pytest.raises(ValueError, match="unknown sub-benchmark 'Order_again'"):
        run_suite(first_label, "Order_again", **SMALL)


def test_a_name_is_given_to_one_row():
    rows = (SPECS["Normal"], SubBenchmarkSpec("Normal_small"), SubBenchmarkSpec("Normal", test_size=32))
    with pytest.raises(ValueError, match="the spec table names the sub-benchmark 'Normal' twice"):
        specs_by_name(rows)
    assert list(specs_by_name(rows[:2])) == ["Normal", "Normal_small"]
