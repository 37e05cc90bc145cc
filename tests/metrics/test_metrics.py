"""Metrics, sums, softmax and the GLER regression, on small hand-computed inputs."""
import math
import re
import warnings

import pytest

from StaICC.errors import StaICCWarning, TamperingWarning
from StaICC.engine.procedures import LabelNoiseProcedure
from StaICC.metrics import (accuracy, argmax, argmin, averaged_truelabel_likelihood, bias_distribution, bias_entropy,
                            column_means, consistency, entropy, expected_calibration_error_1, is_probability_matrix,
                            is_probability_vector, linear_regression, macro_F1, make_consistency, post_bias_distribution,
                            post_bias_dl_div, sequential_sum, softmax, softmax_unless_probabilities)

from conftest import TAMPERING_TEXT

# Spec texts; our messages keep them as a prefix and replace the final "." by ": <details>".
LENGTH_TEXT = "The length of ground_truth and prediction should be the same"
MULTIPLE_TEXT = "The length of prediction should be the multiple of loop_length"
STRICT_SETTING_TEXT = "The setting can't be changed in the strict mode. Return to default."

# softmax([1, 0, 0])[0] = e / (e + 2); softmax([0.7, 0.2, 0.1])[0] = 1 / (1 + e^-0.5 + e^-0.6)
SM_100_0 = 0.5761168847658291
SM_721_0 = 0.4639634279648094


# -- left-to-right sums, argmax -----------------------------------------------------------------------------
def test_sequential_sum_is_left_to_right():
    assert sequential_sum([1e16, 1.0, -1e16]) == 0.0
    assert math.fsum([1e16, 1.0, -1e16]) == 1.0
    assert sequential_sum([0.1] * 10) == 0.9999999999999999
    assert sequential_sum([]) == 0 and type(sequential_sum([])) is int
    assert sequential_sum(x for x in [0.7, 0.2, 0.1]) == 0.9999999999999999
    assert sequential_sum([0.1, 0.2, 0.7]) == 1.0


def test_argmax_argmin_first_index():
    assert argmax([0.2, 0.5, 0.5, 0.1]) == 1
    assert argmin([0.2, 0.1, 0.5, 0.1]) == 1
    assert argmax([3]) == 0
    assert argmax([1, 1, 1]) == 0 and argmin([1, 1, 1]) == 0


# -- exact probability check and softmax -------------------------------------------------------
def test_exact_sum_probability_check():
    assert is_probability_vector([0.1, 0.2, 0.7])          # 0.1 + 0.2 = 0.30000000000000004, + 0.7 = 1.0
    assert not is_probability_vector([0.7, 0.2, 0.1])      # 0.7 + 0.2 + 0.1 = 0.9999999999999999
    assert math.fsum([0.7, 0.2, 0.1]) == 1.0               # compensated summation would accept it
    assert not is_probability_vector([0.6, 0.3, 0.1])
    assert is_probability_vector([0.25, 0.75])
    assert is_probability_vector([1, 0, 0])                 # one-hot ints pass
    assert not is_probability_vector([1.25, -0.25])         # sums to 1 but out of [0, 1]
    assert not is_probability_vector([0.5, 0.25])
    assert is_probability_matrix([[0.25, 0.75], [1, 0]])
    assert not is_probability_matrix([[0.25, 0.75], [0.7, 0.2, 0.1]])


def test_softmax_values():
    assert softmax([1.0, 2.0, 3.0]) == [0.09003057317038046, 0.24472847105479764, 0.6652409557748218]
    assert softmax([0.0, math.log(3)]) == [0.25, 0.75]
    assert softmax([5.0, 5.0]) == [0.5, 0.5]
    top = math.exp(0.0)
    total = (1.0 + math.exp(-0.5)) + math.exp(-0.6)
    assert softmax([0.7, 0.2, 0.1]) == [top / total, math.exp(-0.5) / total, math.exp(-0.6) / total]
    assert softmax([1000.0, 0.0]) == [1.0, math.exp(-1000.0) / 1.0]  # max subtracted first: no overflow


