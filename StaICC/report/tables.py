"""Results and their presentation: a dict that carries how it was made, text tables, JSON."""
import math
from typing import Any, Dict, List, Optional


from ..results import ResultDict, _jsonable  # noqa: F401  (re-exported)


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def flatten(result: Dict[str, Any]) -> Dict[str, Any]:
    """Per-dataset results as flat columns, keyed like the averaged results.

    ``{"sensitivity": {"consistency": v}}`` becomes ``consistency``; GLER's
    ``(slope, intercept)`` pairs become their slope; GLER's per-pass dicts are left to JSON.
    """
    flat: Dict[str, Any] = {}
    for key, value in result.items():
        if key == "sensitivity" and isinstance(value, dict):
            for metric, v in value.items():
                flat[metric] = v[0] if isinstance(v, (list, tuple)) else v
        elif not isinstance(value, dict):
            flat[key] = value
    return flat


def format_table(result: Dict[str, Any], title: Optional[str] = None) -> str:
    """A plain-text table: one row per dataset, then the average."""
    divided = result.get("Divided results", {})
    rows: List[List[str]] = []
    columns: List[str] = []
    for name, value in divided.items():
        flat = flatten(value)
        for c in flat:
            if c not in columns:
                columns.append(c)
        rows.append([name] + [_format_value(flat.get(c, "")) for c in columns])
    averaged = result.get("Averaged results", {})
    for c in averaged:
        if c not in columns:
            columns.append(c)
    rows = [r + [""] * (len(columns) + 1 - len(r)) for r in rows]
    rows.append(["Averaged"] + [_format_value(averaged.get(c, "")) for c in columns])
    header = ["dataset"] + columns
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        if r[0] == "Averaged":
            lines.append("  ".join("-" * w for w in widths))
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    return "\n".join(lines)
