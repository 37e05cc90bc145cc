"""Presentation of results: tables (text, Markdown, LaTeX, CSV), run loading, the HTML report.

``html_report("runs/A", "runs/B")`` makes the HTML report of runs; in Jupyter that one line
shows it inline, and ``.save("report.html")`` writes it.  Importing this package loads only
the standard library; plots need the ``plot`` extra (matplotlib) and load it where they are drawn.
The report's names are imported on first use, so ``staicc run`` (which prints tables) does not
load the statistics the HTML report needs.
"""
from typing import Any

from ..results import ResultDict, _jsonable  # noqa: F401  (re-exported: the original import path)
from .tables import _format_value, flatten, format_table  # noqa: F401

__all__ = ["ResultDict", "format_table", "flatten", "load_run", "html_report", "HTMLReport"]

#: public name -> module of this package that defines it, imported when the name is first read
_LAZY = {"html_report": "page", "HTMLReport": "html", "load_run": "runs"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module
    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
