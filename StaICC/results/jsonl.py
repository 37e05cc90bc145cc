"""One JSON Lines record as text, the one rule every JSONL file the package writes follows; and the one
bounded reader of the lines of such files (:func:`bounded_lines`).

``json.dumps(..., ensure_ascii=False)`` keeps U+0085 (next line), U+2028 (line separator) and U+2029
(paragraph separator) raw: legal JSON, but Python's ``str.splitlines()`` (and readers built on it, such as
Every Eval Ever's validator) break a line there, so one record would read as two broken lines. They are
written as JSON escapes (``\\u0085``, ``\\u2028``, ``\\u2029``), which every JSON reader decodes back to the
same character, so a file has exactly one record per line under any line-splitting rule.
"""
import json
from typing import IO, Any, Iterator, Optional, Tuple

_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def escape_line_breaks(text: str) -> str:
    """``text`` (JSON already) with the three non-ASCII line breaks as JSON escapes; unchanged without them."""
    if not any(c in text for c in _LINE_BREAKS):
        return text
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text


def jsonl_line(value: Any, **dumps_options: Any) -> str:
    """``value`` as one line of a JSONL file, without the newline (``json.dumps`` with ``dumps_options``)."""
    return escape_line_breaks(json.dumps(value, **dumps_options))


#: the rest of a line over the bound is read past in pieces of this many bytes (never held whole)
_SKIP_CHUNK = 1 << 20

#: (line number, its text, None), or (line number, None, what is wrong with it)
NumberedLine = Tuple[int, Optional[str], Optional[ValueError]]


class LineTooLong(ValueError):
    """A line longer than the reader's bound (its text was never read whole)."""


def bounded_lines(handle: IO[bytes], longest: int, *, skip_long: bool) -> Iterator[NumberedLine]:
    """Each line of a binary file, numbered from 1: its UTF-8 text (newline kept), or the error of a line longer
    than ``longest`` bytes before its newline (:class:`LineTooLong`) or not UTF-8 (its ``UnicodeDecodeError``).

    A line is read at most ``longest + 1`` bytes at a time, so what a file holds never costs more memory
    than that.  What comes after a line too long is the caller's policy: with ``skip_long`` the rest of it
    is read past in pieces and the next line follows (one bad line among many answers); without, reading
    ends at it (the caller refuses the file).  The callers word their own messages.
    """
    number = 0
    while True:
        raw = handle.readline(longest + 1)
        if not raw:
            return
        number += 1
        if len(raw) > longest and not raw.endswith(b"\n"):
            yield number, None, LineTooLong(f"line {number} is longer than {longest} bytes")
            if not skip_long:
                return
            _read_past_line(handle)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, None, exc
            continue
        yield number, text, None


def _read_past_line(handle: IO[bytes]) -> None:
    """Read the rest of the current line, a piece at a time, holding none of it."""
    while True:
        rest = handle.readline(_SKIP_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return
