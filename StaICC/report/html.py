"""One self-contained HTML page for one or more runs: tables with intervals, figures, differences.

Everything is inside the file: styles inline, figures as base64 PNG data URIs; no script,
no font, no stylesheet and no image is fetched from anywhere.  The figures are also
written beside the page (PNG and SVG) when a figures directory is given.
"""
import base64
import datetime
import html
import os
from typing import Any, List, Optional, Tuple

from . import diagnoses, plots
from .notices import run_notices
from .tables import Cell, Table, _cell_text, comparison_tables, run_tables
from ..results.safe_files import write_bytes

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.85em; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; } tr.avg td { font-weight: bold; border-top: 2px solid #999; }
td.sig { font-weight: bold; } td.sig.better { color: #1a7f37; } td.sig.worse { color: #b00; }
p.note { font-size: 0.8em; color: #555; } img { max-width: 100%; }
div.side { display: flex; gap: 1em; } div.side > div { flex: 1 1 50%; min-width: 0; }
ul.toc { columns: 2; font-size: 0.85em; } ul.toc li.h3 { margin-left: 1.5em; }
p.banner { background: #fff3cd; border: 1px solid #d39e00; color: #5c4400; padding: 6px 10px; font-weight: bold; }
"""


def _html_table(table: Table) -> str:
    out = [f"<h3>{html.escape(table.title)}</h3>"]
    out.extend(f'<p class="banner">{html.escape(line)}</p>' for line in table.banner)
    out += ["<table>", "<tr>" +
           "".join(f"<th>{html.escape(c)}</th>" for c in table.columns) + "</tr>"]
    for row in table.rows:
        average = any(c == "Averaged" for c in row[:2])
        cells = []
        for cell in row:
            css = ""
            if isinstance(cell, Cell) and cell.mark:
                css = f' class="sig {cell.direction}"' if cell.direction else ' class="sig"'
            cells.append(f"<td{css}>{html.escape(_cell_text(cell, 'interval', 'table'))}</td>")
        out.append(("<tr class=\"avg\">" if average else "<tr>") + "".join(cells) + "</tr>")
    out.append("</table>")
    out.extend(f'<p class="note">{html.escape(n)}</p>' for n in table.notes)
    if any(isinstance(c, Cell) and c.direction for row in table.rows for c in row):
        out.append('<p class="note">Significant differences: <span style="color:#1a7f37">green</span> where the '
                   'second run is better, <span style="color:#b00">red</span> where it is worse (by the metric\'s '
                   'direction); bold without colour where the metric has no better direction.</p>')
    return "\n".join(out)


class _Figures:
    """Collects figures: embeds each as PNG, and writes PNG + SVG files to ``directory``."""

    def __init__(self, directory: Optional[str]) -> None:
        self.directory = directory
        self.written: List[str] = []
        if directory:
            os.makedirs(directory, exist_ok=True)

    def embed(self, fig, name: str, alt: str) -> str:
        png = plots.figure_bytes(fig, "png")
        if self.directory:
            for fmt, data in (("png", png), ("svg", plots.figure_bytes(fig, "svg"))):
                path = os.path.join(self.directory, f"{name}.{fmt}")
                write_bytes(path, data)  # the package's one way to write a file: never through a link
                self.written.append(path)
        plots.close(fig)
        encoded = base64.b64encode(png).decode("ascii")
        return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def _parts_with(run, procedure: str) -> List[Tuple[str, Any]]:
    """The run's parts whose spec-table procedure is ``procedure`` (table order)."""
    from ..subbenchmarks.spec import SPECS
    return [(name, run.parts[name]) for name, spec in SPECS.items()
            if spec.procedure == procedure and name in run.parts]


def run_figures(run, figures: _Figures, prefix: str) -> List[Tuple[str, str]]:
    """(section title, HTML) of every figure the run's records allow."""
    sections = []
    normal = run.parts.get("Normal")
    if normal is not None and normal.records:
        data = [plots.reliability_data(normal, d) for d in normal.datasets()]
        sections.append(("Reliability diagrams (Normal; the standard's 10 ECE bins)",
                         figures.embed(plots.draw_reliability(data, run.label), f"{prefix}reliability",
                                       "reliability diagrams")))
    for name, part in _parts_with(run, "label_noise"):
        if part is not None:
            data = [plots.gler_data(part, d) for d in part.datasets()]
            sections.append((f"{name}: metrics on the standard's x-values (falling as label noise rises), with its fitted line",
                             figures.embed(plots.draw_gler(data, run.label), f"{prefix}{name.lower()}", name)))
    for name, part in _parts_with(run, "template"):
        if not part.records:
            continue
        sections.append(("Template_sens: dataset x template grid",
                         figures.embed(plots.draw_template_grid(plots.template_grid_data(part), run.label),
                                       f"{prefix}template_sens", "template grid")))
    for name, part in _parts_with(run, "demonstration_sensitivity"):
        if not part.records:
            continue
        sections.append(("Demo_sens: distribution of per-query consistency",
                         figures.embed(plots.draw_demo_consistency(plots.demo_consistency_data(part), run.label),
                                       f"{prefix}demo_sens", "per-query consistency")))
    data = plots.bias_data(run)
    if data:
        sections.append(("Bias: mean predicted distribution against the true label frequencies",
                         figures.embed(plots.draw_bias(data, run.label), f"{prefix}bias", "bias distributions")))
    return sections + diagnoses.diagnosis_figures(run, figures, prefix)


def _with_contents(body: List[str]) -> List[str]:
    """The page with an anchor on every section and table heading, and a table of contents after the banners."""
    out: List[str] = []
    entries: List[str] = []
    for number, block in enumerate(body):
        for tag in ("h2", "h3"):
            if block.startswith(f"<{tag}>"):
                anchor = f"s{number}"
                block = f'<{tag} id="{anchor}">' + block[len(tag) + 2:]
                text = block[block.index(">") + 1:block.index(f"</{tag}>")]
                entries.append(f'<li class="{tag}"><a href="#{anchor}">{text}</a></li>')
                break
        out.append(block)
    contents = '<nav><h2>Contents</h2><ul class="toc">' + "".join(entries) + "</ul></nav>"
    first = next((i for i, block in enumerate(out) if block.startswith("<h2")), len(out))
    return out[:first] + [contents] + out[first:]


def build_report(runs: List[Any], estimates: List[Any], comparisons: List[Any], *,
                 figures_dir: Optional[str] = None, title: str = "StaICC report") -> Tuple[str, List[str]]:
    """(the HTML page, the figure files written).  Needs matplotlib (the ``plot`` extra)."""
    plots.pyplot()  # fail early, naming the extra, before any work
    figures = _Figures(figures_dir)
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="note">Generated {datetime.date.today().isoformat()} from: ' +
            ", ".join(f"{html.escape(r.label)} ({html.escape(r.path)}; model {html.escape(r.model_name())})"
                      for r in runs) + "</p>"]
    for run in runs:
        body.extend(f'<p class="banner">{html.escape(run.label)}: {html.escape(line)}</p>'
                    for line in run_notices(run))
    body.append("<h2>Summary</h2>")
    for run, est in zip(runs, estimates):
        body.extend(_html_table(t) for t in run_tables(run, est) + diagnoses.diagnosis_tables(run))
    if comparisons:
        body.append("<h2>Differences</h2>")
        body.extend(_html_table(t) for t in comparison_tables(runs, comparisons))
        for c in comparisons:
            rows = plots.difference_data(c)
            for benchmark in dict.fromkeys(r["benchmark"] for r in rows):
                part = [r for r in rows if r["benchmark"] == benchmark]
                body.append(f"<h3>Differences {html.escape(c.b)} - {html.escape(c.a)}: {html.escape(benchmark)}</h3>")
                body.append(figures.embed(plots.draw_differences(part, f"{benchmark}: {c.b} - {c.a}"),
                                          f"differences_{_safe(c.b)}_vs_{_safe(c.a)}_{_safe(benchmark)}",
                                          f"differences {benchmark}"))
    if len(runs) == 2:  # two runs: each figure of one beside the same figure of the other
        body.append(f"<h2>Figures: {html.escape(runs[0].label)} (left) and {html.escape(runs[1].label)} (right)</h2>")
        left, right = (dict(run_figures(run, figures, f"{_safe(run.label)}_")) for run in runs)
        for heading in list(left) + [h for h in right if h not in left]:
            body.append(f"<h3>{html.escape(heading)}</h3>")
            cells = [f'<div><p class="note">{html.escape(run.label)}</p>{side.get(heading, "")}</div>'
                     for run, side in zip(runs, (left, right))]
            body.append('<div class="side">' + "".join(cells) + "</div>")
    else:
        for run in runs:
            body.append(f"<h2>Figures: {html.escape(run.label)}</h2>")
            prefix = f"{_safe(run.label)}_" if len(runs) > 1 else ""
            for heading, image in run_figures(run, figures, prefix):
                body.append(f"<h3>{html.escape(heading)}</h3>")
                body.append(image)
    body = _with_contents(body)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    return page, figures.written
