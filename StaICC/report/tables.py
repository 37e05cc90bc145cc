"""Results and their presentation: a dict that carries how it was made, text tables, JSON."""
import math
from typing import Any, Dict, List, Optional

from ..results import ResultDict, _jsonable, flatten  # noqa: F401  (re-exported)
from .escaping import ESCAPES, csv_text, latex_escape, markdown_escape, no_escape, terminal_escape  # noqa: F401
from .notices import notices


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def format_table(result: Dict[str, Any], title: Optional[str] = None) -> str:
    """A plain-text table: one row per dataset, then the average."""
    divided = result.get("Divided results", {})
    rows: List[List[str]] = []
    columns: List[str] = []
    for name, value in divided.items():
        flat = flatten(value)
        for c in flat:
            if c not in columns:
                columns.append(c)
        rows.append([name] + [_format_value(flat.get(c, "")) for c in columns])
    averaged = result.get("Averaged results", {})
    for c in averaged:
        if c not in columns:
            columns.append(c)
    rows = [r + [""] * (len(columns) + 1 - len(r)) for r in rows]
    rows.append(["Averaged"] + [_format_value(averaged.get(c, "")) for c in columns])
    benchmark = str((getattr(result, "metadata", None) or {}).get("benchmark", ""))
    header = [terminal_escape(h) for h in ["dataset"] + [metric_label(benchmark, c) for c in columns]]
    rows = [[terminal_escape(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    lines = [terminal_escape(title)] if title else []
    lines.extend(f"!! {terminal_escape(line)}" for line in notices([getattr(result, "metadata", None) or {}]))
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        if r[0] == "Averaged":
            lines.append("  ".join("-" * w for w in widths))
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# tables of runs and comparisons, rendered as text, Markdown, LaTeX, CSV, JSON
# ----------------------------------------------------------------------------
FORMATS = ("table", "md", "latex", "csv", "json")


class Cell:
    """A number with an optional interval and significance mark; rendered per format."""

    __slots__ = ("value", "low", "high", "mark", "kind", "suffix", "direction")

    def __init__(self, value: Any, low: Any = None, high: Any = None, mark: bool = False, kind: str = "value",
                 suffix: str = "", direction: Optional[str] = None) -> None:
        self.value, self.low, self.high, self.mark, self.kind = value, low, high, mark, kind
        #: a footnote sign (†: resamples left out of the interval); "better"/"worse" for a significant difference
        self.suffix, self.direction = suffix, direction

    def raw(self) -> Any:
        return self.value


class Table:
    """A titled table: column names, rows of cells (str, number, None or :class:`Cell`), notes."""

    def __init__(self, title: str, columns: List[str], rows: List[List[Any]], notes: Optional[List[str]] = None,
                 banner: Optional[List[str]] = None) -> None:
        self.title, self.columns, self.rows, self.notes = title, columns, rows, notes or []
        #: lines every format prints above the table (non-standard settings, unparsed answers)
        self.banner: List[str] = banner or []


def metric_label(benchmark: str, metric: str) -> str:
    """Column name of a metric: GLER's numbers are regression slopes, and say so."""
    from ..subbenchmarks.spec import SPECS
    spec = SPECS.get(benchmark)
    if spec is not None and spec.has_slopes:
        return f"{metric} slope"
    return metric


def format_number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and abs(value) < 0.5 * 10 ** -digits:
            return f"{value:.1e}"  # would print as 0.0000 or -0.0000: show the digits that tell it from zero
        return f"{value:.{digits}f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_number(v, digits) for v in value) + "]"
    return str(value)


def format_p(p: Optional[float]) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def _cell_text(cell: Any, ci: Optional[str], fmt: str) -> str:
    """A cell as ``fmt`` prints it: every piece of data escaped for that format, then the
    format's own markup (``$\\pm$``, ``*``) added around it."""
    esc = ESCAPES.get(fmt, no_escape)
    if not isinstance(cell, Cell):
        return esc(format_number(cell) if not isinstance(cell, str) else cell)
    if cell.kind == "p":
        text = format_p(cell.value)
        text = "$<$" + esc(text[1:]) if fmt == "latex" and text.startswith("<") else esc(text)
    else:
        text = esc(format_number(cell.value))
        if ci and cell.low is not None and not isinstance(cell.value, list):
            if ci == "pm":
                half = (cell.high - cell.low) / 2
                text += (r" $\pm$ " if fmt == "latex" else " ± ") + esc(format_number(half))
            else:
                text += f" [{esc(format_number(cell.low))}, {esc(format_number(cell.high))}]"
    if cell.mark:
        text += r"$^{*}$" if fmt == "latex" else "*"
    return text + cell.suffix


def render_text(table: Table, ci: Optional[str] = "interval") -> str:
    """The terminal table: rich when installed, else tabulate, else a plain aligned table."""
    header = [terminal_escape(c) for c in table.columns]
    title = terminal_escape(table.title) if table.title else table.title
    body = [[_cell_text(c, ci, "table") for c in row] for row in table.rows]
    try:
        import rich.console  # noqa: F401  (optional: the "rich" extra)
        import rich.markup
        import rich.table
        import io
        grid = rich.table.Table(title=rich.markup.escape(title) if title else title, show_lines=False)
        for column in header:
            grid.add_column(rich.markup.escape(column), no_wrap=True)
        for row in body:
            grid.add_row(*(rich.markup.escape(cell) for cell in row))
        buffer = io.StringIO()
        width = sum(max(len(r[i]) for r in body + [header]) + 3 for i in range(len(header))) + 4
        rich.console.Console(file=buffer, width=max(width, len(title or "")), color_system=None).print(grid)
        text = buffer.getvalue().rstrip("\n")
    except ImportError:
        try:
            import tabulate
            text = (title + "\n" if title else "") + tabulate.tabulate(body, headers=header)
        except ImportError:
            widths = [max(len(r[i]) for r in body + [header]) for i in range(len(header))]
            lines = [title] if title else []
            lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
            lines.append("  ".join("-" * w for w in widths))
            lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in body)
            text = "\n".join(lines)
    return "".join(f"!! {terminal_escape(line)}\n" for line in table.banner) + text + \
        "".join("\n" + terminal_escape(note) for note in table.notes)


def render_markdown(table: Table, ci: Optional[str] = "interval") -> str:
    esc = markdown_escape
    lines = [f"**{esc(table.title)}**", ""] if table.title else []
    lines.extend([f"> **{esc(line)}**" for line in table.banner] + ([""] if table.banner else []))
    lines.append("| " + " | ".join(esc(c) for c in table.columns) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(table.columns))) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(_cell_text(c, ci, "md") for c in row) + " |")
    lines.extend([""] + [esc(n) for n in table.notes] if table.notes else [])
    return "\n".join(lines)


