"""LaTeX tables a paper can use: booktabs, display names, intervals as asymmetric as they are, and a layout
that fits the page of a default ``\\documentclass{article}`` with no text under 8 pt.

Each table takes the first layout that fits the text width (:mod:`.latex_layout` estimates
every column from Computer Modern's character widths), in this order of preference:

1. upright, in as few panels as possible: a panel repeats the row names (datasets) beside a
   group of metric columns, one panel under the other in the same tabular;
2. the same with each interval on its own line under its value (in ``\\footnotesize``), then with
   narrower column spacing;
3. turned on a page of its own (``sidewaystable``, from the ``rotating`` package).

A table taller than the page goes on in a second float, headed "Table N (continued)", with
its column names and the metric's heading repeated.  The body is ``\\small`` (9 pt), notes
and stacked intervals ``\\footnotesize`` (8 pt); nothing is scaled (no ``\\resizebox``).  A
comparison prints each metric once, as a heading row, instead of in every row.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .cells import Table, cell_pieces
from .escaping import latex_escape
from .latex_layout import (FILL, FOOTNOTE_EM, TABCOLSEP, TEXT_HEIGHT, TEXT_WIDTH, Layout, choose_layout,
                           header_lines, is_average, text_width, without_stated)
from .names import display

#: estimated heights (pt) in a \small tabular: a row, a heading row with the space above it, a rule
ROW, HEADING, RULE = 11.5, 16.0, 7.0
#: share of the page height a float may fill (its caption and notes are estimated too)
FILL_HEIGHT = 0.95


@dataclass(frozen=True)
class _Piece:
    """Lines of the tabular: a panel's column names, a metric's heading, or one row (one or two lines)."""

    kind: str
    lines: Tuple[str, ...]
    height: float


def _paragraph(text: str) -> str:
    """Running text (caption, banner, note): escaped, and breakable after / and _ so a long path or
    model name wraps instead of running into the margin."""
    return latex_escape(text).replace("/", r"/\allowbreak{}").replace(r"\_", r"\_\allowbreak{}")


def _line(cells: List[str]) -> str:
    return " & ".join(cells) + r" \\"


def _row_cells(table: Table, row: List[Any], panel: Sequence[int], ci: Optional[str],
               stacked: bool) -> Tuple[List[str], List[str]]:
    """The cells of one row in one panel, and of the line of intervals under it when stacked."""
    first = [latex_escape(display(row[k])) for k in table.keys]
    below = [""] * len(table.keys)
    for index in panel:
        cell = row[index]
        if isinstance(cell, str):
            first.append(latex_escape(display(cell)))
            below.append("")
            continue
        value, interval, marks = cell_pieces(cell, ci, "latex")
        if stacked and interval:
            first.append(value + marks)
            below.append(r"{\footnotesize " + interval + "}")
        else:
            glue = "" if interval.startswith("$^") or not interval else " "
            first.append(value + glue + interval + marks)
            below.append("")
    return first, below


def _header(lines: List[str], align: str) -> str:
    """A column name: one line, or its lines stacked bottom-aligned in a nested tabular (no package needed)."""
    escaped = [latex_escape(line) for line in lines]
    if len(escaped) == 1:
        return escaped[0]
    return r"\begin{tabular}[b]{@{}%s@{}}%s\end{tabular}" % (align, r" \\ ".join(escaped))


def _heading(group: Any, span: int, statements: Dict[Any, str], available: float) -> Tuple[str, ...]:
    """A metric's heading row; what it states goes on a second row when both do not fit ``available`` pt
    (a heading wider than the page would push the table into the margin)."""
    name = r"\textit{%s}" % latex_escape(display(group))
    stated = statements.get(group)
    if not stated:
        return (r"\multicolumn{%d}{@{}l}{%s} \\" % (span, name),)
    statement = r"{\footnotesize " + latex_escape(stated) + "}"
    if text_width(display(group)) + 9.25 + text_width(stated, FOOTNOTE_EM) <= available:
        return (r"\multicolumn{%d}{@{}l}{%s\quad%s} \\" % (span, name, statement),)
    return (r"\multicolumn{%d}{@{}l}{%s} \\" % (span, name), r"\multicolumn{%d}{@{}l}{%s} \\" % (span, statement))


#: what closes a panel's tabular (at the end of a page, or before the next panel)
_CLOSE = (r"\bottomrule", r"\end{tabular}")


def _pieces(table: Table, layout: Layout, ci: Optional[str], statements: Dict[Any, str]) -> List[_Piece]:
    """Every panel's opening (its tabular and column names), metric headings and rows, in order."""
    pieces = []
    available = (TEXT_HEIGHT if layout.sideways else TEXT_WIDTH) * FILL
    for panel in layout.panels:
        span = len(table.keys) + len(panel)
        names = [header_lines(table, i, ci, layout.stacked) for i in list(table.keys) + list(panel)]
        opening = (r"\begin{tabular}{@{}" + "l" * len(table.keys) + "r" * len(panel) + "@{}}", r"\toprule",
                   _line([_header(lines, "l" if i < len(table.keys) else "r") for i, lines in enumerate(names)]),
                   r"\midrule")
        pieces.append(_Piece("names", opening, ROW * max(map(len, names)) + 3 * RULE + 6))
        group = None
        for row in table.rows:
            if table.group_column is not None and row[table.group_column] != group:
                group = row[table.group_column]
                lines = _heading(group, span, statements, available)
                pieces.append(_Piece("heading", lines, HEADING + ROW * (len(lines) - 1)))
            first, below = _row_cells(table, row, panel, ci, layout.stacked)
            average = is_average(table, row)
            lines = ((r"\cmidrule{1-%d}" % span,) if average else ()) + (_line(first),)
            lines += (_line(below),) if any(below) else ()
            pieces.append(_Piece("row", lines, ROW * (len(lines) - average) + RULE * average))
    return pieces


