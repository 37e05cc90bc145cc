"""One self-contained HTML page for one or more runs: a section per sub-benchmark with each run's table, the
differences from the first run (table and forest plot) and the figures, every figure holding all the runs.

Everything is inside the file: styles inline, figures as base64 PNG data URIs; no script,
no font, no stylesheet and no image is fetched from anywhere.  Sections are ``<details>``
elements: the first is open, the others open on a click (or when the contents link to them),
so the page starts short.  Its styles are scoped to ``.staicc-report``, so the same body shows
inline in a notebook (:meth:`~.page.HTMLReport._repr_html_`) without restyling the notebook.
"""
import datetime
import html
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import diagnoses, figures as figure_sections
from .cells import Cell, Table, _cell_text
from .names import display
from .notices import run_notices
from .tables import comparison_tables, run_tables

_STYLE = """
.staicc-report { font-family: sans-serif; color: #222; max-width: 1344px; margin: 0 auto; line-height: 1.4; }
.staicc-report h1 { font-size: 1.5em; margin: 0.4em 0; }
.staicc-report h2 { font-size: 1.25em; display: inline; margin: 0; }
.staicc-report h3 { font-size: 1.05em; margin: 1.2em 0 0.3em 0; }
.staicc-report details.section { border-top: 1px solid #ccc; padding: 0.5em 0; }
.staicc-report details.section > summary { cursor: pointer; list-style: none; padding: 0.3em 0; }
.staicc-report details.section > summary::-webkit-details-marker { display: none; }
.staicc-report details.section > summary::before { content: "\\25B8  "; color: #555; }
.staicc-report details.section[open] > summary::before { content: "\\25BE  "; }
.staicc-report summary .what { color: #555; font-size: 0.85em; margin-left: 0.8em; }
.staicc-report details.more > summary { cursor: pointer; color: #1a4f8b; font-size: 0.9em; margin: 0.4em 0; }
.staicc-report table { border-collapse: collapse; margin: 0.4em 0 0.6em 0; font-size: 0.85em; }
.staicc-report th, .staicc-report td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
.staicc-report th:first-child, .staicc-report td:first-child { text-align: left; }
.staicc-report th { background: #f3f3f3; }
.staicc-report tr.avg td { font-weight: bold; border-top: 2px solid #999; }
.staicc-report td.sig { font-weight: bold; }
.staicc-report td.sig.better { color: #1a7f37; } .staicc-report td.sig.worse { color: #b00; }
.staicc-report p.note { font-size: 0.8em; color: #555; margin: 0.2em 0; max-width: 80em; }
.staicc-report .tables { display: flex; flex-wrap: wrap; gap: 0 2.5em; align-items: flex-start; }
.staicc-report figure { margin: 0.8em 0 1.2em 0; }
.staicc-report figure img { max-width: 100%; height: auto; display: block; }
.staicc-report figcaption { font-size: 0.85em; color: #333; max-width: 80em; margin-top: 0.3em; }
.staicc-report .swatch { display: inline-block; width: 0.8em; height: 0.8em; margin: 0 0.3em 0 0.2em;
  border: 1px solid #555; vertical-align: -0.05em; }
.staicc-report nav ul { columns: 2; font-size: 0.9em; margin: 0.3em 0 0.8em 0; }
.staicc-report p.banner { background: #fff3cd; border: 1px solid #d39e00; color: #5c4400; padding: 6px 10px;
  font-weight: bold; }
@media print { .staicc-report details.section::details-content { content-visibility: visible; display: block; } }
"""

#: the inline style of a significant difference, so the colour shows wherever the table is pasted (a notebook)
SIGNIFICANT_STYLES = {"better": "font-weight:bold;color:#1a7f37", "worse": "font-weight:bold;color:#b00",
                      None: "font-weight:bold"}


def _cell(cell: Any) -> str:
    if isinstance(cell, Cell) and cell.mark:
        classes = f"sig {cell.direction}" if cell.direction else "sig"
        return (f'<td class="{classes}" style="{SIGNIFICANT_STYLES[cell.direction]}">'
                f"{html.escape(_cell_text(cell, 'interval', 'table'))}</td>")
    text = display(cell) if isinstance(cell, str) else _cell_text(cell, "interval", "table")
    return f"<td>{html.escape(text)}</td>"


