"""Prompt writer and pseudo-query generators (STANDARD.md §5, §8.3, §8.4, §8.8, §10.3)."""
import re
import warnings

import pytest

from StaICC import Contextual_bias, Domain_bias
from StaICC.datasets import Dataset
from StaICC.errors import StaICCWarning, TamperingWarning
from StaICC.engine.procedures import TemplateProcedure
from StaICC.prompt import domain_query_generator, empty_query_generator, prompt_writter
from StaICC.rng import fresh_stream
from StaICC.datasets.split import triplet_dataset

from conftest import TAMPERING_TEXT, fresh

D1033 = "thoughtful , provocative and entertaining ."
D360 = "don't be fooled by the impressive cast list - eye see you is pure junk ."
D2365 = "an overwrought taiwanese soaper about three people and their mixed-up relationship ."
D911 = ("in an effort , i suspect , not to offend by appearing either too serious or too lighthearted , it "
        "offends by just being wishy-washy .")
Q0 = "audiard successfully maintains suspense on different levels throughout a film that is both gripping and compelling ."

# §10.3, byte for byte
RT_FIRST = (
    "review: thoughtful , provocative and entertaining . sentiment: positive\n"
    "review: don't be fooled by the impressive cast list - eye see you is pure junk . sentiment: negative\n"
    "review: an overwrought taiwanese soaper about three people and their mixed-up relationship . sentiment: negative\n"
    "review: in an effort , i suspect , not to offend by appearing either too serious or too lighthearted , it "
    "offends by just being wishy-washy . sentiment: negative\n"
    "review: audiard successfully maintains suspense on different levels throughout a film that is both gripping "
    "and compelling . sentiment: ")
RT_ROW0 = [1033, 360, 2365, 911]
WRONG_COUNT_TEXT = "The number of wrong labels is not an integer."


def tamper_ok():
    return pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT))


@pytest.fixture
def rtx():
    """A fresh, mutable rotten_tomatoes experimentor."""
    return fresh("rotten_tomatoes")


def toy_triplet(labels=None, n_labels=3):
    """A tiny triplet: demonstration rows known exactly (texts d<i>, labels given)."""
    space = ["a", "b", "c", "d"][:n_labels]
    demo_labels = labels if labels is not None else [i % n_labels for i in range(10)]
    demos = [([f"d{i}"], lab) for i, lab in enumerate(demo_labels)]
    tests = [([f"q{i}"], i % n_labels) for i in range(4)]
    dataset = Dataset("toy", demos + tests, space)
    trip = triplet_dataset(dataset, 0, len(demos), len(tests))
    # overwrite the drawn order so that demonstration i is exactly "d<i>" and test j is "q<j>"
    trip.demonstration.table.rows = demos
    trip.test.table.rows = tests
    return trip


# -- §10.3 / §5.2 ---------------------------------------------------------------------------
def test_first_rotten_tomatoes_prompt_byte_for_byte(rt):
    assert rt.prompt_set()[0] == RT_FIRST


def test_write_prompt_from_indexes(rtx):
    assert rtx.prompt_former.write_prompt(RT_ROW0, 0) == RT_FIRST


def test_direct_prompt_with_empty_query(rtx):
    demo = rtx.triplet_dataset.demonstration
    lines = [demo[1033], demo[360]]
    assert lines == [([D1033], "positive"), ([D360], "negative")]
    expected = ("review: thoughtful , provocative and entertaining . sentiment: positive\nreview: don't be fooled by "
                "the impressive cast list - eye see you is pure junk . sentiment: negative\nreview:  sentiment: ")
    assert rtx.prompt_former.write_prompt_from_dataline(lines, [""]) == expected


def test_direct_prompt_layout_on_toy():
    writer = prompt_writter(toy_triplet())
    assert writer.write_prompt([2, 0], 1) == "Input: d2 Label: c\nInput: d0 Label: a\nInput: q1 Label: "
    assert writer.write_prompt([], 3) == "Input: q3 Label: "


def test_instruction_and_query_prefix_positions(quiet):
    writer = prompt_writter(toy_triplet())
    writer.change_instruction("INS|")
    writer.change_query_prefix("QP|")
    writer.change_label_affix("<LA>")
    assert writer.write_prompt([1], 0) == "INS|Input: d1 Label: b<LA>QP|Input: q0 Label: "


# -- §5.3 noisy channel ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sst2_noisy_first():
    return fresh("GLUE-SST2", noisy_channel=True).prompt_set()[0]


def test_noisy_channel_sst2_example(sst2_noisy_first):
    first = sst2_noisy_first
    assert isinstance(first, list) and len(first) == 2
    assert first[0].startswith("sentiment: negative sentence: for philosophers , not filmmakers \n"
                               "sentiment: positive sentence: ")
    assert first[0].endswith("\nsentiment: negative sentence: video , and \n")
    assert first[1].endswith("\nsentiment: positive sentence: video , and \n")
    # the two prompts differ only in the candidate label
    assert first[1] == first[0][:-len("negative sentence: video , and \n")] + "positive sentence: video , and \n"


