"""``staicc export``: a full standard suite of the built-in reference model as Every Eval Ever files, validated
against EEE's published JSON schemas (``tests/reference/eee/``), read back by ``staicc compare`` with identical
numbers; the Hugging Face ``.eval_results`` YAML read by ``huggingface_hub``'s own parser; the lm-eval JSON.

The full suite is 111,400 instance records; validating each with ``jsonschema`` takes most of a minute, so every
record's structure (its keys and value types, which is all the instance schema constrains besides two constants
the writer always writes) is compared with the records validated in full: the first of each sub-benchmark and
dataset, and every 50th.  The smaller tests export the shared two-dataset fixture runs.
"""
import glob
import hashlib
import json
import os
import pathlib

import pytest

from StaICC.cli import main
from conftest import REPO_ROOT
from run_fixtures import fixture_runs

jsonschema = pytest.importorskip("jsonschema")
SCHEMAS = REPO_ROOT / "tests" / "reference" / "eee"
RESAMPLES = "40"


def load_json(path):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def run_cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """The standard suite (every sub-benchmark, the ten datasets, full test sets) with its records."""
    out = str(tmp_path_factory.mktemp("suite") / "reference")
    assert main(["run", "--model", "reference", "--benchmarks", "all", "--output-dir", out, "--log-samples",
                 "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def exported(full_run, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("eee"))
    assert main(["export", full_run, "--format", "eee", "-o", out, "--resamples", RESAMPLES]) == 0
    (aggregate,) = glob.glob(os.path.join(out, "data", "staicc", "*", "*", "*.json"))
    return out, aggregate, aggregate[:-len(".json")] + "_samples.jsonl"


@pytest.fixture(scope="module")
def small_run():
    """All five standard sub-benchmarks on rotten_tomatoes and TREC, with records (shared, read-only)."""
    return fixture_runs()["lexical"]


def validator(name):
    with open(SCHEMAS / name, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_aggregate_validates_and_holds_every_number(full_run, exported):
    from StaICC.report.runs import load_run
    from StaICC.results.exchange import reported_values
    out, aggregate, samples = exported
    document = load_json(aggregate)
    errors = [f"{list(e.path)}: {e.message}" for e in validator("eval.schema.json").iter_errors(document)]
    assert errors == []
    relative = os.path.relpath(samples, out).replace(os.sep, "/")
    detail = document["detailed_evaluation_results"]
    assert detail["file_path"] == relative and detail["total_rows"] == 111_400
    assert detail["checksum"] == hashlib.sha256(pathlib.Path(samples).read_bytes()).hexdigest()
    run = load_run(full_run, records=False)
    scores = {e["evaluation_result_id"]: e["score_details"]["score"] for e in document["evaluation_results"]}
    assert len(scores) == len(document["evaluation_results"])  # ids are unique
    expected = {v.result_id: v.value for p in run.parts.values() for v in reported_values(p.name, p.results) if v.scalar}
    assert scores == expected and scores["Normal/TREC/accuracy"] == run.parts["Normal"].divided["TREC"]["accuracy"]
    assert "Contextual_bias/average/distribution" not in scores  # the standard's 0.0 for a vector is no score
    assert scores["GLER/TREC/accuracy/slope"] == run.parts["GLER"].divided["TREC"]["sensitivity"]["accuracy"][0]
    assert scores["GLER/average/accuracy/slope"] == run.parts["GLER"].averaged["accuracy"]
    for entry in document["evaluation_results"]:  # within the stated range (EEE's validator warns otherwise)
        low, high = (entry["metric_config"][k] for k in ("min_score", "max_score"))
        score = entry["score_details"]["score"]
        assert (low == "-Infinity" or score >= low) and (high == "Infinity" or score <= high), entry
    assert document["model_info"]["id"] == "reference/lexical"
    assert document["eval_library"]["name"] == "StaICC" and document["eval_library"]["additional_details"][
        "standard"] == "true"


def test_intervals_are_the_reports_bootstrap_intervals(full_run, exported):
    from StaICC.report.runs import load_run
    from StaICC.stats import bootstrap_run
    document = load_json(exported[1])
    entries = {e["evaluation_result_id"]: e["score_details"] for e in document["evaluation_results"]}
    estimates = bootstrap_run(load_run(full_run), resamples=int(RESAMPLES))
    for result_id, (part, dataset, metric) in {"Normal/TREC/accuracy": ("Normal", "TREC", "accuracy"),
                                               "Demo_sens/average/consistency": ("Demo_sens", None, "consistency"),
                                               "GLER/SST5/macro_F1/slope": ("GLER", "SST5", "macro_F1")}.items():
        cells = estimates.parts[part]
        cell = cells.averaged[metric] if dataset is None else cells.datasets[dataset][metric]
        interval = entries[result_id]["uncertainty"]["confidence_interval"]
        assert (interval["lower"], interval["upper"], interval["confidence_level"]) == (cell.low, cell.high, 0.95)
        assert entries[result_id]["uncertainty"]["num_bootstrap_samples"] == int(RESAMPLES)
    assert entries["Normal/TREC/accuracy"]["uncertainty"]["num_samples"] == 512
    assert "uncertainty" not in entries["GLER/TREC/accuracy/pass-2"]  # StaICC bootstraps no per-pass value


def skeleton(value, path=""):
    """The keys and value types of a JSON value (what the instance schema constrains)."""
    if isinstance(value, dict):
        return frozenset((path, "object")).union(*(skeleton(v, f"{path}.{k}") for k, v in value.items()))
    if isinstance(value, list):
        return frozenset({(path, "array")}).union(*(skeleton(v, path + "[]") for v in value))
    return frozenset({(path, type(value).__name__)})


def test_every_instance_validates(exported):
    check = validator("instance_level_eval.schema.json")
    validated, seen, count = set(), set(), 0
    with open(exported[2], encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            instance = json.loads(line)
            shape = skeleton(instance)
            first = instance["evaluation_name"] not in seen
            if first or number % 50 == 0 or shape not in validated:
                errors = [e.message for e in check.iter_errors(instance)]
                assert errors == [], (number, errors)
                validated.add(shape)
                seen.add(instance["evaluation_name"])
            assert instance["interaction_type"] == "single_turn" and instance["answer_attribution"][0]["turn_idx"] == 0
            count += 1
    assert count == 111_400 and len(seen) == 70


def test_compare_reads_the_export_back_with_identical_numbers(full_run, exported):
    from StaICC.report.runs import load_run
    from StaICC.stats import compare_runs
    original, loaded = load_run(full_run), load_run(exported[0])
    same = compare_runs(original, original, resamples=int(RESAMPLES)).to_dict()
    back = compare_runs(original, loaded, resamples=int(RESAMPLES)).to_dict()
    same.pop("b"), back.pop("b")  # the second run's label
    assert back == same
    assert list(loaded.parts) == list(original.parts) and loaded.provenance == original.provenance
    for name, part in original.parts.items():
        assert loaded.parts[name].results == part.results and loaded.parts[name].metadata == part.metadata
        for dataset, records in part.records.items():
            assert len(loaded.parts[name].records[dataset]) == len(records)
            first = dict(records[3])
            assert {k: loaded.parts[name].records[dataset][3][k] for k in first} == first


def test_compare_and_report_take_an_export_folder_or_file(small_run, tmp_path, capsys):
    out = str(tmp_path / "eee")
    run_cli(["export", small_run, "--format", "eee", "-o", out, "--no-intervals"], capsys)
    (aggregate,) = glob.glob(os.path.join(out, "data", "staicc", "*", "*", "*.json"))
    table = run_cli(["compare", small_run, out, "--resamples", "20"], capsys)
    assert "GLER" in table and "Demo_sens" in table
    assert run_cli(["compare", small_run, aggregate, "--format", "json", "--resamples", "20"], capsys)
    report = run_cli(["report", out, "--resamples", "20"], capsys)
    assert "rotten_tomatoes" in report


def test_export_is_deterministic(small_run, tmp_path, capsys):
    files = []
    for name in ("one", "two"):
        run_cli(["export", small_run, "--format", "eee", "-o", str(tmp_path / name), "--resamples", "20"], capsys)
        files.append(sorted(glob.glob(str(tmp_path / name / "data" / "staicc" / "*" / "*" / "*"))))
    assert [os.path.basename(f) for f in files[0]] == [os.path.basename(f) for f in files[1]]
    assert [pathlib.Path(f).read_bytes() for f in files[0]] == [pathlib.Path(f).read_bytes() for f in files[1]]


def test_hf_eval_results_parse_with_the_hubs_reader(small_run, tmp_path, capsys):
    yaml = pytest.importorskip("yaml")
    hub = pytest.importorskip("huggingface_hub")
    out = tmp_path / "hf"
    run_cli(["export", small_run, "--format", "hf", "-o", str(out), "--hf-dataset", "someone/staicc",
             "--hf-source-url", "https://example.org/run", "--resamples", RESAMPLES], capsys)
    entries = yaml.safe_load((out / ".eval_results" / "staicc.yaml").read_text(encoding="utf-8"))
    parsed = hub.parse_eval_result_entries(entries) if hasattr(hub, "parse_eval_result_entries") else None
    by_task = {e["dataset"]["task_id"]: e for e in entries}
    results = load_json(os.path.join(small_run, "results.json"))["benchmarks"]
    assert by_task["Normal/average/accuracy"]["value"] == results["Normal"]["results"]["Averaged results"]["accuracy"]
    assert by_task["Normal/TREC/macro_F1"]["value"] == results["Normal"]["results"]["Divided results"]["TREC"]["macro_F1"]
    assert by_task["Post_bias/TREC/DL div."]["value"] == \
        results["Triplet_bias"]["results"]["post"]["Divided results"]["TREC"]["DL div."]
    assert all(type(e["value"]) is float for e in entries)  # no number read back as text
    assert "k=4; standard settings" in by_task["Normal/TREC/accuracy"]["notes"]
    assert "95% interval" in by_task["Normal/TREC/accuracy"]["notes"]
    if parsed is not None:
        assert len(parsed) == len(entries) and parsed[0].dataset_id == "someone/staicc"
        assert parsed[0].source_url == "https://example.org/run"


def test_lm_eval_results_json(small_run, tmp_path, capsys):
    out = tmp_path / "lm"
    run_cli(["export", small_run, "--format", "lm-eval", "-o", str(out), "--resamples", RESAMPLES], capsys)
    document = load_json(out / "results.json")
    for key in ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "group_subtasks"):
        assert document[key], key
    task = document["results"]["staicc_normal_trec"]
    results = load_json(os.path.join(small_run, "results.json"))["benchmarks"]
    assert task["accuracy,none"] == results["Normal"]["results"]["Divided results"]["TREC"]["accuracy"]
    assert isinstance(task["accuracy_stderr,none"], float) and task["accuracy_stderr,none"] > 0
    assert document["groups"]["staicc_normal"]["accuracy,none"] == \
        results["Normal"]["results"]["Averaged results"]["accuracy"]
    assert document["n-shot"]["staicc_normal_trec"] == 4 and document["configs"]["staicc_normal_trec"][
        "dataset_path"] == "CogComp/trec"
    assert document["higher_is_better"]["staicc_normal_trec"]["expected_calibration_error_1"] is False
    assert "staicc_gler_trec" in document["group_subtasks"]["staicc_gler"]
    assert document["results"]["staicc_gler_trec"]["accuracy_slope,none"] == \
        results["GLER"]["results"]["Divided results"]["TREC"]["sensitivity"]["accuracy"][0]


@pytest.mark.parametrize("argv, message", [
    (["--format", "hf"], "needs --hf-dataset ID"),
    (["--format", "json"], "invalid choice: 'json'"),
    (["--format", "eee", "--model-id", "flat"], "--model-id must have the form ORG/NAME"),
    (["--format", "eee", "--level", "1.5"], "--level must be strictly between 0 and 1"),
])
def test_argument_errors_are_one_line(tmp_path, capsys, argv, message):
    run = tmp_path / "no-run"
    run.mkdir()
    assert main(["export", str(run), "-o", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unreadable_inputs_are_clear_errors(small_run, tmp_path, capsys):
    out = str(tmp_path / "eee")
    run_cli(["export", small_run, "--format", "eee", "-o", out, "--no-intervals"], capsys)
    (aggregate,) = glob.glob(os.path.join(out, "data", "staicc", "*", "*", "*.json"))
    samples = aggregate[:-len(".json")] + "_samples.jsonl"
    assert main(["export", out, "--format", "eee", "-o", str(tmp_path / "x")]) == 1
    assert "already an Every Eval Ever export" in capsys.readouterr().err
    foreign = tmp_path / "foreign.json"
    document = load_json(aggregate)
    document["eval_library"] = {"name": "lm_eval", "version": "0.4.9"}
    foreign.write_text(json.dumps(document), encoding="utf-8")
    assert main(["compare", str(foreign), aggregate]) == 1
    assert "written by 'lm_eval', not by `staicc export`" in capsys.readouterr().err
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("00000000-0000-4000-8000-000000000000.json", os.path.basename(aggregate)):
        (twice / name).write_bytes(pathlib.Path(aggregate).read_bytes())
    assert main(["compare", str(twice), aggregate]) == 1
    assert "holds 2 StaICC exports" in capsys.readouterr().err
    assert main(["compare", str(tmp_path), aggregate]) == 2  # exports deeper than an export's own layout are not looked for
    assert "has no results.json" in capsys.readouterr().err
    with open(samples, "rb") as source:
        first = source.readline()
    with open(samples, "wb") as target:
        target.write(first + b'{"metadata": {"label": "one"}}\n')
    assert main(["compare", out, small_run, "--resamples", "5"]) == 1
    err = capsys.readouterr().err
    assert "_samples.jsonl, line 2: not an instance record written by `staicc export`" in err