def test_softmax_unless_probabilities_whole_matrix():
    good = [[0.25, 0.75], [1, 0]]
    assert softmax_unless_probabilities(good) == good
    mixed = [[1.0, 0.0, 0.0], [0.7, 0.2, 0.1]]
    # one failing row -> every row is softmaxed, the passing one too (quirk)
    assert softmax_unless_probabilities(mixed) == [softmax(mixed[0]), softmax(mixed[1])]


# -- accuracy, likelihood, macro-F1 ---------------------------------------------------------------------------------
def test_accuracy():
    rows = [[1, 0, 0], [0, 1, 0], [0.5, 0.5, 0], [0, 0, 1]]
    assert accuracy([0, 1, 1, 2], rows) == 0.75  # the tie [0.5, 0.5, 0] predicts 0
    assert accuracy([2, 0], [[-1.0, 0.0, 3.0], [4.0, 4.0, 1.0]]) == 1.0  # logits


def test_likelihood_on_probabilities():
    assert averaged_truelabel_likelihood([0, 1], [[0.25, 0.75], [0.5, 0.5]]) == 0.375


def test_likelihood_double_softmax_quirk():
    # [0.7, 0.2, 0.1] fails the exact check, so both rows are softmaxed (a second time)
    value = averaged_truelabel_likelihood([0, 0], [[1.0, 0.0, 0.0], [0.7, 0.2, 0.1]])
    assert value == (SM_100_0 + SM_721_0) / 2 == 0.5200401563653192


def test_likelihood_follows_sequential_sum():
    # ten rows [0.1, 0.9] pass the check (0.1 + 0.9 == 1.0); Σ→ of ten 0.1 is 0.9999999999999999
    assert averaged_truelabel_likelihood([0] * 10, [[0.1, 0.9]] * 10) == 0.9999999999999999 / 10
    assert averaged_truelabel_likelihood([0] * 10, [[0.1, 0.9]] * 10) != math.fsum([0.1] * 10) / 10


def test_likelihood_index_error_on_narrow_rows():
    with pytest.raises(IndexError):
        averaged_truelabel_likelihood([2], [[1, 0]])


def test_macro_f1_with_absent_classes():
    rows = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]]
    # class 0: P = 1, R = 1/2 -> 2/3; class 1: P = 1/3, R = 1 -> 1/2; class 2: 0; class 3 absent: 0
    f1_0 = ((2 * 1.0) * 0.5) / (1.0 + 0.5)
    f1_1 = ((2 * (1 / 3)) * 1.0) / ((1 / 3) + 1.0)
    assert macro_F1([0, 0, 1, 2], rows) == (((f1_0 + f1_1) + 0) + 0) / 4 == 0.29166666666666663


def test_macro_f1_perfect_and_zero():
    assert macro_F1([0, 1], [[1, 0], [0, 1]]) == 1.0
    assert macro_F1([0, 1], [[0, 1], [1, 0]]) == 0.0


@pytest.mark.parametrize("metric", [accuracy, averaged_truelabel_likelihood, macro_F1, expected_calibration_error_1])
def test_length_check(metric):
    with pytest.raises(ValueError, match=f"^{re.escape(LENGTH_TEXT)}"):
        metric([0, 1, 0], [[1, 0], [0, 1]])


# -- ECE -----------------------------------------------------------------------------------------
def test_ece_hand_computed():
    rows = [[0.75, 0.25], [0.75, 0.25], [0.375, 0.625], [0.5, 0.5]] + [[1.0, 0.0]] * 6
    truth = [0, 1, 1, 1] + [0] * 6
    # bin [0.5, 0.6): {3} acc 0 conf 0.5; bin [0.6, 0.7): {2} acc 1 conf 0.625;
    # bin [0.7, 0.8): {0, 1} acc 0.5 conf 0.75; confidence 1.0: no bin
    expected = ((0 + (1 / 10) * abs(0 - 0.5)) + (1 / 10) * abs(1 - 0.625)) + (2 / 10) * abs(0.5 - 0.75)
    assert expected_calibration_error_1(truth, rows) == expected == 0.1375