def render_latex(table: Table, ci: Optional[str] = "interval") -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``); the title becomes the caption."""
    spec = "l" + "r" * (len(table.columns) - 1)
    lines = [r"\begin{table}[t]", r"\centering"]
    if table.title:
        lines.append(r"\caption{" + latex_escape(table.title) + "}")
    lines.extend(r"\par\textbf{" + latex_escape(line) + "}" for line in table.banner)
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule",
              " & ".join(latex_escape(c) for c in table.columns) + r" \\", r"\midrule"]
    for row in table.rows:
        if row and row[0] == "Averaged":
            lines.append(r"\midrule")
        cells = [_cell_text(c, ci, "latex") for c in row]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    for note in table.notes:
        lines.append(r"\par\footnotesize " + latex_escape(note))
    lines.append(r"\end{table}")
    return "\n".join(lines)


def render_csv(tables: List[Table]) -> str:
    """Long CSV with full-precision numbers; interval columns follow their value."""
    import csv
    import io
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for table in tables:
        header = ["table"]
        for name, column in zip(table.columns, zip(*table.rows) if table.rows else [[]] * len(table.columns)):
            header.append(name)
            if any(isinstance(c, Cell) and c.low is not None for c in column):
                header += [f"{name} low", f"{name} high"]
        writer.writerow([csv_text(h) for h in header])
        for line in table.banner:
            writer.writerow([csv_text(table.title), csv_text(line)])
        for row in table.rows:
            out = [csv_text(table.title)]
            for i, cell in enumerate(row):
                out.append(_csv_value(cell.value if isinstance(cell, Cell) else cell))
                if len(out) < len(header) and header[len(out)].endswith(" low"):
                    has = isinstance(cell, Cell) and cell.low is not None
                    out += [_csv_value(cell.low) if has else "", _csv_value(cell.high) if has else ""]
            writer.writerow(out)
    return buffer.getvalue()


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return " ".join(_csv_value(v) for v in value)
    if isinstance(value, (int, bool)):
        return str(value)
    return csv_text(value)


def render(tables: List[Table], fmt: str, ci: Optional[str] = "interval") -> str:
    """All tables in one format (``table``, ``md``, ``latex``, ``csv``); JSON is written by the caller."""
    if fmt == "csv":
        return render_csv(tables)
    renderer = {"table": render_text, "md": render_markdown, "latex": render_latex}.get(fmt)
    if renderer is None:
        raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return "\n\n".join(renderer(t, ci) for t in tables)


def run_tables(run, estimates=None) -> List[Table]:
    """One table per sub-benchmark of a run: datasets x metrics, with intervals when estimated."""
    tables = []
    for name, part in run.parts.items():
        est = estimates.parts.get(name) if estimates is not None else None
        columns: List[str] = []
        for result in list(part.divided.values()) + [part.averaged]:
            for metric in flatten(result):
                if metric not in columns:
                    columns.append(metric)
        rows = []
        unbounded: List[str] = []
        for dataset, result in list(part.divided.items()) + [("Averaged", part.averaged)]:
            flat = flatten(result)
            found = (est.averaged if dataset == "Averaged" else est.datasets.get(dataset, {})) if est else {}
            row: List[Any] = [dataset]
            for metric in columns:
                if dataset == "Averaged" and isinstance(flat.get(metric), (int, float)) and metric not in found \
                        and any(isinstance(flatten(r).get(metric), list) for r in part.divided.values()):
                    row.append("")  # the standard's 0.0 average of a vector metric says nothing
                elif metric in found:
                    e = found[metric]
                    row.append(Cell(e.value, e.low, e.high, suffix=UNBOUNDED_SIGN if e.unbounded else ""))
                    if e.unbounded:
                        unbounded.append(f"{dataset}: {e.unbounded}")
                else:
                    row.append(Cell(flat.get(metric)) if metric in flat else "")
            rows.append(row)
        notes = []
        if est is not None:
            notes.append(f"{estimates.level:.0%} bootstrap intervals over test items "
                         f"({estimates.resamples} resamples, seed {estimates.seed})")
        if unbounded:
            notes.append(UNBOUNDED_NOTE + "; infinite in " + ", ".join(unbounded) + f" of {estimates.resamples}")
        tables.append(Table(f"{name}: {run.label} (model {run.model_name()})",
                            ["dataset"] + [metric_label(name, c) for c in columns], rows, notes,
                            banner=notices([part.metadata])))
    return tables


#: the footnote of an interval that left out non-finite resamples
UNBOUNDED_SIGN = "†"
UNBOUNDED_NOTE = ("† the KL divergence is infinite in resamples that draw no test item of a label the model gives "
                  "probability to; the interval is over the finite resamples")


def _direction(benchmark: str, metric: str, delta: Any) -> Optional[str]:
    """"better" or "worse" for the second run, from the metric registry's direction (None: no direction)."""
    from ..stats import higher_is_better
    from ..stats.items import is_slope
    if is_slope(benchmark):  # a steeper slope is neither better nor worse in itself
        return None
    try:
        from ..metrics.registry import higher_is_better as registry
        higher = registry(metric, benchmark)
    except (KeyError, ValueError):
        higher = higher_is_better(metric)
    if higher is None or not isinstance(delta, (int, float)) or delta == 0:
        return None
    return "better" if (delta > 0) == higher else "worse"


