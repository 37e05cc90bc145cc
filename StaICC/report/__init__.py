"""Presentation of results: tables (text, Markdown, LaTeX, CSV), run loading, the HTML report.

``html_report("runs/A", "runs/B")`` makes the HTML report of runs; in Jupyter that one line
shows it inline, and ``.save("report.html")`` writes it.  Importing this package loads only
the standard library; plots need the ``plot`` extra (matplotlib) and load it where they are drawn.
"""
from ..results import ResultDict, _jsonable  # noqa: F401  (re-exported: the original import path)
from .page import HTMLReport, html_report
from .runs import load_run
from .tables import _format_value, flatten, format_table  # noqa: F401

__all__ = ["ResultDict", "format_table", "flatten", "load_run", "html_report", "HTMLReport"]
