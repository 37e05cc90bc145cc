"""How a metric is named in a table: its result key where code reads it, its display name where people read it.

The terminal table and CSV print the result key (``averaged_truelabel_likelihood``: what a
script indexes in ``results.json``); Markdown, LaTeX and HTML print the metric registry's
display name (``True-label likelihood``).  A :class:`Name` carries both, so one table
renders either way and compares equal to its key.
"""
from typing import Any, Optional


class Name(str):
    """A column or row name: the text itself (the result key) and ``human``, its display name."""

    human: str

    def __new__(cls, text: str, human: Optional[str] = None) -> "Name":
        name = super().__new__(cls, text)
        name.human = human or str(text)
        return name


def display(text: Any) -> str:
    """The display name of a :class:`Name`; any other text as it is."""
    return getattr(text, "human", text) if isinstance(text, str) else str(text)


def metric_display_name(benchmark: str, metric: str) -> str:
    """The registry's display name of a result key (``macro_F1`` -> ``Macro-F1``); the key when unknown."""
    from ..metrics.registry import get_metric
    for scope in (benchmark or None, None):
        try:
            return get_metric(metric, scope).display_name
        except (KeyError, ValueError):
            continue
    return metric


def metric_label(benchmark: str, metric: str) -> Name:
    """Column name of a metric: GLER's numbers are regression slopes, and say so."""
    from ..spec import SPECS
    spec = SPECS.get(benchmark)
    slope = spec is not None and spec.has_slopes
    human = metric_display_name(benchmark, metric)
    return Name(f"{metric} slope" if slope else metric, f"{human} slope" if slope else human)