def result_tables(result: Dict[str, Any], title: Optional[str] = None) -> List[Table]:
    """A result dict (one sub-benchmark, or Triplet_bias's three) as tables with their notices."""
    metadata = getattr(result, "metadata", None) or {}
    if "Averaged results" not in result:  # Triplet_bias: one result per part
        return [t for name, part in result.items() if isinstance(part, dict)
                for t in result_tables(part, f"{title or 'Triplet_bias'}/{name}")]
    benchmark = str(metadata.get("benchmark", ""))
    columns: List[str] = []
    for value in list(result.get("Divided results", {}).values()) + [result["Averaged results"]]:
        columns.extend(c for c in flatten(value) if c not in columns)
    rows = [[dataset] + [Cell(flatten(value).get(c)) if c in flatten(value) else "" for c in columns]
            for dataset, value in list(result.get("Divided results", {}).items())
            + [("Averaged", result["Averaged results"])]]
    return [Table(title or benchmark or "result", ["dataset"] + [metric_label(benchmark, c) for c in columns], rows,
                  banner=notices([metadata]))]


class _Label:
    """A run known only by its label (a comparison shown on its own, without the loaded runs)."""

    def __init__(self, label: str) -> None:
        self.label, self.parts = label, {}

    def model_name(self) -> str:
        return self.label


