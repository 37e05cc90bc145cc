"""Behaviour of the original release's remaining public methods (loaders, triplet, sampler, module names).

Values quoted as "the original's" were returned by StaICC 0.1.1 for the same call.
"""
import re
import warnings

import pytest

from StaICC.datasets import Dataset, dataset_constants
from StaICC.errors import StaICCWarning, TamperingWarning
from StaICC.sampling.rows import demonstration_sampler, fixed_sampler
from StaICC.datasets.split import TRIPLE_CHANGE_WARNING, triplet_dataset
from StaICC.standard import STRICT_TEMPLATE_WARNING
from StaICC.util.hgf_dataset_loader import financial_phrasebank, rotten_tomatoes, trec

from conftest import DATASET_NAMES, TAMPERING_TEXT

# rotten_tomatoes test item 0 (the query of the spec's first Normal prompt)
FIRST_RT_QUERY = ("audiard successfully maintains suspense on different levels throughout a film that is both "
                  "gripping and compelling .")


def _small(n=9, standard=False):
    rows = [([f"text {i}", "xy"], i % 3) for i in range(n)]
    return Dataset("small", rows, ["a", "b", "c"], input_text_prefixes=["one: ", "two: "],
                   input_text_affixes=[" ", "\n"], split_sizes=(3, 3, 3), standard=standard)


# -- module-level names --------------------------------------------------------------------------
def test_original_data_loader_normal_is_the_ten_loaders_in_benchmark_order():
    from StaICC.datasets import STANDARD_LOADERS
    from StaICC.normal import ORIGINAL_DATA_LOADER_NORMAL
    assert [loader().name for loader in ORIGINAL_DATA_LOADER_NORMAL] == DATASET_NAMES
    assert ORIGINAL_DATA_LOADER_NORMAL == STANDARD_LOADERS and ORIGINAL_DATA_LOADER_NORMAL is not STANDARD_LOADERS


def test_cached_dataset_is_an_empty_package_pointing_to_the_data():
    import StaICC.cached_dataset as cached
    assert [n for n in dir(cached) if not n.startswith("_")] == []
    assert "StaICC/data" in cached.__doc__


# -- sampler ---------------------------------------------------------------------------------------
def test_get_sampled_indexes_is_the_row_copy():
    sampler = demonstration_sampler(4, 4096, 3)
    assert sampler.get_sampled_indexes(0) == [1033, 360, 2365, 911]  # the original's row 0
    assert sampler.get_sampled_indexes(1) == sampler[1] == [1538, 105, 1833, 485]
    sampler.get_sampled_indexes(0).append(7)
    assert sampler[0] == [1033, 360, 2365, 911]
    fixed = fixed_sampler([[1, 2], [3, 4]])
    assert fixed.get_sampled_indexes(1) == [3, 4]


@pytest.mark.parametrize("index, error", [(3, ValueError), (-1, ValueError), (True, TypeError), ("0", TypeError)])
def test_get_sampled_indexes_refuses_bad_indexes(index, error):
    with pytest.raises(error, match="query index"):
        demonstration_sampler(4, 4096, 3).get_sampled_indexes(index)


# -- loaders: read access --------------------------------------------------------------------------
def test_loader_template_getters_give_the_dataset_constants():
    dataset = rotten_tomatoes()
    const = dataset_constants("rotten_tomatoes")
    assert dataset.get_dataset_name() == "rotten_tomatoes"
    assert dataset.get_input_element_numbers() == 1
    assert dataset.get_instruction() == const["instruction"] == ""
    assert dataset.get_input_text_prefixes() == ["review: "]
    assert dataset.get_input_text_affixes() == [" "]
    assert dataset.get_label_prefix() == "sentiment: "
    assert dataset.get_label_affix() == "\n"
    assert dataset.get_query_prefix() == ""
    assert dataset.get_alternate_template() == const["alternate_template"]
    # the getters hand out copies: editing them changes nothing
    dataset.get_input_text_prefixes().append("x")
    dataset.get_alternate_template()["instruction"].append("x")
    assert dataset.get_input_text_prefixes() == ["review: "]
    assert dataset.get_alternate_template() == const["alternate_template"]