def test_ece_confidence_one_in_no_bin():
    rows = [[1.0, 0.0]] * 10
    assert expected_calibration_error_1([1] * 10, rows) == 0  # all wrong, yet ECE 0


def test_ece_one_hot_ints_give_zero():
    rows = [[1, 0], [0, 1]] * 5
    assert expected_calibration_error_1([0, 0, 1, 1, 0, 1, 1, 0, 0, 0], rows) == 0


def test_ece_boundaries_are_j_over_10():
    # 0.7 = 7/10 starts bin 7; with 0.1 * 7 = 0.7000000000000001 it would share bin 6 with 0.65
    rows = [[0.7, 0.3], [0.35, 0.65]] + [[1.0, 0.0]] * 8
    truth = [0, 0] + [0] * 8
    assert 7 / 10 == 0.7 and 0.1 * 7 != 0.7
    expected = (0 + (1 / 10) * abs(0 - 0.65)) + (1 / 10) * abs(1 - 0.7)
    assert expected_calibration_error_1(truth, rows) == expected == 0.095


def test_ece_softmaxes_failing_matrix():
    rows = [[0.7, 0.2, 0.1]] + [[1.0, 0.0, 0.0]] * 9
    conf_a, conf_b = SM_721_0, SM_100_0  # 0.4639.. in bin 4, 0.5761.. in bin 5
    expected = (0 + (1 / 10) * abs(1 - conf_a)) + (9 / 10) * abs(1 - ((((((((conf_b + conf_b) + conf_b) + conf_b)
                                                                          + conf_b) + conf_b) + conf_b) + conf_b)
                                                                        + conf_b) / 9)
    assert expected_calibration_error_1([0] * 10, rows) == expected


def test_ece_bins_validation():
    rows = [[0.75, 0.25]] * 10
    truth = [0] * 10
    with pytest.raises(ValueError):
        expected_calibration_error_1(truth, rows, bins=1)
    with pytest.warns(TamperingWarning, match=re.escape(TAMPERING_TEXT)):
        with pytest.warns(StaICCWarning, match=f"^{re.escape(STRICT_SETTING_TEXT)}$"):
            forced = expected_calibration_error_1(truth, rows, bins=4)
    assert forced == expected_calibration_error_1(truth, rows) == (10 / 10) * abs(1 - 0.75)
    with pytest.raises(ValueError, match=re.escape("bins should be less than the length of ground_truth.")):
        expected_calibration_error_1([0] * 9, [[0.75, 0.25]] * 9)


def test_ece_default_bins_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected_calibration_error_1([0] * 10, [[0.75, 0.25]] * 10)


# -- consistency ------------------------------------------------------------------------------
def test_consistency_groups():
    rows = [[1, 0], [0, 1], [1, 0], [0, 1], [0, 1], [0, 1]]  # labels 0 1 0 1 1 1
    # L = 2: group 0 = labels at 0, 2, 4 = [0, 0, 1] -> 2/3; group 1 = [1, 1, 1] -> 1
    assert consistency(None, rows, 2) == (0 + 2 / 3 + 1) / 2 == 0.8333333333333333
    assert make_consistency(2)(None, rows) == 0.8333333333333333
    assert consistency(None, [[1, 0], [0, 1]], 1) == 0.5  # tie: the count is 1 of 2


def test_consistency_default_loop_length_100():
    rows = [[1, 0]] * 100 + [[0, 1]] * 100
    assert consistency(None, rows) == 0.5
    assert consistency(None, [[1, 0]] * 300) == 1.0


def test_consistency_requires_multiple():
    with pytest.raises(ValueError, match=f"^{re.escape(MULTIPLE_TEXT)}"):
        consistency(None, [[1, 0]] * 5, 2)
    with pytest.raises(ValueError, match=f"^{re.escape(MULTIPLE_TEXT)}"):
        consistency(None, [[1, 0]] * 150)


def test_consistency_does_not_check_ground_truth_length():
    assert consistency([0], [[1, 0]] * 4, 2) == 1.0