def test_noisy_channel_layout_on_toy():
    writer = prompt_writter(toy_triplet(), use_noisy_channel=True)
    assert writer.write_prompt([1, 2], 0) == [
        "Label: b Input: d1\nLabel: c Input: d2\nLabel: a Input: q0\n",
        "Label: b Input: d1\nLabel: c Input: d2\nLabel: b Input: q0\n",
        "Label: b Input: d1\nLabel: c Input: d2\nLabel: c Input: q0\n",
    ]


def test_use_and_cancel_noisy_channel(quiet):
    writer = prompt_writter(toy_triplet())
    writer.change_label_affix("X")
    writer.change_input_text_affixes(["Y"])
    writer.use_noisy_channel()
    config = writer.get_config_dict()
    assert (config["label_affix"], config["input_text_affixes"], config["use_noisy_channel"]) == (" ", ["\n"], True)
    writer.use_noisy_channel("A", "B")  # already on: does nothing
    assert writer.get_config_dict()["label_affix"] == " "
    writer.cancel_noisy_channel()
    config = writer.get_config_dict()
    # restored from the dataset defaults, not from the earlier user values
    assert (config["label_affix"], config["input_text_affixes"], config["use_noisy_channel"]) == ("\n", [" "], False)
    writer.cancel_noisy_channel()  # already off: nothing
    assert writer.get_config_dict()["label_affix"] == "\n"


def test_use_noisy_channel_custom_affixes():
    writer = prompt_writter(toy_triplet())
    writer.use_noisy_channel("|", "#")
    assert writer.write_prompt([0], 1)[0] == "Label: a|Input: d0#Label: a|Input: q1#"


# -- §5.5 replace_space_to_label -----------------------------------------------------------
def test_replace_space_to_label(rtx):
    writer = rtx.prompt_former
    with tamper_ok():
        writer.replace_space_to_label()
    assert writer.get_label_space() == [" negative", " positive"]
    assert writer.get_config_dict()["label_prefix"] == "sentiment:"
    prompt = writer.write_prompt(RT_ROW0, 0)
    assert prompt.endswith("compelling . sentiment:")
    assert prompt == RT_FIRST[:-1]  # demonstration text byte-identical
    assert rtx.prompt_set()[0] == RT_FIRST[:-1]


def test_replace_space_to_label_resets_first(quiet, rtx):
    writer = rtx.prompt_former
    writer.change_instruction("X ")
    writer.replace_space_to_label()
    assert writer.get_config_dict()["instruction"] == ""


# -- §5.4 label noise ---------------------------------------------------------------------------
def test_label_noise_rate_half_on_first_prompt(rtx):
    writer = rtx.prompt_former
    with tamper_ok():
        writer.set_label_wrong_rate(0.5)
    # W = int(4 * 0.5) = 2; picks: int(0.2523*4) = 1 -> 360, then int(0.0881*3) = 0 -> 1033
    expected = (
        "review: thoughtful , provocative and entertaining . sentiment: negative\n"
        "review: don't be fooled by the impressive cast list - eye see you is pure junk . sentiment: positive\n"
        + RT_FIRST.split("junk . sentiment: negative\n", 1)[1])
    assert writer.write_prompt(RT_ROW0, 0) == expected
    assert writer._label_error_stream.state == 378494188  # exactly W = 2 floats consumed


def test_label_noise_flips_cyclically_and_continues_stream(quiet):
    writer = prompt_writter(toy_triplet())  # labels of d<i> are i % 3 -> a, b, c
    writer.set_label_wrong_rate(0.5)
    # prompt 1: W = 2; picks position 1 (d1) then position 0 (d0)
    assert writer.write_prompt([0, 1, 2, 5], 0) == (
        "Input: d0 Label: b\nInput: d1 Label: c\nInput: d2 Label: c\nInput: d5 Label: c\nInput: q0 Label: ")
    # prompt 2: u3 = 0.5772.. -> position int(0.5772*4) = 2 (d2: c -> a);
    # u4 = 955863294 / 2**32 = 0.2225.. -> position int(0.2225*3) = 0 (d3: a -> b)
    assert writer.write_prompt([3, 4, 2, 8], 0) == (
        "Input: d3 Label: b\nInput: d4 Label: b\nInput: d2 Label: a\nInput: d8 Label: c\nInput: q0 Label: ")


def test_label_noise_duplicates_all_flipped(quiet):
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(0.25)  # W = 1: pick position int(0.2523*4) = 1 -> value 7
    assert writer.write_prompt([7, 7, 4, 7], 0) == (
        "Input: d7 Label: c\nInput: d7 Label: c\nInput: d4 Label: b\nInput: d7 Label: c\nInput: q0 Label: ")


