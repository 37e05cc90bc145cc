"""Ray's retry of a failed shard, for real: a local Ray cluster, a shard that fails once, a run that finishes.

The task file below fails the first time a Ray worker loads it (the marker directory is
set only in the workers' environment, so the driver never fails): that shard's command
exits with an error, Ray runs it again, and the run ends with the results of a run
that never failed.  With ``retries=0`` the same failure ends the run with one error line.
"""
import json
import os

import pytest

from StaICC.cli import main

ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLAKY_TASK = '''
import os


def config():
    marks = os.environ.get("STAICC_FLAKY_MARKS")
    if marks:  # a Ray worker: the first load anywhere fails, every later one succeeds
        try:
            os.close(os.open(os.path.join(marks, "failed"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            pass
        else:
            raise RuntimeError("injected failure")
    return {"name": "flaky", "data": {"source": "standard", "dataset": "TREC"}}
'''


@pytest.fixture()
def flaky(tmp_path):
    """(task file, marker directory) with Ray started so that its workers see the marker directory."""
    task = tmp_path / "flaky_task.py"
    task.write_text(FLAKY_TASK)
    marks = tmp_path / "marks"
    marks.mkdir()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([ROOT, TESTS]),
                                       "STAICC_FLAKY_MARKS": str(marks)}})
    try:
        yield str(task), marks
    finally:
        ray.shutdown()


def results(directory):
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as fh:
        document = json.load(fh)
    with open(os.path.join(directory, "samples.jsonl"), encoding="utf-8") as fh:
        samples = fh.read()
    return {name: b["results"] for name, b in document["benchmarks"].items()}, samples


def run_args(task, tmp_path, name, *extra):
    return ["run", "--tasks", task, "--benchmarks", "Normal,GLER", "--limit", "10", "--no-progress",
            "--output-dir", str(tmp_path / name), "--log-samples", *extra]


def test_a_failed_shard_is_retried_and_the_run_equals_one_that_never_failed(flaky, tmp_path, capsys):
    task, marks = flaky
    assert main(run_args(task, tmp_path, "plain")) == 0  # in this process: no marker directory, no failure
    status = main(run_args(task, tmp_path, "ray", "--launcher", "ray:shards=2,num_cpus=1,retries=2",
                           "--cache", str(tmp_path / "run.sqlite")))
    out = capsys.readouterr().out
    assert status == 0
    assert (marks / "failed").exists()  # a shard did fail once
    assert "merged 2 shard caches" in out
    assert results(tmp_path / "ray") == results(tmp_path / "plain")


def test_without_retries_the_failure_ends_the_run_with_one_error_line(flaky, tmp_path, capsys):
    task, marks = flaky
    status = main(run_args(task, tmp_path, "ray", "--launcher", "ray:shards=2,num_cpus=1,retries=0",
                           "--cache", str(tmp_path / "run.sqlite")))
    err = capsys.readouterr().err
    assert status == 1 and (marks / "failed").exists()
    errors = [line for line in err.splitlines() if line.startswith("staicc: error:")]
    assert len(errors) == 1 and "\x1b" not in errors[0]
    # why the shard failed, in the shard command's own words, and where its answers are
    assert "a Ray shard failed after its retries: shard " in errors[0]
    assert "config() raised RuntimeError: injected failure" in errors[0] and "run.sqlite.shard-*" in errors[0]
    assert not (tmp_path / "ray" / "results.json").exists()