def test_custom_dataset_getters():
    dataset = _small()
    assert dataset.get_input_element_numbers() == 2
    assert dataset.get_input_text_prefixes() == ["one: ", "two: "]
    assert dataset.get_input_text_affixes() == [" ", "\n"]
    assert dataset.get_alternate_template() is None
    assert dataset.get_total_length_of_one_data(4) == len("text 4") + 2
    assert dataset.get_total_length_of_one_data(-1) == len("text 8") + 2


def test_total_length_of_one_data_of_a_split_part():
    test = triplet_dataset(rotten_tomatoes()).test
    assert test.get_input_text(0) == [FIRST_RT_QUERY]
    assert test.get_total_length_of_one_data(0) == len(FIRST_RT_QUERY) == 116


def test_row_access_errors_name_the_dataset():
    with pytest.raises(IndexError, match=r"row index 9 is out of range: dataset 'small' has 9 rows"):
        _small().get_total_length_of_one_data(9)
    with pytest.raises(TypeError, match=r"row index must be an int \(dataset 'small'\)"):
        _small().get_total_length_of_one_data(1.0)
    # a bundled table ships only the standard draw: its rows are read through the split parts
    with pytest.raises(IndexError, match="rotten_tomatoes: StaICC ships only the rows drawn"):
        rotten_tomatoes().get_total_length_of_one_data(0)
    with pytest.raises(ValueError, match="get_dataset of 'rotten_tomatoes'.*split part"):
        rotten_tomatoes().get_dataset()


def test_find_index_from_label():
    dataset = trec()
    assert [dataset.find_index_from_label(w) for w in dataset.get_label_space()] == list(range(6))
    with pytest.raises(ValueError, match=re.escape("'nope' is not in list")):  # the original's message
        dataset.find_index_from_label("nope")


def test_get_dataset_is_the_raw_rows():
    dataset = _small(4)
    assert dataset.get_dataset() == [(["text 0", "xy"], 0), (["text 1", "xy"], 1), (["text 2", "xy"], 2),
                                     (["text 3", "xy"], 0)]
    demonstration = triplet_dataset(financial_phrasebank()).demonstration
    rows = demonstration.get_dataset()
    assert len(rows) == 512 and all(isinstance(inputs, list) and type(raw) is int for inputs, raw in rows)
    assert [(inputs, demonstration.label_space[raw]) for inputs, raw in rows[:5]] == \
        [demonstration[i] for i in range(5)]
    rows[0][0][0] = "edited"
    rows.clear()
    assert demonstration.get_dataset()[0][0][0] != "edited" and len(demonstration) == 512


def test_reduct_label_token_restores_the_reduced_space():
    dataset = trec()
    with pytest.warns(TamperingWarning):
        dataset.full_label_token()
    assert dataset.get_label_space()[0] == "abbreviation"
    dataset.reduct_label_token()
    assert dataset.get_label_space() == dataset_constants("TREC")["label_space"]
    with pytest.warns(StaICCWarning, match=r"^Not applicable on this dataset\.$"):
        rotten_tomatoes().reduct_label_token()


def test_loader_change_label_space_checks_the_words():
    with pytest.raises(ValueError, match=r"needs 2 words \(one per label\) \(dataset 'rotten_tomatoes'\), got 3"):
        rotten_tomatoes().change_label_space(["a", "b", "c"])
    with pytest.raises(ValueError, match="names 'a' twice"):
        rotten_tomatoes().change_label_space(["a", "a"])