def _text_lines(texts: Sequence[str], em: float, width: float) -> int:
    return sum(1 + int(text_width(t, em) // width) for t in texts)


def _block_height(pieces: List[_Piece], start: int) -> float:
    """Height of a panel's opening or a metric's heading with every row up to the next of either."""
    end = next((i for i in range(start + 1, len(pieces)) if pieces[i].kind != "row"), len(pieces))
    return sum(p.height for p in pieces[start:end])


def _breaks_before(pieces: List[_Piece], number: int, used: float, repeated: float, budget: float) -> bool:
    """Whether piece ``number`` starts a new page: a row that does not fit; a panel or a metric that fits a
    fresh page (after what that page repeats) but not what is left of this one."""
    piece = pieces[number]
    if piece.kind == "row":
        return used + piece.height > budget and used > repeated
    needed = _block_height(pieces, number)
    return used + needed > budget and used > repeated and repeated + needed <= budget


def _pages(pieces: List[_Piece], budget: float) -> List[List[str]]:
    """The tabulars' lines cut into pages of at most ``budget`` pt; a page that continues a panel or a metric
    starts with its column names and heading again."""
    pages: List[List[str]] = [[]]
    used, names, heading = 0.0, None, None
    for number, piece in enumerate(pieces):
        keep = ([names] if names and piece.kind != "names" else []) + ([heading] if heading and piece.kind == "row"
                                                                        else [])
        if _breaks_before(pieces, number, used, sum(k.height for k in keep), budget):
            pages[-1].extend(_CLOSE)
            pages.append([line for kept in keep for line in kept.lines])
            used = sum(kept.height for kept in keep)
        if piece.kind == "names":
            if pages[-1]:
                pages[-1].extend(_CLOSE + (r"\par\medskip",))
            names, heading = piece, None
        elif piece.kind == "heading":
            heading = piece
            if pages[-1] and pages[-1][-1] != r"\midrule":
                pages[-1].append(r"\addlinespace")
        pages[-1].extend(piece.lines)
        used += piece.height
    pages[-1].extend(_CLOSE)
    return pages


def _float(table: Table, layout: Layout, body: List[str], first: bool, last: bool) -> str:
    environment = "sidewaystable" if layout.sideways else "table"
    lines = [r"\begin{%s}%s" % (environment, "" if layout.sideways else "[!htbp]"), r"\centering"]
    if first and table.title:
        lines.append(r"\caption{" + _paragraph(table.title) + "}")
    elif not first:
        lines.append(r"{\small Table~\thetable{} (continued)\par}")
    lines.append(r"\smallskip\small")
    if layout.tabcolsep != TABCOLSEP:
        lines.append(r"\setlength{\tabcolsep}{%gpt}" % layout.tabcolsep)
    if first:
        lines.extend(r"\textbf{" + _paragraph(line) + r"}\par\smallskip" for line in table.banner)
    lines += body
    if last and table.notes:
        lines.append(r"\par\smallskip{\footnotesize\raggedright " + r"\par ".join(_paragraph(n) for n in table.notes)
                     + r"\par}")
    lines.append(r"\end{%s}" % environment)
    return "\n".join(lines)


def render_latex(table: Table, ci: Optional[str] = "interval") -> str:
    """One table as booktabs floats (``\\usepackage{booktabs}``; ``rotating`` when turned): the title is the
    caption, the banner lines above the tabular, the notes under it."""
    table, statements = without_stated(table)
    layout = choose_layout(table, ci)
    width = TEXT_HEIGHT if layout.sideways else TEXT_WIDTH
    page = (TEXT_WIDTH if layout.sideways else TEXT_HEIGHT) * FILL_HEIGHT
    budget = page - 40 - 12 * _text_lines(table.banner, 10.0, width) - 9.5 * _text_lines(table.notes, FOOTNOTE_EM,
                                                                                          width)
    pages = _pages(_pieces(table, layout, ci, statements), budget)
    return "\n\n".join(_float(table, layout, body, i == 0, i == len(pages) - 1) for i, body in enumerate(pages))


def render_latex_document(tables: List[Table], ci: Optional[str] = "interval") -> str:
    """Every table, after a comment naming the packages the tables need and each table set sideways (only a
    table whose narrowest upright layout is wider than ``\\textwidth`` is)."""
    turned = [t.title or "untitled" for t in tables if choose_layout(without_stated(t)[0], ci).sideways]
    packages = r"\usepackage{booktabs}" + (r" and \usepackage{rotating}" if turned else "")
    header = [f"% StaICC tables for a 10 pt article; they need {packages}"]
    header += [f"% set sideways (sidewaystable), as no upright layout fits the text width: "
               f"{latex_escape(' '.join(title.split()))}" for title in turned]  # a title is the user's text
    return "\n\n".join(["\n".join(header)] + [render_latex(t, ci) for t in tables])
