"""Demonstration sampling and the experimentor's sampler controls (STANDARD.md §4, §6.1)."""
import re
import warnings

import pytest

from StaICC.datasets import Dataset
from StaICC.errors import TamperingWarning
from StaICC.subbenchmarks.experimentor import single_experimentor
from StaICC.rng import fresh_stream
from StaICC.sampling.rows import demonstration_sampler, validate_sampler
from StaICC.datasets.split import triplet_dataset

from conftest import TAMPERING_TEXT, fresh

FP = "financial_phrasebank"


def tamper_ok():
    return pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT))


def toy_experimentor(demo_labels, test_labels, k=2, n_labels=2, **kwargs):
    """An experimentor over a tiny custom triplet whose rows are known exactly."""
    space = ["a", "b", "c"][:n_labels]
    demos = [([f"d{i}"], lab) for i, lab in enumerate(demo_labels)]
    tests = [([f"q{j}"], lab) for j, lab in enumerate(test_labels)]
    trip = triplet_dataset(Dataset("toy", demos + tests, space), 0, len(demos), len(tests))
    trip.demonstration.table.rows = demos
    trip.test.table.rows = tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return single_experimentor(triplet_dataset=trip, k=k, **kwargs)


@pytest.fixture
def fp():
    return fresh(FP)


# -- §4.1 default sampler ------------------------------------------------------------------------------
@pytest.mark.parametrize("k,d,row0,row1", [
    (4, 4096, [1033, 360, 2365, 911], [1538, 105, 1833, 485]),
    (4, 512, [129, 45, 296, 114], [192, 13, 230, 61]),
    (4, 3192, [805, 281, 1843, 710], [1199, 81, 1428, 378]),
    (2, 512, [129, 45], [295, 113]),
])
def test_reference_first_rows(k, d, row0, row1):
    sampler = demonstration_sampler(k, d, 1024)
    assert len(sampler) == 1024
    assert sampler[0] == row0
    assert sampler[1] == row1


def test_rows_are_consecutive_index_sets_of_one_stream():
    sampler = demonstration_sampler(4, 512, 1024)
    stream = fresh_stream()
    assert list(sampler) == [stream.index_set(4, 512) for _ in range(1024)]


def test_experimentor_samplers_use_their_d(normal):
    assert normal[0].demonstration_sampler[0] == [1033, 360, 2365, 911]
    assert normal[2].demonstration_sampler[0] == [129, 45, 296, 114]
    assert normal[7].demonstration_sampler[0] == [805, 281, 1843, 710]
    for experimentor in normal:
        assert len(experimentor.demonstration_sampler) == 2 * 512
        assert experimentor.get_k() == 4 and experimentor.get_repeat_times() == 2
        assert len(experimentor) == 1024


def test_reading_a_row_returns_a_copy():
    sampler = demonstration_sampler(4, 512, 4)
    row = sampler[0]
    row.append(999)
    row[0] = -1
    assert sampler[0] == [129, 45, 296, 114]


def test_k_larger_than_d_rows_repeat():
    sampler = demonstration_sampler(6, 4, 3, allow_repetition=True)
    stream = fresh_stream()
    expected = [stream.index_set(6, 4, allow_repetition=True) for _ in range(3)]
    assert list(sampler) == expected
    assert expected[0] == [1, 0, 2, 0, 1, 0]  # int(u * 4) for the first six floats


def test_k_equal_d_is_a_permutation_without_repetition():
    sampler = demonstration_sampler(5, 5, 2)
    assert sorted(sampler[0]) == [0, 1, 2, 3, 4]
    assert sampler[0] == fresh_stream().index_set(5, 5)


def test_k_zero_rows_are_empty():
    sampler = demonstration_sampler(0, 10, 3)
    assert list(sampler) == [[], [], []]


# -- §4.2 query order ----------------------------------------------------------------------------------
def test_query_order_is_repeat_major(rt):
    prompts = rt.prompt_set()
    writer = fresh("rotten_tomatoes").prompt_former
    sampler = rt.demonstration_sampler
    assert len(prompts) == 1024
    for q in (0, 1, 511, 512, 513, 1023):
        j = q % 512
        assert prompts[q] == writer.write_prompt(sampler[q], j), q
    # queries j and j + T share the test item but not the demonstrations
    assert prompts[0].endswith(prompts[512][prompts[512].rindex("review: "):])
    assert prompts[0] != prompts[512]