# -- loaders: cut and rename -----------------------------------------------------------------------
def test_cut_by_index_keeps_the_first_rows_in_place():
    dataset = _small()
    assert dataset.cut_by_index(4) is dataset
    assert len(dataset) == 4 and dataset[3] == (["text 3", "xy"], "a")
    assert dataset.cut_by_index(10) is dataset and len(dataset) == 4
    assert dataset.cut_by_index(0) is dataset and len(dataset) == 0
    with pytest.raises(ValueError, match=r"n must be >= 0 \(cut_by_index of dataset 'small'\)"):
        dataset.cut_by_index(-1)
    with pytest.raises(TypeError, match="n must be an int"):
        dataset.cut_by_index(2.0)


def test_cut_of_a_standard_dataset_warns_and_marks_it_non_standard():
    dataset = _small(standard=True)
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT) + r".*small cut to its first 5 of 9 rows"):
        dataset.cut_by_index(5)
    assert not dataset.standard and len(dataset) == 5
    unchanged = _small(standard=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unchanged.cut_by_index(9)
    assert unchanged.standard


def test_cut_of_a_bundled_table_is_refused_with_the_way_out():
    dataset = rotten_tomatoes()
    with pytest.raises(ValueError, match=r"cut_by_index\(10\) of dataset 'rotten_tomatoes'.*split part"):
        dataset.cut_by_index(10)
    assert len(dataset) == 8530 and dataset.standard


def test_cutting_a_split_part_leaves_other_datasets_and_the_standard_prompts_intact():
    from StaICC.util.experimentor import single_experimentor
    cut = triplet_dataset(rotten_tomatoes())
    before = cut.demonstration[10]
    with pytest.warns(TamperingWarning):
        cut.demonstration.cut_by_index(10)
    assert len(cut.demonstration) == 10 and not cut.demonstration.standard
    with pytest.raises(IndexError):
        cut.demonstration[10]
    other = triplet_dataset(rotten_tomatoes())
    assert len(other.demonstration) == 4096 and other.demonstration[10] == before and other.demonstration.standard
    prompt = single_experimentor(original_dataset=rotten_tomatoes()).prompt_set()[0]
    assert prompt.startswith("review: thoughtful , provocative and entertaining . sentiment: positive\n")
    assert prompt.endswith(f"review: {FIRST_RT_QUERY} sentiment: ")


def test_cut_of_rows_in_memory_does_not_touch_shared_rows():
    rows = [([f"t{i}"], i % 2) for i in range(6)]
    first, second = Dataset("one", rows, ["a", "b"]), Dataset("two", rows, ["a", "b"])
    first.cut_by_index(2)
    assert len(rows) == 6 and len(second) == 6 and len(first) == 2


def test_rename_dataset():
    dataset = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dataset.rename_dataset("renamed")
    assert dataset.get_dataset_name() == dataset.name == "renamed"
    with pytest.raises(ValueError, match="'sst5' is the name of a standard StaICC dataset"):
        dataset.rename_dataset("sst5")
    with pytest.raises(TypeError, match="non-empty string"):
        dataset.rename_dataset("  ")
    standard = rotten_tomatoes()
    standard.rename_dataset("rotten_tomatoes")  # its own name: nothing changes
    assert standard.standard
    with pytest.warns(TamperingWarning, match="rotten_tomatoes renamed to my_rt"):
        standard.rename_dataset("my_rt")
    assert standard.name == "my_rt" and not standard.standard
    assert triplet_dataset(standard).get_dataset_name() == "my_rt"


# -- triplet_dataset -----------------------------------------------------------------------------
@pytest.fixture
def triplet():
    return triplet_dataset(rotten_tomatoes())


def test_triplet_original_attributes(triplet):
    assert triplet.dataset_name == triplet.get_dataset_name() == "rotten_tomatoes"
    assert triplet.alternate_template == triplet.get_alternate_template() == \
        dataset_constants("rotten_tomatoes")["alternate_template"]
    assert (len(triplet.calibration), len(triplet.demonstration), len(triplet.test)) == (1024, 4096, 512)


def test_triplet_ground_truth(triplet):
    assert triplet.get_default_ground_truth_label(0) == triplet.test.get_label(0)
    labels = [triplet.get_default_ground_truth_label_index(i) for i in range(512)]
    assert labels == triplet.test.label_indexes()
    assert [triplet.get_default_ground_truth_label(i) for i in range(3)] == \
        [triplet.get_label_space()[j] for j in labels[:3]]
    with pytest.raises(ValueError, match=r"test index must be <= 511 \(dataset 'rotten_tomatoes', 512 test items\)"):
        triplet.get_default_ground_truth_label(512)
    with pytest.raises(TypeError, match="test index must be an int"):
        triplet.get_default_ground_truth_label_index("0")


TEMPLATE_TRIPLES = [
    ("change_instruction_triple", "Classify: ", "get_instruction"),
    ("change_input_text_prefixes_triple", ["text: "], "get_input_text_prefixes"),
    ("change_input_text_affixes_triple", ["\n"], "get_input_text_affixes"),
    ("change_label_prefix_triple", "label: ", "get_label_prefix"),
    ("change_label_affix_triple", " ", "get_label_affix"),
    ("change_query_prefix_triple", "Query: ", "get_query_prefix"),
]


@pytest.mark.parametrize("method, value, getter", TEMPLATE_TRIPLES, ids=[t[0] for t in TEMPLATE_TRIPLES])
def test_template_triples_warn_and_strict_mode_keeps_the_templates(triplet, method, value, getter):
    before = [getattr(part, getter)() for part in (triplet.calibration, triplet.demonstration, triplet.test)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(triplet, method)(value)
    messages = [str(w.message) for w in caught]
    assert messages[0] == TRIPLE_CHANGE_WARNING and messages[0].startswith("We don't recommend to use these methods.")
    assert messages[1].startswith(TAMPERING_TEXT) and caught[1].category is TamperingWarning
    assert messages[2] == STRICT_TEMPLATE_WARNING and len(messages) == 3
    assert [getattr(part, getter)() for part in (triplet.calibration, triplet.demonstration, triplet.test)] == before


@pytest.mark.parametrize("method, value", [("change_instruction_triple", 3), ("change_label_prefix_triple", None),
                                           ("change_input_text_prefixes_triple", "text: "),
                                           ("change_input_text_affixes_triple", [1])])
def test_template_triples_refuse_bad_values(triplet, method, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any warning
        with pytest.raises(TypeError, match=r"must (be|hold) .*string.*\(dataset 'rotten_tomatoes'\)"):
            getattr(triplet, method)(value)


def test_label_space_triple_changes_all_three_parts(triplet):
    truth = triplet.test.label_indexes()
    with pytest.warns(StaICCWarning) as caught:
        triplet.change_label_space_triple(["bad", "good"])
    messages = [str(w.message) for w in caught]
    assert messages[0] == TRIPLE_CHANGE_WARNING and messages[1].startswith(TAMPERING_TEXT)
    for part in (triplet.calibration, triplet.demonstration, triplet.test):
        assert part.get_label_space() == ["bad", "good"]
    assert triplet.get_label_space() == ["bad", "good"]
    assert triplet.test.label_indexes() == truth
    assert triplet.get_default_ground_truth_label(0) == ["bad", "good"][truth[0]]
    assert rotten_tomatoes().get_label_space() == ["negative", "positive"]  # the source is untouched
    with pytest.raises(ValueError, match="needs 2 words"):
        triplet.change_label_space_triple(["a"])


def test_calibration_base_class_and_knn_prompt_name():
    from StaICC.prefabricate_inference import standard_calibration as sc
    assert sc.knn_prompt is sc.knn_prompting
    for cls in (sc.contextual_calibration, sc.domain_calibration, sc.hidden_calibration, sc.knn_prompt,
                sc.knn_prompt_centroid):
        assert issubclass(cls, sc.calibration)
    base = sc.calibration(["no", "yes"])
    with pytest.raises(NotImplementedError, match="calibration does not implement inference"):
        base([0.5, 0.5])
    with pytest.raises(ValueError, match="twice"):
        sc.calibration(["yes", "yes"])
