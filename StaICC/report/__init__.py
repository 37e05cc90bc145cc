"""Presentation of results: tables (text, Markdown, LaTeX, CSV), run loading, the HTML report.

Importing this package loads only the standard library; plots need the ``plot`` extra
(matplotlib) and load it where they are drawn.
"""
from ..results import ResultDict, _jsonable  # noqa: F401  (re-exported: the original import path)
from .tables import _format_value, flatten, format_table  # noqa: F401

__all__ = ["ResultDict", "format_table", "flatten"]
