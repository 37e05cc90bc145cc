"""Float noise is not drawn: a chance model's GLER likelihood varies by ~1e-9 between passes (its rows are
near-equal floats), so its fit panel must not get a 1e-8 axis nor its table print a slope as 5e-09."""
import pytest

from StaICC import cli
from StaICC.report.runs import load_run
from StaICC.report.tables import render, run_tables
from StaICC.stats.resolution import minimum_axis_span


@pytest.fixture(scope="module")
def chance_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("noise") / "uniform"
    assert cli.main(["run", "--model", "uniform", "--benchmarks", "GLER", "--datasets", "TREC",
                     "--no-progress", "--output-dir", str(out), "--log-samples"]) == 0
    return load_run(str(out))


def test_the_chance_models_likelihood_slope_is_float_noise(chance_run):
    slope = chance_run.parts["GLER"].divided["TREC"]["sensitivity"]["averaged_truelabel_likelihood"][0]
    assert slope != 0 and abs(slope) < 1e-7  # what the run recorded: noise, kept in results.json


def test_tables_show_noise_slopes_as_zero(chance_run):
    text = render(run_tables(chance_run), "table")
    assert "e-0" not in text and "e-1" not in text
    row = next(line for line in text.splitlines() if line.startswith("TREC"))
    assert row.split()[2] == "0.0000"  # the likelihood slope column, after accuracy's


def test_gler_fit_panels_do_not_draw_an_axis_of_noise(chance_run):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install \"StaICC[plot]\")")
    from StaICC.report import plot_data, plots
    part = chance_run.parts["GLER"]
    series = [(chance_run.label, [plot_data.gler_data(part, d) for d in part.datasets()])]
    figure = plots.draw_gler(series)
    metrics = list(series[0][1][0]["metrics"])
    figure.canvas.draw()  # tick labels and the offset text are made when drawn
    try:
        for ax, metric in zip(figure.axes, metrics):
            low, high = ax.get_ylim()
            assert high - low >= minimum_axis_span(metric) * (1 - 1e-9), (metric, low, high)
            assert ax.yaxis.get_offset_text().get_text() == ""
    finally:
        import matplotlib.pyplot as plt
        plt.close(figure)
