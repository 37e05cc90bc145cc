"""How a LaTeX table is laid out to fit the page: the estimated width of every column, and the layout chosen.

Widths are estimated from Computer Modern's character widths (measured with pdflatex in a
default ``\\documentclass{article}``); :func:`choose_layout` takes the first layout that fits
(see :mod:`.latex`).  A comparison's ``test`` column is stated once per metric, in the metric's
heading row, when each metric's rows share one test (:func:`without_stated`).
"""
import itertools
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .cells import Table, cell_pieces
from .names import display

#: \textwidth and \textheight (the width of a turned table) of \documentclass{article} at 10 pt, in pt
TEXT_WIDTH = 345.0
TEXT_HEIGHT = 550.0
#: \tabcolsep (pt): the space each side of a column: LaTeX's default, then the narrower one a wide table may take
TABCOLSEP = 6.0
NARROW_TABCOLSEP = 4.0
#: pt per em of \small and \footnotesize in a 10 pt article (measured: 0.925 and 0.85 of \normalsize)
SMALL_EM, FOOTNOTE_EM = 9.25, 8.5
#: share of the width an estimate may fill (estimates are of the glyphs; kerning and rules vary)
FILL = 0.96

_GLYPHS = (("!',.:;[]`il|", 0.278), ("fj", 0.306), (" ", 0.333), ("_", 0.36), ("I", 0.361), ("()t", 0.389),
           ("r", 0.392), ("s", 0.394), ("cez", 0.444), (">?", 0.472), ('"$*/0123456789\\^ago{}~', 0.5),
           ("J", 0.514), ("kqvxy", 0.528), ("Sbdhnpu", 0.556), ("Z", 0.611), ("L", 0.625), ("F", 0.653),
           ("EP", 0.681), ("B", 0.708), ("CTw", 0.722), ("R", 0.736), ("AHNUVXY", 0.75), ("D", 0.764),
           ("&+-<=@KOQ", 0.778), ("G", 0.785), ("#%m", 0.833), ("M", 0.917), ("W", 1.028))
#: width in em of each printable ASCII character of cmr10; a minus sign counts as $-$, the widest reading
_EM: Dict[str, float] = {ch: width for chars, width in _GLYPHS for ch in chars}


def text_width(text: str, em: float = SMALL_EM) -> float:
    """Estimated width in pt of plain ``text`` set in Computer Modern at ``em`` pt per em
    (a character outside ASCII counts as a full em)."""
    return em * sum(_EM.get(ch, 1.0) for ch in text)


@dataclass(frozen=True)
class Layout:
    """How a table is set: its panels (column indexes beside the row names), intervals stacked, turned."""

    panels: Tuple[Tuple[int, ...], ...]
    stacked: bool = False
    sideways: bool = False
    tabcolsep: float = TABCOLSEP


def _plain(cell: Any, ci: Optional[str]) -> Tuple[str, str]:
    """(value and marks, interval) of a cell as plain text, for measuring."""
    if isinstance(cell, str):
        return display(cell), ""
    value, interval, marks = cell_pieces(cell, ci, "table")
    return value + marks, interval


#: a column name wraps onto at most this many lines (a long name set on one line would widen its column)
HEADER_LINES = 3


