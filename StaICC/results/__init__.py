"""Results: the result dict with its metadata, per-query records, provenance, run directories and their exports."""
import json
from typing import Any, Dict, Optional, Sequence

__all__ = ["ResultDict", "flatten"]


class ResultDict(dict):
    """The original's result dict, plus ``metadata``: benchmark, settings, standard or not.

    It compares equal to a plain dict with the same content, so code written for the
    original keeps working; ``metadata["standard"]`` is False as soon as any setting
    (template, sampler, retriever, split) departed from the standard.
    """

    def __init__(self, *args, metadata: Optional[Dict[str, Any]] = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.metadata: Dict[str, Any] = metadata or {}
        #: per-query records (see :mod:`StaICC.results.records`); empty for results loaded from JSON
        self.records: Sequence[Dict[str, Any]] = ()

    def _repr_markdown_(self) -> str:
        """Jupyter shows a result as its table, with the non-standard and unparsed notices above it."""
        from .display import shown
        return shown("result/markdown", self)

    def _repr_html_(self) -> str:
        from .display import shown
        return shown("result/html", self)

    def to_json(self, indent: int = 1) -> str:
        return json.dumps({"results": _jsonable(dict(self)), "metadata": _jsonable(self.metadata)},
                          indent=indent, ensure_ascii=False, allow_nan=True)


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


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
