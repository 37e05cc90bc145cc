"""Custom datasets (StaICC.custom_datasets): every input form, label words, templates, split
sizes, refused data, and every sub-benchmark run on the result."""
import json
import sys
import warnings

import pytest

from StaICC import (GLER, Contextual_bias, Demo_sens, Domain_bias, Normal, Post_bias, Template_sens,
                    Triplet_bias)
from StaICC.custom_datasets import (MIN_ROWS, CustomDatasetError, default_input_text_prefixes,
                                    default_split_sizes, from_csv, from_hf, from_jsonl, from_records)
from StaICC.datasets import Dataset
from StaICC.errors import TamperingWarning
from StaICC.metrics import accuracy
from StaICC.backends.reference_model import lexical_icl
from StaICC.rng import StableRandom
from StaICC.standard import ORTHOGONAL_TABLE, TEMPLATE_KEYS
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "data"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def review_records(n=600):
    """n deterministic records: text + string label (3 classes)."""
    labels = ["negative", "neutral", "positive"]
    return [{"id": i, "text": f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} review number {i}", "label": labels[i % 3]}
            for i in range(n)]


def reviews(n=600, **kwargs):
    options = {"name": "my_reviews", "input_columns": "text", "label_column": "label"}
    options.update(kwargs)
    return from_records(review_records(n), **options)


ALTERNATE = {
    "instruction": ["", "Classify the review. ", "What is the sentiment? "],
    "input_text_prefixes": [["text: "], ["review: "], ["Review: "]],
    "label_prefix": ["Label: ", "sentiment: ", "Sentiment: "],
    "label_affix": ["\n", " ", "\t"],
}


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


# ----------------------------------------------------------------------------
# records: the result, the template, the split
# ----------------------------------------------------------------------------
def test_records_give_a_non_standard_dataset_with_rows_in_order():
    ds = reviews()
    assert isinstance(ds, Dataset)
    assert ds.standard is False
    assert ds.name == "my_reviews"
    assert len(ds) == 600
    assert ds.get_label_space() == ["negative", "neutral", "positive"]  # default: sorted distinct strings
    assert ds.table[0] == (["alpha alpha review number 0"], 0)
    assert ds.table[4] == (["echo echo review number 4"], 1)
    assert ds[5] == (["foxtrot hotel review number 5"], "positive")
    assert ds.source == "records"
    assert ds.input_columns == ["text"] and ds.label_column == "label"
    assert ds.default_template() == {"instruction": "", "input_text_prefixes": ["text: "],
                                     "input_text_affixes": [" "], "label_prefix": "Label: ", "label_affix": "\n",
                                     "query_prefix": ""}
    assert ds.alternate_template is None
    assert ds.split_sizes == (120, 360, 120)


def test_prompt_is_the_standard_writer_over_the_custom_template_byte_for_byte():
    ds = reviews(instruction="Rate it. ", input_text_prefixes=["R: "], input_text_affixes=["|"],
                 label_prefix="S= ", label_affix=";\n", query_prefix="Q ")
    exp = Normal(datasets=[ds])[0]
    prompts = exp.prompt_set()
    assert len(prompts) == 2 * 120
    demo, test = exp.demonstration_set(), exp.test_set()
    for q in (0, 1, 119, 120, 239):
        expected = "Rate it. "
        for index in exp.demonstration_sampler[q]:
            (text,), word = demo[index]
            expected += f"R: {text}|S= {word};\n"
        (query,), _ = test[q % 120]
        expected += f"Q R: {query}|S= "
        assert prompts[q] == expected


def test_split_is_the_standard_draw_with_the_dataset_split_sizes():
    ds = reviews()
    triplet = Normal(datasets=[ds])[0].triplet_dataset
    c, d, t = ds.split_sizes
    order = StableRandom().index_set(c + d + t, 600)
    assert [triplet.calibration.table[i] for i in range(c)] == [ds.table[i] for i in order[:c]]
    assert [triplet.demonstration.table[i] for i in range(d)] == [ds.table[i] for i in order[c:c + d]]
    assert [triplet.test.table[i] for i in range(t)] == [ds.table[i] for i in order[c + d:]]


@pytest.mark.parametrize("n, sizes", [
    (3, (1, 1, 1)), (4, (1, 2, 1)), (9, (1, 7, 1)), (10, (2, 6, 2)), (600, (120, 360, 120)),
    (2561, (512, 1537, 512)), (5640, (1024, 4096, 512)), (127600, (1024, 4096, 512)),
])
def test_default_split_size_rule(n, sizes):
    assert default_split_sizes(n) == sizes
    c, d, t = sizes
    assert c + d + t <= n and min(sizes) >= 1


