"""Datasets, bundled data and the triplet split (STANDARD.md §2, §3, §10.1, §10.2)."""
import hashlib
import re
import warnings

import pytest

import StaICC.datasets as dsm
from StaICC.datasets import (Dataset, ListTable, bundled_table, dataset_constants,
                             load_standard_dataset, resolve_dataset, resolve_datasets)
from StaICC.errors import StaICCWarning, TamperingWarning
from StaICC.rng import fresh_stream
from StaICC.datasets.split import triplet_dataset

from conftest import DATASET_NAMES, TAMPERING_TEXT

STRICT_TEXT = ("You are editing the basic dataset template in the strict mode. Canceled.\n If you want to "
               "edit the prompt template, please edit the dataset_interface.prompt_writter.")

# Spec §2.2, written out: (default label space, label prefix, input prefix)
SPEC_TABLE = {
    "GLUE-SST2": (["negative", "positive"], "sentiment: ", "sentence: "),
    "rotten_tomatoes": (["negative", "positive"], "sentiment: ", "review: "),
    "financial_phrasebank": (["negative", "neutral", "positive"], "sentiment: ", "sentence: "),
    "SST5": (["poor", "bad", "neutral", "good", "great"], "sentiment: ", "sentence: "),
    "TREC": (["short", "entity", "description", "person", "location", "number"], "target: ", "question: "),
    "AGNews": (["world", "sports", "business", "science"], "topic: ", "news: "),
    "Subjective": (["false", "true"], "subjectiveness: ", "review: "),
    "tweet_eval_emotion": (["anger", "joy", "positive", "sad"], "emotion: ", "tweet: "),
    "tweet_eval_hate": (["normal", "hate"], "hate speech: ", "tweet: "),
    "hate_speech_18": (["normal", "hate", "skip", "relation"], "hate speech: ", "tweet: "),
}
ROW_COUNTS = [67349, 8530, 2264, 8544, 5952, 127600, 8000, 5052, 9000, 10939]
SIZES = dict.fromkeys(DATASET_NAMES, (1024, 4096, 512))
SIZES["financial_phrasebank"] = (1024, 512, 512)
SIZES["tweet_eval_emotion"] = (1024, 3192, 512)


def load(name):
    return load_standard_dataset(name)


# -- constants -----------------------------------------------------------------------
def test_benchmark_order():
    assert dsm.standard_dataset_names() == DATASET_NAMES
    assert [loader().name for loader in dsm.STANDARD_LOADERS] == DATASET_NAMES


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_template_constants_match_spec_table(name):
    d = load(name)
    space, label_prefix, input_prefix = SPEC_TABLE[name]
    assert d.label_space == space
    assert d.get_label_space() == space
    template = d.default_template()
    assert template == {"instruction": "", "input_text_prefixes": [input_prefix], "input_text_affixes": [" "],
                        "label_prefix": label_prefix, "label_affix": "\n", "query_prefix": ""}


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_template_constants_match_reference_json(name, ds):
    ref = ds[name]
    d = load(name)
    assert d.label_space == ref["label_space"]
    assert d.ground_truth_label_space == ref["ground_truth_label_space"]
    assert d.reduced_label_space == ref["reduced_label_space"]
    assert d.label_mapping == {int(k): v for k, v in ref["label_mapping"].items()}
    assert d.alternate_template == ref["alternate_template"]
    assert list(d.alternate_template) == ["instruction", "input_text_prefixes", "label_prefix", "label_affix"]
    for key in ("instruction", "input_text_prefixes", "input_text_affixes", "label_prefix", "label_affix",
                "query_prefix"):
        assert d.default_template()[key] == ref[key], key
    sizes = ref["split_sizes"]
    assert d.split_sizes == (sizes["calibration"], sizes["demonstration"], sizes["test"]) == SIZES[name]
    # option 0 of every alternate-template key is the dataset default (§8.8)
    assert d.alternate_template["instruction"][0] == ref["instruction"]
    assert d.alternate_template["input_text_prefixes"][0] == ref["input_text_prefixes"]
    assert d.alternate_template["label_prefix"][0] == ref["label_prefix"]
    assert d.alternate_template["label_affix"][0] == ref["label_affix"]


