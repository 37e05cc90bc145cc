"""The application floor (:mod:`StaICC.runs`): a notebook run writes the run directory ``staicc run`` writes.

The same run is made three ways: ``staicc run``, ``execute(RunConfig(...))`` + ``write``, and
``run_suite`` + ``Run.from_result`` + ``write``.  Their files are compared byte for byte
(samples) and field by field (results.json): only what records *when* and *how* a run was made
may differ: ``provenance.started``, ``finished``, ``seconds``, ``command`` (the command line of
the process: ``staicc run ...`` against the notebook's interpreter) and ``provenance.suite.seconds``
(the suite's own wall time).  Then ``staicc compare``, ``report`` and ``export`` read the
notebook's directory as they read the CLI's.
"""
import contextlib
import json

import pytest

from StaICC.cli import main
from StaICC.datasets import resolve_dataset
from StaICC.engine.selection import Nothing, QuerySubset, Shard
from StaICC.runs import Run, RunConfig, execute, write

BENCHMARKS = "Normal,Triplet_bias"
ITEMS = 16
#: the only fields of results.json that differ between the same run made by the CLI and in a notebook
TIMING_FIELDS = {("provenance", "started"), ("provenance", "finished"), ("provenance", "seconds"),
                 ("provenance", "command"), ("provenance", "suite", "seconds")}