def test_default_split_sizes_refuse_fewer_than_three_rows():
    assert MIN_ROWS == 3
    with pytest.raises(ValueError, match="at least 3 rows"):
        default_split_sizes(2)


def test_given_split_sizes_are_used_and_validated():
    ds = reviews(split_sizes=(10, 50, 30))
    assert ds.split_sizes == (10, 50, 30)
    exp = Normal(datasets=[ds])[0]
    assert (len(exp.calibration_set()), len(exp.demonstration_set()), len(exp.test_set())) == (10, 50, 30)
    with pytest.raises(CustomDatasetError, match=r"records: split_sizes \(100, 400, 101\) need 601 rows, the data "
                                                 r"has only 600"):
        reviews(split_sizes=(100, 400, 101))
    with pytest.raises(ValueError, match="the test part needs at least one row"):
        reviews(split_sizes=(10, 10, 0))
    with pytest.raises(ValueError, match="demonstration size must be a non-negative int, got -1"):
        reviews(split_sizes=(10, -1, 10))
    with pytest.raises(TypeError, match="split_sizes must be"):
        reviews(split_sizes=(10, 10))


def test_runs_are_deterministic():
    first = Normal(datasets=[reviews()])(lexical_icl)
    second = Normal(datasets=[reviews()])(lexical_icl)
    assert first == second


# ----------------------------------------------------------------------------
# multi-input tasks
# ----------------------------------------------------------------------------
def nli_records(n=60):
    return [{"premise": f"premise {WORDS[i % 8]} {i}", "hypothesis": f"hypothesis {WORDS[(i + 1) % 8]}",
             "gold": i % 3} for i in range(n)]


def test_two_input_columns_get_column_name_prefixes():
    assert default_input_text_prefixes(["premise", "hypothesis"]) == ["premise: ", "hypothesis: "]
    ds = from_records(nli_records(), name="nli", input_columns=["premise", "hypothesis"], label_column="gold",
                      label_words=["entailment", "neutral", "contradiction"], label_prefix="relation: ")
    assert ds.table[4] == (["premise echo 4", "hypothesis foxtrot"], 1)
    assert ds.input_element_numbers() == 2
    template = ds.default_template()
    assert template["input_text_prefixes"] == ["premise: ", "hypothesis: "]
    assert template["input_text_affixes"] == [" ", " "]
    exp = Normal(datasets=[ds], k=2)[0]
    demo, test = exp.demonstration_set(), exp.test_set()
    expected = ""
    for index in exp.demonstration_sampler[0]:
        (p, h), word = demo[index]
        expected += f"premise: {p} hypothesis: {h} relation: {word}\n"
    (p, h), _ = test[0]
    expected += f"premise: {p} hypothesis: {h} relation: "
    assert exp.prompt_set()[0] == expected
    # the contextual-bias query has one empty element per input column
    assert Contextual_bias(datasets=[ds], k=0)[0].prompt_set()[0] == "premise:  hypothesis:  relation: "


def test_template_lists_need_one_entry_per_input_column():
    with pytest.raises(ValueError, match=r"input_text_prefixes needs one entry per input column \(2\), got 1"):
        from_records(nli_records(), name="nli", input_columns=["premise", "hypothesis"], label_column="gold",
                     input_text_prefixes=["P: "])
    with pytest.raises(ValueError, match=r"input_text_affixes needs one entry per input column \(2\), got 3"):
        from_records(nli_records(), name="nli", input_columns=["premise", "hypothesis"], label_column="gold",
                     input_text_affixes=[" ", " ", " "])
    with pytest.raises(TypeError, match="label_prefix must be a string"):
        reviews(label_prefix=None)
    with pytest.raises(ValueError, match="input_columns lists"):
        from_records(nli_records(), name="nli", input_columns=["premise", "premise"], label_column="gold")
    with pytest.raises(ValueError, match="is also an input column"):
        from_records(nli_records(), name="nli", input_columns=["premise", "gold"], label_column="gold")


# ----------------------------------------------------------------------------
# label words
# ----------------------------------------------------------------------------
def labelled(labels):
    return [{"text": f"text {i}", "y": label} for i, label in enumerate(labels)]


def test_default_label_words_for_ints_are_their_decimal_strings_in_numeric_order():
    ds = from_records(labelled([10, 2, 2, 10, 7]), name="ints", input_columns="text", label_column="y")
    assert ds.get_label_space() == ["2", "7", "10"]
    assert [raw for _inputs, raw in ds.table.rows] == [2, 0, 0, 2, 1]