def test_ground_truth_repeats_test_labels(rt):
    labels = [rt.triplet_dataset.test.label_index(j) for j in range(512)]
    assert rt.ground_truth() == labels + labels


# -- §4.5 out-of-domain / in-domain ------------------------------------------------------------------
def test_out_of_domain_reference_rows(fp):
    assert fp.triplet_dataset.test.label_index(0) == 2
    fp.set_out_of_domain_mode()
    assert [fp.demonstration_sampler[i] for i in range(3)] == [[129, 45, 296, 114], [263, 300, 233, 317],
                                                             [387, 261, 96, 370]]


def test_out_of_domain_rows_hold_no_true_label(fp):
    fp.set_out_of_domain_mode()
    demo = fp.triplet_dataset.demonstration
    test = fp.triplet_dataset.test
    for q, row in enumerate(fp.demonstration_sampler):
        truth = test.label_index(q % 512)
        assert all(demo.label_index(v) != truth for v in row), q


def test_out_of_domain_twice_is_identical(fp):
    fp.set_out_of_domain_mode()
    first = list(fp.demonstration_sampler)
    fp.set_out_of_domain_mode()
    assert list(fp.demonstration_sampler) == first
    fp.set_in_domain_mode()
    fp.set_out_of_domain_mode()
    assert list(fp.demonstration_sampler) == first


def test_resampling_continues_the_sampler_stream(fp):
    """Washed rows are redrawn, in ascending order, with the stream right after the 1024 default rows."""
    demo = fp.triplet_dataset.demonstration
    test = fp.triplet_dataset.test
    default = list(fp.demonstration_sampler)
    stream = fresh_stream()
    for _ in range(1024):
        stream.index_set(4, 512)
    expected = [list(r) for r in default]
    for q, row in enumerate(default):
        truth = test.label_index(q % 512)
        if any(demo.label_index(v) == truth for v in row):
            while True:
                candidate = stream.index_set(4, 512)
                if not any(demo.label_index(v) == truth for v in candidate):
                    expected[q] = candidate
                    break
    fp.set_out_of_domain_mode()
    assert list(fp.demonstration_sampler) == expected


def test_in_domain_rows_all_contain_true_label(fp):
    fp.set_in_domain_mode()
    demo = fp.triplet_dataset.demonstration
    test = fp.triplet_dataset.test
    rows = list(fp.demonstration_sampler)
    assert len(rows) == 1024
    for q, row in enumerate(rows):
        truth = test.label_index(q % 512)
        assert any(demo.label_index(v) == truth for v in row), q
    # row 1 of the default sampler already holds test item 1's label: it is not redrawn
    assert rows[1] == [192, 13, 230, 61]
    fp.set_in_domain_mode()
    assert list(fp.demonstration_sampler) == rows


def test_out_of_domain_infeasible_raises_instead_of_looping():
    experimentor = toy_experimentor([0] * 6, [0, 1], k=2)  # every demonstration has label 0
    with pytest.raises(ValueError, match="no demonstration row of 2 can satisfy"):
        experimentor.set_out_of_domain_mode()


def test_in_domain_infeasible_raises_instead_of_looping():
    experimentor = toy_experimentor([0] * 6, [0, 1], k=2)  # no demonstration carries label 1
    with pytest.raises(ValueError, match="no demonstration row of 2 can satisfy"):
        experimentor.set_in_domain_mode()


def test_feasible_toy_resampling():
    experimentor = toy_experimentor([0, 0, 0, 1, 1, 1], [0, 1], k=2)
    experimentor.set_out_of_domain_mode()
    for q, row in enumerate(experimentor.demonstration_sampler):
        truth = [0, 1][q % 2]
        assert all((0 if v < 3 else 1) != truth for v in row)
    experimentor.set_in_domain_mode()
    for q, row in enumerate(experimentor.demonstration_sampler):
        truth = [0, 1][q % 2]
        assert any((0 if v < 3 else 1) == truth for v in row)


