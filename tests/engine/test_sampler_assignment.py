"""``exp.demonstration_sampler = rows``: the original's plain assignment, one row per query, R kept."""
import warnings

import pytest

from StaICC import Normal
from StaICC.errors import TamperingWarning

ONE = ["financial_phrasebank"]


def model(prompt, label_space):
    return len(prompt) % len(label_space)


def test_assigned_rows_are_read_one_per_query_and_the_repeat_count_stays():
    bench = Normal(datasets=ONE)
    exp = bench[0]
    T = len(exp.test_set())
    rows = [[(q + i) % 40 for i in range(4)] for q in range(2 * T)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)  # the original's assignment gave no warning
        exp.demonstration_sampler = rows
    assert exp.get_repeat_times() == 2 and len(exp) == 2 * T
    assert list(exp.demonstration_sampler) == rows
    writer = exp.prompt_former
    prompts = exp.prompt_set()
    for q in (0, T - 1, T, 2 * T - 1):
        assert prompts[q] == writer.write_prompt(rows[q], q % T)
    rows[0][0] = 39  # the rows were copied
    assert exp.demonstration_sampler[0] == [0, 1, 2, 3]
    result = bench(model)
    assert result.metadata["standard"] is False
    assert any("assigned" in s for s in result.metadata["non_standard_settings"]["financial_phrasebank"])


def test_assigning_the_default_rows_gives_the_standard_prompts_and_reset_undoes_it():
    exp = Normal(datasets=ONE)[0]
    standard = exp.prompt_set()
    exp.demonstration_sampler = list(exp.demonstration_sampler)
    assert exp.prompt_set() == standard
    exp.reset_demonstration_sampler()
    assert exp.non_standard_settings() == [] and exp.prompt_set() == standard


def test_a_wrong_number_of_rows_or_a_bad_index_is_refused_before_anything_changes():
    exp = Normal(datasets=ONE)[0]
    T = len(exp.test_set())
    with pytest.raises(ValueError, match=rf"one row per query: got {T} rows, expected {2 * T} .*financial_phrasebank"):
        exp.demonstration_sampler = [[0, 1, 2, 3]] * T
    with pytest.raises(ValueError, match="row 5 holds index 99999, outside the demonstration set"):
        exp.demonstration_sampler = [[0, 1, 2, 3]] * 5 + [[0, 1, 2, 99999]] + [[0, 1, 2, 3]] * (2 * T - 6)
    assert exp.non_standard_settings() == []
