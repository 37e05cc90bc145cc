"""The compact samples file: the records the statistics read, one column per field, in one JSON document.

``samples.jsonl`` (one readable object per query, with demonstrations and generated
text) stays the export for people and other tools; ``samples.columns.json`` holds what
statistics, comparisons and figures read, column by column per (sub-benchmark,
dataset), so that it parses in a fraction of the time and memory: no key is repeated
per record, predictions are one flat list of numbers.  It records the SHA-256 of the
``samples.jsonl`` it was written with and is used only while that file is unchanged.  Loaded records are produced on
demand by :class:`ColumnRecords`; :class:`~StaICC.stats.items.ItemTable` and the prompt
checks read the columns directly.

Format ``staicc-samples-columns/1``::

    {"format": "staicc-samples-columns/1", "samples_sha256": "<sha256 of samples.jsonl>",
     "parts": [{"benchmark": "Normal", "dataset": "TREC", "count": N, "width": W,
                "columns": {"query_index": [...N ints], "pass": [...], "test_index": [...], "repeat": [...],
                            "label": [...], "predicted": [...], "parsed": [...N booleans],
                            "prompt_sha256": [...N strings], "prediction": [...N*W numbers, null: non-finite],
                            "row_id": [...N ints, strings or nulls]}}]}

``row_id`` (each test item's own row id) is absent from files written before it existed; such a
file still loads, and its records carry no ``row_id``.
"""
import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from ..errors import InvalidValueError, error_name
from ..validation import is_int
from .records import RecordSequence

COLUMNS_FORMAT = "staicc-samples-columns/1"
COLUMNS_FILE = "samples.columns.json"
#: record fields kept in the compact file, besides ``prediction`` (flat) and the part's benchmark and dataset
INT_FIELDS = ("query_index", "pass", "test_index", "repeat", "label", "predicted")
OTHER_FIELDS = ("parsed", "prompt_sha256")
#: columns a file may lack (written before the field existed): the record then has no such field
OPTIONAL_FIELDS = ("row_id",)


class ColumnsWriter:
    """Collects records (as the JSON Lines writer streams them) and writes the compact file."""

    def __init__(self) -> None:
        self.parts: Dict[Tuple[str, str], Dict[str, Any]] = {}

    def add(self, record: Dict[str, Any]) -> Dict[str, Any]:
        key = (record["benchmark"], record["dataset"])
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = {"benchmark": key[0], "dataset": key[1], "count": 0,
                                      "width": len(record["prediction"]),
                                      "columns": {n: [] for n in INT_FIELDS + OTHER_FIELDS + OPTIONAL_FIELDS
                                                  + ("prediction",)}}
        columns = part["columns"]
        for name in INT_FIELDS + OTHER_FIELDS + OPTIONAL_FIELDS:
            columns[name].append(record.get(name))
        if len(record["prediction"]) != part["width"]:
            raise InvalidValueError(f"{key[0]} / {key[1]}: query {record['query_index']} has {len(record['prediction'])} "
                                    f"scores, the others {part['width']}")
        columns["prediction"].extend(v if math.isfinite(v) else None for v in map(float, record["prediction"]))
        part["count"] += 1
        return record

    def write_to(self, fh: Any, samples_sha256: Optional[str] = None) -> None:
        document = {"format": COLUMNS_FORMAT, "samples_sha256": samples_sha256, "parts": list(self.parts.values())}
        json.dump(document, fh, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class ColumnRecords(RecordSequence):
    """The records of one (sub-benchmark, dataset) from columns; a record dict is made when read."""

    def __init__(self, benchmark: str, dataset: str, width: int, columns: Dict[str, List[Any]]) -> None:
        self.benchmark, self.dataset, self.width, self.columns = benchmark, dataset, width, columns

    def __len__(self) -> int:
        return len(self.columns["query_index"])

    def prediction(self, i: int) -> List[float]:
        w = self.width
        return [math.nan if v is None else v for v in self.columns["prediction"][i * w:(i + 1) * w]]

    def record(self, i: int) -> Dict[str, Any]:
        record = {"benchmark": self.benchmark, "dataset": self.dataset}
        for name in INT_FIELDS + OTHER_FIELDS:
            record[name] = self.columns[name][i]
        for name in OPTIONAL_FIELDS:
            if name in self.columns:
                record[name] = self.columns[name][i]
        record["prediction"] = self.prediction(i)
        return record


def _check_row_ids(columns: Dict[str, Any], count: int, where: str) -> None:
    """The optional ``row_id`` column: absent, or one int, string or null per record."""
    from ..errors import RunFormatError
    ids = columns.get("row_id")
    if "row_id" in columns and (not isinstance(ids, list) or len(ids) != count or
                                not all(v is None or type(v) in (int, str) for v in ids)):
        raise RunFormatError(f"{where}: column 'row_id' must be a list of {count} ints, strings or nulls")


def file_sha256(path: str) -> str:
    import hashlib
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_columns(path: str, samples_path: Optional[str] = None) -> Optional[List[ColumnRecords]]:
    """The parts of a compact samples file, checked column by column (lengths, types).

    None when ``samples_path`` (the JSON Lines export, the authority) is not the file the
    compact one was written with: an edited or replaced export is read instead.
    """
    from ..errors import RunFormatError
    if samples_path is not None and os.path.getsize(path) > 2 * os.path.getsize(samples_path) + (1 << 20):
        return None  # larger than the records it would stand for: not written from them; they are read instead
    try:
        with open(path, encoding="utf-8") as fh:
            document = json.load(fh)
    except json.JSONDecodeError as exc:
        raise RunFormatError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, a deep nesting
        raise RunFormatError(f"{path}: holds a value that cannot be read ({error_name(exc)})") from None
    if not isinstance(document, dict) or document.get("format") != COLUMNS_FORMAT:
        raise RunFormatError(f"{path}: expected a document of format {COLUMNS_FORMAT!r}")
    if samples_path is not None and document.get("samples_sha256") != file_sha256(samples_path):
        return None
    out = []
    for number, part in enumerate(document.get("parts") or []):
        where = f"{path}, part {number}"
        if not isinstance(part, dict) or not isinstance(part.get("columns"), dict):
            raise RunFormatError(f"{where}: expected an object with 'columns'")
        count, width, columns = part.get("count"), part.get("width"), part["columns"]
        if not is_int(count) or not is_int(width) or width < 1:
            raise RunFormatError(f"{where}: 'count' and 'width' must be positive integers")
        for name in INT_FIELDS + OTHER_FIELDS:
            values = columns.get(name)
            if not isinstance(values, list) or len(values) != count:
                raise RunFormatError(f"{where}: column {name!r} must be a list of {count} values")
        for name in INT_FIELDS[:5]:
            if not all(type(v) is int and v >= 0 for v in columns[name]):
                raise RunFormatError(f"{where}: column {name!r} must hold non-negative integers")
        if not all(isinstance(v, str) for v in columns["prompt_sha256"]):
            raise RunFormatError(f"{where}: column 'prompt_sha256' must hold strings")
        _check_row_ids(columns, count, where)
        prediction = columns.get("prediction")
        if not isinstance(prediction, list) or len(prediction) != count * width or \
                not all(v is None or (type(v) in (int, float)) for v in prediction):
            raise RunFormatError(f"{where}: column 'prediction' must hold {count} x {width} numbers")
        out.append(ColumnRecords(str(part.get("benchmark")), str(part.get("dataset")), width, columns))
    return out