def test_dataset_constants_is_a_copy_and_accepts_loader_name(ds):
    c = dataset_constants("glue_sst2")
    assert c["name"] == "GLUE-SST2"
    c["label_space"].append("junk")
    assert dataset_constants("GLUE-SST2")["label_space"] == ["negative", "positive"]


def test_ground_truth_spaces_datasets_3_to_9(ds):
    assert load("SST5").ground_truth_label_space == ["very negative", "negative", "neutral", "positive",
                                                     "very positive"]
    assert load("TREC").ground_truth_label_space == ["abbreviation", "entity", "description and abstract concept",
                                                     "human being", "location", "numeric value"]
    for name in DATASET_NAMES[:3]:
        assert load(name).ground_truth_label_space is None
        assert load(name).reduced_label_space is None
    for name in DATASET_NAMES[3:]:
        d = load(name)
        assert d.reduced_label_space == d.label_space


@pytest.mark.parametrize("name,rows", list(zip(DATASET_NAMES, ROW_COUNTS)))
def test_bundled_row_counts(name, rows, ds):
    assert ds[name]["cached_table"]["rows"] == rows
    assert len(load(name)) == rows
    assert dsm.manifest()["files"][name]["table_rows"] == rows
    assert dsm.manifest()["files"][name]["table_content_sha256"] == ds[name]["cached_table"]["content_sha256"]


# -- bundled data and the §3 split --------------------------------------------------------
@pytest.mark.parametrize("name", DATASET_NAMES)
def test_shipped_rows_are_the_standard_split_draw(name):
    table = bundled_table(name)
    n = len(table.table_indexes)
    assert n >= sum(SIZES[name])
    assert list(table.table_indexes) == fresh_stream().index_set(n, table.table_rows)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_split_first5_table_indexes(name, ds):
    c, d, t = SIZES[name]
    idx = list(bundled_table(name).table_indexes)
    ref = ds[name]["split_first5_table_indexes"]
    assert idx[0:5] == ref["calibration"]
    assert idx[c:c + 5] == ref["demonstration"]
    assert idx[c + d:c + d + 5] == ref["test"]


def test_split_first5_spec_examples():
    assert list(bundled_table("GLUE-SST2").table_indexes)[:5] == [16995, 5935, 38880, 14989, 25301]
    assert list(bundled_table("rotten_tomatoes").table_indexes)[1024 + 4096:1024 + 4096 + 5] == [4201, 3508, 2396, 3636, 328]


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_split_label_counts(name, ds, normal):
    experimentor = normal[DATASET_NAMES.index(name)]
    triplet = experimentor.triplet_dataset
    ref = ds[name]["split_label_counts_by_label_index"]
    for part_name, size in zip(("calibration", "demonstration", "test"), SIZES[name]):
        part = getattr(triplet, part_name)
        assert len(part) == size
        assert part.name == f"{name}-{part_name}"
        counts = [0] * len(part.label_space)
        for i in range(len(part)):
            counts[part.label_index(i)] += 1
        assert counts == ref[part_name], part_name
    assert triplet.name == name
    assert triplet.get_label_space() == SPEC_TABLE[name][0]


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_split_parts_hold_the_drawn_rows_in_order(name, normal):
    c, d, t = SIZES[name]
    rows = bundled_table(name).drawn_rows
    triplet = normal[DATASET_NAMES.index(name)].triplet_dataset
    assert [triplet.calibration.table[i] for i in (0, c - 1)] == [rows[0], rows[c - 1]]
    assert [triplet.demonstration.table[i] for i in (0, d - 1)] == [rows[c], rows[c + d - 1]]
    assert [triplet.test.table[i] for i in (0, t - 1)] == [rows[c + d], rows[c + d + t - 1]]


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_shipped_rows_are_single_strings_up_to_1024(name):
    for inputs, raw in bundled_table(name).drawn_rows:
        assert len(inputs) == 1 and isinstance(inputs[0], str)
        assert len(inputs[0]) <= 1024
        assert raw in range(len(SPEC_TABLE[name][0]))