# -- §4.4 set_k / reset / set_demonstration_sampler ------------------------------------------------------
def test_set_k_rebuilds_like_fresh_construction(fp):
    fp.set_k(2)
    assert fp.get_k() == 2
    assert fp.demonstration_sampler[0] == [129, 45]
    assert fp.demonstration_sampler[1] == [295, 113]
    assert len(fp.demonstration_sampler) == 1024
    fresh_k2 = fresh(FP, k=2)
    assert fp.prompt_set() == fresh_k2.prompt_set()
    fp.reset_demonstration_sampler()  # the k = 2 sampler is the new default
    assert fp.demonstration_sampler[1] == [295, 113]


def test_set_k_after_custom_sampler_restores_repeat(quiet, fp):
    fp.set_demonstration_sampler([[0, 1, 2, 3]] * 512)
    assert fp.get_repeat_times() == 1
    fp.set_k(3)
    assert fp.get_repeat_times() == 2
    assert len(fp.demonstration_sampler) == 1024
    assert fp.demonstration_sampler[0] == fresh_stream().index_set(3, 512)


def test_reset_restores_default_rows_and_repeat(quiet, fp):
    default = list(fp.demonstration_sampler)
    fp.set_out_of_domain_mode()
    assert list(fp.demonstration_sampler) != default
    fp.reset_demonstration_sampler()
    assert list(fp.demonstration_sampler) == default
    fp.set_demonstration_sampler([[5, 6, 7, 8]] * 512)
    assert fp.get_repeat_times() == 1 and len(fp) == 512
    fp.reset_demonstration_sampler()
    assert fp.get_repeat_times() == 2 and len(fp) == 1024
    assert list(fp.demonstration_sampler) == default


def test_set_demonstration_sampler_copies_and_sets_r1(fp):
    rows = [[(j + i) % 512 for i in range(4)] for j in range(512)]
    with tamper_ok():
        fp.set_demonstration_sampler(rows)
    assert fp.get_repeat_times() == 1
    prompts = fp.prompt_set()
    assert len(prompts) == 512
    writer = fresh(FP).prompt_former
    assert prompts[0] == writer.write_prompt([0, 1, 2, 3], 0)
    assert prompts[7] == writer.write_prompt([7, 8, 9, 10], 7)
    rows[0][0] = 100  # mutating the caller's list afterwards changes nothing
    rows[7] = [1, 1, 1, 1]
    assert fp.demonstration_sampler[0] == [0, 1, 2, 3]
    assert fp.prompt_set() == prompts
    assert fp.ground_truth() == [fp.triplet_dataset.test.label_index(j) for j in range(512)]


