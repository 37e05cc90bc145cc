"""The GLER figure draws, on the standard's x-values, the straight line whose slope it prints; the forest plot
draws differences by metric, coloured as the tables, and never draws float noise as an effect."""
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("numpy")

from run_fixtures import fixture_runs  # noqa: E402
from StaICC.report import forest, plots  # noqa: E402
from StaICC.report.names import metric_label  # noqa: E402
from StaICC.report.runs import load_run  # noqa: E402


def test_gler_lines_are_the_printed_fits_on_the_standard_axis():
    paths = fixture_runs()
    series = []
    for name in ("lexical", "uniform"):
        part = load_run(paths[name]).parts["GLER"]
        series.append((name, [plots.gler_data(part, d) for d in part.datasets()]))
    fig = plots.draw_gler(series)
    metrics = list(series[0][1][0]["metrics"])
    axes = [ax for ax in fig.axes if ax.lines]
    assert len(axes) == len(metrics) * 2  # one panel per metric and run, all runs in one figure
    assert "x falls as the noise rises" in fig._supxlabel.get_text()
    for number, ax in enumerate(axes):
        metric, (label, data) = metrics[number // 2], series[number % 2]
        assert ax.get_title().startswith(f"{label}: ")
        lines = ax.get_lines()
        for index, d in enumerate(data):
            points, fitted = lines[2 * index], lines[2 * index + 1]
            assert list(points.get_xdata()) == d["x"] and list(points.get_ydata()) == d["metrics"][metric]["y"]
            (x0, x1), (y0, y1) = fitted.get_xdata(), fitted.get_ydata()
            assert (y1 - y0) / (x1 - x0) == pytest.approx(d["metrics"][metric]["slope"], abs=1e-12)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [d["dataset"] for d in series[0][1]]
    plots.close(fig)


def test_forest_plot_is_faceted_by_metric_and_coloured_by_direction():
    from StaICC.stats import compare_runs
    paths = fixture_runs()
    comparison = compare_runs(load_run(paths["lexical"]), load_run(paths["uniform"]), resamples=20, seed=2)
    rows = [r for r in plots.difference_data(comparison) if r["benchmark"] == "Normal"]
    fig = forest.draw_differences(rows, "Normal")
    panels = [ax for ax in fig.axes if ax.lines]
    assert [ax.get_title() for ax in panels] == [metric_label("Normal", m).human
                                                 for m in dict.fromkeys(r["metric"] for r in rows)]
    colours = {line.get_color() for ax in panels for line in ax.get_lines()[:-1]}
    assert colours <= set(forest.DIFFERENCE_COLOURS.values())
    worse = [r for r in rows if r["significant"] and r["metric"] == "accuracy"]  # chance is worse than the model
    assert worse and forest.DIFFERENCE_COLOURS["worse"] in colours
    legend = [t.get_text() for t in fig.legends[0].get_texts()]  # every colour named, under the panels
    assert legend == [forest.DIFFERENCE_MEANINGS[k] for k in forest.DIFFERENCE_COLOURS]
    plots.close(fig)


def test_float_noise_is_no_difference_and_draws_no_axis():
    row = {"benchmark": "Contextual_bias", "metric": "entropy", "significant": True, "a": 1.791759469228055,
           "b": 1.7917594692280554}
    noise = [dict(row, dataset=d, delta=-3.3e-16 * (i + 1), low=-8.9e-16, high=4.4e-16)
             for i, d in enumerate(("TREC", "SST5", "Averaged"))]
    real = [dict(row, metric="DL div.", benchmark="Post_bias", dataset=r["dataset"], delta=0.02, low=0.01,
                 high=0.03, a=0.1, b=0.12) for r in noise]
    fig = forest.draw_differences(noise + real, "Contextual_bias")
    flat, resolved = fig.axes[0], fig.axes[1]
    assert flat.get_xticks().size == 0 and not flat.lines
    assert any("no resolvable difference" in t.get_text() for t in flat.texts)
    fig.canvas.draw()
    assert resolved.get_xticks().size >= 2 and not resolved.xaxis.get_offset_text().get_text()  # no 1e-15 units
    assert forest.resolvable_difference(0.5, 0.25) == 1e-9 and forest.resolvable_difference(3.0, 1.0) == pytest.approx(3e-9)
    plots.close(fig)