def test_template_sens_split_is_a_prefix(quiet):
    d = load("rotten_tomatoes")
    normal = triplet_dataset(d)
    with pytest.warns(TamperingWarning):
        small = triplet_dataset(d, 1024, 4096, 100)
    assert small.test.table.rows == normal.test.table.rows[:100]
    assert small.demonstration.table.rows == normal.demonstration.table.rows


# -- row access -----------------------------------------------------------------------------
def test_getitem_returns_inputs_and_label_text(rt):
    test = rt.triplet_dataset.test
    inputs, label = test[0]
    assert inputs == ["audiard successfully maintains suspense on different levels throughout a film that is "
                      "both gripping and compelling ."]
    assert label in ("negative", "positive")
    assert label == ["negative", "positive"][test.table[0][1]]
    # a copy of the inputs list
    inputs.append("x")
    assert len(test[0][0]) == 1


def test_custom_dataset_rows_and_label_index():
    d = Dataset("toy", [(["a"], 2), (["b c"], 0), (["d"], 1)], ["x", "y", "z"])
    assert d[0] == (["a"], "z")
    assert d[1] == (["b c"], "x")
    assert list(d) == [(["a"], "z"), (["b c"], "x"), (["d"], "y")]
    assert d.label_indexes() == [2, 0, 1]
    assert d.get_label(2) == "y"
    assert d.get_input_text(1) == ["b c"]
    assert len(d) == 3
    assert d.default_template() == {"instruction": "", "input_text_prefixes": ["Input: "],
                                    "input_text_affixes": [" "], "label_prefix": "Label: ",
                                    "label_affix": "\n", "query_prefix": ""}


def test_label_index_first_match():
    d = Dataset("dup", [(["a"], 1)], ["same", "same"])
    assert d.label_index(0) == 0


def test_content_sha256_by_hand():
    d = Dataset("toy", ListTable([(["ab", "c"], 1), (["\u00e9"], 0), ([""], 12)]), ["n", "p"])
    expected_bytes = b"ab\x1fc\x1f1\x1e" + b"\xc3\xa9\x1f0\x1e" + b"\x1f12\x1e"
    assert d.content_sha256() == hashlib.sha256(expected_bytes).hexdigest()
    assert d.content_sha256() == "dece5b251d1f78fc608a3f284ba4815bcb0401953042daaef51ceb3c74d851bd"


# -- resolution errors -------------------------------------------------------------------
def test_unknown_dataset_name():
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'"):
        resolve_dataset("nope")
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'"):
        dataset_constants("nope")


@pytest.mark.parametrize("index", [10, -1, 99])
def test_dataset_index_out_of_range(index):
    with pytest.raises(ValueError, match=rf"dataset index {index} out of range"):
        resolve_dataset(index)


def test_resolve_by_index_name_loader_and_dataset():
    assert resolve_dataset(2).name == "financial_phrasebank"
    assert resolve_dataset("TREC").name == "TREC"
    assert resolve_dataset(dsm.agnews).name == "AGNews"
    d = Dataset("toy", [(["a"], 0)], ["x"])
    assert resolve_dataset(d) is d
    with pytest.raises(TypeError):
        resolve_dataset(True)
    with pytest.raises(ValueError, match="at least one dataset"):
        resolve_datasets([])
    assert [x.name for x in resolve_datasets(["SST5", 0])] == ["SST5", "GLUE-SST2"]


# -- split errors and warnings ---------------------------------------------------------------
def test_split_larger_than_shipped_rows_raises(quiet):
    d = load("rotten_tomatoes")
    with pytest.raises(ValueError, match=r"rotten_tomatoes: a split of 6120 rows .* ships only the 5632 rows"):
        triplet_dataset(d, 1024, 4096, 1000)


