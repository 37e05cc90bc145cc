"""One JSON Lines record as text: the one rule every JSONL file the package writes follows.

``json.dumps(..., ensure_ascii=False)`` keeps U+0085 (next line), U+2028 (line separator) and U+2029
(paragraph separator) raw: legal JSON, but Python's ``str.splitlines()`` (and readers built on it, such as
Every Eval Ever's validator) break a line there, so one record would read as two broken lines. They are
written as JSON escapes (``\\u0085``, ``\\u2028``, ``\\u2029``), which every JSON reader decodes back to the
same character, so a file has exactly one record per line under any line-splitting rule.
"""
import json
from typing import Any

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
