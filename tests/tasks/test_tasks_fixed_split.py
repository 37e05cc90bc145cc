"""Task files that fix their split: a split column, one file per part, or test row ids.

The done-criterion: every sub-benchmark of ``staicc run --benchmarks all`` evaluates exactly
the fixed test rows (Template_sens and Demo_sens the first 100 / 128 of them in the run
order that provenance records), read back from the prompts the model received.
"""
import csv
import json
import os
import re

import pytest

from run_fixtures import read_results, run_cli
from StaICC import cli
from StaICC.tasks import TaskError, load_task

#: every row's text starts with its id, so that a prompt's last id is its query's row
ID = re.compile(r"item(\d{4})")
WORDS = ["good", "bad", "fine", "great", "awful", "nice", "poor", "okay", "dull", "bright"]
ALTERNATES = '''[template.alternates]
instruction = ["", "Classify. ", "Sentiment? "]
input_text_prefixes = [["text: "], ["review: "], ["Text: "]]
label_prefix = ["Label: ", "label: ", "Sentiment: "]
label_affix = ["\\n", " ", "\\t"]
'''


def row(i):
    words = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(5))
    return {"id": f"r{i}", "text": f"item{i:04d} {words}", "label": "positive" if (i * 5) % 3 else "negative"}


def write_csv(path, rows, extra=None):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        columns = ["id", "text", "label"] + ([extra] if extra else [])
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write_task(folder, name, split_table, data_table='path = "data.csv"\n'):
    path = folder / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[data]\n{data_table}input_columns = ["text"]\nlabel_column = "label"\n'
                    f"{ALTERNATES}[split]\n{split_table}", encoding="utf-8")
    return str(path)


@pytest.fixture
def column_task(tmp_path):
    """600 rows: every fourth is a test row (150), the rest train; the test rows are not at the file's start."""
    rows = [dict(row(i), split="test" if i % 4 == 1 else "train") for i in range(600)]
    write_csv(tmp_path / "data.csv", rows, "split")
    test_ids = {i for i in range(600) if i % 4 == 1}
    return write_task(tmp_path, "fixed_column", 'column = "split"\n'), test_ids