@pytest.mark.parametrize("sampler,error,message", [
    ([[0, 1, 2, 3]] * 511, ValueError, "^The length of the sampler should be equal to the number of the test samples"),
    ([[0, 1, 2, 3]] * 511 + [[0, 1, 2]], ValueError, "^The length of each sample in the sampler should be equal to k"),
    ([[0, 1, 2]] * 512, ValueError, "^The length of each sample in the sampler should be equal to k"),
    ([[0, 1, 2, 3]] * 511 + [[0, 1, 2, 512]], ValueError, r"row 511 holds index 512, outside the demonstration set"),
    ([[0, 1, 2, 3]] * 511 + [[0, 1, 2, -1]], ValueError, "outside the demonstration set"),
    ([[0, 1, 2, 3]] * 511 + [[0, 1, 2, 1.5]], TypeError, "expected an int demonstration index"),
    ([[0, 1, 2, 3]] * 511 + [[0, 1, 2, "3"]], TypeError, "expected an int demonstration index"),
    ([[0, 1, 2, 3]] * 511 + ["0123"], TypeError, "must be a list of ints"),
])
def test_set_demonstration_sampler_validation(fp, sampler, error, message):
    default = list(fp.demonstration_sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        with pytest.raises(error, match=message):
            fp.set_demonstration_sampler(sampler)
    assert list(fp.demonstration_sampler) == default
    assert fp.get_repeat_times() == 2


def test_validate_sampler_returns_plain_copies():
    given = [(1, 2), [3, 4]]
    rows = validate_sampler(given, 2, 2, 5, "toy")
    assert rows == [[1, 2], [3, 4]]
    assert rows[1] is not given[1]


@pytest.mark.xfail(strict=True, reason="spec §4.4: set_demonstration_sampler warns 'tampering' first and then "
                                       "validates; our code validates first, so a rejected sampler emits no warning")
def test_set_demonstration_sampler_warns_before_validating(fp):
    with pytest.warns(TamperingWarning), pytest.raises(ValueError):
        fp.set_demonstration_sampler([[0, 1, 2, 3]])


# -- §6.1 construction and §4.3 --------------------------------------------------------------------------
def test_constructor_dataset_errors(rt):
    with pytest.raises(ValueError, match=r"^You should provide at least one dataset\.$"):
        single_experimentor()
    with pytest.raises(ValueError, match=r"^You should provide only one dataset\.$"):
        single_experimentor(triplet_dataset=rt.triplet_dataset, original_dataset=rt.triplet_dataset.demonstration)


def test_k_validation():
    with pytest.raises(ValueError, match="^k should be a positive integer"):
        toy_experimentor([0, 1] * 3, [0, 1], k=-1)
    zero_shot = toy_experimentor([0, 1] * 3, [0, 1], k=0)
    assert zero_shot.prompt_set()[0] == "Input: q0 Label: "


def test_repeat_times_other_than_two_warns():
    with tamper_ok():
        demos = [([f"d{i}"], i % 2) for i in range(6)]
        tests = [([f"q{j}"], j % 2) for j in range(2)]
        trip = triplet_dataset(Dataset("toy", demos + tests, ["a", "b"]), 0, 6, 2)
        experimentor = single_experimentor(triplet_dataset=trip, k=2, repeat_times=3)
    assert experimentor.get_repeat_times() == 3
    assert len(experimentor.demonstration_sampler) == 6 and len(experimentor) == 6


@pytest.mark.xfail(strict=True, reason="spec §6.1: only repeat_times < 0 raises ValueError (0 is accepted with a "
                                       "tampering warning); our code also rejects 0")
def test_repeat_times_zero_is_accepted():
    experimentor = toy_experimentor([0, 1] * 3, [0, 1], k=2, repeat_times=0)
    assert len(experimentor) == 0


@pytest.mark.parametrize("k", [5, 100_000, 2 ** 31, 2 ** 100])
def test_k_larger_than_d_is_refused_before_any_draw(k):
    # no row is drawn: k = 2**100 would otherwise never finish
    with pytest.raises(ValueError, match=rf"^k = {k} is larger than the demonstration set \(4 rows\)"):
        demonstration_sampler(k, 4, 1024)


@pytest.mark.parametrize("args, error, pattern", [((True, 4, 1), TypeError, "k must be an int"),
                                                  ((-1, 4, 1), ValueError, "k should be a positive integer"),
                                                  ((1, 4.0, 1), TypeError, "demonstration_count must be an int"),
                                                  ((1, 4, -1), ValueError, "rows must be >= 0")])
def test_sampler_arguments_are_checked(args, error, pattern):
    with pytest.raises(error, match=pattern):
        demonstration_sampler(*args)


def test_k_larger_than_d_prompts_still_work():
    experimentor = toy_experimentor([0, 1, 0], [0, 1], k=5)
    prompts = experimentor.prompt_set()
    assert len(prompts) == 4
    row = experimentor.demonstration_sampler[0]
    assert row == fresh_stream().index_set(5, 3, allow_repetition=True)
    assert prompts[0].count("Label: ") == 6


@pytest.mark.xfail(strict=True, reason="spec §4.3: with k > D, auto_run warns and returns ({metric: 0}, False) "
                                       "without inference; our auto_run raises ValueError")
def test_k_larger_than_d_auto_run_returns_zeros():
    experimentor = toy_experimentor([0, 1, 0], [0, 1], k=5)
    with pytest.warns(UserWarning, match="The k value is larger than the length of the demonstration dataset. "
                                         "Return all-0 results."):
        result = experimentor.auto_run(preentered_prediction=[[1, 0]] * 4)
    assert result == ({"accuracy": 0, "averaged_truelabel_likelihood": 0, "macro_F1": 0,
                       "expected_calibration_error_1": 0}, False)