def test_label_noise_rate_one_flips_everything(quiet):
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(1.0)
    assert writer.write_prompt([0, 1, 2], 0) == "Input: d0 Label: b\nInput: d1 Label: c\nInput: d2 Label: a\nInput: q0 Label: "


def test_non_integer_wrong_count_warns(quiet):
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(0.3)  # W = int(4 * 0.3) = 1, 1/4 != 0.3
    with pytest.warns(StaICCWarning, match=f"^{re.escape(WRONG_COUNT_TEXT)}$"):
        prompt = writer.write_prompt([0, 1, 2, 3], 0)
    assert prompt.count("Label: ") == 5
    assert writer._label_error_stream.state == 1083814273  # one float


def test_integer_wrong_count_and_zero_do_not_warn(quiet):
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(0.2)  # W = int(4 * 0.2) = 0: no warning, no float
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        writer.write_prompt([0, 1, 2, 3], 0)
    assert writer._label_error_stream.state == 42
    writer.set_label_wrong_rate(0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        writer.write_prompt([0, 1, 2, 3], 0)


def test_out_of_range_rate_raises_by_write_time(quiet):
    writer = prompt_writter(toy_triplet())
    with pytest.raises(ValueError, match=r"The label wrong rate should be in \[0, 1\]"):
        writer.set_label_wrong_rate(1.5)
        writer.write_prompt([0], 0)


@pytest.mark.xfail(strict=True, reason="spec §5.6: set_label_wrong_rate does no check at set time (the check is "
                                       "in write_prompt, §5.4 step 1); our code raises in the setter")
def test_set_label_wrong_rate_does_not_check_at_set_time(quiet):
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(1.5)
    with pytest.raises(ValueError, match=r"^The label wrong rate should be in \[0, 1\]\.$"):
        writer.write_prompt([0], 0)


def test_index_errors(rtx):
    writer = rtx.prompt_former
    with pytest.raises(ValueError, match="^Index out of range"):
        writer.write_prompt([0, 4096], 0)
    with pytest.raises(ValueError, match="^Index out of range"):
        writer.write_prompt([-1], 0)
    with pytest.raises(ValueError, match="^Index out of range"):
        writer.write_prompt([0], 512)
    with pytest.raises(ValueError, match=re.escape(
            "The query index should be given. If you want to use the pseudo query, please set the pseudo query "
            "generater.")):
        writer.write_prompt([0])


# -- cut_by_length ---------------------------------------------------------------------------
def test_cut_by_length():
    writer = prompt_writter(toy_triplet())
    full = writer.write_prompt([0], 1)
    assert full == "Input: d0 Label: a\nInput: q1 Label: "
    n = len(full)  # 36
    writer.cut_by_length = 8
    assert writer.write_prompt([0], 1) == "Input: d0 Label: a\nInput: q1"
    writer.cut_by_length = n
    assert writer.write_prompt([0], 1) == ""
    # quirk: c > len(P) gives a negative end index: 2*len(P) - c characters
    writer.cut_by_length = n + 5
    assert writer.write_prompt([0], 1) == full[:n - 5]
    assert len(writer.write_prompt([0], 1)) == 2 * n - (n + 5)
    writer.cut_by_length = 2 * n
    assert writer.write_prompt([0], 1) == ""
    writer.cut_by_length = 3 * n
    assert writer.write_prompt([0], 1) == ""


def test_cut_by_length_noisy_applies_per_prompt():
    writer = prompt_writter(toy_triplet(), use_noisy_channel=True)
    writer.cut_by_length = 4
    # each P_l = "Label: a Input: d0\nLabel: <l> Input: q1\n" loses its last 4 characters
    assert writer.write_prompt([0], 1) == ["Label: a Input: d0\nLabel: a Input:",
                                           "Label: a Input: d0\nLabel: b Input:",
                                           "Label: a Input: d0\nLabel: c Input:"]


# -- §5.6 mutators -------------------------------------------------------------------------------
@pytest.mark.parametrize("method,bad,message", [
    ("change_instruction", 3, "Instruction should be a string."),
    ("change_input_text_prefixes", "x", "Input text prefixes should be a list."),
    ("change_input_text_prefixes", [3], "Input text prefixes should be a list of strings."),
    ("change_label_prefix", None, "Label prefix should be a string."),
    ("change_label_affix", ["x"], "Label affix should be a string."),
    ("change_query_prefix", 1.0, "Query prefix should be a string."),
    ("change_label_space", ("a", "b"), "Label space should be a list."),
    ("change_label_space", ["a", 2], "Label space should be a list of strings."),
    ("change_input_text_affixes", "x", "Input text affixes should be a list."),
    ("change_input_text_affixes", [1], "Input text affixes should be a list of strings."),
])
def test_mutator_type_errors(rtx, method, bad, message):
    writer = rtx.prompt_former
    before = writer.get_config_dict()
    with tamper_ok(), pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        getattr(writer, method)(bad)
    assert writer.get_config_dict() == before


def test_mutators_store_copies_and_change_prompt(rtx):
    writer = rtx.prompt_former
    prefixes = ["text: "]
    space = ["bad", "good"]
    with tamper_ok():
        writer.change_input_text_prefixes(prefixes)
    with tamper_ok():
        writer.change_label_space(space)
    prefixes.append("junk")
    space[0] = "junk"
    assert writer.get_label_space() == ["bad", "good"]
    prompt = writer.write_prompt(RT_ROW0, 0)
    assert prompt == RT_FIRST.replace("review: ", "text: ").replace("sentiment: positive", "sentiment: good") \
        .replace("sentiment: negative", "sentiment: bad")
    # the dataset label space and the ground truth are unchanged
    assert rtx.triplet_dataset.demonstration.label_space == ["negative", "positive"]
    returned = writer.get_label_space()
    returned.append("x")
    assert writer.get_label_space() == ["bad", "good"]


def test_change_input_text_affixes_works(rtx):
    writer = rtx.prompt_former
    with tamper_ok():
        writer.change_input_text_affixes(["\t"])
    assert writer.write_prompt(RT_ROW0, 0) == RT_FIRST.replace(" . sentiment: ", " .\tsentiment: ")
    assert writer.get_config_dict()["input_text_affixes"] == ["\t"]


@pytest.mark.xfail(strict=True, reason="spec §5.6: change_input_text_prefixes does not check the length; our "
                                       "code raises ValueError when it differs from the input element count")
def test_input_text_prefixes_length_not_checked(quiet, rtx):
    writer = rtx.prompt_former
    writer.change_input_text_prefixes(["text: ", "extra: "])
    assert writer.write_prompt(RT_ROW0, 0) == RT_FIRST.replace("review: ", "text: ")


def test_label_space_length_not_checked(quiet, rtx):  # spec §5.6: more words than labels add distractors
    writer = rtx.prompt_former
    writer.change_label_space(["bad", "good", "meh"])
    assert writer.get_label_space() == ["bad", "good", "meh"]


# -- §5.7 config dict -------------------------------------------------------------------------------
CONFIG_KEYS = ["instruction", "input_text_prefixes", "input_text_affixes", "label_prefix", "label_affix",
               "query_prefix", "label_space", "label_wrong_rate", "use_noisy_channel"]


def test_get_config_dict_keys_and_defaults(rtx):
    config = rtx.prompt_former.get_config_dict()
    assert list(config) == CONFIG_KEYS
    assert config == {"instruction": "", "input_text_prefixes": ["review: "], "input_text_affixes": [" "],
                      "label_prefix": "sentiment: ", "label_affix": "\n", "query_prefix": "",
                      "label_space": ["negative", "positive"], "label_wrong_rate": 0, "use_noisy_channel": False}
    config["label_space"].append("x")
    config["input_text_prefixes"][0] = "x"
    assert rtx.prompt_former.get_config_dict()["label_space"] == ["negative", "positive"]
    assert rtx.prompt_former.get_config_dict()["input_text_prefixes"] == ["review: "]


def test_set_config_dict_round_trip(quiet, rtx):
    writer = rtx.prompt_former
    writer.change_instruction("Classify. ")
    writer.change_label_prefix("label: ")
    writer.change_label_affix("\t")
    writer.change_input_text_affixes(["  "])
    writer.change_query_prefix("Q: ")
    writer.change_label_space(["bad", "good"])
    config = writer.get_config_dict()
    before = writer.write_prompt(RT_ROW0, 0)
    writer.set_config_dict(config)
    assert writer.get_config_dict() == config
    assert writer.write_prompt(RT_ROW0, 0) == before
    assert before == ("Classify. review: thoughtful , provocative and entertaining .  label: good\t"
                      "review: don't be fooled by the impressive cast list - eye see you is pure junk .  label: bad\t"
                      "review: an overwrought taiwanese soaper about three people and their mixed-up relationship .  "
                      "label: bad\treview: " + D911 + "  label: bad\tQ: review: " + Q0 + "  label: ")


def test_set_config_dict_round_trip_noisy(quiet):
    writer = fresh("rotten_tomatoes", noisy_channel=True).prompt_former
    writer.change_label_affix("|")
    config = writer.get_config_dict()
    assert config["use_noisy_channel"] is True
    before = writer.write_prompt(RT_ROW0, 0)
    writer.set_config_dict(config)
    assert writer.get_config_dict() == config
    assert writer.write_prompt(RT_ROW0, 0) == before
    assert before[0].startswith("sentiment: positive|review: " + D1033 + "\n")


def test_set_config_dict_resets_first_and_ignores_unknown_keys(quiet, rtx):
    writer = rtx.prompt_former
    writer.change_label_prefix("x: ")
    writer.cut_by_length = 3
    writer.set_config_dict({"instruction": "I ", "no_such_key": 1})
    config = writer.get_config_dict()
    assert config["instruction"] == "I "
    assert config["label_prefix"] == "sentiment: "
    assert writer.cut_by_length == 0


def test_set_config_dict_noisy_flag_without_affixes(quiet, rtx):
    writer = rtx.prompt_former
    writer.set_config_dict({"use_noisy_channel": True})
    config = writer.get_config_dict()
    assert (config["use_noisy_channel"], config["label_affix"], config["input_text_affixes"]) == (True, " ", ["\n"])


def test_set_config_dict_falsy_noisy_keeps_other_keys(quiet, rtx):
    """Deliberate fix (see §5.7/§11.3.5): a falsy ``use_noisy_channel`` no longer resets the other keys."""
    writer = rtx.prompt_former
    writer.set_config_dict({"instruction": "X ", "label_wrong_rate": 0.5, "use_noisy_channel": False})
    config = writer.get_config_dict()
    assert (config["instruction"], config["label_wrong_rate"], config["use_noisy_channel"]) == ("X ", 0.5, False)


def test_tampering_message_starts_with_spec_text(rtx):
    with pytest.warns(TamperingWarning) as record:
        rtx.prompt_former.change_instruction("I ")
    message = str(record[0].message)
    assert message.startswith(TAMPERING_TEXT)
    assert message == TAMPERING_TEXT or message.startswith(TAMPERING_TEXT + " (")


def test_reset_restores_everything(quiet, rtx):
    writer = rtx.prompt_former
    writer.change_instruction("X")
    writer.set_label_wrong_rate(0.5)
    writer.use_noisy_channel()
    writer.cut_by_length = 2
    writer.write_prompt(RT_ROW0, 0)
    writer.example()
    writer.reset()
    assert writer.get_config_dict() == fresh("rotten_tomatoes").prompt_former.get_config_dict()
    assert writer.cut_by_length == 0
    assert writer._label_error_stream.state == 42 and writer._example_stream.state == 42


# -- §5.8 example -------------------------------------------------------------------------------------
def test_example_errors(rtx):
    with pytest.raises(ValueError, match="^Invalid number of demonstrations"):
        rtx.example(-1)
    with pytest.raises(ValueError, match="^Invalid number of demonstrations"):
        rtx.example(4097)
    assert rtx.example(4096).count("sentiment: ") == 4097


def test_example_draws_from_its_own_stream(rtx):
    stream = fresh_stream()
    indexes = stream.index_set(8, 4096)
    query = stream.int_in_range(0, 512)
    other = fresh("rotten_tomatoes")
    assert rtx.example() == other.prompt_former.write_prompt(indexes, query)
    assert indexes[:4] == RT_ROW0  # same first draws as the sampler (both fresh streams)
    # a second example continues the stream
    indexes2 = stream.index_set(3, 4096)
    query2 = stream.int_in_range(0, 512)
    assert rtx.example(3) == other.prompt_former.write_prompt(indexes2, query2)


def test_example_is_deterministic_across_experimentors():
    a, b = fresh("rotten_tomatoes"), fresh("rotten_tomatoes")
    assert [a.example(), a.example(2), a.example(0)] == [b.example(), b.example(2), b.example(0)]
    a.prompt_former.reset()
    assert a.example() == b.prompt_former.write_prompt(fresh_stream().index_set(8, 4096),
                                                       _query_after(8, 4096, 512))


def _query_after(k, d, t):
    s = fresh_stream()
    s.index_set(k, d)
    return s.int_in_range(0, t)


# -- §8.8 Template_sens rows ---------------------------------------------------------------------
L9 = [(0, 0, 0, 0), (0, 1, 1, 1), (0, 2, 2, 2), (1, 0, 1, 2), (1, 1, 2, 0), (1, 2, 0, 1), (2, 0, 2, 1),
      (2, 1, 0, 2), (2, 2, 1, 0)]


def test_template_sens_row_3_rotten_tomatoes(rt):
    templates = TemplateProcedure(rt.triplet_dataset.demonstration.alternate_template).templates
    assert templates[3] == {
        "instruction": "How would you describe the overall feeling of the movie based on this sentence? ",
        "input_text_prefixes": ["review: "], "label_prefix": "label: ", "label_affix": "\t"}


@pytest.mark.parametrize("row", range(9))
def test_template_sens_rows_follow_l9(ds, row):
    alt = ds["rotten_tomatoes"]["alternate_template"]
    templates = TemplateProcedure(alt).templates
    keys = ["instruction", "input_text_prefixes", "label_prefix", "label_affix"]
    assert templates[row] == {key: alt[key][L9[row][c]] for c, key in enumerate(keys)}
    assert list(templates[row]) == keys


def test_template_row_0_is_normal_template(rtx):
    writer = rtx.prompt_former
    writer.apply_template(TemplateProcedure(rtx.triplet_dataset.demonstration.alternate_template).templates[0])
    assert writer.write_prompt(RT_ROW0, 0) == RT_FIRST


def test_template_row_3_prompt(rtx):
    writer = rtx.prompt_former
    writer.apply_template(TemplateProcedure(rtx.triplet_dataset.demonstration.alternate_template).templates[3])
    prompt = writer.write_prompt(RT_ROW0, 0)
    assert prompt == ("How would you describe the overall feeling of the movie based on this sentence? "
                      + RT_FIRST.replace("sentiment: ", "label: ").replace("\n", "\t"))


# -- §8.3 contextual / §8.4 domain queries --------------------------------------------------------
def test_empty_query_generator(rt):
    # one "" per input element of the calibration part's row 0 (1 for every standard dataset)
    gen = empty_query_generator(rt.triplet_dataset.calibration)
    assert next(gen) == [""]
    assert next(iter(gen)) == [""]
    two = Dataset("toy2", [(["a", "b"], 0)], ["l"])
    assert next(empty_query_generator(two)) == ["", ""]


def test_contextual_prompt(quiet):
    experimentor = Contextual_bias(datasets=["rotten_tomatoes"])[0]
    first = experimentor.prompt_set()[0]
    assert first.endswith("sentiment: negative\nreview:  sentiment: ")
    assert first == RT_FIRST.replace(Q0, "")


def _reference_domain_words(demo, count):
    """§8.4 literally: (s, w, word) picks from a fresh stream."""
    stream = fresh_stream()
    picks = []
    for _ in range(count):
        s = stream.int_in_range(0, len(demo) - 1)
        pieces = demo.get_input_text(s)[0].split(" ")
        w = stream.int_in_range(0, len(pieces) - 1)
        picks.append((s, w, pieces[w]))
    return picks, stream


def test_domain_query_reference_picks(rt):
    demo = rt.triplet_dataset.demonstration
    picks, _ = _reference_domain_words(demo, 5)
    assert picks == [(1033, 0, "thoughtful"), (2363, 7, ","), (1538, 0, "a"), (1831, 2, "know"),
                     (3578, 10, "warmth")]


def test_domain_query_generator_matches_reference(rt):
    demo = rt.triplet_dataset.demonstration
    gen = domain_query_generator(demo, 128)
    first = next(gen)
    assert len(first) == 1
    words = first[0].split(" ")
    assert words[:5] == ["thoughtful", ",", "a", "know", "warmth"]
    assert first[0].startswith("thoughtful , a know warmth ")
    picks, stream = _reference_domain_words(demo, 256)
    assert first[0] == " ".join(p[2] for p in picks[:128])
    assert next(gen)[0] == " ".join(p[2] for p in picks[128:])  # 2·L floats per query, stream continues
    assert gen._stream.state == stream.state


def test_domain_query_keeps_empty_pieces_and_never_last():
    rows = [(["a  b "], 0), (["x"], 0), (["never"], 0)]
    demo = Dataset("toy", rows, ["l"])
    gen = domain_query_generator(demo, 50)
    words = next(gen)[0].split(" ")
    # pieces of "a  b " are ["a", "", "b", ""]: the last piece and the last row are never chosen
    assert set(words) <= {"a", "", "b", "x"}
    assert "never" not in words
    assert "" in words


def test_domain_bias_prompt(quiet, rt):
    experimentor = Domain_bias(datasets=["rotten_tomatoes"])[0]
    first = experimentor.prompt_set()[0]
    query = next(domain_query_generator(rt.triplet_dataset.demonstration, 128))[0]
    assert first == RT_FIRST.replace(Q0, query)
    assert first.endswith(" sentiment: ")


@pytest.mark.xfail(strict=True, reason="spec §5.4/§8.4/§11.2.4: prompt_set() advances the label-error stream and the "
                                       "domain generator, which are never restarted by a run; our prompt_set() "
                                       "restarts both so that runs are idempotent")
def test_prompt_set_advances_label_error_stream(quiet):
    experimentor = fresh("rotten_tomatoes")
    writer = experimentor.prompt_former
    writer.set_label_wrong_rate(0.5)
    experimentor.prompt_set()  # 1024 prompts x W = 2 floats
    stream = fresh_stream()
    for _ in range(2048):
        stream.next_float()
    corrupted = stream.n_elements(RT_ROW0, 2)
    demo = experimentor.triplet_dataset.demonstration
    lines = []
    for v in RT_ROW0:
        inputs, label = demo[v]
        if v in corrupted:
            label = "positive" if label == "negative" else "negative"
        lines.append((inputs, label))
    expected = fresh("rotten_tomatoes").prompt_former.write_prompt_from_dataline(lines, [Q0])
    assert writer.write_prompt(RT_ROW0, 0) == expected


@pytest.mark.xfail(strict=True, reason="spec §8.4/§11.2.4: the domain generator advances for every prompt written, "
                                       "prompt_set() included, and is never reset; our prompt_set() restarts it")
def test_prompt_set_advances_domain_generator(quiet, rt):
    experimentor = Domain_bias(datasets=["rotten_tomatoes"])[0]
    experimentor.prompt_set()  # 1024 queries drawn
    second = experimentor.prompt_set()[0]
    gen = domain_query_generator(rt.triplet_dataset.demonstration, 128)
    for _ in range(1024):
        next(gen)
    assert second == RT_FIRST.replace(Q0, next(gen)[0])


# -- the template as one frozen value ------------------------------------------------------------
def test_template_is_frozen_and_mutators_replace_it(quiet, rtx):
    import dataclasses

    from StaICC.prompt import Template
    writer = rtx.prompt_former
    before = writer.template
    assert isinstance(before, Template)
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.instruction = "X"
    writer.change_instruction("X ")
    assert writer.template is not before and writer.template.instruction == "X "
    assert before.instruction == ""  # the old value is untouched
    assert writer.template == dataclasses.replace(before, instruction="X ")
    writer.reset()
    assert writer.template == before


def test_template_defaults_match_the_config_dict(rtx):
    template = rtx.prompt_former.template
    assert template.input_text_prefixes == ("review: ",) and template.label_space == ("negative", "positive")
    assert (template.label_wrong_rate, template.noisy_channel, template.cut_by_length) == (0, False, 0)
    assert template.config_dict() == rtx.prompt_former.get_config_dict()


@pytest.mark.parametrize("changes, error, pattern", [
    ({"instruction": 3}, TypeError, "Template.instruction must be a str"),
    ({"input_text_prefixes": ["x: "]}, TypeError, "Template.input_text_prefixes must be a tuple of str"),
    ({"input_text_affixes": (" ", " ")}, ValueError, "one input text affix per prefix"),
    ({"label_space": ("a", "a")}, ValueError, "names 'a' twice"),
    ({"label_wrong_rate": 1.5}, ValueError, "the label wrong rate must be <= 1"),
    ({"noisy_channel": 1}, TypeError, "Template.noisy_channel must be True or False"),
    ({"cut_by_length": 2.0}, TypeError, "cut_by_length must be an int"),
])
def test_template_refuses_bad_values(rtx, changes, error, pattern):
    import dataclasses
    with pytest.raises(error, match=pattern):
        dataclasses.replace(rtx.prompt_former.template, **changes)


def test_snapshot_and_restore(quiet, rtx):
    writer = rtx.prompt_former
    state = writer.snapshot()
    writer.change_label_space(["bad", "good"])
    writer.set_label_wrong_rate(0.5)
    writer.cut_by_length = 3
    assert writer.non_standard_settings() == ["label space changed", "label wrong rate set to 0.5"]
    changed = writer.snapshot()
    writer.restore(state)
    assert writer.get_label_space() == ["negative", "positive"] and writer.non_standard_settings() == []
    assert writer.cut_by_length == 0 and writer.write_prompt(RT_ROW0, 0) == RT_FIRST
    writer.restore(changed)
    assert writer.template == changed.template and writer.cut_by_length == 3
    assert writer.non_standard_settings() == ["label space changed", "label wrong rate set to 0.5"]
    with pytest.raises(TypeError, match="restore\\(\\) takes what snapshot\\(\\) returned"):
        writer.restore({"_instruction": "x"})


def test_a_refused_mutation_changes_nothing(rtx):
    writer = rtx.prompt_former
    with tamper_ok(), pytest.raises(ValueError):
        writer.change_label_prefix(3)
    assert writer.non_standard_settings() == [] and writer.template == writer.standard_template()


def test_cut_by_length_must_be_an_int(rtx):
    writer = rtx.prompt_former
    with pytest.raises(TypeError, match="cut_by_length must be an int"):
        writer.cut_by_length = "3"
    with pytest.raises(TypeError, match="cut_by_length must be an int"):
        writer.cut_by_length = True
    assert writer.cut_by_length == 0


def test_apply_template_checks_keys_and_values(rtx):
    writer = rtx.prompt_former
    writer.apply_template({"instruction": "I ", "input_text_prefixes": ["t: "], "use_noisy_channel": False})
    assert writer.template.instruction == "I " and writer.template.input_text_prefixes == ("t: ",)
    assert writer.non_standard_settings() == []  # Template_sens's passes are part of the standard
    with pytest.raises(KeyError, match="unknown template key '_tampered'"):
        writer.apply_template({"_tampered": []})
    with pytest.raises(ValueError, match="names 'x' twice"):
        writer.apply_template({"label_space": ["x", "x"]})
    with pytest.raises(TypeError, match="Template.label_prefix must be a str"):
        writer.apply_template({"label_prefix": 3})


# -- duplicate label words are refused -----------------------------------------------------------
def test_change_label_space_refuses_duplicates(rtx):
    writer = rtx.prompt_former
    with tamper_ok():
        with pytest.raises(ValueError, match="the label space names 'good' twice .dataset 'rotten_tomatoes'.; "
                                             "label words must be distinct"):
            writer.change_label_space(["good", "good"])
    assert writer.get_label_space() == ["negative", "positive"]


def test_set_config_dict_refuses_duplicate_label_words(quiet, rtx):
    with pytest.raises(ValueError, match="names 'x' twice"):
        rtx.prompt_former.set_config_dict({"label_space": ["x", "x"]})


def test_label_words_that_differ_only_by_a_space_are_distinct(quiet, rtx):
    rtx.prompt_former.change_label_space(["good", " good"])
    assert rtx.prompt_former.get_label_space() == ["good", " good"]


# -- writing is a pure function of the template -----------------------------------------------------
def test_pure_write_prompt_equals_the_writer(quiet):
    from StaICC.prompt import write_prompt
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(0.5)
    noise = fresh_stream()
    template, trip = writer.template, writer.triplet_dataset
    for demos, query in (([0, 1, 2, 5], 0), ([3, 4, 2, 8], 1), ([7, 7], 2)):
        assert write_prompt(template, trip, demos, query, noise) == writer.write_prompt(demos, query)
    assert noise.state == writer._label_error_stream.state
    # an explicit query (a pseudo query) instead of a test index
    assert write_prompt(template, trip, [0], ["zz"], fresh_stream()).endswith("Input: zz Label: ")


def test_label_noise_needs_a_stream(quiet):
    from StaICC.prompt import write_prompt
    writer = prompt_writter(toy_triplet())
    writer.set_label_wrong_rate(0.5)
    with pytest.raises(ValueError, match="needs a label-noise stream .dataset 'toy'."):
        write_prompt(writer.template, writer.triplet_dataset, [0, 1], 0)
    assert write_prompt(writer.template, writer.triplet_dataset, [0], 0) == "Input: d0 Label: a\nInput: q0 Label: "


def test_iter_prompts_reproduces_prompt_set(quiet):
    from StaICC.prompt import iter_prompts
    experimentor = fresh("financial_phrasebank", k=2)
    experimentor.prompt_former.set_label_wrong_rate(0.5)
    expected = experimentor.prompt_set()
    plan = [(list(demos), test_index) for test_index, _repeat, demos in experimentor.plan().queries()]
    writer = experimentor.prompt_former
    assert list(iter_prompts(writer.template, writer.triplet_dataset, plan, fresh_stream())) == expected


def test_the_writer_follows_a_changed_dataset_label_space(quiet):
    trip = toy_triplet(n_labels=2)
    writer = prompt_writter(trip)
    assert writer.write_prompt([0, 1], 0) == "Input: d0 Label: a\nInput: d1 Label: b\nInput: q0 Label: "
    trip.demonstration.label_mapping = {0: 1, 1: 0}  # raw label 0 is now the second label
    assert writer.write_prompt([0, 1], 0) == "Input: d0 Label: b\nInput: d1 Label: a\nInput: q0 Label: "
    trip.demonstration.table.rows = [(["e0"], 1), (["e1"], 0)]
    assert writer.write_prompt([0, 1], 0) == "Input: e0 Label: a\nInput: e1 Label: b\nInput: q0 Label: "


def test_more_input_texts_than_prefixes_is_a_clear_error():
    trip = toy_triplet()
    trip.demonstration.table.rows = [(["x", "y"], 0)]
    with pytest.raises(ValueError, match=r"more input texts than the template has input text prefixes \(1\) "
                                         r"\(dataset 'toy'\)"):
        prompt_writter(trip).write_prompt([0], 0)


def test_unknown_label_text_in_a_dataline(rtx):
    with pytest.raises(ValueError, match="demonstration 0 has label 'meh', which is not in the label space"):
        rtx.prompt_former.write_prompt_from_dataline([(["x"], "meh")], ["q"])


def test_domain_bias_on_an_empty_demonstration_set_names_the_dataset(quiet):
    trip = toy_triplet()
    trip.demonstration.table.rows = []
    generator = domain_query_generator(trip.demonstration, 4)
    with pytest.raises(ValueError, match="the demonstration set 'toy-demonstration' is empty"):
        next(generator)


def test_domain_bias_k0_on_a_split_without_demonstrations(quiet):
    from StaICC.custom_datasets import from_records
    records = [{"text": "a b", "y": "x"}, {"text": "c", "y": "z"}, {"text": "d", "y": "z"}]
    tiny = from_records(records, name="tiny", input_columns="text", label_column="y", split_sizes=(1, 0, 1))
    experimentor = Domain_bias(datasets=[tiny], k=0)[0]
    with pytest.raises(ValueError, match="demonstration set 'tiny-demonstration' is empty"):
        experimentor.prompt_set()
