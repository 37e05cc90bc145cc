"""A notebook's ``run_lite`` and ``run_methods`` written as run directories: the CLI's, file for file.

``test_runs_floor`` does this for ``run_suite``; here the lite run (``staicc run --lite 0.5``
against ``run_lite(model, 0.5, ...)``) and the methods run (``staicc run --methods`` against
``run_methods``) are each recorded with ``Run.from_result(result, model)`` and written with
``write``.  ``samples.jsonl`` and its columns are compared byte for byte, ``results.json``
field by field: only when and how the run was made may differ (``TIMING_FIELDS``: the start,
end and wall times, the process's command line).  Then ``staicc compare``, ``report`` and
``export`` read the notebook's directories.
"""
import json

import pytest
from test_runs_floor import TIMING_FIELDS, differing

from StaICC import run_lite, run_methods
from StaICC.backends.registry import make_backend
from StaICC.cli import main
from StaICC.engine.selection import QuerySubset
from StaICC.runs import Run, RunConfig, write

COMMON = ["--model", "reference", "--benchmarks", "Normal", "--datasets", "TREC", "--log-samples", "--no-progress"]
SMALL = {"datasets": ["TREC"], "progress": False, "own_distribution": True}  # the CLI's metric columns

pytestmark = pytest.mark.filterwarnings("ignore")  # a smoke run's departures from the standard are warned about


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("numpy")  # the lite run's estimates
    folder = tmp_path_factory.mktemp("notebook")
    assert main(["run", *COMMON, "--lite", "0.5", "--output-dir", str(folder / "lite-cli")]) == 0
    assert main(["run", *COMMON, "--limit", "32", "--methods", "vanilla,contextual", "--resamples", "50",
                 "--output-dir", str(folder / "methods-cli")]) == 0
    backend = make_backend("reference")
    lite = run_lite(backend, 0.5, "Normal", **SMALL)
    # its configuration, so that the record says how to plan its prompts again and counts the full run, as the CLI
    config = RunConfig(model="reference", benchmarks="Normal", datasets=("TREC",), test_items=QuerySubset.lite(0.5))
    write(Run.from_result(lite, backend, config=config), str(folder / "lite"), log_samples="compact")
    methods = run_methods(backend, ["contextual"], "Normal", test_items=QuerySubset.first(32), **SMALL)
    write(Run.from_result(methods, backend, resamples=50), str(folder / "methods"), log_samples="compact")
    return folder


@pytest.mark.parametrize("kind, directory", [("lite", ""), ("methods", ""), ("methods", "methods/contextual")])
def test_a_notebook_call_writes_the_clis_run_directory(runs, kind, directory):
    cli, mine = (runs / name / directory for name in (f"{kind}-cli", kind))
    found = differing(*(json.loads((folder / "results.json").read_text(encoding="utf-8")) for folder in (cli, mine)))
    assert found <= TIMING_FIELDS
    for name in ("samples.jsonl", "samples.columns.json"):
        assert (mine / name).read_bytes() == (cli / name).read_bytes()


def test_the_records_hold_what_the_cli_records(runs):
    lite = json.loads((runs / "lite" / "results.json").read_text(encoding="utf-8"))["provenance"]
    assert lite["lite"]["full_run"] == {"prompts": 1024, "distinct": 1024} and "lite" not in lite["suite"]
    assert "not_replayable" not in lite["run_config"]
    vanilla = json.loads((runs / "methods" / "results.json").read_text(encoding="utf-8"))["provenance"]
    contextual, = [entry for entry in vanilla["methods"] if entry["name"] == "contextual"]
    assert contextual["compared_with_vanilla"]["resamples"] == 50


def test_compare_report_and_export_read_the_notebooks_directories(runs, capsys):
    assert main(["compare", str(runs / "methods"), str(runs / "methods" / "methods" / "contextual"), "--format",
                 "json", "--output", str(runs / "compared.json")]) == 0
    assert "Normal" in (runs / "compared.json").read_text(encoding="utf-8")
    for name in ("lite", "methods"):
        reports = []
        for folder in (name, f"{name}-cli"):  # the same report, but for the run's name (its directory's)
            assert main(["report", str(runs / folder), "--output", str(runs / f"{folder}.report")]) == 0
            reports.append((runs / f"{folder}.report").read_text(encoding="utf-8").replace(f"{name}-cli", name))
        assert reports[0] == reports[1] and "Normal" in reports[0]
        exported = main(["export", str(runs / name), "--format", "lm-eval", "--output", str(runs / f"{name}-lm")])
        if name == "lite":  # read, and refused: a lite run's results are its subset's own numbers
            assert exported == 1 and "is a lite run" in capsys.readouterr().err
            continue
        assert exported == 0 and any((runs / f"{name}-lm").rglob("*.json"))