def test_integer_strings_count_as_ints_by_default():
    ds = from_records(labelled(["10", "2", 2, " 7 "]), name="ints", input_columns="text", label_column="y")
    assert ds.get_label_space() == ["2", "7", "10"]
    assert [raw for _inputs, raw in ds.table.rows] == [2, 0, 0, 1]


def test_default_label_words_for_strings_are_sorted_and_stripped():
    ds = from_records(labelled(["pos", "neg ", "mixed", "pos"]), name="s", input_columns="text", label_column="y")
    assert ds.get_label_space() == ["mixed", "neg", "pos"]
    assert [raw for _inputs, raw in ds.table.rows] == [2, 1, 0, 2]


def test_label_words_list_maps_ids_and_words():
    records = labelled([1, "0", "positive", 0, " negative"])
    ds = from_records(records, name="l", input_columns="text", label_column="y", label_words=["negative", "positive"])
    assert ds.get_label_space() == ["negative", "positive"]
    assert [raw for _inputs, raw in ds.table.rows] == [1, 0, 1, 0, 0]
    assert ds[0] == (["text 0"], "positive")


def test_label_words_dict_maps_raw_values_in_dict_order():
    words = {"pos": "great", "neg": "awful", 2: "so-so"}
    ds = from_records(labelled(["neg", "pos", 2, "2"]), name="d", input_columns="text", label_column="y",
                      label_words=words)
    assert ds.get_label_space() == ["great", "awful", "so-so"]
    assert [raw for _inputs, raw in ds.table.rows] == [1, 0, 2, 2]


def test_mixed_int_and_string_labels_need_label_words():
    with pytest.raises(CustomDatasetError, match=r"record 2, column 'y': labels mix ints \(record 0: 1\) and "
                                                 r"strings \(record 2: 'pos'\); give label_words"):
        from_records(labelled([1, 0, "pos"]), name="m", input_columns="text", label_column="y")


def test_label_outside_the_label_words_is_refused_with_its_row():
    with pytest.raises(CustomDatasetError, match=r"records, record 3, column 'y': label 2 is outside the label "
                                                 r"words: expected a label id 0..1") as info:
        from_records(labelled([0, 1, 0, 2]), name="o", input_columns="text", label_column="y",
                     label_words=["negative", "positive"])
    assert (info.value.path, info.value.row, info.value.column) == (None, 3, "y")
    with pytest.raises(CustomDatasetError, match=r"record 1, column 'y': label 'meh' is outside the label words"):
        from_records(labelled([0, "meh", 1]), name="o", input_columns="text", label_column="y",
                     label_words=["negative", "positive"])
    with pytest.raises(CustomDatasetError, match=r"record 2, column 'y': label 'x' is not a key of label_words"):
        from_records(labelled(["a", "b", "x"]), name="o", input_columns="text", label_column="y",
                     label_words={"a": "A", "b": "B"})


def test_bad_label_words_are_refused():
    with pytest.raises(ValueError, match=r"duplicate label words \['good'\]"):
        from_records(labelled([0, 1, 2]), name="x", input_columns="text", label_column="y",
                     label_words=["good", "bad", "good"])
    with pytest.raises(ValueError, match=r"duplicate label words \['same'\]"):
        from_records(labelled(["a", "b", "a"]), name="x", input_columns="text", label_column="y",
                     label_words={"a": "same", "b": "same"})
    with pytest.raises(ValueError, match="at least 2 label words"):
        from_records(labelled(["a", "a", "a"]), name="x", input_columns="text", label_column="y")
    with pytest.raises(ValueError, match="non-empty string"):
        from_records(labelled([0, 1, 0]), name="x", input_columns="text", label_column="y", label_words=["a", ""])
    with pytest.raises(TypeError, match="label_words must be a list"):
        from_records(labelled([0, 1, 0]), name="x", input_columns="text", label_column="y", label_words="ab")


@pytest.mark.parametrize("value, kind", [(True, "a bool"), (1.5, "a float"), (None, r"missing \(null\)"),
                                         ("  ", None)])
def test_labels_must_be_ints_or_non_empty_strings(value, kind):
    message = "the label is empty" if kind is None else f"the label is {kind}"
    with pytest.raises(CustomDatasetError, match=f"record 1, column 'y': {message}"):
        from_records(labelled([0, value, 1]), name="x", input_columns="text", label_column="y")


