"""``staicc run --tasks`` and ``staicc tasks ...`` with the reference model: the standard round trip,
the examples through every sub-benchmark, and one task in four formats giving one result."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from run_fixtures import read_results as document, run_cli as run
from StaICC import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "tasks")
SUITE = ["Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens"]


def without_seconds(benchmarks):
    """The benchmarks section with the run times (which differ from run to run) taken out."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "seconds"}
        return value
    return strip(benchmarks)


def sha256_of(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_show_trec_runs_back_to_the_standard_numbers_bit_for_bit(tmp_path, capsys):
    env = dict(os.environ, PYTHONPATH=ROOT)
    shown = subprocess.run([sys.executable, "-m", "StaICC", "tasks", "show", "TREC"], capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=120)
    assert shown.returncode == 0, shown.stderr
    task = tmp_path / "t.toml"
    task.write_text(shown.stdout, encoding="utf-8")
    run(["run", "--tasks", str(task), "--benchmarks", "all", "--output-dir", str(tmp_path / "task")], capsys)
    run(["run", "--datasets", "TREC", "--benchmarks", "all", "--output-dir", str(tmp_path / "standard")], capsys)
    from_task, standard = document(tmp_path / "task"), document(tmp_path / "standard")
    assert list(from_task["benchmarks"]) == SUITE
    assert without_seconds(from_task["benchmarks"]) == without_seconds(standard["benchmarks"])
    assert from_task["provenance"]["suite"]["standard"] is True
    assert all(b["metadata"].get("standard", True) for b in from_task["benchmarks"].values())
    (entry,) = from_task["provenance"]["tasks"]
    assert entry["standard"] is True and entry["departures"] == []
    assert entry["sha256"] == sha256_of(task)
    assert entry["resolved"]["dataset"]["label_words"] == ["short", "entity", "description", "person", "location",
                                                           "number"]
    assert "tasks" not in standard["provenance"]


def test_one_changed_label_word_is_not_standard(tmp_path, capsys):
    text = run(["tasks", "show", "TREC"], capsys).replace('"person"', '"human"')
    task = tmp_path / "t.toml"
    task.write_text(text, encoding="utf-8")
    printed = run(["run", "--tasks", str(task), "--output-dir", str(tmp_path / "out")], capsys)
    assert "NOT STANDARD: task: label words" in printed
    result = document(tmp_path / "out")
    normal = result["benchmarks"]["Normal"]["metadata"]
    assert normal["standard"] is False
    assert any("human" in d for d in normal["non_standard_settings"]["TREC"])
    assert result["provenance"]["tasks"][0]["standard"] is False


@pytest.mark.parametrize("example", ["sentiment.toml", "nli.yaml", "sentiment_asset.py"])
def test_each_example_runs_every_sub_benchmark_with_cache_provenance_and_samples(example, tmp_path, capsys):
    if example.endswith(".yaml"):
        pytest.importorskip("yaml")
    path = os.path.join(EXAMPLES, example)
    out = tmp_path / "out"
    argv = ["run", "--tasks", path, "--benchmarks", "all", "--output-dir", str(out), "--log-samples",
            "--cache", str(tmp_path / "cache.sqlite")]
    run(argv, capsys)
    result = document(out)
    assert list(result["benchmarks"]) == SUITE
    (entry,) = result["provenance"]["tasks"]
    assert entry["sha256"] == sha256_of(path) and entry["file"] == path
    assert entry["standard"] is False and entry["resolved"]["dataset"]["rows"] >= 300
    name = entry["name"]
    assert result["benchmarks"]["Normal"]["metadata"]["non_standard_settings"][name] == ["custom dataset"]
    assert result["benchmarks"]["Normal"]["results"]["Divided results"][name]["accuracy"] > 0
    samples = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert samples and {json.loads(line)["dataset"] for line in samples} == {name}
    # the same command again: every answer from the cache, the same numbers
    run(argv[:5] + ["--output-dir", str(tmp_path / "again"), "--cache", str(tmp_path / "cache.sqlite")], capsys)
    again = document(tmp_path / "again")
    assert again["provenance"]["suite"]["asked"] == 0
    assert without_seconds(again["benchmarks"]) == without_seconds(result["benchmarks"])


def test_the_evaluator_of_the_asset_reports_beside_normal(tmp_path, capsys):
    run(["run", "--tasks", os.path.join(EXAMPLES, "sentiment_asset.py"), "--benchmarks", "Normal",
         "--output-dir", str(tmp_path / "asset")], capsys)
    run(["run", "--tasks", os.path.join(EXAMPLES, "sentiment.toml"), "--benchmarks", "Normal",
         "--output-dir", str(tmp_path / "toml")], capsys)
    asset = document(tmp_path / "asset")["benchmarks"]["Normal"]["results"]["Divided results"]["movie_sentiment"]
    plain = document(tmp_path / "toml")["benchmarks"]["Normal"]["results"]["Divided results"]["movie_sentiment"]
    assert {k: asset[k] for k in plain} == plain
    assert set(asset) - set(plain) == {"f1_negative", "f1_neutral", "f1_positive", "neutral_share"}
    assert 0 <= asset["neutral_share"] <= 1
    hooks = document(tmp_path / "asset")["provenance"]["tasks"][0]["hooks"]
    assert set(hooks) == {"metadata", "post_process", "score"}


def _four_formats(folder):
    """The sentiment example as TOML (the file itself), JSON, YAML and a Python asset without hooks."""
    from StaICC.tasks.files import read_task_file
    mapping = read_task_file(os.path.join(EXAMPLES, "sentiment.toml")).mapping
    mapping["data"]["path"] = os.path.join(ROOT, "examples", "data", "sentiment.csv")
    files = {"toml": folder / "s.toml", "json": folder / "s.json", "py": folder / "s.py"}
    from StaICC.tasks import to_toml
    files["toml"].write_text(to_toml(mapping), encoding="utf-8")
    files["json"].write_text(json.dumps(mapping, indent=1), encoding="utf-8")
    files["py"].write_text(f"import json\n\n\ndef config():\n    return json.loads({json.dumps(mapping)!r})\n",
                           encoding="utf-8")
    try:
        import yaml
    except ImportError:
        return files
    files["yaml"] = folder / "s.yaml"
    files["yaml"].write_text(yaml.safe_dump(mapping, allow_unicode=True), encoding="utf-8")
    return files


def test_toml_json_yaml_and_python_asset_give_identical_results(tmp_path, capsys):
    results = {}
    for kind, path in _four_formats(tmp_path).items():
        run(["run", "--tasks", str(path), "--benchmarks", "all", "--output-dir", str(tmp_path / kind)], capsys)
        results[kind] = document(tmp_path / kind)
    reference = without_seconds(results["toml"]["benchmarks"])
    for kind, result in results.items():
        assert without_seconds(result["benchmarks"]) == reference, kind
        assert result["provenance"]["tasks"][0]["format"] == ("python" if kind == "py" else kind)
        assert result["provenance"]["tasks"][0]["resolved"] == results["toml"]["provenance"]["tasks"][0]["resolved"]
    assert len({r["provenance"]["tasks"][0]["sha256"] for r in results.values()}) == len(results)


def test_tasks_beside_standard_datasets_leave_the_standard_numbers_alone(tmp_path, capsys):
    run(["run", "--datasets", "TREC", "--tasks", os.path.join(EXAMPLES, "sentiment.toml"),
         "--output-dir", str(tmp_path / "both")], capsys)
    run(["run", "--datasets", "TREC", "--output-dir", str(tmp_path / "alone")], capsys)
    both = document(tmp_path / "both")["benchmarks"]["Normal"]
    alone = document(tmp_path / "alone")["benchmarks"]["Normal"]
    assert both["metadata"]["datasets"] == ["TREC", "movie_sentiment"]
    assert both["results"]["Divided results"]["TREC"] == alone["results"]["Divided results"]["TREC"]
    assert both["metadata"]["standard"] is False and "TREC" not in both["metadata"]["non_standard_settings"]


def test_tasks_by_name_from_an_include_path(tmp_path, capsys):
    printed = run(["tasks", "list", "--include-path", EXAMPLES], capsys)
    assert "TREC" in printed and "sentiment " in printed and "movie_sentiment" in printed
    for name in ("sentiment", "movie_sentiment"):  # the file's stem, or its name key
        run(["run", "--tasks", name, "--include-path", EXAMPLES, "--output-dir", str(tmp_path / name)], capsys)
        assert document(tmp_path / name)["provenance"]["tasks"][0]["name"] == "movie_sentiment"
    assert cli.main(["run", "--tasks", "sentimant", "--include-path", EXAMPLES]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["staicc: error: unknown task 'sentimant': not a file, a standard dataset, or a task "
                                "file in --include-path; did you mean 'sentiment'?"]


def test_validate_counts_rows_labels_and_split(capsys):
    printed = run(["tasks", "validate", os.path.join(EXAMPLES, "sentiment.toml")], capsys)
    assert "rows: 570 (30 duplicates dropped)" in printed
    assert "labels: negative (172), neutral (197), positive (201)" in printed
    assert "split: calibration 114, demonstration 342, test 114" in printed
    assert "standard: no (custom dataset)" in printed
    printed = run(["tasks", "validate", "TREC"], capsys)
    assert "standard: yes" in printed and "calibration 1024, demonstration 4096, test 512" in printed


def test_new_from_trec_is_a_runnable_non_standard_copy(tmp_path, capsys):
    target = tmp_path / "mine.toml"
    run(["tasks", "new", "--from", "TREC", "--name", "my_questions", "-o", str(target)], capsys)
    assert target.read_text(encoding="utf-8").startswith("# A StaICC task started from TREC")
    run(["run", "--tasks", str(target), "--output-dir", str(tmp_path / "out")], capsys)
    normal = document(tmp_path / "out")["benchmarks"]["Normal"]
    assert normal["metadata"]["non_standard_settings"] == {"my_questions": ["task: renamed TREC to my_questions"]}
    assert cli.main(["tasks", "new", "--from", "TREC", "-o", str(target)]) == 2  # never overwrites
    assert "exists" in capsys.readouterr().err


def test_task_k_and_benchmarks_are_defaults_the_command_overrides(tmp_path, capsys):
    task = tmp_path / "t.toml"
    task.write_text(run(["tasks", "show", "TREC"], capsys) + '\n[run]\nk = 2\nbenchmarks = ["Normal", "GLER"]\n',
                    encoding="utf-8")
    printed = run(["run", "--tasks", str(task), "--limit", "5"], capsys)
    assert "Normal (k=2" in printed and "GLER (k=2" in printed
    printed = run(["run", "--tasks", str(task), "--k", "1", "--benchmarks", "Normal", "--limit", "5"], capsys)
    assert "Normal (k=1" in printed and "GLER" not in printed


def test_two_tasks_that_disagree_on_k_are_refused(tmp_path, capsys):
    paths = []
    for name, k in (("a", 2), ("b", 3)):
        text = run(["tasks", "new", "--from", "SST5", "--name", name], capsys) + f"\n[run]\nk = {k}\n"
        paths.append(tmp_path / f"{name}.toml")
        paths[-1].write_text(text, encoding="utf-8")
    assert cli.main(["run", "--tasks", ",".join(map(str, paths))]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "staicc: error: tasks 'a' and 'b' set different k (2, 3); run them separately or give --k"]


def test_a_task_without_k_beside_one_with_k_is_refused_unless_the_command_gives_k(tmp_path, capsys):
    paths = []
    for name, extra in (("a", "\n[run]\nk = 2\n"), ("b", ""), ("c", "\n[run]\nk = 4\n")):
        text = run(["tasks", "new", "--from", "SST5", "--name", name], capsys) + extra
        paths.append(tmp_path / f"{name}.toml")
        paths[-1].write_text(text, encoding="utf-8")
    assert cli.main(["run", "--tasks", f"{paths[0]},{paths[1]}"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "staicc: error: task 'a' sets run.k = 2 but task 'b' sets no k (it would run at k = 2, not the standard's "
        "4); one run has one k: give --k, set run.k in every task, or run them separately"]
    printed = run(["run", "--tasks", f"{paths[0]},{paths[1]}", "--k", "2", "--limit", "5"], capsys)
    assert "Normal (k=2" in printed and "k = 2 demonstrations per query (the standard's k is 4)" in printed
    printed = run(["run", "--tasks", f"{paths[2]},{paths[1]}", "--limit", "5"], capsys)  # k = 4 is everyone's k
    assert "Normal (k=4" in printed and "demonstrations per query" not in printed


def test_dry_run_counts_a_tasks_prompts_without_inference(capsys):
    printed = run(["run", "--tasks", os.path.join(EXAMPLES, "sentiment.toml"), "--benchmarks", "all", "--dry-run"],
                  capsys)
    assert printed.startswith("3864 prompts, 3080 distinct, 0 already in the cache, 3080 to ask")


def test_new_from_a_task_file_keeps_finding_its_data(tmp_path, capsys):
    pytest.importorskip("yaml", reason="a YAML task file needs pyyaml (pip install \"StaICC[tasks]\")")
    target = tmp_path / "deeper" / "copy.toml"
    target.parent.mkdir()
    run(["tasks", "new", "--from", os.path.join(EXAMPLES, "nli.yaml"), "-o", str(target)], capsys)
    printed = run(["tasks", "validate", str(target)], capsys)
    assert "task 'my_toy_nli' is valid" in printed and "rows: 300" in printed


def test_a_secret_in_a_task_file_is_not_copied_into_provenance(tmp_path, capsys):
    secret = "sk-task-secret-0123456789"
    task = tmp_path / "t.toml"
    task.write_text(run(["tasks", "show", "SST5"], capsys).replace('name = "SST5"', 'name = "my_sst5"')
                    + f'\n[model]\nbackend = "reference"\n[model.args]\napi_key = "{secret}"\n'
                    + '\n[run]\nbenchmarks = "Normal"\n', encoding="utf-8")
    from StaICC.tasks import load_task
    entry = load_task(str(task)).provenance()
    assert entry["resolved"]["config"]["model"]["args"] == {"api_key": "<redacted>"}
    assert secret not in json.dumps(entry)
