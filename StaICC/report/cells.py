"""The table model every format renders: a :class:`Table` of :class:`Cell` values, and how a cell prints.

A cell holds the number, its interval and its significance; each format (terminal, Markdown,
LaTeX, HTML, CSV) prints the same cell with its own escaping and markup, so a number is
formatted in one place (:func:`format_number`) and reads the same everywhere.
"""
import math
import re
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .escaping import ESCAPES, no_escape


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
    """A titled table: column names, rows of cells (str, number, None or :class:`Cell`), notes.

    ``keys`` are the columns that name a row (repeated in every panel when a LaTeX table is
    split); ``units`` are groups of the other columns that stay together in one panel (default:
    each column alone); ``group_column``, when set, is a column whose consecutive equal values
    LaTeX prints once, as a heading row, instead of in every row; ``stated_once`` are columns that
    heading may state instead (when each group's rows hold one value, its averaged row another).
    """

    def __init__(self, title: str, columns: List[str], rows: List[List[Any]], notes: Optional[List[str]] = None,
                 banner: Optional[List[str]] = None, keys: Sequence[int] = (0,),
                 units: Optional[List[List[int]]] = None, group_column: Optional[int] = None,
                 stated_once: Sequence[int] = ()) -> None:
        self.title, self.columns, self.rows, self.notes = title, columns, rows, notes or []
        #: lines every format prints above the table (non-standard settings, unparsed answers)
        self.banner: List[str] = banner or []
        self.keys = list(keys)
        self.group_column, self.stated_once = group_column, list(stated_once)
        skipped = set(self.keys) | ({group_column} if group_column is not None else set())
        self.units = units if units is not None else [[i] for i in range(len(columns)) if i not in skipped]


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


def slope_display(benchmark: str, divided: Any, metadata: Any = None) -> Callable[[str, Any], Any]:
    """``shown(metric, value)``: a slope sub-benchmark's slopes as every table shows them (float noise as 0.0,
    :func:`~StaICC.stats.resolution.shown_slope` over its x-values' span; the recorded numbers are unchanged);
    other values unchanged.  ``divided``: its results by dataset (whose pass keys count the passes); ``metadata``:
    its recorded metadata (the procedure's abscissae)."""
    from ..stats.items import is_slope
    if not is_slope(benchmark) or not divided:
        return lambda _metric, value: value
    from ..spec import abscissae_of, label_noise_x_values
    from ..stats.resolution import shown_slope
    passes = sum(1 for key in next(iter(divided.values())) if str(key).isdigit())
    procedure = (metadata or {}).get("procedure")
    x = label_noise_x_values(passes, abscissae_of(benchmark, procedure)) if passes > 1 else [1]
    span = max(x) - min(x)
    return lambda metric, value: shown_slope(metric, value, span)


def part_slopes(benchmark: str, part: Any) -> Callable[[str, Any], Any]:
    """:func:`slope_display` of a loaded run's part (None: values unchanged)."""
    return slope_display(benchmark, getattr(part, "divided", None), getattr(part, "metadata", None))


def format_p(p: Optional[float]) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


#: a minus sign before a number (not an exponent's, as in 2.2e-16)
_MINUS = re.compile(r"(?<![0-9eE])-(?=[0-9])")


def _number(value: Any, fmt: str) -> str:
    """A number in ``fmt``: LaTeX gets true minus signs; the digits are :func:`format_number`'s."""
    text = ESCAPES.get(fmt, no_escape)(format_number(value))
    return _MINUS.sub("$-$", text) if fmt == "latex" else text


def interval_text(cell: Cell, ci: Optional[str], fmt: str) -> str:
    """The interval as ``ci`` asks: ``[low, high]``; with ``pm``, ``± h`` when it is symmetric at the
    printed digits and ``+up/-down`` when not (never a half-width that hides an asymmetric interval);
    empty when the cell has none."""
    if not ci or cell.kind == "p" or cell.low is None or isinstance(cell.value, list):
        return ""
    bounds = f"[{_number(cell.low, fmt)}, {_number(cell.high, fmt)}]"
    if ci != "pm" or not all(isinstance(v, (int, float)) for v in (cell.value, cell.low, cell.high)):
        return bounds
    up, down = cell.high - cell.value, cell.value - cell.low
    if not (up >= 0 and down >= 0) or not math.isfinite(up + down):
        return bounds  # the estimate outside its own interval: only the bounds say it honestly
    if format_number(up) == format_number(down):
        return (r"$\pm$ " if fmt == "latex" else "± ") + _number(up, fmt)
    if fmt == "latex":
        return f"$^{{+{format_number(up)}}}_{{-{format_number(down)}}}$"
    return f"+{_number(up, fmt)}/-{_number(down, fmt)}"


def cell_pieces(cell: Any, ci: Optional[str], fmt: str) -> Tuple[str, str, str]:
    """(value, interval, marks) of a cell as ``fmt`` prints them: data escaped for the format, then the
    format's own markup (``$^{*}$``, ``*``) added.  Text that is no :class:`Cell` is all value."""
    esc = ESCAPES.get(fmt, no_escape)
    if not isinstance(cell, Cell):
        return (esc(cell) if isinstance(cell, str) else _number(cell, fmt)), "", ""
    if cell.kind == "p":
        text = format_p(cell.value)
        value = "$<$" + esc(text[1:]) if fmt == "latex" and text.startswith("<") else esc(text)
    else:
        value = _number(cell.value, fmt)
    marks = (r"$^{*}$" if fmt == "latex" else "*") if cell.mark else ""
    return value, interval_text(cell, ci, fmt), marks + esc(cell.suffix)


def _cell_text(cell: Any, ci: Optional[str], fmt: str) -> str:
    """A cell as ``fmt`` prints it on one line: value, interval, then the marks."""
    value, interval, marks = cell_pieces(cell, ci, fmt)
    if interval.startswith("$^"):  # +up/-down as super/subscripts sit right on the value
        return value + interval + marks
    return value + (" " + interval if interval else "") + marks
