"""The comparison's quick paths against the ones they replace: the same values, bit for bit.

A run in memory is read by its columns (``statistics_columns``) and its prompt hashes are laid out
only when read; records of equal request digests are the same prompts without writing them again;
the loops over resamples run at once in NumPy where the values are floats.  Each is checked against
the per-record dicts, the per-record prompt hashes and the Python loops.
"""
import math
import warnings

import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.results.parts import result_parts
from StaICC.stats.bootstrap import finite_interval
from StaICC.stats.compare import _first_prompt_difference, _resolved_differences
from StaICC.stats.items import ItemTable
from StaICC.stats.resolution import resolved
from StaICC.subbenchmarks.suite import build_suite, run_suite

DATASETS = ["TREC", "rotten_tomatoes"]


@pytest.fixture(scope="module")
def parts():
    return result_parts(run_suite(lexical_icl, suite=build_suite(["Normal", "GLER"], DATASETS, 4), progress=False,
                                  test_items=24))


def _table_lists(table):
    return table.items, table.labels, table.rows, table.normalized, table.summaries, table.hashes


def test_item_table_of_a_run_in_memory_equals_the_one_of_its_record_dicts(parts):
    for name, part in parts.items():
        for dataset, records in part.records.items():
            dicts = [dict(r) for r in records]  # every field read from the record dicts, as before
            from_columns = ItemTable(name, dataset, records)
            from_dicts = ItemTable(name, dataset, dicts)
            assert _table_lists(from_columns) == _table_lists(from_dicts), (name, dataset)
            assert from_columns.hashes[0][0][0] == dicts[0]["prompt_sha256"]


def test_a_restricted_table_lays_out_its_own_items_hashes(parts):
    records = parts["Normal"].records["TREC"]
    table = ItemTable("Normal", "TREC", records)
    sub = table.restricted([3, 1, 7])
    by_place = {(r["pass"], r["repeat"], r["test_index"]): r["prompt_sha256"] for r in records}
    assert sub.hashes == [[[by_place[p, k, t] for t in sub.items] for k in range(table.repeats)]
                          for p in range(table.passes)]


def test_equal_request_digests_mean_the_same_prompts_and_other_digests_are_checked_per_record(parts):
    a, b = parts["Normal"].records["TREC"], parts["Normal"].records["rotten_tomatoes"]
    assert a.prompt_set_sha256 and a.prompt_set_sha256 != b.prompt_set_sha256
    assert _first_prompt_difference(a, a) is None
    hashes = [r["prompt_sha256"] for r in a], [r["prompt_sha256"] for r in b]
    expected = next(i for i, (x, y) in enumerate(zip(*hashes)) if x != y)
    assert _first_prompt_difference(a, b) == expected


@pytest.mark.parametrize("floor", [0.0, 1e-9, 0.25])
def test_resolved_differences_at_once_equal_the_loop(floor):
    a = [0.5, 0.25, math.inf, math.inf, -0.0, 1e308, 0.1, math.nan, 0.3]
    b = [0.5 + 1e-12, 0.75, math.inf, 1.0, 0.0, -1e308, 0.2, 0.4, 0.1]
    expected = [resolved(y - x, floor) for x, y in zip(a, b)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf and overflow give nan and inf silently, as in Python
        got = _resolved_differences(a, b, floor)
    assert [repr(v) for v in got] == [repr(v) for v in expected]
    assert _resolved_differences([1, 2], [3.0, 2.5], floor) == [resolved(2.0, floor), resolved(0.5, floor)]


def test_finite_interval_at_once_equals_the_loop():
    values = [0.3, math.inf, 0.1, -0.0, math.nan, 0.0, -math.inf, 0.2, 0.7] * 5
    assert finite_interval(values + [1], 0.9) == _loop_interval(values + [1], 0.9)  # an int: the loop's path
    assert finite_interval(values, 0.9) == _loop_interval(values, 0.9)
    assert finite_interval(values, 0.9)[2] == 10


def _loop_interval(values, level):
    """finite_interval's per-value loop, as it was written before the at-once path."""
    from StaICC.stats.significance import percentile_interval
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    left_out = sum(1 for v in values if isinstance(v, (int, float)) and math.isinf(v))
    return (*percentile_interval(finite, level), left_out)