def _html_table(table: Table, said: str = "") -> str:
    """A table with its title, banner lines and notes; significant differences green or red by direction.
    ``said``: banner lines holding it are left out (the page's head says them once for the whole page)."""
    out = [f"<h3>{html.escape(table.title)}</h3>"]
    out.extend(f'<p class="banner">{html.escape(line)}</p>' for line in table.banner if not (said and said in line))
    out += ["<table>", "<tr>" + "".join(f"<th>{html.escape(display(c))}</th>" for c in table.columns) + "</tr>"]
    for row in table.rows:
        average = any(c == "Averaged" for c in row[:2])
        out.append(('<tr class="avg">' if average else "<tr>") + "".join(_cell(c) for c in row) + "</tr>")
    out.append("</table>")
    out.extend(f'<p class="note">{html.escape(n)}</p>' for n in table.notes)
    if any(isinstance(c, Cell) and c.direction for row in table.rows for c in row):
        out.append('<p class="note">Significant differences: <span style="color:#1a7f37">green</span> where the '
                   'second run is better, <span style="color:#b00">red</span> where it is worse (by the metric\'s '
                   'direction); bold without colour where the metric has no better direction.</p>')
    return "\n".join(out)


def sections(runs: Sequence[Any]) -> List[Tuple[str, List[str], bool]]:
    """(title, part names, whether the bias figure goes there) of the page's sections, in the spec table's
    order, a compound's parts (the bias diagnoses) together.  The bias figure goes with the bias diagnoses,
    or, when none ran, with the scored predictions (their mean prediction against the label frequencies)."""
    from ..spec import SPECS
    present = list(dict.fromkeys(name for run in runs for name in run.parts))
    out: List[Tuple[str, List[str], bool]] = []
    placed = set()
    for spec in SPECS.values():
        names = [p for _, p in spec.parts] if spec.compound else [spec.name]
        names = [n for n in names if n in present and n not in placed]
        if names:
            out.append((f"{spec.name}: {', '.join(names)}" if spec.compound else spec.name, names, spec.compound))
            placed.update(names)
    out += [(name, [name], False) for name in present if name not in placed]
    if not any(bias for *_, bias in out):
        out = [(t, names, any(n in diagnoses.SCORE_PARTS for n in names)) for t, names, _ in out]
    return out


def _part_figures(name: str, runs: Sequence[Any], figures: figure_sections.Figures) -> List[str]:
    from ..spec import SPECS
    procedure = SPECS[name].procedure if name in SPECS else None
    if name in diagnoses.SCORE_PARTS:
        return figure_sections.normal_figures(runs, name, figures)
    draw: Optional[Callable] = {"label_noise": figure_sections.gler_figures,
                                "template": figure_sections.template_figures,
                                "demonstration_sensitivity": figure_sections.demonstration_figures,
                                "demonstration_order": figure_sections.blocks_figures,
                                "format_spread": figure_sections.blocks_figures}.get(procedure)
    return draw(runs, name, figures) if draw is not None else []


def _side_by_side(blocks: List[str]) -> str:
    return '<div class="tables">' + "".join(f"<div>{b}</div>" for b in blocks) + "</div>"


def _part_body(name: str, runs, comparisons, tables: Dict[str, Any], figures) -> List[str]:
    """One sub-benchmark: each run's table side by side, the calibration tables, the differences."""
    body = [_side_by_side([_page_table(t) for t in tables["runs"].get(name, [])]), *_lite_notes(runs)]
    if name in diagnoses.SCORE_PARTS:
        extra = [diagnoses.calibration_table(r, name, diagnoses.calibration_data(r.parts[name]))
                 for r in runs if name in r.parts and r.parts[name].records]
        if extra:
            body.append('<details class="more"><summary>Calibration beyond the standard\'s ECE (outside the '
                        "standard)</summary>" + _side_by_side([_page_table(t) for t in extra]) + "</details>")
    if name in tables["differences"]:
        body.append('<details class="more"><summary>Table of the differences from '
                    f"{html.escape(runs[0].label)}</summary>{_page_table(tables['differences'][name])}</details>")
        body.extend(figure_sections.difference_figures(comparisons, name, figures))
    return body


def _lite_notes(runs: Sequence[Any]) -> List[str]:
    """Where runs are lite: what the rest of a section draws for them (the subset's own values)."""
    from .lite_tables import lite_figures_note
    return [f'<p class="note">{html.escape(line)}</p>' for line in lite_figures_note(runs)]


