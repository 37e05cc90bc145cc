"""``staicc verify`` of a run made in Python (``StaICC.runs.execute`` + ``write``): its provenance records the
run's configuration, from which verify writes the prompts again and re-scores the audit bit for bit; a run
recorded before that (the command line only) is still audited from its command line; a configuration that
cannot be written as data is one line, exit 2.  ``provenance.command`` is the argv ``main`` parsed."""
import json
import os

import pytest

from StaICC.cli import main
from StaICC.engine.selection import QuerySubset
from StaICC.runs import RunConfig, execute, write


@pytest.fixture(scope="module")
def python_run(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("python_run") / "run")
    config = RunConfig(model="reference", benchmarks="all", datasets=("TREC", "SST5"),
                       test_items=QuerySubset.first(10), progress=False)
    write(execute(config), path, log_samples="compact")
    return path


def provenance_of(directory):
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as fh:
        return json.load(fh)["provenance"]


def test_the_configuration_is_recorded_as_data(python_run):
    recorded = provenance_of(python_run)["run_config"]
    assert recorded["model"] == "reference" and recorded["benchmarks"] == "all" and recorded["k"] == 4
    assert recorded["datasets"] == ["TREC", "SST5"] and recorded["test_items"] == {"first": 10}
    assert "not_replayable" not in recorded


def test_verify_re_scores_a_python_run_bit_for_bit(python_run, capsys):
    records = sum(1 for _ in open(os.path.join(python_run, "samples.jsonl"), encoding="utf-8"))
    assert main(["verify", python_run, "--model", "reference", "--audit", str(records)]) == 0
    out = capsys.readouterr().out
    assert f"{records} bit for bit" in out and out.strip().splitlines()[-1].startswith("PASSED"), out


def test_an_altered_answer_of_a_python_run_is_found(python_run, tmp_path, capsys):
    import shutil
    target = str(tmp_path / "altered")
    shutil.copytree(python_run, target)
    path = os.path.join(target, "samples.jsonl")
    records = [json.loads(line) for line in open(path, encoding="utf-8")]
    row = records[3]["prediction"]
    records[3]["prediction"] = row[1:] + row[:1]
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    os.remove(os.path.join(target, "samples.columns.json"))
    assert main(["verify", target, "--model", "reference", "--audit", str(len(records))]) == 1
    assert "1 different" in capsys.readouterr().out


def test_a_run_without_the_configuration_is_audited_from_its_command(tmp_path, capsys):
    path = str(tmp_path / "cli")
    argv = ["run", "--model", "reference", "--datasets", "TREC", "--limit", "8", "--log-samples",
            "--output-dir", path, "--no-progress"]
    assert main(argv) == 0
    document = json.load(open(os.path.join(path, "results.json"), encoding="utf-8"))
    assert document["provenance"]["command"] == ["staicc"] + argv  # the argv main parsed, not the test runner's
    del document["provenance"]["run_config"]  # as a run written before the configuration was recorded
    json.dump(document, open(os.path.join(path, "results.json"), "w", encoding="utf-8"))
    capsys.readouterr()
    assert main(["verify", path, "--model", "reference", "--audit", "16"]) == 0
    assert "16 bit for bit" in capsys.readouterr().out


def test_a_configuration_that_is_not_data_is_one_line(tmp_path, capsys):
    from StaICC.retrieval import retriever_from_name
    path = str(tmp_path / "retrieved")
    config = RunConfig(model="reference", datasets=("TREC",), test_items=QuerySubset.first(10), progress=False,
                       retriever=retriever_from_name("random"))
    write(execute(config), path, log_samples="compact")
    assert provenance_of(path)["run_config"]["not_replayable"] == ["a retriever object (RandomRetriever)"]
    capsys.readouterr()
    assert main(["verify", path, "--model", "reference"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot be written again" in err and "retriever" in err, err


def test_a_command_line_run_with_a_retriever_is_audited_from_its_command(tmp_path, capsys):
    path = str(tmp_path / "cli_retriever")
    assert main(["run", "--model", "reference", "--datasets", "TREC", "--limit", "10", "--retriever", "random",
                 "--log-samples", "--output-dir", path, "--no-progress"]) == 0
    assert provenance_of(path)["run_config"]["not_replayable"]
    capsys.readouterr()
    assert main(["verify", path, "--model", "reference", "--audit", "10"]) == 0
    assert "10 bit for bit" in capsys.readouterr().out


def test_a_result_recorded_without_its_configuration_is_one_line(tmp_path, capsys):
    from StaICC import run_suite
    from StaICC.backends.registry import make_backend
    from StaICC.runs import Run
    backend = make_backend("reference")
    result = run_suite(backend, "Normal", datasets=["TREC"], test_items=QuerySubset.first(10), progress=False)
    path = str(tmp_path / "suite")
    write(Run.from_result(result, backend), path, log_samples="compact")
    capsys.readouterr()
    assert main(["verify", path]) == 0  # the aggregates need no configuration
    assert main(["verify", path, "--model", "reference"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Run.from_result" in err, err
