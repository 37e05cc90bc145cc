"""Tables rendered as text: the terminal, Markdown, CSV (LaTeX in :mod:`.latex`, HTML in :mod:`.html`).

The terminal table and CSV name metrics by their result keys (what a script reads in
``results.json``); Markdown, LaTeX and HTML by their display names.
"""
from typing import List, Optional

from ..errors import InvalidValueError
from .cells import Cell, Table, _cell_text
from .escaping import csv_text, markdown_escape, terminal_escape
from .names import display

FORMATS = ("table", "md", "latex", "csv", "json")


def _plain_table(title: Optional[str], header: List[str], body: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in body + [header]) for i in range(len(header))]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in body)
    return "\n".join(lines)


def render_text(table: Table, ci: Optional[str] = "interval") -> str:
    """The terminal table, drawn by the package itself: the same characters whatever is installed, so a
    script or a test that reads it reads one layout (two spaces between columns, a dashed rule under the header)."""
    header = [terminal_escape(c) for c in table.columns]
    title = terminal_escape(table.title) if table.title else table.title
    body = [[_cell_text(c, ci, "table") for c in row] for row in table.rows]
    text = _plain_table(title, header, body)
    return "".join(f"!! {terminal_escape(line)}\n" for line in table.banner) + text + \
        "".join("\n" + terminal_escape(note) for note in table.notes)


def render_markdown(table: Table, ci: Optional[str] = "interval") -> str:
    esc = markdown_escape
    lines = [f"**{esc(table.title)}**", ""] if table.title else []
    lines.extend([f"> **{esc(line)}**" for line in table.banner] + ([""] if table.banner else []))
    lines.append("| " + " | ".join(esc(display(c)) for c in table.columns) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(table.columns))) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(esc(display(c)) if isinstance(c, str) else _cell_text(c, ci, "md")
                                       for c in row) + " |")
    lines.extend([""] + [esc(n) for n in table.notes] if table.notes else [])
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
            for cell in row:
                out.append(_csv_value(cell.value if isinstance(cell, Cell) else cell))
                if len(out) < len(header) and header[len(out)].endswith(" low"):
                    has = isinstance(cell, Cell) and cell.low is not None
                    out += [_csv_value(cell.low) if has else "", _csv_value(cell.high) if has else ""]
            writer.writerow(out)
    return buffer.getvalue()


def _csv_value(value) -> str:
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
    if fmt == "latex":
        from .latex import render_latex_document
        return render_latex_document(tables, ci)
    renderer = {"table": render_text, "md": render_markdown}.get(fmt)
    if renderer is None:
        raise InvalidValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return "\n\n".join(renderer(t, ci) for t in tables)
