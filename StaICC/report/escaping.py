"""Escaping for every text format a table is written in: what a table prints cannot inject.

A run directory, a dataset or a model name can hold any text.  LaTeX gets its specials
escaped; Markdown its syntax and HTML; CSV cells that a spreadsheet would read as a formula
get a leading quote; the terminal loses control and bidirectional characters.
"""
from typing import Any


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                   # the few non-ASCII signs the tables print themselves
                   "†": r"$\dagger$", "±": r"$\pm$", "κ": r"$\kappa$", "↑": r"$\uparrow$", "↓": r"$\downarrow$",
                   "‡": r"$\ddagger$", "−": r"$-$", "×": r"$\times$"}


def latex_escape(text: str) -> str:
    """``text`` as literal LaTeX: specials escaped, line breaks and control characters as spaces
    (a run directory named ``\\input{...}`` must print, not run)."""
    return "".join(_LATEX_SPECIALS.get(ch, " " if _is_control(ch) else ch) for ch in str(text))


# Unicode controls a terminal or an editor acts on: C0 and C1 controls, DEL, and the
# bidirectional overrides and isolates that reorder what is shown
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code < 0xA0 or ch in _BIDI or code in (0x2028, 0x2029)


def terminal_escape(text: Any) -> str:
    """``text`` with every control character written as a visible escape (``\\x1b``): a value
    read from a file must not move the cursor, recolour or retitle the user's terminal."""
    text = str(text)
    if not any(_is_control(ch) for ch in text):
        return text
    return "".join(ascii(ch)[1:-1] if _is_control(ch) else ch for ch in text)


_MARKDOWN_SPECIALS = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
                      "<": "&lt;", ">": "&gt;", "&": "&amp;", "#": "\\#", "!": "\\!"}


def markdown_escape(text: Any) -> str:
    """``text`` as literal Markdown table content: no HTML (``<script>``), no links, no
    emphasis, no cell breaks; line breaks become spaces."""
    return "".join(_MARKDOWN_SPECIALS.get(ch, " " if _is_control(ch) else ch) for ch in str(text))


#: characters that make a spreadsheet read a cell as a formula (or as a command in old DDE)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_text(text: Any) -> str:
    """A text cell for CSV: one that a spreadsheet would read as a formula gets a leading
    apostrophe (``'=HYPERLINK(...)``); numbers are written by the caller, unprefixed."""
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def no_escape(text: str) -> str:
    return text


#: the escaping of text pieces in each table format
ESCAPES = {"latex": latex_escape, "md": markdown_escape, "table": terminal_escape}
