"""Fixed splits in Python: ``split_column`` / ``test_ids`` on the builders, ``from_files``, and the triplet split
that uses a fixed split instead of drawing one."""
import json

import pytest

from StaICC import Demo_sens, Normal, Template_sens
from StaICC.errors import TamperingWarning
from StaICC.custom_datasets import CustomDatasetError, from_files, from_records
from StaICC.datasets.split import fix_split, triplet_dataset
from StaICC.backends.reference_model import lexical_icl
from StaICC.rng import StableRandom


def records(n, test_every=4):
    return [{"text": f"row {i} " + "abc"[i % 3] * (i % 5 + 1), "label": "yes" if i % 3 else "no",
             "part": "test" if i % test_every == 0 else "train", "id": i} for i in range(n)]


def test_parts_are_in_the_generators_order_and_train_rows_give_the_calibration_part():
    fixed = fix_split(["train", "test", "train", "test", "train", "train", "train", "train", "test"], "a list")
    assert fixed.test == tuple(StableRandom(42).shuffle([1, 3, 8]))
    assert len(fixed.calibration) == 6 // 4 and sorted(fixed.calibration + fixed.demonstration) == [0, 2, 4, 5, 6, 7]
    marked = fix_split(["calibration", "test", "train", "demonstration"], "x")  # a calibration row: train rows demonstrate
    assert marked.calibration == (0,) and sorted(marked.demonstration) == [2, 3]
    with pytest.raises(ValueError, match="has no test row"):
        fix_split(["train", "train"], "a list")


def test_the_triplet_takes_the_fixed_parts_and_shortens_only_the_test_part():
    dataset = from_records(records(200), name="mine", input_columns="text", label_column="label",
                           split_column="part")
    fixed = dataset.fixed_split
    whole = triplet_dataset(dataset)
    assert [whole.test.table[i] for i in range(len(whole.test))] == [dataset.table[i] for i in fixed.test]
    assert [whole.demonstration.table[i] for i in range(len(whole.demonstration))] == \
        [dataset.table[i] for i in fixed.demonstration]
    short = triplet_dataset(dataset, test_number=7, expected_test_number=7)
    assert [short.test.table[i] for i in range(7)] == [dataset.table[i] for i in fixed.test[:7]]
    with pytest.warns(TamperingWarning), pytest.raises(ValueError, match="cannot be resized"):
        triplet_dataset(dataset, 10, 100, 5)
    with pytest.warns(TamperingWarning), pytest.raises(ValueError, match="at most 50 test items"):
        triplet_dataset(dataset, test_number=51)


def test_the_diagnoses_use_the_first_fixed_test_rows():
    dataset = from_records(records(1200, test_every=5), name="mine", input_columns="text", label_column="label",
                           split_column="part", alternate_template={
                               "instruction": ["", "A ", "B "], "input_text_prefixes": [["text: "], ["t: "], ["T: "]],
                               "label_prefix": ["Label: ", "L: ", "l: "], "label_affix": ["\n", " ", "\t"]})
    fixed = dataset.fixed_split
    assert fixed.sizes[2] == 240
    for bench, size in ((Normal(datasets=[dataset]), 240), (Template_sens(datasets=[dataset]), 100),
                        (Demo_sens(datasets=[dataset]), 128)):
        test = bench[0].triplet_dataset.test
        assert [test.table[i] for i in range(len(test))] == [dataset.table[i] for i in fixed.test[:size]]
    result = Normal(datasets=[dataset])(lexical_icl)
    assert result.metadata["non_standard_settings"]["mine"] == [
        "custom dataset", "fixed split from column 'part': 240 test, 720 demonstration, 240 calibration rows"]


def test_test_ids_and_errors_name_the_record():
    dataset = from_records(records(40), name="mine", input_columns="text", label_column="label", id_column="id",
                           test_ids=[3, "5", 39])
    assert sorted(dataset.fixed_split.test) == [3, 5, 39]
    bad = records(40)
    bad[6]["part"] = "holdout"
    with pytest.raises(CustomDatasetError, match="record 6, column 'part': split value 'holdout' names no part"):
        from_records(bad, name="mine", input_columns="text", label_column="label", split_column="part")
    assert from_records(bad, name="mine", input_columns="text", label_column="label", split_column="part",
                        split_values={"holdout": "unused"}).split_sizes == (7, 22, 10)
    with pytest.raises(ValueError, match="split_sizes and a fixed split"):
        from_records(records(40), name="mine", input_columns="text", label_column="label", split_column="part",
                     split_sizes=(1, 1, 1))
    with pytest.raises(ValueError, match="is also an input or the label column"):
        from_records(records(40), name="mine", input_columns="text", label_column="label", split_column="label")


def test_from_files_reads_csv_and_jsonl_and_names_the_file_in_errors(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"train {i},{'ab'[i % 2]}\n" for i in range(40)),
                                        encoding="utf-8")
    (tmp_path / "test.jsonl").write_text("".join(json.dumps({"text": f"test {i}", "label": "ab"[i % 2]}) + "\n"
                                                 for i in range(10)), encoding="utf-8")
    files = {"train": str(tmp_path / "train.csv"), "test": str(tmp_path / "test.jsonl")}
    dataset = from_files(files, name="mine", input_columns="text", label_column="label")
    assert dataset.split_sizes == (10, 30, 10) and dataset.label_space == ["a", "b"]
    assert sorted(dataset.fixed_split.test_row_names()) == sorted(f"line {n} of test.jsonl" for n in range(1, 11))
    (tmp_path / "test.jsonl").write_text('{"text": "x", "label": "a"}\n{"text": "", "label": "b"}\n', encoding="utf-8")
    with pytest.raises(CustomDatasetError, match=r"test.jsonl', line 2, column 'text': the text is empty"):
        from_files(files, name="mine", input_columns="text", label_column="label")
    with pytest.raises(ValueError, match="both the train and the test file"):
        from_files({"train": files["train"], "test": files["train"]}, name="m", input_columns="text",
                   label_column="label")