# -- column means, bias metrics ------------------------------------------------------------------------
def test_column_means():
    assert column_means([[0.25, 0.75], [0.5, 0.5]]) == [0.375, 0.625]
    assert column_means([[0.1, 0.9]] * 10) == [0.9999999999999999 / 10, 9.000000000000002 / 10]


def test_bias_distribution_raw_rows():
    assert bias_distribution([0, 1], [[2.0, -1.0], [0.0, 1.0]]) == [1.0, 0.0]  # never softmaxed


def test_entropy_values():
    assert entropy([0.25, 0.75]) == -((0.25 * math.log(0.25)) + (0.75 * math.log(0.75))) == 0.5623351446188083
    assert entropy([1.0, 0.0]) == 0  # zero entries skipped
    assert entropy([0.5, 0.5]) == math.log(2)


def test_entropy_double_softmax_sst2_example():
    mean = [0.47941181522985477, 0.5205881847701448]
    assert sequential_sum(mean) == 0.9999999999999996
    assert entropy(mean) == 0.6929352887925748
    assert bias_entropy([0], [mean]) == 0.6929352887925748
    assert -sequential_sum(m * math.log(m) for m in mean) == 0.6922991941349125  # what it is not


def test_bias_entropy_uses_raw_mean():
    # the mean of the raw rows [0.5, 0.5] passes: H = log 2 (rows are not softmaxed first)
    assert bias_entropy([0, 0], [[0.75, 0.25], [0.25, 0.75]]) == math.log(2)
    # logits: the mean [2.0, 0.0] fails the check (2.0 > 1) and is softmaxed before the entropy
    logits = [[2.0, 0.0], [2.0, 0.0]]
    sm = softmax([2.0, 0.0])
    assert bias_entropy([0, 0], logits) == -((sm[0] * math.log(sm[0])) + (sm[1] * math.log(sm[1])))


# -- post-bias -----------------------------------------------------------------------------------
POST_ROWS = [[0.75, 0.25], [0.75, 0.25], [0.5, 0.5], [0.5, 0.5]]
POST_TRUTH = [0, 1, 1, 1]


def test_post_bias_distribution():
    # mean [0.625, 0.375], label frequencies [0.25, 0.75]
    assert post_bias_distribution(POST_TRUTH, POST_ROWS) == [0.375, -0.375]


def test_post_bias_kl_on_probabilities():
    expected = (0 + 0.625 * math.log(0.625 / 0.25)) + 0.375 * math.log(0.375 / 0.75)
    assert post_bias_dl_div(POST_TRUTH, POST_ROWS) == expected == 0.3127515147113675


