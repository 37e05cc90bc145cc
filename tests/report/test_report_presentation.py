"""Statistics a reviewer accepts and pages that read right: finite intervals, digits, directions, contents."""
import math

import pytest

from StaICC.report.tables import Cell, _cell_text, _direction, format_number, render, result_tables
from StaICC.stats.bootstrap import finite_interval


def test_unbounded_resamples_are_left_out_and_counted():
    values = [0.1, 0.2, math.inf, 0.3, 0.4, math.inf]
    low, high, left_out = finite_interval(values, 0.5)
    assert left_out == 2 and math.isfinite(low) and math.isfinite(high) and 0.1 <= low <= high <= 0.4
    assert finite_interval([math.inf, math.inf], 0.9)[2] == 2
    cell = Cell(0.5, low, high, suffix="†")
    assert _cell_text(cell, "interval", "table").endswith("]†")


def test_tiny_numbers_keep_the_digits_that_tell_them_from_zero():
    assert format_number(0.0) == "0.0000"
    assert format_number(-3.1e-05) == "-3.1e-05" and format_number(2.2e-16) == "2.2e-16"
    assert format_number(0.00005) == "0.0001" and format_number(0.1234) == "0.1234"


def test_significant_differences_are_better_or_worse_by_the_registry():
    assert _direction("Normal", "accuracy", 0.1) == "better"
    assert _direction("Normal", "expected_calibration_error_1", 0.1) == "worse"
    assert _direction("Post_bias", "DL div.", -0.1) == "better"
    assert _direction("GLER", "accuracy", 0.1) is None  # a slope has no better direction
    assert _direction("Contextual_bias", "distribution", 0.1) is None


def test_a_result_renders_as_a_table_in_a_notebook():
    from StaICC.backends.reference_model import lexical_icl
    from StaICC.subbenchmarks.builtin import Normal
    bench = Normal(datasets=["TREC"])
    with pytest.warns(Warning):
        bench.limit_test_items(5)
    result = bench(lexical_icl)
    markdown = result._repr_markdown_()
    assert "| dataset | Accuracy | True-label likelihood | Macro-F1 | ECE (10 bins) |" in markdown and "| TREC |" in markdown
    html = result._repr_html_()
    assert html.startswith("<h3>") and "<td>TREC</td>" in html
    assert "NOT STANDARD: limited to the first 5 test items" in markdown and 'class="banner"' in html
    assert render(result_tables(result), "md") == markdown


def test_comparison_renders_in_a_notebook_and_page_has_contents(tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("matplotlib")
    from run_fixtures import fixture_runs
    from StaICC.report.html import build_report
    from StaICC.report.runs import load_run
    from StaICC.stats import compare_runs
    paths = fixture_runs()
    a, b = load_run(paths["lexical"]), load_run(paths["uniform"])
    comparison = compare_runs(a, b, resamples=10, seed=1)
    markdown = comparison._repr_markdown_()
    assert "| metric | dataset | lexical | uniform | uniform − lexical | p | p (Holm) | test |" in markdown
    assert "| Accuracy | TREC |" in markdown and "| ECE (10 bins) | Averaged |" in markdown
    assert "McNemar exact" in markdown and "<table>" in comparison._repr_html_()
    page = build_report([a, b], [comparison.estimates_a, comparison.estimates_b], [comparison]).page
    contents = page[page.index("<nav>"):page.index("</nav>")]
    assert '<a href="#normal">Normal</a>' in contents and '<a href="#gler">GLER</a>' in contents
    assert page.count('<details class="section" id="') == 6 and page.count("<details class=\"section\" id=\"normal\" open>") == 1
    assert 'class="sig worse"' in page