# ----------------------------------------------------------------------------
# refused records
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("record, message", [
    ({"y": 0}, r"records, record 2, column 'text': missing column \(the row has 'y'\)"),
    ({"text": "ok"}, r"records, record 2, column 'y': missing column"),
    ({"text": "   \n", "y": 0}, r"records, record 2, column 'text': the text is empty"),
    ({"text": 17, "y": 0}, r"records, record 2, column 'text': the text is a int \(17\), expected a string"),
    ({"text": None, "y": 0}, r"records, record 2, column 'text': the text is missing \(null\)"),
    (["text", 0], r"records, record 2: expected a mapping of column names to values, got list"),
])
def test_bad_records_are_refused_naming_index_and_column(record, message):
    records = labelled([0, 1]) + [record] + labelled([1])
    with pytest.raises(CustomDatasetError, match=message):
        from_records(records, name="bad", input_columns="text", label_column="y")


def test_too_few_rows_and_bad_arguments_are_refused():
    with pytest.raises(CustomDatasetError, match="records: no data rows"):
        from_records([], name="e", input_columns="text", label_column="y")
    with pytest.raises(CustomDatasetError, match="records: only 2 data rows; a custom dataset needs at least 3"):
        from_records(labelled([0, 1]), name="e", input_columns="text", label_column="y")
    with pytest.raises(ValueError, match="'rotten_tomatoes' is the name of a standard StaICC dataset"):
        from_records(labelled([0, 1, 0]), name="rotten_tomatoes", input_columns="text", label_column="y")
    with pytest.raises(ValueError, match="is the name of a standard StaICC dataset"):
        from_records(labelled([0, 1, 0]), name="glue_sst2", input_columns="text", label_column="y")
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        from_records(labelled([0, 1, 0]), name="", input_columns="text", label_column="y")
    with pytest.raises(TypeError, match="records must be an iterable of dicts"):
        from_records({"text": "a", "y": 0}, name="e", input_columns="text", label_column="y")
    with pytest.raises(TypeError, match="input_columns must be"):
        from_records(labelled([0, 1, 0]), name="e", input_columns=[], label_column="y")


def test_texts_are_kept_verbatim():
    records = [{"text": "  spaced\u2028out\t", "y": 0}] + labelled([1, 0])
    ds = from_records(records, name="v", input_columns="text", label_column="y")
    assert ds.table[0] == (["  spaced\u2028out\t"], 0)


# ----------------------------------------------------------------------------
# JSON Lines
# ----------------------------------------------------------------------------
def jsonl(records):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def test_jsonl_file_equals_the_same_records(tmp_path):
    path = write(tmp_path, "data.jsonl", jsonl(review_records(50)))
    from_file = from_jsonl(path, name="j", input_columns="text", label_column="label")
    from_list = from_records(review_records(50), name="j", input_columns="text", label_column="label")
    assert from_file.table.rows == from_list.table.rows
    assert from_file.get_label_space() == from_list.get_label_space()
    assert from_file.source == str(path)
    assert Normal(datasets=[from_file])[0].prompt_set() == Normal(datasets=[from_list])[0].prompt_set()


def test_jsonl_skips_blank_lines_keeps_line_numbers_and_u2028(tmp_path):
    text = ('\n{"text": "a\u2028b", "y": "x"}\n\n   \n{"text": "c", "y": "z"}\r\n{"text": "d", "y": "x"}\n'
            '{"text": "", "y": "x"}\n')
    path = write(tmp_path, "blank.jsonl", text)
    with pytest.raises(CustomDatasetError, match=r"blank.jsonl', line 7, column 'text': the text is empty") as info:
        from_jsonl(path, name="j", input_columns="text", label_column="y")
    assert (info.value.path, info.value.row, info.value.column) == (str(path), 7, "text")
    path = write(tmp_path, "blank.jsonl", text.rsplit('{"text": ""', 1)[0])
    ds = from_jsonl(path, name="j", input_columns="text", label_column="y")
    assert ds.table.rows == [(["a\u2028b"], 0), (["c"], 1), (["d"], 0)]


@pytest.mark.parametrize("bad_line, message", [
    ('{"text": "oops", "y": 1', r"line 3: malformed JSON \(Expecting ',' delimiter at character 24\)"),
    ('["text", 1]', r"line 3: expected a JSON object, got list"),
    ('{"txt": "typo", "y": 1}', r"line 3, column 'text': missing column \(the row has 'txt', 'y'\)"),
    ('{"text": ["a"], "y": 1}', r"line 3, column 'text': the text is a list"),
    ('{"text": "ok", "y": 5}', r"line 3, column 'y': label 5 is outside the label words"),
])
def test_malformed_jsonl_lines_are_refused_naming_file_and_line(tmp_path, bad_line, message):
    text = '{"text": "one", "y": 0}\n{"text": "two", "y": 1}\n' + bad_line + '\n{"text": "four", "y": 0}\n'
    path = write(tmp_path, "bad.jsonl", text)
    with pytest.raises(CustomDatasetError, match=r"file '.*bad\.jsonl', " + message) as info:
        from_jsonl(path, name="j", input_columns="text", label_column="y", label_words=["no", "yes"])
    assert info.value.row == 3
    assert isinstance(info.value, ValueError)