def test_post_bias_kl_not_softmaxed():
    # the matrix fails the exact check ([0.7, 0.2, 0.1] sums to 0.9999999999999999) but the KL uses the raw mean
    rows = [[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]
    mean = [((0 + 0.7) + 0.2) + 0.1, ((0 + 0.2) + 0.7) + 0.1, ((0 + 0.1) + 0.1) + 0.8]
    mean = [m / 3 for m in mean]
    f = 1 / 3
    expected = ((0 + mean[0] * math.log(mean[0] / f)) + mean[1] * math.log(mean[1] / f)) + mean[2] * math.log(mean[2] / f)
    assert post_bias_dl_div([0, 1, 2], rows) == expected
    assert post_bias_distribution([0, 1, 2], rows) == [m - f for m in mean]
    softmaxed = column_means([softmax(r) for r in rows])
    assert post_bias_distribution([0, 1, 2], rows) != [m - f for m in softmaxed]


def test_post_bias_logits_are_softmaxed():
    rows = [[2.0, -1.0], [0.0, 1.0]]
    sm = [softmax(r) for r in rows]
    mean = [(sm[0][0] + sm[1][0]) / 2, (sm[0][1] + sm[1][1]) / 2]
    assert post_bias_distribution([0, 1], rows) == [mean[0] - 0.5, mean[1] - 0.5]
    assert post_bias_dl_div([0, 1], rows) == (0 + mean[0] * math.log(mean[0] / 0.5)) + mean[1] * math.log(mean[1] / 0.5)
    assert post_bias_dl_div([0, 1], rows) == 0.024739262457319597


def test_post_bias_zero_mean_entry_uses_convention():
    assert post_bias_dl_div([0, 1], [[1.0, 0.0], [1.0, 0.0]]) == 1.0 * math.log(1.0 / 0.5) == 0.6931471805599453


def test_post_bias_absent_label_gives_inf():
    assert post_bias_dl_div([0, 0], [[0.5, 0.5], [0.5, 0.5]]) == math.inf


# -- regression and GLER constants -----------------------------------------------------------
def test_linear_regression_formula():
    # Sx = 6, Sy = 13, Sxx = 14, Sxy = 31: a = (93 - 78) / (42 - 36) = 2.5, b = (13 - 15) / 3
    assert linear_regression([1, 2, 3], [2, 4, 7]) == (2.5, (13 - 2.5 * 6) / 3)
    assert linear_regression([1, 2, 3], [2, 4, 7]) == (2.5, -0.6666666666666666)
    assert isinstance(linear_regression([0, 1], [0, 1]), tuple)


def test_linear_regression_length_error():
    with pytest.raises(ValueError):
        linear_regression([1, 2, 3], [1, 2])


def test_linear_regression_on_gler_abscissae():
    x = [1, 0.75, 0.25, -0.5, -1.5]
    y = [0.5, 0.5, 0.5, 0.5, 0.5]
    assert linear_regression(x, y) == (0.0, 0.5)
    n, sx, sxx = 5, sequential_sum(x), sequential_sum(v * v for v in x)
    y = [0.9, 0.8, 0.6, 0.5, 0.4]
    sy, sxy = sequential_sum(y), sequential_sum(a * b for a, b in zip(x, y))
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    assert linear_regression(x, y) == (slope, (sy - slope * sx) / n)


def test_gler_rates_and_abscissae():
    procedure = LabelNoiseProcedure()
    assert procedure.rates() == [0, 0.25, 0.5, 0.75, 1.0]
    assert procedure.x_values() == [1, 0.75, 0.25, -0.5, -1.5]
    three = LabelNoiseProcedure(3)
    assert three.rates() == [0, 0.5, 1.0]
    assert three.x_values() == [1, 0.5, -0.5]


@pytest.mark.parametrize("bad", [1, 0, -3])
def test_gler_interpolations_must_exceed_one(bad):
    with pytest.raises(ValueError, match="^The sensitivity test should be larger than 1"):
        LabelNoiseProcedure(bad)


# -- finite inputs near the float maximum give finite results ------------------------------------
def test_column_means_do_not_overflow():
    big = 1.7976931348623157e308
    assert column_means([[big, -big], [big, -big], [big, -big]]) == [big, -big]
    assert column_means([[1e308, 0.5]] * 3) == [1e308, 0.5]
    assert column_means([[0.1, 0.2], [0.2, 0.3], [0.3, 0.4]]) == [0.20000000000000004, 0.3]  # plain formula


def test_bias_metrics_of_huge_rows_are_finite():
    rows = [[1e308, 1e308, 1e308]] * 4
    assert bias_entropy([0] * 4, rows) == entropy([1 / 3] * 3) == pytest.approx(math.log(3))
    assert bias_distribution([0] * 4, rows) == [1e308] * 3
    assert bias_entropy([0] * 4, [[-1e308] * 3] * 4) == entropy([1 / 3] * 3)


def test_post_bias_kl_of_huge_rows_compares_their_softmax():
    rows = [[1e308, 1e308]] * 4
    truth = [0, 1, 1, 1]
    assert post_bias_dl_div(truth, rows) == post_bias_dl_div(truth, [[0.5, 0.5]] * 4)
    assert math.isfinite(post_bias_dl_div(truth, [[1e308, 1.0]] * 4))
    assert post_bias_distribution(truth, rows) == [1e308 - 0.25, 1e308 - 0.75]


def test_softmax_of_extremes_and_empty():
    assert softmax([1e308] * 3) == [1 / 3] * 3
    assert softmax([1.7976931348623157e308, -1.7976931348623157e308]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="at least one value"):
        softmax([])
