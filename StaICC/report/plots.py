"""The report's figures, drawn with matplotlib (the ``plot`` extra) from the numbers of :mod:`.plot_data`.

Every figure is drawn at the width the page shows it, :data:`FIGURE_WIDTH` inches at
:data:`DPI` (1280 px: the page's column at a 1400 px window), so it is never scaled down, and
no text in it is under :data:`MIN_FONT_PT` (8 pt: 11 px).  A figure holds every run: one
colour per run (:data:`RUN_COLOURS`, the same in every figure), named in a legend above
the panels, never on the data; where runs cannot share a panel (the bias bars), each run
gets a full-width figure of its own.
"""
import textwrap
from typing import Any, Dict, List, Sequence, Tuple

from .names import metric_display_name
from .plot_data import (bias_data, demo_consistency_data, difference_data, gler_data, label_names,  # noqa: F401
                        reliability_data, template_grid_data)

#: figure width (inches) and resolution: 1280 px, shown unscaled on the page
FIGURE_WIDTH, DPI = 12.8, 100
#: the smallest text any figure holds (pt); 8 pt at 100 dpi is 11 px on the page
MIN_FONT_PT = 8
#: one colour per run, in run order (the first run is the baseline of every comparison)
RUN_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
#: one colour per dataset where a panel holds several datasets (GLER)
DATASET_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                   "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173")
#: Series = (run label, its data)
Series = List[Tuple[str, Any]]


def pyplot():
    """matplotlib.pyplot on the Agg backend with the report's type sizes, or an ImportError naming the extra."""
    from ..extras import require
    matplotlib = require("matplotlib", "the HTML report's plots")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.family": "DejaVu Sans", "svg.fonttype": "path", "figure.dpi": DPI,
                         "savefig.dpi": DPI, "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 9,
                         "xtick.labelsize": 8.5, "ytick.labelsize": 8.5, "legend.fontsize": 9,
                         "figure.titlesize": 11})
    return plt


def run_colour(index: int) -> str:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