def test_empty_and_undecodable_files_are_refused(tmp_path):
    for content in ("", "\n \n\t\n"):
        path = write(tmp_path, "empty.jsonl", content)
        with pytest.raises(CustomDatasetError, match=r"file '.*empty\.jsonl': the file is empty"):
            from_jsonl(path, name="j", input_columns="text", label_column="y")
        path = write(tmp_path, "empty.csv", content)
        with pytest.raises(CustomDatasetError, match=r"file '.*empty\.csv': the file is empty"):
            from_csv(path, name="c", input_columns="text", label_column="y")
    path = write(tmp_path, "latin1.jsonl", '{"text": "a", "y": 0}\n{"text": "caf\u00e9", "y": 1}\n', "latin-1")
    with pytest.raises(CustomDatasetError, match=r"latin1\.jsonl', line 2: not valid UTF-8"):
        from_jsonl(path, name="j", input_columns="text", label_column="y")
    with pytest.raises(FileNotFoundError):
        from_jsonl(tmp_path / "missing.jsonl", name="j", input_columns="text", label_column="y")


def test_jsonl_with_too_few_rows_names_the_file(tmp_path):
    path = write(tmp_path, "two.jsonl", '{"text": "a", "y": 0}\n{"text": "b", "y": 1}\n')
    with pytest.raises(CustomDatasetError, match=r"file '.*two\.jsonl': only 2 data rows"):
        from_jsonl(path, name="j", input_columns="text", label_column="y")


# ----------------------------------------------------------------------------
# CSV
# ----------------------------------------------------------------------------
def test_csv_file_with_quoting_and_multiline_fields(tmp_path):
    text = ('id,text,label\n'
            '1,"hello, world",1\n'
            '2,"two\nlines",0\n'
            '3,plain,1\n'
            '\n'
            '4,"quote ""inside""",0\n')
    path = write(tmp_path, "data.csv", text)
    ds = from_csv(path, name="c", input_columns="text", label_column="label", label_words=["no", "yes"])
    assert ds.table.rows == [(["hello, world"], 1), (["two\nlines"], 0), (["plain"], 1), (['quote "inside"'], 0)]
    assert ds.source == str(path)
    bad = text + '5,,1\n'
    path = write(tmp_path, "data.csv", bad)
    with pytest.raises(CustomDatasetError, match=r"data\.csv', line 8, column 'text': the text is empty"):
        from_csv(path, name="c", input_columns="text", label_column="label", label_words=["no", "yes"])


def test_csv_integer_labels_default_to_numeric_order(tmp_path):
    path = write(tmp_path, "n.csv", "text,label\na,10\nb,2\nc,2\nd,7\n")
    ds = from_csv(path, name="c", input_columns="text", label_column="label")
    assert ds.get_label_space() == ["2", "7", "10"]
    assert [raw for _inputs, raw in ds.table.rows] == [2, 0, 0, 1]


def test_csv_delimiter_bom_and_pathlike(tmp_path):
    path = write(tmp_path, "t.tsv", "\ufeffsentence\tgold\nfirst one\tpos\nsecond\tneg\nthird\tpos\n")
    ds = from_csv(path, name="t", input_columns=["sentence"], label_column="gold", delimiter="\t")
    assert ds.table.rows == [(["first one"], 1), (["second"], 0), (["third"], 1)]
    assert ds.get_label_space() == ["neg", "pos"]
    assert ds.default_template()["input_text_prefixes"] == ["sentence: "]
    with pytest.raises(TypeError, match="delimiter must be a single character"):
        from_csv(path, name="t", input_columns="sentence", label_column="gold", delimiter="\t\t")