def header_lines(table: Table, index: int, ci: Optional[str], stacked: bool) -> List[str]:
    """A column's name in lines: one line when it is no wider than the column's cells, else wrapped at
    spaces to the cells' width (at least its longest word, at most :data:`HEADER_LINES` lines). The row
    names (``keys``) never wrap."""
    name = display(table.columns[index])
    body = _cells_width(table, index, ci, stacked)
    words = name.split()
    if index in table.keys or text_width(name) <= body or len(words) < 2:
        return [name]
    width = max(body, max(map(text_width, words)), text_width(name) / HEADER_LINES)
    lines: List[str] = []
    for word in words:
        if lines and text_width(lines[-1] + " " + word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def column_width(table: Table, index: int, ci: Optional[str], stacked: bool) -> float:
    """Estimated width (pt) of one column: its (possibly wrapped) name and every cell, one line or stacked."""
    return max([_cells_width(table, index, ci, stacked)] + [text_width(line) for line in
                                                            header_lines(table, index, ci, stacked)])


def _cells_width(table: Table, index: int, ci: Optional[str], stacked: bool) -> float:
    """Estimated width (pt) of a column's cells, one line or stacked (its name not counted)."""
    widest = 0.0
    for row in table.rows:
        value, interval = _plain(row[index], ci)
        if stacked and interval:
            widest = max(widest, text_width(value), text_width(interval, FOOTNOTE_EM))
        else:
            widest = max(widest, text_width(value + (" " + interval if interval else "")))
    return widest


def panel_width(table: Table, panel: Sequence[int], width: Dict[int, float], sep: float) -> float:
    """Width of one panel's tabular: the row-name columns and the panel's own (``@{}`` at both edges, so
    ``2 * sep`` between columns only)."""
    widths = [width[k] for k in table.keys] + [width[i] for i in panel]
    return sum(widths) + 2 * sep * (len(widths) - 1)


def pack(table: Table, ci: Optional[str], stacked: bool, available: float,
         sep: float = TABCOLSEP) -> Optional[List[Tuple[int, ...]]]:
    """The table's units packed, in order, into as few panels as fit ``available`` pt (each panel is a tabular
    of its own, one under the other); None if one unit alone does not fit."""
    width = {i: column_width(table, i, ci, stacked) for i in range(len(table.columns))}
    panels: List[Tuple[int, ...]] = []
    for unit in table.units:
        if panels and panel_width(table, panels[-1] + tuple(unit), width, sep) <= available:
            panels[-1] = panels[-1] + tuple(unit)
        elif panel_width(table, tuple(unit), width, sep) <= available:
            panels.append(tuple(unit))
        else:
            return None
    return panels or [()]


def _has_intervals(table: Table, ci: Optional[str]) -> bool:
    return any(_plain(cell, ci)[1] for row in table.rows for cell in row)


def choose_layout(table: Table, ci: Optional[str]) -> Layout:
    """The preferred layout that fits (see the module docstring): upright before turned, then the fewest
    panels, then intervals inline before stacked, then the default column spacing before the narrower."""
    stacking = (False, True) if _has_intervals(table, ci) else (False,)
    for sideways in (False, True):
        available = (TEXT_HEIGHT if sideways else TEXT_WIDTH) * FILL
        fitting = []
        for rank, (stacked, sep) in enumerate((s, sep) for s in stacking for sep in (TABCOLSEP, NARROW_TABCOLSEP)):
            panels = pack(table, ci, stacked, available, sep)
            if panels is not None:
                fitting.append((len(panels), rank, Layout(tuple(panels), stacked, sideways, sep)))
        if fitting:
            return min(fitting, key=lambda found: found[:2])[2]
    return Layout(tuple(tuple(unit) for unit in table.units), True, True, NARROW_TABCOLSEP)  # the narrowest


def is_average(table: Table, row: List[Any]) -> bool:
    return any(row[k] == "Averaged" for k in table.keys)


def group_statements(table: Table) -> Optional[Dict[Any, str]]:
    """What each group's heading states of the ``stated_once`` columns (``p: McNemar exact; Averaged: paired
    bootstrap``), or None when a group's rows differ there (the columns are then printed)."""
    if table.group_column is None or not table.stated_once:
        return None
    statements: Dict[Any, str] = {}
    for group, rows in itertools.groupby(table.rows, key=lambda row: row[table.group_column]):
        rows = list(rows)
        values = {display(row[i]) for row in rows if not is_average(table, row) for i in table.stated_once}
        averaged = {display(row[i]) for row in rows if is_average(table, row) for i in table.stated_once}
        if len(values) > 1 or len(averaged) > 1 or group in statements:
            return None
        usual, last = next(iter(values or averaged)), next(iter(averaged), None)
        said = f"{display(table.columns[table.stated_once[0]])}: {usual}"
        if values and last is not None and last != usual:
            said += f"; Averaged: {last}"
        statements[group] = said
    return statements


def without_stated(table: Table) -> Tuple[Table, Dict[Any, str]]:
    """The table LaTeX sets: the ``stated_once`` columns left out when every group's heading can state them."""
    statements = group_statements(table)
    if not statements:
        return table, {}
    units = [[i for i in unit if i not in table.stated_once] for unit in table.units]
    return Table(table.title, table.columns, table.rows, table.notes, table.banner, table.keys,
                 [u for u in units if u], table.group_column), statements