def panels(count: int, columns: int, panel_height: float):
    """A figure of ``count`` panels in rows of ``columns`` (:func:`legend_above` adds the legend's room); fewer
    panels than a row holds keep the width a panel has in a full row (a single dataset is not stretched)."""
    plt = pyplot()
    full = max(1, columns)
    columns = max(1, min(columns, count))
    rows = (count + columns - 1) // columns
    width = FIGURE_WIDTH * max(columns, min(2, full)) / full
    fig, axes = plt.subplots(rows, columns, figsize=(width, panel_height * rows + 0.1), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.axis("off")
    return fig, flat[:count]


def _entry_width(label: str) -> float:
    """Inches a legend entry takes at 9 pt: its handle and gaps, and about 0.6 em per character."""
    return 0.55 + len(label) * 9 * 0.6 / 72


def legend_above(fig, handles: Sequence[Any], labels: Sequence[str], columns: int = 5, title: str = "") -> None:
    """The figure's legend above the panels, in as many columns as its width holds (at most ``columns``); the
    figure grows by the legend's height and the panels are laid out under it."""
    labels = [short(label, 40) for label in labels]
    widest = max((_entry_width(label) for label in labels), default=1.0)
    columns = max(1, min(columns, len(labels), int((fig.get_figwidth() - 0.2) // widest)))
    rows = (len(labels) + columns - 1) // columns + (1 if title else 0)
    room = 0.21 * rows + 0.2  # a 9 pt legend row with its spacing, and a margin
    fig.set_figheight(fig.get_figheight() + room)
    fig.tight_layout(rect=(0, 0, 1, 1 - room / fig.get_figheight()))
    if handles:
        legend = fig.legend(handles, labels, loc="upper center", ncol=columns, frameon=False, title=title or None,
                            bbox_to_anchor=(0.5, 1.0), handlelength=1.6, columnspacing=1.4)
        if title:
            legend.get_title().set_fontweight("bold")


def run_handles(labels: Sequence[str], style: str = "line") -> List[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    if style == "bar":
        return [Patch(facecolor=run_colour(i), edgecolor="black", linewidth=0.3) for i in range(len(labels))]
    return [Line2D([], [], color=run_colour(i), marker="o", markersize=5, linewidth=1.4) for i in range(len(labels))]


def plain(text: str) -> str:
    """Text from a run (a label, a dataset or label word) as matplotlib prints it: ``$`` starts no formula."""
    return str(text).replace("$", r"\$")


def short(text: str, limit: int = 14) -> str:
    """A label word or name cut to ``limit`` characters (with an ellipsis) so tick labels never overlap."""
    text = str(text)
    return plain(text if len(text) <= limit else text[:limit - 1] + "…")


def datasets_of(series: Series) -> List[str]:
    seen: List[str] = []
    for _, data in series:
        seen.extend(d for d in data if d not in seen)
    return seen


def values_title(ax, heading: str, name: str, values: Sequence[str]) -> None:
    """A panel's title: ``heading``, and under it ``name`` with one number per run (``ECE 0.078 · 0.032``).

    With several runs each number is written in its run's colour (the legend above names the colours), so a
    reader never has to count positions to know which run a number belongs to.
    """
    if len(values) <= 1:
        ax.set_title(f"{heading}\n{name} {values[0] if values else ''}".rstrip(), fontsize=9)
        return
    from matplotlib.offsetbox import AnchoredOffsetbox, HPacker, TextArea
    from matplotlib.transforms import offset_copy
    ax.set_title(f"{heading}\n ", fontsize=9)  # the second line keeps the room the coloured numbers take
    parts = [TextArea(f"{name} ", textprops={"fontsize": 9})]
    for index, value in enumerate(values):
        if index:
            parts.append(TextArea(" · ", textprops={"fontsize": 9}))
        parts.append(TextArea(value, textprops={"fontsize": 9, "color": run_colour(index), "fontweight": "bold"}))
    anchor = offset_copy(ax.transAxes, fig=ax.figure, y=6, units="points")  # where the title's last line sits
    ax.add_artist(AnchoredOffsetbox(loc="lower center", child=HPacker(children=parts, pad=0, sep=0), pad=0,
                                    borderpad=0, frameon=False, bbox_to_anchor=(0.5, 1.0), bbox_transform=anchor))


# ----------------------------------------------------------------------------
# the standard's figures
# ----------------------------------------------------------------------------
def draw_reliability(series: Series):
    """Per dataset, each run's reliability curve: the standard's 10 ECE bins, mean confidence against accuracy.

    ``series``: (run label, {dataset: :func:`reliability_data`}).
    """
    from matplotlib.lines import Line2D
    datasets = datasets_of(series)
    fig, axes = panels(len(datasets), 5, 2.75)
    for number, (ax, dataset) in enumerate(zip(axes, datasets)):
        eces = []
        for index, (_, data) in enumerate(series):
            d = data.get(dataset)
            if d is None:
                eces.append("n/a")
                continue
            points = [(c, a) for c, a, n in zip(d["confidence"], d["accuracy"], d["counts"]) if n]
            ax.plot([p[0] for p in points], [p[1] for p in points], "o-", color=run_colour(index), markersize=4,
                    linewidth=1.2)
            eces.append(f"{d['ece']:.3f}")
        ax.plot([0, 1], [0, 1], "--", color="#999999", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        values_title(ax, short(dataset, 22), "ECE", eces)
        if number % 5 == 0:
            ax.set_ylabel("accuracy of the bin")
        if number >= len(datasets) - 5:
            ax.set_xlabel("mean confidence of the bin")
    handles = run_handles([label for label, _ in series]) + [Line2D([], [], color="#999999", linestyle="--")]
    legend_above(fig, handles, [label for label, _ in series] + ["perfect calibration"])
    return fig


def _at_least_the_noise_floor(ax: Any, metric: str, values: Sequence[Any]) -> None:
    """A panel whose values are equal up to float noise gets an axis of the least span the arithmetic
    resolves (:func:`~StaICC.stats.resolution.axis_limits`), drawn without an offset: a flat line, not
    a 1e-8 axis."""
    from ..stats.resolution import axis_limits
    limits = axis_limits(metric, values)
    if limits is not None:
        ax.set_ylim(*limits)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")


def draw_gler(series: Series):
    """GLER: one panel per (metric, run): each dataset's per-pass values on the standard's x-values, with the
    straight line the standard fitted there (so the printed slope is the slope drawn).

    ``series``: (run label, [:func:`gler_data` of each dataset]).  The x-values fall as the
    label noise rises (1 = no noise); the noise rate of each x is written under it.
    """
    metrics = list(series[0][1][0]["metrics"]) if series and series[0][1] else []
    datasets = [d["dataset"] for d in series[0][1]] if series else []
    for _, data in series[1:]:
        datasets.extend(d["dataset"] for d in data if d["dataset"] not in datasets)
    columns = len(series) if len(series) > 1 else 2
    fig, axes = panels(len(metrics) * (len(series) if len(series) > 1 else 1), columns, 2.7)
    cells = [(metric, run) for metric in metrics for run in range(len(series))]
    for number, (ax, (metric, run)) in enumerate(zip(axes, cells)):
        label, data = series[run]
        for d in data:
            curve = d["metrics"][metric]
            colour = DATASET_COLOURS[datasets.index(d["dataset"]) % len(DATASET_COLOURS)]
            ax.plot(d["x"], curve["y"], "o", color=colour, markersize=4)
            ends = [min(d["x"]), max(d["x"])]
            ax.plot(ends, [curve["slope"] * x + curve["intercept"] for x in ends], "-", color=colour, linewidth=1)
        _at_least_the_noise_floor(ax, metric, [y for d in data for y in d["metrics"][metric]["y"]])
        if data:
            ax.set_xticks(data[0]["x"])
            ax.set_xticklabels([f"{x:g}\n{r:.0%}" for x, r in zip(data[0]["x"], data[0]["rates"])])
        ax.set_title(f"{short(label, 24)}: {metric_display_name('', metric)}")
        if number % columns == 0:
            # wrapped: the own-distribution metrics' names are longer than a panel is high
            ax.set_ylabel(textwrap.fill(metric_display_name("", metric), width=26, break_on_hyphens=False))
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=DATASET_COLOURS[i % len(DATASET_COLOURS)], marker="o", markersize=5, linewidth=1)
               for i in range(len(datasets))]
    fig.supxlabel("the standard's x-value, and under it the label-noise rate (x falls as the noise rises)", fontsize=9)
    legend_above(fig, handles, datasets)
    return fig


def draw_template_grid(series: Series):
    """Template_sens: per run, dataset x template accuracy and agreement with the item's majority over templates
    (one row of two heat maps per run, one colour scale for all)."""
    plt = pyplot()
    rows = max(1, len(series))
    names = series[0][1]["datasets"] if series else []
    panel_height = 0.9 + 0.3 * max(1, len(names))
    fig, axes = plt.subplots(rows, 2, figsize=(FIGURE_WIDTH, panel_height * rows), squeeze=False)
    image = None
    for (label, data), pair in zip(series, axes):
        for ax, key in zip(pair, ("accuracy", "agreement")):
            image = ax.imshow(data[key], vmin=0, vmax=1, cmap="viridis", aspect="auto")
            ax.set_xticks(range(len(data["templates"])))
            ax.set_xticklabels([str(t) for t in data["templates"]])
            ax.set_yticks(range(len(data["datasets"])))
            ax.set_yticklabels([short(d, 22) for d in data["datasets"]])
            ax.set_xlabel("template (row of the L9 table)")
            what = "accuracy" if key == "accuracy" else "agreement with the item's majority over templates"
            ax.set_title(f"{short(label, 24)}: {what}")
            for i, row in enumerate(data[key]):
                for j, v in enumerate(row):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=MIN_FONT_PT,
                            color="white" if v < 0.6 else "black")
    fig.tight_layout(rect=(0, 0, 0.93, 1))
    if image is not None:
        fig.colorbar(image, cax=fig.add_axes((0.945, 0.15, 0.012, 0.7)))
    return fig


def draw_demo_consistency(series: Series):
    """Demo_sens: per dataset, how many test items have each majority share of their predictions over the
    demonstration sets, one bar per run; ``series``: (run label, :func:`demo_consistency_data`)."""
    datasets = datasets_of(series)
    fig, axes = panels(len(datasets), 5, 2.6)
    width = 1.0 / max(len(series) + 1, 2)
    for number, (ax, dataset) in enumerate(zip(axes, datasets)):
        means = []
        for index, (_, data) in enumerate(series):
            d = data.get(dataset)
            if d is None:
                means.append("n/a")
                continue
            step = d["levels"][0]
            xs = [level + (index - (len(series) - 1) / 2) * width * step for level in d["levels"]]
            ax.bar(xs, d["histogram"], width=width * step, color=run_colour(index), edgecolor="black", linewidth=0.3)
            means.append(f"{d['mean']:.3f}")
        ax.set_xlim(0, 1.0 + 0.5 / max(len(series), 1) * 0.25)
        ax.set_xticks([0.25, 0.5, 0.75, 1.0])
        values_title(ax, short(dataset, 22), "consistency", means)
        if number % 5 == 0:
            ax.set_ylabel("test items")
        if number >= len(datasets) - 5:
            ax.set_xlabel("majority share of predictions")
    legend_above(fig, run_handles([label for label, _ in series], "bar"), [label for label, _ in series])
    return fig


#: the colours of the bias figure's bars: the true frequencies, then each role's mean prediction
#: (the roles of :data:`StaICC.spec.BIAS_ROLES`, read from each sub-benchmark's row)
BIAS_COLOURS = {"true label frequency": "#B0B0B0", "contextual": "#DD8452", "domain": "#55A868",
                "post": "#8172B3", "post_fallback": "#8172B3"}


def bias_role(series: str) -> str:
    """The colour key of a bias figure's series: the true frequencies, or the sub-benchmark's role."""
    from ..spec import SPECS
    spec = SPECS.get(series)
    return series if spec is None else str(spec.bias_role)


def draw_bias(data: Dict[str, Any], title: str = ""):
    """One run's mean predicted distributions (per bias diagnosis) beside the true label frequencies, per
    dataset; the label words are the run's own (:func:`label_names`)."""
    fig, axes = panels(len(data), 5, 2.7)
    handles: Dict[str, Any] = {}
    for number, (ax, (dataset, d)) in enumerate(zip(axes, data.items())):
        series = [("true label frequency", d["frequencies"])] + list(d["means"].items())
        width = 0.8 / len(series)
        positions = range(len(d["labels"]))
        for s, (name, values) in enumerate(series):
            bars = ax.bar([p + s * width - 0.4 + width / 2 for p in positions], values, width=width,
                          color=BIAS_COLOURS.get(bias_role(name), "#4C72B0"), edgecolor="black", linewidth=0.3)
            handles.setdefault(name if name == "true label frequency" else f"{name}: mean prediction", bars)
        ax.set_xticks(list(positions))
        ax.set_xticklabels([short(w, 12) for w in d["labels"]], rotation=30, ha="right")
        ax.set_title(short(dataset, 24))
        if number % 5 == 0:
            ax.set_ylabel("mean probability")
    legend_above(fig, list(handles.values()), list(handles), title=short(title, 60))
    return fig


def min_text_px(fig) -> float:
    """The smallest text in the figure, in pixels of the saved image (every visible, non-empty text)."""
    from matplotlib.text import Text
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return round(min(sizes) * fig.dpi / 72, 2) if sizes else 0.0


def figure_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (metadata without dates, so output is reproducible)."""
    import io
    buffer = io.BytesIO()
    metadata = {"Software": None} if fmt == "png" else {"Date": None}
    fig.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()


def close(fig) -> None:
    pyplot().close(fig)