@pytest.mark.parametrize("text, message, row, column", [
    ("txt,label\na,0\nb,1\nc,0\n", r"line 1, column 'text': missing column: the header has \['txt', 'label'\]",
     1, "text"),
    ("text,lbl\na,0\nb,1\nc,0\n", r"line 1, column 'label': missing column", 1, "label"),
    ("text,label,text\na,0,a\nb,1,b\nc,0,c\n", r"line 1, column 'text': the header lists this column more than once",
     1, "text"),
    ("text,label\na,0\nb,1,extra\nc,0\n", r"line 3: the row has 3 fields, the header \(line 1\) has 2", 3, None),
    ("text,label\na,0\nb\nc,0\n", r"line 3: the row has 1 fields", 3, None),
    ("text,label\na,0\nb,1\n \t,0\n", r"line 4, column 'text': the text is empty", 4, "text"),
    ("text,label\na,0\nb,\nc,0\n", r"line 3, column 'label': the label is empty", 3, "label"),
    ("text,label\na,0\nb,3\nc,0\n", r"line 3, column 'label': label '3' is outside the label words", 3, "label"),
    ('text,label\na,0\n"b,1\nc,0\n', r"line 3: malformed CSV", 3, None),
    ("text,label\n", r"no data rows", None, None),
])
def test_malformed_csv_is_refused_naming_file_line_and_column(tmp_path, text, message, row, column):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(CustomDatasetError, match=r"file '.*bad\.csv', " + message if row else
                       r"file '.*bad\.csv': " + message) as info:
        from_csv(path, name="c", input_columns="text", label_column="label", label_words=["neg", "pos"])
    assert (info.value.path, info.value.row, info.value.column) == (str(path), row, column)


def test_sample_csv_of_the_examples_loads():
    ds = from_csv(EXAMPLES / "sentiment.csv", name="sample", input_columns="text", label_column="label")
    assert len(ds) == 600
    assert ds.get_label_space() == ["negative", "neutral", "positive"]
    assert ds.split_sizes == (120, 360, 120)
    nli = from_jsonl(EXAMPLES / "nli.jsonl", name="nli", input_columns=["premise", "hypothesis"],
                     label_column="label", label_words=["entailment", "neutral", "contradiction"])
    assert len(nli) == 300 and nli.split_sizes == (60, 180, 60)


# ----------------------------------------------------------------------------
# HuggingFace datasets (a fake that quacks like one; the real one if installed)
# ----------------------------------------------------------------------------
class FakeClassLabel:
    def __init__(self, names):
        self.names = names


class FakeHFDataset:
    """Iterable of dicts with column_names and features, like datasets.Dataset."""

    def __init__(self, rows, features=None):
        self._rows = rows
        self.column_names = list(rows[0])
        self.features = features or {}

    def __iter__(self):
        return (dict(row) for row in self._rows)

    def __len__(self):
        return len(self._rows)


class FakeHFDatasetDict(dict):
    @property
    def column_names(self):
        return {split: part.column_names for split, part in self.items()}


def hf_rows(n=30):
    return [{"sentence": f"sentence {WORDS[i % 8]} {i}", "label": i % 2, "idx": i} for i in range(n)]


def test_from_hf_uses_class_label_names_as_label_words():
    fake = FakeHFDataset(hf_rows(), {"label": FakeClassLabel(["neg", "pos"])})
    ds = from_hf(fake, name="hf", input_columns="sentence", label_column="label")
    assert ds.get_label_space() == ["neg", "pos"]
    assert ds.table[3] == (["sentence delta 3"], 1)
    assert ds.source == "HuggingFace dataset"
    explicit = from_hf(fake, name="hf", input_columns="sentence", label_column="label",
                       label_words=["negative", "positive"])
    assert explicit.get_label_space() == ["negative", "positive"]
    plain = from_hf(FakeHFDataset(hf_rows()), name="hf", input_columns="sentence", label_column="label")
    assert plain.get_label_space() == ["0", "1"]


def test_from_hf_errors_name_the_row_and_column():
    rows = hf_rows()
    rows[7]["label"] = -1  # unlabeled rows of a HF test split
    fake = FakeHFDataset(rows, {"label": FakeClassLabel(["neg", "pos"])})
    with pytest.raises(CustomDatasetError, match=r"HuggingFace dataset, row 7, column 'label': label -1 is outside"):
        from_hf(fake, name="hf", input_columns="sentence", label_column="label")
    with pytest.raises(CustomDatasetError, match=r"column 'text': missing column: the dataset has \['sentence', "
                                                 r"'label', 'idx'\]"):
        from_hf(FakeHFDataset(hf_rows()), name="hf", input_columns="text", label_column="label")
    with pytest.raises(TypeError, match="from_hf expects a HuggingFace datasets.Dataset"):
        from_hf(42, name="hf", input_columns="sentence", label_column="label")


def test_from_hf_dataset_dict_needs_a_split():
    splits = FakeHFDatasetDict(train=FakeHFDataset(hf_rows()), test=FakeHFDataset(hf_rows(10)))
    with pytest.raises(ValueError, match=r"splits \['train', 'test'\]; choose one with split="):
        from_hf(splits, name="hf", input_columns="sentence", label_column="label")
    assert len(from_hf(splits, split="test", name="hf", input_columns="sentence", label_column="label")) == 10


