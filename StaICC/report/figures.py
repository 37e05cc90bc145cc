"""Which figures each section of the HTML report shows, drawn once for all runs, with captions that name
every colour.

:class:`Figures` turns a matplotlib figure into the page's ``<figure>`` (a PNG data URI, the
smallest text size it holds, the caption) and keeps its PNG and SVG for the figures folder.
"""
import base64
import html
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import diagnoses, forest, plot_data, plots

#: how the run colours are called in captions (plots.RUN_COLOURS, in order)
COLOUR_NAMES = ("blue", "orange", "green", "purple", "brown", "pink", "grey", "olive", "cyan")


def safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


class Figures:
    """Collects the figures of a page: ``files`` maps each file name to its PNG or SVG bytes."""

    def __init__(self, progress: Optional[Callable[[str], None]] = None) -> None:
        self.files: Dict[str, bytes] = {}
        self.progress = progress

    def embed(self, draw: Callable[[], Any], name: str, alt: str, caption: str) -> str:
        """Draw (``draw()`` returns the figure), keep PNG and SVG, and return the ``<figure>`` element;
        ``caption`` is HTML."""
        if self.progress is not None:
            self.progress(f"drawing figure {len(self.files) // 2 + 1}: {alt}")
        fig = draw()
        smallest = plots.min_text_px(fig)
        png = plots.figure_bytes(fig, "png")
        self.files[f"{safe_name(name)}.png"] = png
        self.files[f"{safe_name(name)}.svg"] = plots.figure_bytes(fig, "svg")
        width = int(round(fig.get_figwidth() * fig.dpi))
        plots.close(fig)
        encoded = base64.b64encode(png).decode("ascii")
        return (f'<figure><img alt="{html.escape(alt)}" width="{width}" data-min-text-px="{smallest}" '
                f'src="data:image/png;base64,{encoded}"><figcaption>{caption}</figcaption></figure>')


def run_key(runs: Sequence[Any]) -> str:
    """The caption's key to the run colours: a swatch and the run's label for each run."""
    return "; ".join(f'<span class="swatch" style="background:{plots.run_colour(i)}"></span>'
                     f"{COLOUR_NAMES[i % len(COLOUR_NAMES)]}: {html.escape(run.label)}" for i, run in enumerate(runs))


def under_names(runs: Sequence[Any], what: str) -> str:
    """The caption's sentence on the numbers under each panel's title: with several runs, one per run in its
    colour (:func:`StaICC.report.plots.values_title`)."""
    if len(runs) == 1:
        return f"Under each dataset's name: the run's {what}."
    return f"Under each dataset's name: each run's {what}, in the run's colour."


def _swatch(colour: str, meaning: str) -> str:
    return f'<span class="swatch" style="background:{colour}"></span>{meaning}'


def _with_records(runs: Sequence[Any], name: str) -> List[Any]:
    return [run for run in runs if name in run.parts and run.parts[name].records]


def normal_figures(runs: Sequence[Any], name: str, figures: Figures) -> List[str]:
    """Reliability curves and coverage-accuracy curves of every run with records."""
    runs = _with_records(runs, name)
    if not runs:
        return []
    reliability = [(r.label, {d: plot_data.reliability_data(r.parts[name], d) for d in r.parts[name].datasets()
                              if d in r.parts[name].records}) for r in runs]
    coverage = [(r.label, diagnoses.calibration_data(r.parts[name])) for r in runs]
    return [
        figures.embed(lambda: plots.draw_reliability(reliability), f"{name.lower()}_reliability",
                      "reliability curves",
                      "Reliability: one panel per dataset, one line per run (" + run_key(runs) + "). Each point is "
                      "one of the standard's 10 confidence bins [j/10, (j+1)/10): the mean confidence of its "
                      "predictions (x) and their accuracy (y); a point under the grey dashed diagonal is a bin where "
                      "the model is overconfident. " + under_names(runs, "ECE")),
        figures.embed(lambda: diagnoses.draw_coverage(coverage), f"{name.lower()}_coverage", "coverage curves",
                      "Selective prediction: one panel per dataset, one line per run (" + run_key(runs) + "): the "
                      "accuracy of the most confident share of predictions kept (x: the share); outside the standard. "
                      + under_names(runs, "area under its line")),
    ]


def gler_figures(runs: Sequence[Any], name: str, figures: Figures) -> List[str]:
    series = [(r.label, [plot_data.gler_data(r.parts[name], d) for d in r.parts[name].datasets()])
              for r in runs if name in r.parts]
    if not any(data for _, data in series):
        return []
    return [figures.embed(lambda: plots.draw_gler(series), f"{name.lower()}", f"{name} fits",
                          f"{html.escape(name)}: one panel per metric and run, one colour per dataset (legend above "
                          "the panels). Points: the metric at each pass, on the standard's x-values (1 = no label "
                          "noise; they fall as the noise rises, the noise rate under each x). Lines: the standard's "
                          "least-squares fit on those x-values, whose slope the table reports, so a positive slope "
                          "is a metric that falls as label noise rises.")]


def template_figures(runs: Sequence[Any], name: str, figures: Figures) -> List[str]:
    runs = _with_records(runs, name)
    if not runs:
        return []
    series = [(r.label, plot_data.template_grid_data(r.parts[name])) for r in runs]
    return [figures.embed(lambda: plots.draw_template_grid(series), f"{name.lower()}_grid", "template grid",
                          f"{html.escape(name)}: one row per run. Left: each template's accuracy per dataset "
                          "(columns: rows of the L9 table of templates); right: the share of the dataset's test items "
                          "on which the template gives the item's most frequent prediction over all templates. The "
                          "colour is the value, on the scale at the right (dark violet 0, yellow 1); the number is "
                          "written in each cell.")]