def comparison_markdown(comparison: Any) -> str:
    """A comparison as Markdown tables (notebooks show it through ``Comparison._repr_markdown_``)."""
    return render(comparison_tables([_Label(comparison.a), _Label(comparison.b)], [comparison]), "md")


def comparison_tables(runs: List[Any], comparisons: List[Any]) -> List[Table]:
    """One long table per sub-benchmark: (metric, dataset) rows; each run's value; B - A with CI and p."""
    tables = []
    base = comparisons[0]
    for name, first in base.parts.items():
        present = [c for c in comparisons if name in c.parts]
        columns = ["metric", "dataset", base.a] + [c.b for c in present]
        for c in present:
            columns += [f"{c.b} - {c.a}", "p", "p (Holm)", "test"]
        rows = []
        any_unbounded = False
        for metric in first.metrics:
            for dataset in list(first.datasets) + ["Averaged"]:
                ref = first.averaged if dataset == "Averaged" else first.datasets.get(dataset, {})
                if metric not in ref:
                    continue
                row: List[Any] = [metric_label(name, metric), dataset, Cell(ref[metric].a)]
                diffs = []
                for c in present:
                    part = c.parts[name]
                    d = (part.averaged if dataset == "Averaged" else part.datasets.get(dataset, {})).get(metric)
                    row.append(Cell(d.b) if d else "")
                    diffs.append(d)
                for d in diffs:
                    if d is None:
                        row += ["", "", "", ""]
                    else:
                        row += [Cell(d.delta, d.low, d.high, mark=d.significant,
                                     suffix=UNBOUNDED_SIGN if d.unbounded else "",
                                     direction=_direction(name, metric, d.delta) if d.significant else None),
                                Cell(d.p_value, kind="p"),
                                Cell(d.p_adjusted if dataset != "Averaged" else None, kind="p"), d.test]
                        any_unbounded = any_unbounded or bool(d.unbounded)
                rows.append(row)
        notes = [f"Differences with {base.level:.0%} {'paired ' if base.paired else ''}bootstrap intervals over test "
                 f"items ({base.resamples} resamples, seed {base.seed}); p: "
                 + ("McNemar's exact test for accuracy, paired bootstrap otherwise" if base.paired else "bootstrap")
                 + f"; Holm-corrected across datasets; * significant at {base.alpha} "
                   "(the averaged row: uncorrected)."]
        if not base.paired:
            notes.append("Unpaired comparison: the runs' prompts differ; items resampled independently.")
        if any_unbounded:
            notes.append(UNBOUNDED_NOTE + " (their count: the JSON output's 'unbounded')")
        banner = [f"{run.label}: {line}" for run in runs if name in run.parts
                  for line in notices([run.parts[name].metadata])]
        tables.append(Table(f"{name}: " + ", ".join(f"{r.label} (model {r.model_name()})" for r in runs), columns,
                            rows, notes, banner=banner))
    return tables