def query_ids_by_benchmark(run_dir):
    """{sub-benchmark: [the query row id of each record]} from the prompts of samples.jsonl."""
    seen = {}
    with open(os.path.join(run_dir, "samples.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            seen.setdefault(record["benchmark"], []).append(
                (record["test_index"], int(ID.findall(record["prompt"])[-1])))
    return seen


def test_every_sub_benchmark_runs_on_exactly_the_fixed_test_rows(column_task, tmp_path, capsys):
    task, test_ids = column_task
    out = tmp_path / "run"
    printed = run_cli(["run", "--tasks", task, "--benchmarks", "all", "--output-dir", str(out),
                       "--log-samples", "full"], capsys)
    assert "NOT STANDARD: custom dataset; fixed split from column 'split': 150 test," in printed
    results = read_results(out)
    (entry,) = results["provenance"]["tasks"]
    fixed = entry["resolved"]["dataset"]["fixed_split"]
    order = [int(name.split()[1]) - 2 for name in fixed["test_rows"]]  # "line N": the header is line 1
    assert sorted(order) == sorted(test_ids) and order != sorted(order)  # the generator's order, not the file's
    expected = {"Normal": 150, "Post_bias": 150, "GLER": 150, "Template_sens": 100, "Demo_sens": 128}
    queries = query_ids_by_benchmark(out)
    for benchmark, count in expected.items():
        pairs = queries[benchmark]
        assert {i for _, i in pairs} == set(order[:count]), benchmark  # exactly those rows
        assert all(order[index] == i for index, i in pairs), benchmark  # record test_index -> that row
    for benchmark in ("Contextual_bias", "Domain_bias"):  # pseudo queries: the test rows give the labels
        assert {index for index, _ in queries[benchmark]} == set(range(150))
    departures = results["benchmarks"]["Normal"]["metadata"]["non_standard_settings"]["fixed_column"]
    assert departures == ["custom dataset", "fixed split from column 'split': 150 test, 338 demonstration, "
                                            "112 calibration rows"]


def test_limit_takes_the_first_test_rows_in_run_order(column_task, tmp_path, capsys):
    task, _ = column_task
    out = tmp_path / "run"
    run_cli(["run", "--tasks", task, "--limit", "12", "--output-dir", str(out), "--log-samples", "full"], capsys)
    order = [int(n.split()[1]) - 2 for n in
             read_results(out)["provenance"]["tasks"][0]["resolved"]["dataset"]["fixed_split"]["test_rows"]]
    assert {i for _, i in query_ids_by_benchmark(out)["Normal"]} == set(order[:12])


def test_one_file_per_part(tmp_path, capsys):
    write_csv(tmp_path / "train.csv", [row(i) for i in range(200)])
    with open(tmp_path / "test.jsonl", "w", encoding="utf-8") as handle:
        for i in range(200, 230):
            handle.write(json.dumps(row(i)) + "\n")
    task = write_task(tmp_path, "fixed_files", 'files = { train = "train.csv", test = "test.jsonl" }\n', "")
    loaded = load_task(task)
    assert loaded.dataset.split_sizes == (50, 150, 30)  # 200 // 4 train rows drawn into calibration
    out = tmp_path / "run"
    run_cli(["run", "--tasks", task, "--benchmarks", "Normal,GLER", "--output-dir", str(out),
             "--log-samples", "full"], capsys)
    queries = query_ids_by_benchmark(out)
    assert {i for _, i in queries["Normal"]} == {i for _, i in queries["GLER"]} == set(range(200, 230))
    names = read_results(out)["provenance"]["tasks"][0]["resolved"]["dataset"]["fixed_split"]["test_rows"]
    assert sorted(names) == sorted(f"line {n} of test.jsonl" for n in range(1, 31))


def test_test_ids(tmp_path):
    write_csv(tmp_path / "data.csv", [row(i) for i in range(100)])
    task = write_task(tmp_path, "fixed_ids", 'id_column = "id"\ntest_ids = ["r3", "r50", "r99", "r7", "r8"]\n')
    loaded = load_task(task)
    fixed = loaded.dataset.fixed_split
    assert sorted(fixed.test) == [3, 7, 8, 50, 99]
    assert loaded.dataset.split_sizes == (23, 72, 5)
    assert "fixed split from 5 test ids in column 'id'" in loaded.departures[1]


def test_calibration_and_unused_rows_and_value_mapping(tmp_path):
    parts = ["TEST", " calibration ", "demonstration", "dev", "validation"]
    rows = [dict(row(i), split=parts[i % 5]) for i in range(100)]
    write_csv(tmp_path / "data.csv", rows, "split")
    task = write_task(tmp_path, "mapped", 'column = "split"\nvalues = { dev = "train", validation = "unused" }\n')
    dataset = load_task(task).dataset
    assert dataset.split_sizes == (20, 40, 20)  # a calibration row exists: every train (dev) row is a demonstration
    fixed = dataset.fixed_split
    assert sorted(fixed.calibration) == list(range(1, 100, 5))
    assert sorted(fixed.demonstration) == sorted(list(range(2, 100, 5)) + list(range(3, 100, 5)))
    assert not set(range(4, 100, 5)) & set(fixed.calibration + fixed.demonstration + fixed.test)


def test_deduplication_keeps_every_test_row(tmp_path):
    rows = [dict(row(i), split="test" if i < 20 else "train") for i in range(120)]
    rows += [dict(rows[i], id=f"dup{i}", split="train") for i in range(5)]  # train copies of test rows
    rows.insert(0, dict(rows[30], id="early", split="train"))  # a train row before its twin
    write_csv(tmp_path / "data.csv", rows, "split")
    task = write_task(tmp_path, "dedup", 'column = "split"\n',
                      'path = "data.csv"\ndeduplicate = true\n')
    dataset = load_task(task).dataset
    assert dataset.deduplicated == 6 and dataset.split_sizes[2] == 20
    test_texts = {dataset.table[i][0][0] for i in dataset.fixed_split.test}
    assert test_texts == {row(i)["text"] for i in range(20)}


def test_the_split_digest_names_the_rows_in_each_part(tmp_path):
    rows = [dict(row(i), split="test" if i % 3 == 0 else "train") for i in range(60)]
    write_csv(tmp_path / "data.csv", rows, "split")
    task = write_task(tmp_path, "digest", 'column = "split"\n')
    first = load_task(task).provenance()["resolved"]["dataset"]["fixed_split"]["sha256"]
    assert load_task(task).provenance()["resolved"]["dataset"]["fixed_split"]["sha256"] == first
    rows[1]["split"] = "test"
    write_csv(tmp_path / "data.csv", rows, "split")
    assert load_task(task).provenance()["resolved"]["dataset"]["fixed_split"]["sha256"] != first


@pytest.mark.parametrize("split_table, key, message", [
    ('column = "split"\ncalibration = 3\ndemonstration = 10\ntest = 5\n', "split.calibration",
     "sizes come from the data"),
    ('column = "split"\nfiles = { test = "data.csv" }\n', "split.files", "both fix the split"),
    ('values = { dev = "unused" }\n', "split.values", "give split.column too"),
    ('test_ids = ["r1"]\n', "split.id_column", "give both"),
    ('column = "split"\nvalues = { dev = "holdout" }\n', "split.values.dev", "expected one of"),
    ('files = { train = "data.csv" }\n', "split.files", "give the test file"),
    ('files = { tset = "data.csv" }\n', "split.files.tset", "did you mean 'test'"),
])
def test_split_table_mistakes_name_the_key(tmp_path, split_table, key, message):
    write_csv(tmp_path / "data.csv", [dict(row(i), split="test") for i in range(10)], "split")
    with pytest.raises(TaskError, match=message) as error:
        load_task(write_task(tmp_path, "bad", split_table))
    assert error.value.key == key


@pytest.mark.parametrize("change, message", [
    ({4: "dev"}, "line 6, column 'split': split value 'dev' names no part"),
    ({7: " "}, "line 9, column 'split': the split value is empty"),
])
def test_bad_split_values_name_the_file_line_and_column(tmp_path, change, message):
    rows = [dict(row(i), split="test" if i % 2 else "train") for i in range(20)]
    for i, value in change.items():
        rows[i]["split"] = value
    write_csv(tmp_path / "data.csv", rows, "split")
    with pytest.raises(TaskError, match=message) as error:
        load_task(write_task(tmp_path, "bad", 'column = "split"\n'))
    assert error.value.key == "data" and "data.csv" in error.value.row


def test_id_errors_name_the_row_or_the_id(tmp_path):
    rows = [row(i) for i in range(20)]
    write_csv(tmp_path / "data.csv", rows)
    with pytest.raises(TaskError, match="test id 'r77' is not in the data"):
        load_task(write_task(tmp_path, "bad", 'id_column = "id"\ntest_ids = ["r1", "r77"]\n'))
    rows[9]["id"] = "r2"
    write_csv(tmp_path / "data.csv", rows)
    with pytest.raises(TaskError, match="line 11, column 'id': row id 'r2' repeats line 4's"):
        load_task(write_task(tmp_path, "bad", 'id_column = "id"\ntest_ids = ["r1"]\n'))
    with pytest.raises(TaskError, match="no row of the split column 'split' is a test row"):
        write_csv(tmp_path / "data.csv", [dict(row(i), split="train") for i in range(20)], "split")
        load_task(write_task(tmp_path, "bad", 'column = "split"\n'))


def test_a_standard_dataset_keeps_its_standard_split(tmp_path):
    task = tmp_path / "t.toml"
    task.write_text('name = "TREC"\n[data]\nsource = "standard"\n[split]\ncolumn = "split"\n', encoding="utf-8")
    with pytest.raises(TaskError, match="a standard dataset's split is the standard's") as error:
        load_task(str(task))
    assert error.value.key == "split.column"


def test_one_line_and_exit_2_from_the_command_line(tmp_path, capsys):
    rows = [dict(row(i), split="test" if i % 2 else "tain") for i in range(20)]
    write_csv(tmp_path / "data.csv", rows, "split")
    code = cli.main(["run", "--tasks", write_task(tmp_path, "bad", 'column = "split"\n')])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "key 'data', file " in err and "line 2, column 'split': split value 'tain' names no part" in err


def test_validate_says_the_split_is_fixed_and_new_moves_the_part_files(tmp_path, capsys):
    write_csv(tmp_path / "train.csv", [row(i) for i in range(40)])
    write_csv(tmp_path / "test.csv", [row(i) for i in range(40, 50)])
    task = write_task(tmp_path, "parts", 'files = { train = "train.csv", test = "test.csv" }\n', "")
    printed = run_cli(["tasks", "validate", task], capsys)
    assert "  split: calibration 10, demonstration 30, test 10 (fixed by files (train: train.csv, test: test.csv))" \
        in printed
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "copy.toml"
    run_cli(["tasks", "new", "--from", task, "--name", "copy", "-o", str(copy)], capsys)
    assert '[split.files]\ntrain = "../train.csv"\ntest = "../test.csv"\n' in copy.read_text(encoding="utf-8")
    assert load_task(str(copy)).dataset.split_sizes == (10, 30, 10)
