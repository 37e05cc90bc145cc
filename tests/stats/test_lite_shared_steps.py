"""Steps the lite code takes once and shares: a proxy run's item tables (read by the edited-records check and the
proxy's statistics), the percentile interval of resamples (the run bootstrap's and a lite cell's), and a value
given as text (parsed once for argparse and for the checks)."""
import argparse
import contextlib
import io
import math

import pytest

from StaICC.validation import Integer, Real, argument_type, check_text

np = pytest.importorskip("numpy")


def test_a_proxy_runs_item_tables_are_built_once_for_the_check_and_the_statistics(tmp_path, monkeypatch):
    from StaICC.cli import main
    from StaICC.cli.lite import _one_proxy
    from StaICC.stats import items
    full = tmp_path / "full"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", "--benchmarks", "Normal,GLER", "--datasets", "TREC", "SST5", "--no-progress",
                     "--log-samples", "--output-dir", str(full)]) == 0
    built = []
    original = items.ItemTable.__init__

    def counted(self, benchmark, dataset, *args, **kwargs):
        built.append((benchmark, dataset))
        original(self, benchmark, dataset, *args, **kwargs)
    monkeypatch.setattr(items.ItemTable, "__init__", counted)
    proxy = _one_proxy(str(full))
    statistics = [proxy.statistic(*key) for key in proxy.records]  # what the lite run's estimates read
    assert sorted(built) == sorted(proxy.records) and len(proxy.records) == 4  # one table per part and dataset
    assert all(s.table.benchmark == key[0] for s, key in zip(statistics, proxy.records))
    # a lite run of GLER on TREC keeps that table only; the others are checked on tables that are not kept
    from StaICC.cli.lite import proxy_reads
    from StaICC.datasets import resolve_dataset
    built.clear()
    proxy = _one_proxy(str(full), proxy_reads("GLER", [], [resolve_dataset("TREC")]))
    assert sorted(built) == sorted(proxy.records) and list(proxy._tables) == [("GLER", "TREC")]
    proxy.statistic("GLER", "TREC")
    assert len(built) == 4


def test_a_lite_cells_interval_is_the_percentile_interval_numpy_gives():
    from StaICC.stats.bootstrap import finite_interval
    from StaICC.stats.lite_scaled import resample_interval
    rng = np.random.default_rng(3)
    values = rng.normal(size=401)
    scalar = [float(v) for v in values[:-1]] + [math.nan]  # a resample that is not finite: NaN, left out
    expected = tuple(np.percentile(values[:-1], [2.5, 97.5]))
    assert resample_interval(scalar, 0.95) == pytest.approx(expected, rel=1e-12)
    vectors = [[float(a), float(b)] for a, b in rng.uniform(size=(300, 2))]
    low, high = resample_interval(vectors + [None], 0.9)  # a resample whose vector is missing: None, left out
    columns = np.asarray(vectors)
    assert low == pytest.approx(list(np.percentile(columns, 5, axis=0)), rel=1e-12)
    assert high == pytest.approx(list(np.percentile(columns, 95, axis=0)), rel=1e-12)
    assert (low, high) == finite_interval(vectors, 0.9)[:2]  # one mechanism: the run bootstrap's


@pytest.mark.parametrize("constraint, text", [
    (Integer(1, text="a positive integer"), "abc"), (Integer(1, text="a positive integer"), "-3"),
    (Integer(1, text="a positive integer"), "2.5"),
    (Real(0, 1, closed="neither", kind="a number between 0 and 1", text="a number strictly between 0 and 1"), "1"),
])
def test_a_value_given_as_text_is_refused_in_the_same_words_by_argparse_and_by_the_checks(constraint, text):
    with pytest.raises(argparse.ArgumentTypeError) as parsed:
        argument_type(constraint)(text)
    with pytest.raises(ValueError) as checked:
        check_text(text, constraint, "--n")
    said = str(parsed.value).removeprefix("expected ")
    assert str(checked.value) == f"--n must be {said}"
    assert argument_type(constraint)("1" if isinstance(constraint, Integer) else "0.5") == \
        check_text("1" if isinstance(constraint, Integer) else "0.5", constraint, "--n")
