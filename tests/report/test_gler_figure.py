"""The GLER figure draws, on the standard's x-values, the straight line whose slope it prints."""
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("numpy")

from run_fixtures import fixture_runs  # noqa: E402
from StaICC.report import plots  # noqa: E402
from StaICC.report.runs import load_run  # noqa: E402


def test_gler_lines_are_the_printed_fits_on_the_standard_axis():
    part = load_run(fixture_runs()["lexical"]).parts["GLER"]
    data = [plots.gler_data(part, d) for d in part.datasets()]
    fig = plots.draw_gler(data, "lexical")
    axes = [ax for ax in fig.axes if ax.lines]
    assert len(axes) == len(data[0]["metrics"])  # one panel per metric
    for ax, metric in zip(axes, data[0]["metrics"]):
        assert "x falls as the noise rises" in ax.get_xlabel()
        lines = ax.get_lines()
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        for number, d in enumerate(data):
            points, fitted = lines[2 * number], lines[2 * number + 1]
            assert list(points.get_xdata()) == d["x"] and list(points.get_ydata()) == d["metrics"][metric]["y"]
            (x0, x1), (y0, y1) = fitted.get_xdata(), fitted.get_ydata()
            drawn = (y1 - y0) / (x1 - x0)
            slope = d["metrics"][metric]["slope"]
            assert drawn == pytest.approx(slope, abs=1e-12)
            assert legend[number] == f"{d['dataset']}: slope {slope:+.3f}"
        bbox = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        assert bbox.x0 >= 1.0  # the legend sits outside the data
    plots.close(fig)


def test_forest_plot_is_faceted_by_metric_and_coloured_by_direction():
    from StaICC.stats import compare_runs
    paths = fixture_runs()
    comparison = compare_runs(load_run(paths["lexical"]), load_run(paths["uniform"]), resamples=20, seed=2)
    rows = [r for r in plots.difference_data(comparison) if r["benchmark"] == "Normal"]
    fig = plots.draw_differences(rows, "Normal")
    panels = [ax for ax in fig.axes if ax.lines]
    assert [ax.get_title() for ax in panels] == list(dict.fromkeys(r["metric"] for r in rows))
    colours = {line.get_color() for ax in panels for line in ax.get_lines()[:-1]}
    assert colours <= set(plots.DIFFERENCE_COLOURS.values())
    plots.close(fig)
