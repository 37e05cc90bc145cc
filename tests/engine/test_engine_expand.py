"""expand: int answers become one-hot rows equal to the standard's, each row its own list."""
from StaICC.engine.scoring import expand


def test_int_answers_become_one_hot_rows():
    assert expand([0, 2, 1, 2], 3, "d") == [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]]


def test_rows_are_independent_lists():
    rows = expand([1, 1], 2, "d")
    rows[0][0] = 99
    assert rows[1] == [0, 1]
    assert expand([1], 2, "d") == [[0, 1]]


def test_out_of_range_ints_keep_the_all_zero_row():
    """Unvalidated callers (never the runner) get what the comprehension always gave: no wrap-around."""
    assert expand([-1, 5, 0], 3, "d") == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]


def test_vectors_pass_through_and_empty_stays_empty():
    rows = [[0.25, 0.75], [0.5, 0.5]]
    assert expand(rows, 2, "d") == rows
    assert expand([], 2, "d") == []
