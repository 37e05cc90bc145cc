"""What Jupyter shows for a value of the core: the presentation floor's renderers, found by name.

A result (``ResultDict``) and a comparison (``stats.compare.Comparison``) answer Jupyter's
display protocol (``_repr_markdown_``, ``_repr_html_``) by asking :data:`RENDERERS` for the
renderer of their kind.  The renderers live in :mod:`StaICC.report.notebook`; they are
registered here as lazy ``"module:function"`` entries, so the core imports no presentation
code: the renderer loads when the notebook first shows a value.
"""
from typing import Any, Callable

from ..registry import Registry

#: (kind of value, format) -> the renderer: ``"result/markdown"``, ``"comparison/html"`` ...
RENDERERS: Registry[Callable[[Any], str]] = Registry("notebook renderer")
for _kind in ("result", "comparison"):
    for _format in ("markdown", "html"):
        RENDERERS.register(f"{_kind}/{_format}", f"StaICC.report.notebook:{_kind}_{_format}")


def shown(kind: str, value: Any) -> str:
    """``value`` as the notebook shows it: ``kind`` is ``"result/markdown"``, ``"comparison/html"`` ..."""
    return RENDERERS.get(kind)(value)