def _glance(names: List[str], runs: Sequence[Any]) -> str:
    """The section's first averaged number of each run, shown while the section is closed."""
    from .cells import format_number
    from .names import metric_label
    name = names[0]
    averaged = [run.parts[name].averaged if name in run.parts else {} for run in runs]
    metric = next((m for m, v in averaged[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    if metric is None:
        return ""
    from .lite_tables import lite_averaged_text
    values = " · ".join(f"{run.label} {lite_averaged_text(run, name, metric) or format_number(a.get(metric))}"
                        for run, a in zip(runs, averaged))
    return f"{metric_label(name, metric).human}, averaged: {values}"


def section_anchor(title: str) -> str:
    return figure_sections.safe_name(title.split(":")[0]).lower()


def _section(title: str, names: List[str], bias: bool, runs, comparisons, tables, figures, is_open: bool) -> str:
    body: List[str] = []
    for name in names:
        if len(names) > 1:
            body.append(f"<h3>{html.escape(name)}</h3>")
        body.extend(_part_body(name, runs, comparisons, tables, figures))
        body.extend(_part_figures(name, runs, figures))
    if bias:
        body.extend(figure_sections.bias_figures(runs, figures))
    return (f'<details class="section" id="{section_anchor(title)}"{" open" if is_open else ""}><summary><h2>'
            f'{html.escape(title)}</h2><span class="what">{html.escape(_glance(names, runs))}</span></summary>\n'
            + "\n".join(body) + "\n</details>")


def _agreement_section(runs, figures) -> Optional[str]:
    found = [t for t in (diagnoses.agreement_table(r) for r in runs) if t is not None]
    if not found:
        return None
    body = [*_lite_notes(runs), _side_by_side([_page_table(t) for t in found])]
    body += figure_sections.agreement_figures(runs, figures)
    return ('<details class="section" id="agreement"><summary><h2>Agreement across templates, demonstration sets '
            'and orders</h2><span class="what">outside the standard</span></summary>\n' + "\n".join(body)
            + "\n</details>")


def _tables_by_part(runs, estimates, comparisons) -> Dict[str, Any]:
    by_run: Dict[str, List[Table]] = {}
    for run, est in zip(runs, estimates):
        for name, table in zip(run.parts, run_tables(run, est)):
            by_run.setdefault(name, []).append(table)
    differences = dict(zip(comparisons[0].parts, comparison_tables(runs, comparisons))) if comparisons else {}
    return {"runs": by_run, "differences": differences}


#: the notice the page's head says once per run (every sub-benchmark's departures): no table repeats it
HEAD_NOTICE = "NOT STANDARD: "


def _page_table(table: Table) -> str:
    return _html_table(table, said=HEAD_NOTICE)


def _head(runs: Sequence[Any], title: str) -> List[str]:
    from .plots import run_colour
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="note">Generated {datetime.date.today().isoformat()} from: '
            + "; ".join(f'<span class="swatch" style="background:{run_colour(i)}"></span><b>{html.escape(r.label)}</b>'
                        f" ({html.escape(r.path)}; model {html.escape(r.model_name())})" for i, r in enumerate(runs))
            + ". The first run is the baseline of every difference; sections open on a click.</p>"]
    body.extend(f'<p class="banner">{html.escape(run.label)}: {html.escape(line)}</p>'
                for run in runs for line in run_notices(run))
    return body


class HTMLReport:
    """A finished report: ``page`` (the self-contained HTML page) and ``figures`` ({file name: bytes}, PNG and
    SVG of every figure).  Jupyter shows it inline (:meth:`_repr_html_`); :meth:`save` writes it."""

    def __init__(self, page: str, fragment: str, figures: dict) -> None:
        self.page, self.fragment, self.figures = page, fragment, figures

    def _repr_html_(self) -> str:
        """The report's body with its styles scoped to it, so the notebook's own styles stay as they are."""
        return self.fragment

    def save(self, path: str, figures_dir: Optional[str] = None) -> List[str]:
        """Write the page to ``path`` (its folder is created) and every figure into ``figures_dir`` (default:
        ``<page name>_figures`` beside it); the files written."""
        from ..results.safe_files import staged_directory, write_bytes, write_text
        figures_dir = figures_dir or os.path.splitext(path)[0] + "_figures"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with staged_directory(figures_dir) as staging:  # a killed save never mixes old and new figures
            for name, data in self.figures.items():
                write_bytes(os.path.join(staging, name), data)
        write_text(path, self.page)
        return [path] + [os.path.join(figures_dir, name) for name in self.figures]


def build_report(runs: List[Any], estimates: List[Any], comparisons: List[Any], *, title: str = "StaICC report",
                 progress: Optional[Callable[[str], None]] = None):
    """The report (:class:`HTMLReport`: the page, its inline fragment, its figure files).  Needs
    matplotlib (the ``plot`` extra)."""
    from .plots import pyplot
    pyplot()  # fail early, naming the extra, before any work
    figures = figure_sections.Figures(progress)
    tables = _tables_by_part(runs, estimates, comparisons)
    found = sections(runs)
    blocks = [_section(t, names, bias, runs, comparisons, tables, figures, i == 0)
              for i, (t, names, bias) in enumerate(found)]
    links = [(section_anchor(t), t) for t, *_ in found]
    agreement = _agreement_section(runs, figures)
    if agreement:
        blocks.append(agreement)
        links.append(("agreement", "Agreement across templates, demonstration sets and orders"))
    contents = ["<nav><ul>" + "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t in links)
                + "</ul></nav>"]
    fragment = ('<div class="staicc-report"><style>' + _STYLE + "</style>\n"
                + "\n".join(_head(runs, title) + contents + blocks) + "\n</div>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{html.escape(title)}</title></head>"
            "<body style=\"margin:0;padding:16px 28px\">\n" + fragment + "\n</body></html>\n")
    return HTMLReport(page, fragment, figures.files)
