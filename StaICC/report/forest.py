"""Forest plots of differences between two runs: one panel per metric, datasets down the side.

A difference smaller than the arithmetic can resolve is float noise, not an effect: a panel
whose every difference and interval end is under :func:`resolvable_difference` draws no
axis (which would read in units of 1e-15) but says "no resolvable difference".
"""
import math
import textwrap
from typing import Any, Dict, List

from .names import metric_label
from .plots import FIGURE_WIDTH, MIN_FONT_PT, pyplot, short

#: the smallest difference between two runs' values of a metric that the report draws as one, relative to the
#: values (absolute under 1): float sums over a few thousand items carry errors near 1e-13 for metrics of order 1
RESOLVABLE_DIFFERENCE = 1e-9  # the statistics' relative resolution (StaICC.stats.resolution), named here for captions

#: colour of a difference: significant and better, significant and worse, significant without a better
#: direction (slopes, vectors), not significant
DIFFERENCE_COLOURS = {"better": "#1a7f37", "worse": "#C44E52", "significant": "#222222", None: "#9A9A9A"}
DIFFERENCE_MEANINGS = {"better": "significant: second run better", "worse": "significant: second run worse",
                       "significant": "significant, no better direction (slopes)", None: "not significant"}


def resolvable_difference(a: float, b: float, metric: str = "") -> float:
    """The smallest |b - a| the report shows as a difference between the values ``a`` and ``b`` of ``metric``:
    the statistics' noise floor (1e-9 of the larger, or 1e-9 when both are under 1)."""
    from ..stats.resolution import noise_floor
    return noise_floor(metric, a, b)


def _kind(row: Dict[str, Any]) -> Any:
    from .tables import _direction
    if not row["significant"]:
        return None
    return _direction(row["benchmark"], row["metric"], row["delta"]) or "significant"


def _resolvable(rows: List[Dict[str, Any]]) -> bool:
    """Whether any difference or interval end of the panel is one the arithmetic resolves."""
    return any(abs(v) >= resolvable_difference(r.get("a"), r.get("b"), r.get("metric", "")) for r in rows
               for v in (r["delta"], r["low"], r["high"]) if isinstance(v, (int, float)) and math.isfinite(v))


def _draw_panel(ax, rows: List[Dict[str, Any]], datasets: List[str]) -> None:
    if not _resolvable(rows):
        ax.set_xticks([])
        ax.text(0.5, 0.5, f"no resolvable difference\n(every |difference| < {RESOLVABLE_DIFFERENCE:g})",
                transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#444444")
        return
    for r in rows:
        y = datasets.index(r["dataset"])
        if not (isinstance(r["delta"], (int, float)) and math.isfinite(r["delta"])):
            ax.text(0.02, y, "infinite", transform=ax.get_yaxis_transform(), va="center", fontsize=MIN_FONT_PT)
            continue
        colour = DIFFERENCE_COLOURS[_kind(r)]
        if r["low"] is not None and math.isfinite(r["low"]) and math.isfinite(r["high"]):
            ax.plot([r["low"], r["high"]], [y, y], "-", color=colour, linewidth=1.6)
        ax.plot([r["delta"]], [y], "o", color=colour, markersize=5)
    ax.axvline(0, color="#666666", linewidth=0.8)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # a narrow panel's tick labels must not run together


def draw_differences(rows: List[Dict[str, Any]], benchmark: str):
    """One sub-benchmark's differences (:func:`~.plot_data.difference_data` rows): a panel per metric (each in
    its own unit), coloured as the tables, with the colours' legend under the panels."""
    from matplotlib.lines import Line2D
    plt = pyplot()
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    columns = min(4, max(1, len(metrics)))
    lines = (len(metrics) + columns - 1) // columns
    height = lines * (0.9 + 0.27 * len(datasets)) + 0.6
    fig, axes = plt.subplots(lines, columns, figsize=(FIGURE_WIDTH, height), squeeze=False, sharey=True)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(metrics):]:
        ax.axis("off")
    for ax, metric in zip(flat, metrics):
        _draw_panel(ax, [r for r in rows if r["metric"] == metric], datasets)
        # a long name (the own-distribution metrics) wraps inside its panel instead of running into the next
        ax.set_title(textwrap.fill(metric_label(benchmark, metric).human, width=136 // columns, break_on_hyphens=False))
        ax.set_ylim(len(datasets) - 0.5, -0.5)
    flat[0].set_yticks(range(len(datasets)))
    flat[0].set_yticklabels([short(d, 22) for d in datasets])
    fig.tight_layout(rect=(0, 0.55 / height, 1, 1))
    kinds = list(DIFFERENCE_COLOURS)
    handles = [Line2D([], [], color=DIFFERENCE_COLOURS[k], marker="o", linewidth=1.6) for k in kinds]
    fig.legend(handles, [DIFFERENCE_MEANINGS[k] for k in kinds], loc="lower center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, 0.0), title=None)
    return fig