def differing(a, b, path=()):
    """The paths where two JSON documents differ (a key missing on one side counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = set()
        for key in set(a) | set(b):
            found |= differing(a.get(key), b.get(key), path + (key,)) if key in a and key in b else {path + (key,)}
        return found
    return set() if a == b else {path}


def config(**changes):
    base = {"model": "reference", "benchmarks": BENCHMARKS, "datasets": (resolve_dataset("TREC"),),
            "test_items": QuerySubset.first(ITEMS), "progress": False, "log_samples": "compact"}
    return RunConfig(**{**base, **changes})


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    # provenance.packages lists the heavy packages the *process* has loaded; the CLI's table loads NumPy for its
    # ± column after its provenance is taken, so load it first: the three runs then see one process state
    with contextlib.suppress(ImportError):  # without NumPy no run loads it
        import numpy  # noqa: F401
    assert main(["run", "--model", "reference", "--benchmarks", BENCHMARKS, "--datasets", "TREC", "--limit",
                 str(ITEMS), "--output-dir", str(folder / "cli"), "--log-samples", "--no-progress"]) == 0
    run = execute(config())
    write(run, str(folder / "execute"))
    from StaICC import run_suite
    from StaICC.backends.registry import make_backend
    backend = make_backend("reference")
    result = run_suite(backend, BENCHMARKS, datasets=["TREC"], test_items=QuerySubset.first(ITEMS), progress=False,
                       own_distribution=True)  # the CLI's metric columns: the model's own distribution beside
    write(Run.from_result(result, backend), str(folder / "suite"), log_samples="compact")
    return folder, run


@pytest.mark.parametrize("other", ["execute", "suite"])
def test_a_notebook_run_writes_the_clis_run_directory(three_runs, other):
    folder, _run = three_runs
    cli, mine = (json.loads((folder / name / "results.json").read_text(encoding="utf-8")) for name in ("cli", other))
    found = differing(cli, mine)
    if other == "suite":  # Run.from_result is not told the suite's settings: its recorded configuration says so
        assert mine["provenance"]["run_config"]["not_replayable"]
        found = {path for path in found if path[:2] != ("provenance", "run_config")}
    assert found <= TIMING_FIELDS
    assert mine["benchmarks"] == cli["benchmarks"] and mine["provenance"]["suite"]["prompts"] == 128
    for name in ("samples.jsonl", "samples.columns.json"):
        assert (folder / name).exists() is False
        assert (folder / other / name).read_bytes() == (folder / "cli" / name).read_bytes()


def test_the_run_value_holds_what_the_directory_records(three_runs):
    folder, run = three_runs
    written = json.loads((folder / "execute" / "results.json").read_text(encoding="utf-8"))
    assert run.summarised and sorted(run.result) == ["Normal", "Triplet_bias"]
    assert written["provenance"]["model"] == run.provenance["model"]
    assert written["provenance"]["model"]["backend"] == "reference"
    assert run.result["Normal"]["Averaged results"]["accuracy"] == \
        written["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"]


def test_compare_report_and_export_read_the_notebooks_directory(three_runs, capsys):
    folder, _run = three_runs
    assert main(["compare", str(folder / "cli"), str(folder / "execute"), "--format", "json",
                 "--output", str(folder / "compared.json")]) == 0
    assert main(["report", str(folder / "suite"), "--output", str(folder / "report.html")]) == 0
    assert (folder / "report.html").stat().st_size > 1000
    assert main(["export", str(folder / "execute"), "--format", "lm-eval", "--output", str(folder / "lm")]) == 0
    assert any((folder / "lm").rglob("*.json"))
    compared = json.loads((folder / "compared.json").read_text(encoding="utf-8"))
    assert "Normal" in json.dumps(compared)


def test_a_dry_run_and_a_shard_are_records_without_a_directory(tmp_path):
    dry = execute(config(selection=Nothing(), log_samples=None))
    assert not dry.summarised and dry.metadata["distinct_prompts"] > 0
    with pytest.raises(ValueError, match="no results to write"):
        write(dry, str(tmp_path / "dry"))
    shard = execute(config(selection=Shard(0, 2), cache=str(tmp_path / "cache.sqlite"), log_samples=None))
    assert not shard.summarised and shard.metadata["shard"]["count"] == 2
    assert 0 < shard.metadata["distinct_prompts"] < dry.metadata["distinct_prompts"]


def test_write_refuses_a_directory_that_holds_a_run_unless_told(three_runs):
    folder, run = three_runs
    with pytest.raises(ValueError, match="already holds a run"):
        write(run, str(folder / "execute"))
    assert write(run, str(folder / "execute"), overwrite=True) == str(folder / "execute")


def test_a_lite_run_records_its_estimates(tmp_path):
    pytest.importorskip("numpy")
    from StaICC.sampling.lite import LiteSample
    sample = LiteSample(fraction=0.5)
    run = execute(config(benchmarks="Normal", test_items=QuerySubset.lite(sample.fraction), log_samples=None))
    section = run.provenance["lite"]
    assert section["fraction"] == 0.5 and section["full_run"]["distinct"] > section["prompts"]["distinct"]
    assert run.lite is not None and run.lite.fraction == 0.5


def test_a_methods_run_writes_the_clis_directories(tmp_path):
    from StaICC.methods.files import resolve_methods
    assert main(["run", "--model", "reference", "--benchmarks", "Normal", "--datasets", "TREC", "--limit", "32",
                 "--methods", "vanilla,contextual", "--resamples", "50", "--output-dir", str(tmp_path / "cli"),
                 "--no-progress"]) == 0
    run = execute(config(benchmarks="Normal", test_items=QuerySubset.first(32), log_samples=None,
                         methods=tuple(resolve_methods(["vanilla", "contextual"], {})), resamples=50))
    assert run.comparison_error is None and set(run.comparisons) == {"contextual"}
    write(run, str(tmp_path / "execute"))
    for folder in ("", "methods/contextual"):
        cli, mine = (json.loads((tmp_path / name / folder / "results.json").read_text(encoding="utf-8"))
                     for name in ("cli", "execute"))
        assert differing(cli, mine) <= TIMING_FIELDS - {("provenance", "suite", "seconds")}


def test_the_statistics_read_a_run_in_memory_as_its_directory(three_runs):
    from StaICC.report.runs import load_run
    from StaICC.stats import compare_runs
    folder, run = three_runs
    written = load_run(str(folder / "execute"))
    assert set(run.parts) == set(written.parts) == {"Normal", "Contextual_bias", "Domain_bias", "Post_bias"}
    in_memory = compare_runs(run, load_run(str(folder / "cli")), resamples=200).to_dict()
    from_files = compare_runs(written, load_run(str(folder / "cli")), resamples=200).to_dict()
    in_memory.pop("a"), from_files.pop("a")  # the runs' labels: "run" and the directory's name
    assert json.dumps(in_memory, sort_keys=True) == json.dumps(from_files, sort_keys=True)  # NaN as NaN