def test_from_hf_with_a_name_needs_the_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(ImportError, match="pip install datasets"):
        from_hf("rotten_tomatoes", split="train", name="hf", input_columns="text", label_column="label")


def test_from_hf_with_the_real_package():
    datasets = pytest.importorskip("datasets")
    real = datasets.Dataset.from_dict(
        {"sentence": [r["sentence"] for r in hf_rows()], "label": [r["label"] for r in hf_rows()]},
        features=datasets.Features({"sentence": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["neg", "pos"])}))
    ds = from_hf(real, name="hf", input_columns="sentence", label_column="label")
    assert ds.get_label_space() == ["neg", "pos"]
    assert ds.table[3] == (["sentence delta 3"], 1)


# ----------------------------------------------------------------------------
# alternate templates and Template_sens
# ----------------------------------------------------------------------------
def test_template_sens_uses_the_alternate_templates_of_the_l9_table():
    ds = reviews(alternate_template=ALTERNATE)
    assert ds.alternate_template == ALTERNATE
    bench = Template_sens(datasets=[ds])
    exp = bench[0]
    assert len(exp.test_set()) == 100
    prompts = exp.prompt_set()
    assert len(prompts) == 9 * 100
    demo, test = exp.demonstration_set(), exp.test_set()
    for t, row in enumerate(ORTHOGONAL_TABLE):
        choice = {key: ALTERNATE[key][row[c]] for c, key in enumerate(TEMPLATE_KEYS)}
        for q in (0, 99):
            expected = choice["instruction"]
            for index in exp.demonstration_sampler[q]:
                (text,), word = demo[index]
                expected += (f"{choice['input_text_prefixes'][0]}{text} "
                             f"{choice['label_prefix']}{word}{choice['label_affix']}")
            (query,), _ = test[q]
            expected += f"{choice['input_text_prefixes'][0]}{query} {choice['label_prefix']}"
            assert prompts[t * 100 + q] == expected
    result = bench(lexical_icl)
    assert 0 < result["Divided results"]["my_reviews"]["sensitivity"]["consistency"] <= 1
    assert result.metadata["standard"] is False


def test_template_sens_without_alternate_template_is_refused():
    with pytest.raises(ValueError, match="Template_sens needs alternate templates for dataset 'my_reviews'"):
        Template_sens(datasets=[reviews()])


@pytest.mark.parametrize("change, error, message", [
    ({"label_affix": None}, TypeError, "alternate_template must be a dict"),
    ({"query_prefix": ["", "", ""]}, ValueError, r"unknown \['query_prefix'\]"),
    ({"drop": "label_prefix"}, ValueError, r"missing \['label_prefix'\]"),
    ({"label_prefix": ["Label: ", "x: "]}, ValueError, r"alternate_template\['label_prefix'\] must be a list of "
                                                       r"exactly 3 options"),
    ({"label_affix": ["\n", 1, "\t"]}, TypeError, r"alternate_template\['label_affix'\]\[1\] must be a string"),
    ({"input_text_prefixes": [["text: "], ["a: ", "b: "], ["c: "]]}, ValueError,
     r"alternate_template\['input_text_prefixes'\]\[1\] needs one entry per input column \(1\), got 2"),
    ({"input_text_prefixes": [["text: "], "review: ", ["c: "]]}, TypeError,
     r"alternate_template\['input_text_prefixes'\]\[1\] must be a list of strings"),
    ({"instruction": ["Go. ", "", ""]}, ValueError,
     r"alternate_template\['instruction'\]\[0\] must equal the dataset's default instruction ''"),
])
def test_alternate_template_shape_is_validated(change, error, message):
    if change == {"label_affix": None}:
        template = ["not", "a", "dict"]
    else:
        template = {key: value for key, value in ALTERNATE.items() if key != change.get("drop")}
        template.update({k: v for k, v in change.items() if k != "drop"})
    with pytest.raises(error, match=message):
        reviews(alternate_template=template)


# ----------------------------------------------------------------------------
# every sub-benchmark on custom data
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def custom():
    return reviews(alternate_template=ALTERNATE)


