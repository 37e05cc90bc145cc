"""Exports of a hostile run directory and the read-back of a hostile export: bounded by the file's size,
checked against the run they claim to be, one line each; the package reads back what it writes."""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys

import pytest

from StaICC.errors import RunFormatError
from StaICC.report.runs import load_run
from StaICC.results.eee_import import read_export


def cli(*argv, timeout=300, limit_bytes=None):
    """(exit status, stderr) of ``staicc argv``; ``limit_bytes``: a real file-size limit on the child."""
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    done = subprocess.run([sys.executable, "-m", "StaICC", *argv], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=os.getcwd()), preexec_fn=limited if limit_bytes else None)
    return done.returncode, done.stderr


def assert_one_line(code, err, expected_code=1):
    assert code == expected_code and "Traceback" not in err, err[-600:]
    assert len(err.strip().splitlines()) == 1, err


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run") / "run"
    code, err = cli("run", "--datasets", "0", "--limit", "8", "--no-progress", "--log-samples",
                    "--output-dir", str(directory))
    assert code == 0, err
    return directory


def copied(run_dir, tmp_path, edit=None, samples=None):
    """A copy of the run with its results.json edited by ``edit(document)`` and its records by ``samples``."""
    target = tmp_path / "copy"
    shutil.copytree(run_dir, target)
    if edit is not None:
        document = json.loads((target / "results.json").read_text())
        edit(document)
        (target / "results.json").write_text(json.dumps(document))
    if samples is not None:
        lines = [json.loads(line) for line in (target / "samples.jsonl").read_text().splitlines()]
        samples(lines)
        text = "".join(json.dumps(line) + "\n" for line in lines)
        (target / "samples.jsonl").write_text(text)
        columns = json.loads((target / "samples.columns.json").read_text())  # made to match: a copied pair
        columns["samples_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        (target / "samples.columns.json").write_text(json.dumps(columns))
    return target


def exported(run_dir, tmp_path):
    out = tmp_path / "eee"
    code, err = cli("export", str(run_dir), "--format", "eee", "-o", str(out), "--no-intervals")
    assert code == 0, err
    aggregate = next(p for p in out.rglob("*.json"))
    return out, aggregate


@pytest.mark.parametrize("index", [10 ** 8, 10 ** 12, -1, True, 1.5])
def test_a_forged_list_position_in_an_eee_file_is_refused_without_allocating(run_dir, tmp_path, index):
    out, aggregate = exported(run_dir, tmp_path)
    document = json.loads(aggregate.read_text())
    details = document["evaluation_results"][0]["score_details"]["details"]
    details["path"] = json.dumps(json.loads(details["path"]) + [index])
    aggregate.write_text(json.dumps(document))
    code = f"from StaICC.report.runs import load_run\nload_run({str(out)!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.getcwd()))  # it took 87 s and 2 GB at 10**8
    assert "RunFormatError" in done.stderr and "not a complete StaICC export" in done.stderr, done.stderr[-400:]


def test_the_package_reads_back_its_own_export_of_a_long_answer(run_dir, tmp_path):
    answer = "positive " + "é\"\\" * 800_000  # 2.4 MB of characters, more as escaped JSON
    source = copied(run_dir, tmp_path, samples=lambda lines: lines[0].update(text=answer))
    os.remove(source / "samples.columns.json")
    out, _aggregate = exported(source, tmp_path)
    _document, _file, _samples, records = read_export(str(out))
    assert next(record for _where, record in records)["text"] == answer


@pytest.mark.parametrize("field, value", [("prediction", "evil"), ("prediction", [0.5, 0.5, 0.0]),
                                          ("prediction", [float("nan"), 1.0]), ("predicted", 7), ("label", "x"),
                                          ("dataset", "other"), ("benchmark", "GLER")])
def test_a_copied_records_file_that_is_not_the_runs_is_refused(run_dir, tmp_path, field, value):
    source = copied(run_dir, tmp_path, samples=lambda lines: lines[3].update({field: value}))
    code, err = cli("export", str(source), "--format", "eee", "-o", str(tmp_path / "out"), "--no-intervals")
    assert_one_line(code, err)
    assert "line 4" in err and "are not the run's" in err
    assert not (tmp_path / "out" / "data").exists() or not list((tmp_path / "out").rglob("*_samples.jsonl"))


def _renamed(*names):
    def edit(document):
        results = document["benchmarks"]["Normal"]["results"]["Divided results"]
        body = results.pop(next(iter(results)))
        for name in names:
            results[name] = body
        document.pop("samples", None)
    return edit


def test_lm_eval_datasets_whose_task_names_collide_are_refused(run_dir, tmp_path):
    source = copied(run_dir, tmp_path, edit=_renamed("ab-c", "AB_C"))
    code, err = cli("export", str(source), "--format", "lm-eval", "-o", str(tmp_path / "out"))
    assert_one_line(code, err)
    assert "'ab-c' and 'AB_C' both become the lm-eval task 'staicc_normal_ab_c'" in err


@pytest.mark.parametrize("name", ["average", "", "Averaged"])
@pytest.mark.parametrize("form", ["eee", "hf", "lm-eval"])
def test_a_dataset_with_a_reserved_name_is_refused(run_dir, tmp_path, name, form):
    source = copied(run_dir, tmp_path, edit=_renamed("kept", name))
    code, err = cli("export", str(source), "--format", form, "-o", str(tmp_path / "out"), "--hf-dataset", "o/d")
    assert_one_line(code, err)
    assert f"a dataset named {name!r} cannot be exported" in err


@pytest.mark.parametrize("form, link", [("hf", (".eval_results",)), ("eee", ("data",)),
                                        ("eee", ("data", "staicc")), ("eee", ("data", "staicc", "reference"))])
def test_a_folder_link_planted_in_the_output_is_replaced_not_followed(run_dir, tmp_path, form, link):
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "out"
    (out.joinpath(*link[:-1])).mkdir(parents=True)
    os.symlink(victim, out.joinpath(*link))
    code, err = cli("export", str(run_dir), "--format", form, "-o", str(out), "--hf-dataset", "o/d",
                    "--no-intervals")
    assert code == 0, err
    assert list(victim.iterdir()) == [] and not os.path.islink(out.joinpath(*link))


def _provenance(value):
    return lambda document: document.update(provenance=value)


def _model(value):
    return lambda document: document["provenance"].update(model=value)


def _huge_value(document):
    document["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"] = "HUGE"


@pytest.mark.parametrize("edit", [_provenance("x"), _provenance([1]), _model("m"), _model({"identity": 3}),
                                  _model({"arguments": [1], "identity": {"backend": []}}), _huge_value],
                         ids=["provenance text", "provenance list", "model text", "identity number",
                              "arguments list", "10^400"])
@pytest.mark.parametrize("form", ["eee", "hf", "lm-eval"])
def test_a_malformed_run_is_one_line_in_every_format(run_dir, tmp_path, edit, form):
    source = copied(run_dir, tmp_path, edit=edit)
    text = (source / "results.json").read_text().replace('"HUGE"', "1" + "0" * 400)
    (source / "results.json").write_text(text)
    code, err = cli("export", str(source), "--format", form, "-o", str(tmp_path / "out"), "--hf-dataset", "o/d")
    assert code in (0, 1) and "Traceback" not in err, err[-600:]
    assert code == 0 or len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("form", ["eee", "hf", "lm-eval"])
def test_a_file_size_limit_while_exporting_is_one_line(run_dir, tmp_path, form):
    code, err = cli("export", str(run_dir), "--format", form, "-o", str(tmp_path / "out"), "--hf-dataset", "o/d",
                    "--no-intervals", limit_bytes=2000)
    assert_one_line(code, err)
    assert "File too large" in err


def test_a_long_model_name_exports(run_dir, tmp_path):
    code, err = cli("export", str(run_dir), "--format", "eee", "-o", str(tmp_path / "out"), "--no-intervals",
                    "--model-id", "org/" + "m" * 400)
    assert code == 0, err


@pytest.mark.parametrize("value", ["10000000000", "1e10", "0"])
def test_export_resamples_out_of_range_is_an_argument_error(run_dir, tmp_path, value):
    code, err = cli("export", str(run_dir), "--format", "lm-eval", "-o", str(tmp_path / "out"), "--resamples", value)
    assert_one_line(code, err, expected_code=2)


@pytest.mark.parametrize("document", [{"evaluation_results": [{}], "eval_library": {
    "name": "StaICC", "additional_details": {"format": "FORMAT"}}}, [], {"evaluation_results": 3}])
def test_a_bad_eee_input_is_one_line(tmp_path, document):
    from StaICC.results.eee_export import EXPORT_FORMAT
    path = tmp_path / "12345678-1234-4234-8234-123456789012.json"
    path.write_text(json.dumps(document).replace("FORMAT", EXPORT_FORMAT))
    code, err = cli("export", str(path), "--format", "lm-eval", "-o", str(tmp_path / "out"))
    assert code in (1, 2) and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises((RunFormatError, ValueError, FileNotFoundError)):
        load_run(str(path))


@pytest.mark.parametrize("name, value", [("provenance", "[1]"), ("provenance", '"x"'), ("metadata.Normal", "[3]")])
def test_an_eee_export_with_malformed_provenance_or_metadata_is_one_line(run_dir, tmp_path, name, value):
    out, aggregate = exported(run_dir, tmp_path)
    document = json.loads(aggregate.read_text())
    document["eval_library"]["additional_details"][name] = value
    aggregate.write_text(json.dumps(document))
    with pytest.raises(RunFormatError, match=f"{name} must be a JSON object"):
        load_run(str(out))
    code, err = cli("report", str(out))
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"format": ' + "9" * 5000 + "}"])
def test_a_hostile_columns_file_is_one_line_or_ignored(run_dir, tmp_path, text):
    source = copied(run_dir, tmp_path)
    (source / "samples.columns.json").write_text(text)
    code, err = cli("report", str(source))
    assert "Traceback" not in err, err[-400:]
    assert code == 0 or len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("form", ["eee", "hf", "lm-eval"])
def test_a_query_key_inside_a_recorded_name_url_argument_is_not_exported(run_dir, tmp_path, form):
    canary = "sk-canary-4d3c2b1a0f9e"
    argument = f"--model-args=base_url=http://h/v1?api_key={canary}"
    source = copied(run_dir, tmp_path, edit=lambda document: document["provenance"].update(
        command=["staicc", "run", argument], note=f"x=http://h/?token={canary}"))
    out = tmp_path / "out"
    code, err = cli("export", str(source), "--format", form, "-o", str(out), "--hf-dataset", "o/d", "--no-intervals")
    assert code == 0, err
    assert not [p for p in out.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