def demonstration_figures(runs: Sequence[Any], name: str, figures: Figures) -> List[str]:
    runs = _with_records(runs, name)
    if not runs:
        return []
    series = [(r.label, plot_data.demo_consistency_data(r.parts[name])) for r in runs]
    return [figures.embed(lambda: plots.draw_demo_consistency(series), f"{name.lower()}_consistency",
                          "per-query consistency",
                          f"{html.escape(name)}: one panel per dataset, one bar colour per run ({run_key(runs)}). "
                          "A bar counts the test items whose most frequent prediction over the demonstration sets "
                          "has the share on the x axis (1: the same prediction with every set). "
                          + under_names(runs, "consistency"))]


def bias_figures(runs: Sequence[Any], figures: Figures) -> List[str]:
    """One full-width figure per run: mean predicted distributions against the true label frequencies."""
    out = []
    for run in runs:
        data = plot_data.bias_data(run)
        if data:
            out.append(figures.embed(lambda data=data, run=run: plots.draw_bias(data, run.label),
                                     f"{safe_name(run.label)}_bias", f"bias of {run.label}",
                                     f"Bias of {html.escape(run.label)}: one panel per dataset, one group of bars per "
                                     f"label (the run's own label words). {_bias_key(data)}."))
    return out


#: a bias figure's colours: the series key, and what each says (only the series a run drew are named)
BIAS_KEY = (("true label frequency", None, "grey: the test items' label frequencies"),
            ("contextual", "contextual", "orange: the mean prediction for content-free queries (Contextual_bias)"),
            ("domain", "domain", "green: for random in-domain text (Domain_bias)"),
            ("post", "post", "purple: for the test items themselves (Post_bias)"),
            ("post", "post_fallback", "purple: Normal's mean prediction on the test items (no bias diagnosis ran)"))


def _bias_key(data: Dict[str, Any]) -> str:
    """The colour key of one run's bias figure: the frequencies and the parts it drew."""
    from ..spec import SPECS
    roles = {SPECS[name].bias_role for entry in data.values() for name in entry["means"]}
    return "; ".join(_swatch(plots.BIAS_COLOURS[colour], meaning) for colour, role, meaning in BIAS_KEY
                     if role is None or role in roles)


def agreement_figures(runs: Sequence[Any], figures: Figures) -> List[str]:
    series = [(r.label, diagnoses.agreement_data(r)) for r in runs]
    series = [(label, data) for label, data in series if data]
    if not series:
        return []
    shown = [r for r in runs if diagnoses.agreement_data(r)]
    return [figures.embed(lambda: diagnoses.draw_agreement(series), "agreement", "per-factor agreement",
                          "Agreement of the predicted labels across each factor (Fleiss' κ: 1 = the factor never "
                          "changes a prediction, 0 = agreement at chance level), one panel per factor, one bar "
                          f"colour per run ({run_key(shown)}). Outside the standard.")]


def blocks_figures(runs: Sequence[Any], name: str, figures: Figures) -> List[str]:
    """Order_sens / Format_spread: one full-width figure per run."""
    from ..spec import SPECS
    what = "order" if SPECS[name].procedure == "demonstration_order" else "format"
    out = []
    for run in runs:
        part = run.parts.get(name)
        if part is None:
            continue
        blocks = diagnoses.blocks_data(part, f"per_{what}")
        if any(d["accuracy"] for d in blocks.values()):
            out.append(figures.embed(
                lambda blocks=blocks, run=run: diagnoses.draw_blocks(blocks, what, run.label),
                f"{safe_name(run.label)}_{name.lower()}", f"{name} of {run.label}",
                f"{html.escape(name)} of {html.escape(run.label)}: per dataset, blue dots: the accuracy of each "
                f"{what}; grey bar: their range (spread above it, with Fleiss' κ across the {what}s)"
                + ("; red star: the dataset's own template; error bars: 95% bootstrap intervals of the lowest (red) "
                   "and highest (blue) accuracy" if what == "format" else "") + "."))
    return out


def difference_figures(comparisons: Sequence[Any], name: str, figures: Figures) -> List[str]:
    """A forest plot of ``name``'s differences per comparison."""
    out = []
    for c in comparisons:
        rows = [r for r in plot_data.difference_data(c) if r["benchmark"] == name]
        if rows:
            out.append(figures.embed(
                lambda rows=rows: forest.draw_differences(rows, name),
                f"differences_{safe_name(c.b)}_vs_{safe_name(c.a)}_{safe_name(name)}", f"differences {name}",
                f"{html.escape(name)}: {html.escape(c.b)} − {html.escape(c.a)} with its {c.level:.0%} "
                f"{'paired ' if c.paired else ''}bootstrap interval, one panel per metric (each in its own unit), "
                "datasets down the side. " + "; ".join(_swatch(forest.DIFFERENCE_COLOURS[k], m) for k, m in (
                    ("better", "green: significantly better"), ("worse", "red: significantly worse"),
                    ("significant", "black: significant where the metric has no better direction (slopes)"),
                    (None, "grey: not significant"))) + f" (at {c.alpha}, Holm-corrected across datasets; the averaged row "
                f"uncorrected). A panel whose "
                f"differences are all under {forest.RESOLVABLE_DIFFERENCE:g} says so instead of drawing float noise."))
    return out
