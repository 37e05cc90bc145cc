"""A lite estimate and its interval cut to the values the metric can take (StaICC.stats.lite_bounds)."""
import math

import pytest

from StaICC.stats.lite_averaged import averaged
from StaICC.stats.lite_bounds import RANGES, cell_bounds, cut, mean_bounds, within_range


def test_each_metric_has_the_range_of_its_definition():
    assert cell_bounds("Normal", "accuracy", {}) == (0.0, 1.0)
    assert cell_bounds("Post_bias", "DL div.", {}) == (0.0, math.inf)
    assert cell_bounds("Post_bias", "distribution", {}) == (-1.0, 1.0)  # prediction less label frequency
    three = {"distribution": ([0.2, 0.3, 0.5], None, None, [])}
    assert cell_bounds("Domain_bias", "entropy", three) == (0.0, math.log(3))
    assert cell_bounds("Domain_bias", "entropy", {}) is None  # K unknown: not guessed
    assert cell_bounds("GLER", "accuracy", {}) is None  # a slope: no range
    assert all(low < high for low, high in (b for b in RANGES.values() if b[1] != "ln K"))


def test_cut_moves_each_number_into_the_range_element_by_element():
    assert cut(-0.0002, -0.0011, 0.0028, (0.0, math.inf)) == (0.0, 0.0, 0.0028)
    assert cut(0.6932, 0.6899, 0.6942, (0.0, math.log(2))) == (math.log(2), 0.6899, math.log(2))
    assert cut([1.2, 0.5], [0.9, -0.1], [1.4, 0.7], (0.0, 1.0)) == ([1.0, 0.5], [0.9, 0.0], [1.0, 0.7])
    value, low, high = cut(math.nan, -1.0, 2.0, (0.0, 1.0))
    assert math.isnan(value) and (low, high) == (0.0, 1.0)  # a missing value is not made a bound
    assert cut(0.3, 0.1, 0.5, None) == (0.3, 0.1, 0.5)


def test_within_range_cuts_every_cell_and_keeps_the_resamples():
    found = {"entropy": (0.70, 0.68, 0.71, [0.69, 0.70]), "distribution": ([0.5, 0.5], [0.4, 0.4], [0.6, 0.6], []),
             "other": (5.0, 4.0, 6.0, [5.0])}
    out = within_range("Contextual_bias", found)
    assert out["entropy"] == (math.log(2), 0.68, math.log(2), [0.69, 0.70])
    assert out["distribution"] == found["distribution"] and out["other"] == found["other"]


def test_the_averaged_row_is_cut_to_the_mean_of_its_datasets_ranges():
    """Two datasets of 2 and 3 labels: their mean's range is [0, (ln 2 + ln 3) / 2]; the same row without the
    ranges is the uncut one, computed here by hand (the percentile interval of the averaged resamples)."""
    first = [0.69 + 0.001 * i for i in range(-20, 21)]
    second = [1.10 + 0.001 * i for i in range(-20, 21)]
    entries = [(0.695, first, (0.0, 0.0)), (1.099, second, (0.0, 0.0))]
    value, low, high = averaged(entries, 0.95, False)
    assert value == pytest.approx((0.695 + 1.099) / 2) and high > (math.log(2) + math.log(3)) / 2
    top = (math.log(2) + math.log(3)) / 2
    bounded = averaged([(*e, (0.0, b)) for e, b in zip(entries, (math.log(2), math.log(3)))], 0.95, False)
    assert value > top and bounded == (top, low, top)  # the estimate too: the range's nearest value
    assert mean_bounds([(0.0, 1.0), None]) is None
    assert averaged([(*entries[0], None), (*entries[1], (0.0, 1.0))], 0.95, False) == (value, low, high)


def test_post_bias_is_cut_only_where_the_subsets_rows_are_probabilities():
    """Post_bias compares the raw mean row of scores where every mean is positive: a model of unnormalised
    positive scores has a KL divergence that can be negative, so its cells stay as they are there."""
    from StaICC.stats.lite_bounds import probability_items, subset_is_probability_rows, subset_rows_of

    class Rows:  # a table's rows: passes x repeats x items x labels
        def __init__(self, rows):
            self.rows = rows

        def __len__(self):
            return len(self.rows[0][0])
    assert probability_items(Rows([[[[0.2, 0.8], [0.5, 0.5], [1.0, 0.0]]]])) == [True, True, True]
    scores = Rows([[[[0.2, 0.8], [0.7, 0.6], [1.0, 1e-12]]]])
    assert probability_items(scores) == [True, False, True]  # 1 + 1e-12: rounding, still a probability row
    assert not subset_is_probability_rows("Post_bias", scores) and subset_is_probability_rows("Normal", scores)
    assert subset_rows_of("Post_bias", scores)([0, 2]) and not subset_rows_of("Post_bias", scores)([1])
    found = {"DL div.": (-0.01, -0.03, 0.02, []), "distribution": ([1.5, -1.5], [1.2, -1.8], [1.8, -1.2], [])}
    assert within_range("Post_bias", found, probabilities=False) == found
    cut_found = within_range("Post_bias", found, probabilities=True)
    assert cut_found["DL div."][:3] == (0.0, 0.0, 0.02) and cut_found["distribution"][0] == [1.0, -1.0]


def test_the_bias_distributions_of_a_model_of_log_probabilities_are_not_cut():
    """The bias diagnoses' distributions are the model's raw mean rows: a model of log-probabilities has them below
    0 (the coverage study's over-confident model), so they are cut only on probability rows; the entropy, taken on
    the softmaxed rows, is cut either way."""
    found = {"distribution": ([-2.3, -0.1], [-2.5, -0.2], [-2.1, 0.0], []), "entropy": (0.70, 0.68, 0.71, [])}
    for part in ("Contextual_bias", "Domain_bias"):
        kept = within_range(part, found, probabilities=False)
        assert kept["distribution"] == found["distribution"] and kept["entropy"][:3] == (math.log(2), 0.68,
                                                                                          math.log(2))
        assert within_range(part, found, probabilities=True)["distribution"][0] == [0.0, 0.0]
