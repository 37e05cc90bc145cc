"""Each record's ``row_id``: the test item's own row id, checked against the data itself, and
``compare --flips`` naming flipped items by it (an earlier run's records without it still load)."""
import csv
import gzip
import json
import os
import shutil

import pytest

from StaICC import cli, run_suite
from StaICC.custom_datasets import from_csv
from StaICC.requests import prompt_sha256

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "StaICC", "data")
DATASET = "rotten_tomatoes"


def _bundled_inputs(name):
    """table index -> input texts, read straight from the bundled file's lines."""
    with gzip.open(os.path.join(DATA, f"{name}.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return {index: inputs for index, inputs, _ in map(json.loads, fh)}


def _cli(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("row_ids")
    paths = {}
    for model in ("reference", "uniform"):
        paths[model] = str(root / model)
        assert cli.main(["run", "--model", model, "--benchmarks", "Normal,Contextual_bias", "--datasets", DATASET,
                         "--limit", "24", "--output-dir", paths[model], "--log-samples=full", "--no-progress"]) == 0
    return paths


def _records(path):
    with open(os.path.join(path, "samples.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_a_bundled_records_row_id_is_its_rows_index_in_the_original_table(runs):
    inputs = _bundled_inputs(DATASET)
    records = _records(runs["reference"])
    normal = [r for r in records if r["benchmark"] == "Normal"]
    assert normal and len({r["row_id"] for r in normal}) == len({r["test_index"] for r in normal})
    for r in normal:
        query = inputs[r["row_id"]][0].strip()
        # the prompt ends with the asked query (its text, then the label prefix)
        assert query in r["prompt"][-(len(query) + 40):], (r["row_id"], query)
    assert all(r["row_id"] is None for r in records if r["benchmark"] == "Contextual_bias")


def test_compare_flips_names_items_by_their_row_ids(runs, capsys):
    code, out, _ = _cli(["compare", runs["reference"], runs["uniform"], "--flips", "--format", "json",
                         "--resamples", "20", "--no-progress"], capsys)
    assert code == 0
    ids = {(r["benchmark"], r["query_index"]): r["row_id"] for r in _records(runs["reference"])}
    normal = [d for d in json.loads(out)["flips"][0]["datasets"] if d["benchmark"] == "Normal"]
    assert normal[0]["row_ids"] and normal[0]["flips"]
    assert all(f["row_id"] == ids[("Normal", f["query_index"])] for f in normal[0]["flips"])
    code, out, _ = _cli(["compare", runs["reference"], runs["uniform"], "--flips", "--flips-limit", "0",
                         "--resamples", "20", "--no-progress"], capsys)
    table = out.split(f"Flips: Normal / {DATASET}: uniform against reference\n", 1)[1].split("\n\n", 1)[0]
    assert "row id" in table.splitlines()[0]
    for flip in normal[0]["flips"]:
        assert any(line.split()[:4] == [str(flip[k]) for k in ("query_index", "pass", "repeat", "row_id")]
                   for line in table.splitlines()), flip


def _strip_row_ids(path):
    """A run as an earlier StaICC wrote it: no ``row_id`` in samples.jsonl nor in samples.columns.json."""
    from StaICC.results.columns import file_sha256
    samples = os.path.join(path, "samples.jsonl")
    records = _records(path)
    with open(samples, "w", encoding="utf-8") as fh:
        for r in records:
            del r["row_id"]
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    columns_path = os.path.join(path, "samples.columns.json")
    document = json.load(open(columns_path, encoding="utf-8"))
    for part in document["parts"]:
        del part["columns"]["row_id"]
    document["samples_sha256"] = file_sha256(samples)
    with open(columns_path, "w", encoding="utf-8") as fh:
        json.dump(document, fh)


def test_a_run_without_row_ids_still_loads_and_names_split_indexes(runs, capsys, tmp_path):
    old = str(tmp_path / "old")
    shutil.copytree(runs["reference"], old)
    _strip_row_ids(old)
    code, out, _ = _cli(["compare", old, runs["uniform"], "--flips", "--flips-limit", "0", "--resamples", "20",
                         "--no-progress"], capsys)
    assert code == 0
    table = out.split(f"Flips: Normal / {DATASET}: uniform against old\n", 1)[1].split("\n\n", 1)[0]
    assert "test split index" in table.splitlines()[0] and "row id" not in table.splitlines()[0]
    assert "carry no row ids" in table
    tests = {r["query_index"]: r["test_index"] for r in _records(old) if r["benchmark"] == "Normal"}
    rows = [line.split() for line in table.splitlines() if line[:1].isdigit()]
    assert rows and all(int(row[3]) == tests[int(row[0])] for row in rows)


def _write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text", "label"])
        writer.writerows(rows)


def _records_and_prompts(dataset):
    """Records of a Normal run on ``dataset`` and the prompt behind each record's hash."""
    prompts = {}

    def model(prompt, label_space):
        prompts[prompt_sha256(prompt)] = prompt
        return [1.0] * len(label_space)  # not probabilities: one softmax branch, whatever the sums
    result = run_suite(model, "Normal", datasets=[dataset], progress=False)
    return list(result.records), prompts


def test_a_custom_datasets_row_id_is_its_line_in_the_file(tmp_path):
    path = str(tmp_path / "reviews.csv")
    rows = [[f"r-{i:04d}", f"review number {i} says {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg"]
            for i in range(90)]
    _write_csv(path, rows)
    dataset = from_csv(path, name="reviews", input_columns="text", label_column="label", split_sizes=(20, 40, 30))
    records, prompts = _records_and_prompts(dataset)
    lines = open(path, encoding="utf-8").read().split("\n")
    assert len({r["row_id"] for r in records}) == 30
    for r in records:
        text = next(csv.reader([lines[r["row_id"] - 1]]))[1]  # row_id: the 1-based line (the header is line 1)
        assert prompts[r["prompt_sha256"]].endswith(f"text: {text} Label: "), (r["row_id"], text)


def test_a_custom_datasets_row_id_is_its_id_column_value_with_test_ids(tmp_path):
    path = str(tmp_path / "reviews.csv")
    rows = [[f"r-{i:04d}", f"review number {i}", "pos" if i % 2 else "neg"] for i in range(90)]
    _write_csv(path, rows)
    test_ids = [f"r-{i:04d}" for i in range(0, 90, 3)]
    dataset = from_csv(path, name="reviews", input_columns="text", label_column="label", id_column="id",
                       test_ids=test_ids)
    records, prompts = _records_and_prompts(dataset)
    assert {r["row_id"] for r in records} == set(test_ids)
    for r in records:
        text = f"review number {int(r['row_id'][2:])}"
        assert prompts[r["prompt_sha256"]].endswith(f"text: {text} Label: "), r["row_id"]


def test_with_one_file_per_part_a_row_id_names_the_line_and_the_file(tmp_path):
    from StaICC.custom_datasets import from_files
    paths = {}
    for part, start, count in (("train", 0, 60), ("test", 100, 30)):
        paths[part] = str(tmp_path / f"{part}.csv")
        _write_csv(paths[part], [[f"r-{i}", f"review number {i}", "pos" if i % 2 else "neg"]
                                 for i in range(start, start + count)])
    dataset = from_files(paths, name="reviews", input_columns="text", label_column="label")
    records, prompts = _records_and_prompts(dataset)
    lines = open(paths["test"], encoding="utf-8").read().split("\n")
    assert len({r["row_id"] for r in records}) == 30
    for r in records:
        line, _, name = r["row_id"].partition(" of ")
        assert name == "test.csv"
        text = next(csv.reader([lines[int(line) - 1]]))[1]
        assert prompts[r["prompt_sha256"]].endswith(f"text: {text} Label: "), r["row_id"]