def test_normal_beside_a_standard_dataset(custom):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)  # a custom dataset is not tampering
        bench = Normal(datasets=["GLUE-SST2", custom])
    assert bench.dataset_names() == ["GLUE-SST2", "my_reviews"]
    result = bench(lexical_icl)
    alone = Normal(datasets=["GLUE-SST2"])(lexical_icl)
    assert result["Divided results"]["GLUE-SST2"] == alone["Divided results"]["GLUE-SST2"]
    assert set(result["Divided results"]["my_reviews"]) == {"accuracy", "averaged_truelabel_likelihood",
                                                            "macro_F1", "expected_calibration_error_1"}
    mean = (alone["Divided results"]["GLUE-SST2"]["accuracy"] + result["Divided results"]["my_reviews"]["accuracy"]) / 2
    assert result["Averaged results"]["accuracy"] == pytest.approx(mean)
    assert alone.metadata["standard"] is True
    assert result.metadata["standard"] is False
    assert result.metadata["non_standard_settings"] == {"my_reviews": ["custom dataset"]}
    assert json.loads(result.to_json())["metadata"]["standard"] is False


@pytest.mark.parametrize("sub_benchmark, keys", [
    (GLER, {"0", "1", "2", "3", "4", "sensitivity"}),
    (Contextual_bias, {"entropy", "distribution"}),
    (Domain_bias, {"entropy", "distribution"}),
    (Post_bias, {"DL div.", "distribution"}),
    (Template_sens, {"sensitivity"}),
    (Demo_sens, {"sensitivity"}),
])
def test_every_sub_benchmark_runs_on_custom_data(custom, sub_benchmark, keys):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)
        bench = sub_benchmark(datasets=[custom])
    result = bench(lexical_icl)
    assert set(result["Divided results"]["my_reviews"]) == keys
    assert result.metadata["standard"] is False
    assert result.metadata["non_standard_settings"]["my_reviews"] == ["custom dataset"]


def test_triplet_bias_runs_on_custom_data(custom):
    result = Triplet_bias(datasets=[custom])(lexical_icl)
    assert set(result) == {"contextual", "domain", "post"}
    assert all(meta["standard"] is False for meta in result.metadata.values())
    assert len(result["contextual"]["Divided results"]["my_reviews"]["distribution"]) == 3


def test_diagnosis_prompts_on_custom_data(custom):
    contextual = Contextual_bias(datasets=[custom])[0]
    prompts = contextual.prompt_set()
    assert len(prompts) == 240
    assert prompts[0].endswith("\ntext:  Label: ")
    demo = Demo_sens(datasets=[custom])[0]
    assert (len(demo.test_set()), demo.get_repeat_times(), len(demo.prompt_set())) == (120, 8, 960)


def test_small_custom_data_uses_all_its_test_rows_in_the_sensitivity_diagnoses():
    small = reviews(60, alternate_template=ALTERNATE)  # split (12, 36, 12): fewer than 100 / 128 test rows
    assert small.split_sizes == (12, 36, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)
        template, demo = Template_sens(datasets=[small]), Demo_sens(datasets=[small])
    assert len(template[0].test_set()) == 12 and len(template[0].prompt_set()) == 9 * 12
    assert len(demo[0].test_set()) == 12 and len(demo[0].prompt_set()) == 8 * 12
    for bench in (template, demo):
        consistency = bench(lexical_icl)["Averaged results"]["consistency"]
        assert 0 < consistency <= 1


def test_three_rows_run_with_k_one():
    tiny = from_records(labelled(["a", "b", "a"]), name="tiny", input_columns="text", label_column="y")
    assert tiny.split_sizes == (1, 1, 1)
    # ECE (10 bins) needs at least 10 predictions, so tiny data runs Normal with other metrics only
    result = Normal(datasets=[tiny], k=1, metrics={"accuracy": accuracy})(lexical_icl)
    assert set(result["Divided results"]["tiny"]) == {"accuracy"}
    assert result.metadata["standard"] is False
    with pytest.raises(ValueError, match=r"k = 4 is larger than the demonstration set \(1 rows\)"):
        Normal(datasets=[tiny])(lexical_icl)
    calls = []
    with pytest.raises(ValueError, match=r"2 queries at dataset 'tiny', but the expected calibration error needs at least 10"):
        Normal(datasets=[tiny], k=1)(lambda prompt, label_space: calls.append(1) or 0)
    assert calls == []  # refused before any inference


def test_twenty_five_rows_run_normal_with_the_default_metrics():
    ds = reviews(25)
    assert ds.split_sizes == (5, 15, 5)  # R * T = 10 predictions: enough for the 10 ECE bins
    result = Normal(datasets=[ds])(lexical_icl)
    assert set(result["Divided results"]["my_reviews"]) == {"accuracy", "averaged_truelabel_likelihood",
                                                            "macro_F1", "expected_calibration_error_1"}


def test_contextual_bias_with_an_empty_calibration_part():
    ds = reviews(40, split_sizes=(0, 30, 10))
    prompts = Contextual_bias(datasets=[ds])[0].prompt_set()
    assert prompts[0].endswith("\ntext:  Label: ")