def test_split_too_small_dataset_message(quiet):
    d = Dataset("toy", [([str(i)], i % 2) for i in range(10)], ["a", "b"])
    with pytest.raises(ValueError, match=re.escape("The dataset toy is too small (10) to split (11).")):
        triplet_dataset(d, 3, 4, 4)


def test_split_of_custom_table_follows_index_set():
    rows = [([f"t{i}"], i % 3) for i in range(30)]
    d = Dataset("toy", rows, ["a", "b", "c"])
    part = triplet_dataset(d, 3, 5, 4)
    drawn = fresh_stream().index_set(12, 30)
    assert part.calibration.table.rows == [rows[i] for i in drawn[:3]]
    assert part.demonstration.table.rows == [rows[i] for i in drawn[3:8]]
    assert part.test.table.rows == [rows[i] for i in drawn[8:12]]
    assert [p.name for p in (part.calibration, part.demonstration, part.test)] == [
        "toy-calibration", "toy-demonstration", "toy-test"]
    # each part is an independent copy of the template and label space
    part.test.label_space.append("zzz")
    assert part.demonstration.label_space == ["a", "b", "c"] == d.label_space


def test_split_other_seed_warns_tampering():
    rows = [([f"t{i}"], 0) for i in range(30)]
    d = Dataset("toy", rows, ["a"])
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT)):
        triplet_dataset(d, 3, 5, 4, seed=7)


def test_non_standard_sizes_warn_tampering():
    d = load("financial_phrasebank")
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT)):
        triplet_dataset(d, 1024, 400, 512)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)
        triplet_dataset(d)
        triplet_dataset(d, 1024, 512, 512)


# -- strict mode and label-space helpers (§2.3, §2.4) ----------------------------------------
@pytest.mark.parametrize("method", ["change_instruction", "change_input_text_prefixes", "change_input_text_affixes",
                                    "change_label_prefix", "change_label_affix", "change_query_prefix"])
def test_strict_mode_protects_loader_templates(method):
    d = load("rotten_tomatoes")
    before = d.default_template()
    with pytest.warns(StaICCWarning, match=re.escape(STRICT_TEXT)):
        getattr(d, method)(["x"] if "fixes" in method else "x")
    assert d.default_template() == before


def test_loader_change_label_space_is_not_protected():
    d = load("rotten_tomatoes")
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT)):
        d.change_label_space(["bad", "good"])
    assert d.label_space == ["bad", "good"]


def test_full_label_token():
    d = load("TREC")
    with pytest.warns(TamperingWarning):
        d.full_label_token()
    assert d.label_space[0] == "abbreviation"
    d.reduce_label_token()
    assert d.label_space[0] == "short"
    sst2 = load("GLUE-SST2")
    with pytest.warns(StaICCWarning, match=r"^Not applicable on this dataset\.$"):
        sst2.full_label_token()
    with pytest.warns(StaICCWarning, match=r"^Not applicable on this dataset\.$"):
        sst2.reduce_label_token()
    assert sst2.label_space == ["negative", "positive"]


# Bundled-file verification (hashes, tampering): tests/datasets/test_data_integrity.py


def test_full_label_variants_switch_to_the_ground_truth_words(reference):
    import warnings
    from StaICC.errors import TamperingWarning
    from StaICC.util import hgf_dataset_loader as loaders
    by_name = {d["name"]: d for d in reference["datasets"]}
    for loader, name in [(loaders.un_reducted_sst5, "SST5"), (loaders.un_reducted_trec, "TREC"),
                         (loaders.un_reducted_agnews, "AGNews"),
                         (loaders.un_reducted_tweet_eval_emotion, "tweet_eval_emotion")]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dataset = loader()
        assert dataset.get_label_space() == by_name[name]["ground_truth_label_space"]
        assert any(issubclass(w.category, TamperingWarning) for w in caught)
