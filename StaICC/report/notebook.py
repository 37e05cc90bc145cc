"""How results and comparisons look in a Jupyter notebook: the one door from core to presentation.

``ResultDict`` and ``Comparison`` implement Jupyter's display protocol (``_repr_markdown_``,
``_repr_html_``): the notebook calls those methods on the object, and each asks the registry of
renderers (:data:`StaICC.results.display.RENDERERS`), where this module's functions are registered
lazily by name.  The core imports no presentation code.
"""
from typing import Any

from .html import _html_table
from .tables import _Label, comparison_markdown as _comparison_markdown, comparison_tables, render, result_tables


def result_markdown(result: Any) -> str:
    """A result as its Markdown tables, with the non-standard and unparsed notices above them."""
    return render(result_tables(result), "md")


def result_html(result: Any) -> str:
    return "\n".join(_html_table(t) for t in result_tables(result))


def comparison_markdown(comparison: Any) -> str:
    return _comparison_markdown(comparison)


def comparison_html(comparison: Any) -> str:
    tables = comparison_tables([_Label(comparison.a), _Label(comparison.b)], [comparison])
    return "\n".join(_html_table(t) for t in tables)
