"""Reading run directories: ``results.json`` and its per-query records (``samples.jsonl``, or the compact
``samples.columns.json`` written beside it), into a :class:`~StaICC.results.run.Run`.

The results and metadata of each sub-benchmark (a compound one unfolded into its parts, named
like the records' ``benchmark`` field) and the records grouped by (benchmark, dataset).  Every
malformed input is refused with the file, the line and the field that is wrong.
"""
import json
import os
from typing import Any, Dict, Optional, Tuple

from ..errors import InvalidValueError, MissingFileError, RunFormatError
from ..validation import is_real
from .jsonl import LineTooLong, bounded_lines
from .rundir import RESULTS_FILE, RESULTS_FORMAT
from .parts import Part

#: the largest records file read (bytes; records are held in memory, about 5x their file size; a full
#: standard suite writes a few tens of MB):
#: ``Run.load(..., max_samples_bytes=...)`` or the environment variable STAICC_MAX_SAMPLES_BYTES
MAX_SAMPLES_BYTES = 256 << 20
#: the largest results.json and the longest records line read (a record is a few hundred bytes)
MAX_RESULTS_BYTES = 256 << 20
MAX_LINE_BYTES = 1 << 20

#: record field -> accepted types (bool is excluded from ints separately)
_REQUIRED_FIELDS: Dict[str, tuple] = {
    "benchmark": (str,), "dataset": (str,), "query_index": (int,), "pass": (int,), "test_index": (int,),
    "repeat": (int,), "label": (int,), "prediction": (list,), "prompt_sha256": (str,),
}


def _results_path(path: str) -> str:
    if os.path.isdir(path):
        candidate = os.path.join(path, RESULTS_FILE)
        if not os.path.isfile(candidate):
            raise MissingFileError(f"run directory {path!r} has no {RESULTS_FILE}; give a run directory "
                                    f"written by `staicc run --output-dir` or a results.json file")
        return candidate
    if not os.path.exists(path):
        raise MissingFileError(f"no run directory or results file at {path!r}")
    return path


def _fail(where: str, message: str) -> RunFormatError:
    return RunFormatError(f"{where}: {message}")


def load(cls: type, path: Any, label: Optional[str] = None, *, records: bool = True,
         max_samples_bytes: Optional[int] = None) -> Any:
    """Load a run directory (or its ``results.json``) and, if present, its records (:meth:`Run.load`).

    ``label`` names the run in tables (default: the directory name).  With
    ``records=False`` the records file is not read (tables of recorded numbers only).
    A records file larger than ``max_samples_bytes`` (default :data:`MAX_SAMPLES_BYTES`)
    is refused before it is read.  An Every Eval Ever export of a run (``staicc export``)
    loads as the run it came from.
    """
    from .eee_import import read_export
    exported = read_export(os.fspath(path), records=records, max_samples_bytes=_samples_limit(max_samples_bytes))
    if exported is not None:
        return _exported_run(cls, exported, label)
    results_path = _results_path(os.fspath(path))
    document = _document(results_path)
    parts = _parts(document.get("benchmarks"), results_path)
    directory = os.path.dirname(os.path.abspath(results_path))
    run_label = label or os.path.basename(directory if os.path.basename(results_path) == RESULTS_FILE else results_path)
    samples = document.get("samples")
    samples_path = None
    if records and samples:
        samples_path = _samples_path(samples, results_path, directory)
        columns = document.get("samples_columns")
        columns_path = os.path.join(directory, columns) if isinstance(columns, str) and "/" not in columns \
            and "\\" not in columns else None
        if not (columns_path and os.path.isfile(columns_path) and _read_columns(columns_path, samples_path, parts)):
            _read_records(samples_path, parts, _samples_limit(max_samples_bytes))
    return cls(run_label, os.path.abspath(results_path), document.get("provenance") or {}, parts, samples_path)


def _document(results_path: str) -> Dict[str, Any]:
    """The checked JSON object of a ``results.json``."""
    if not os.path.isfile(results_path):
        raise _fail(results_path, "is not a regular file")
    if os.path.getsize(results_path) > MAX_RESULTS_BYTES:
        raise _fail(results_path, f"is {os.path.getsize(results_path)} bytes, over the {MAX_RESULTS_BYTES}-byte "
                                  "limit of a results file")
    try:
        with open(results_path, encoding="utf-8") as fh:
            document = json.load(fh)
    except json.JSONDecodeError as exc:
        raise _fail(results_path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise _fail(results_path, f"not UTF-8 text ({exc})") from None
    except RecursionError:
        raise _fail(results_path, "nested too deeply to be a results file") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise _fail(results_path, f"holds a value that cannot be read ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise _fail(results_path, f"expected a JSON object, found {type(document).__name__}")
    if document.get("format") != RESULTS_FORMAT:
        raise _fail(results_path, f"format is {document.get('format')!r}; expected {RESULTS_FORMAT!r}")
    return document


def _samples_path(samples: Any, results_path: str, directory: str) -> str:
    if not isinstance(samples, str):
        raise _fail(results_path, f"'samples' must name the records file, found {samples!r}")
    samples_path = samples if os.path.isabs(samples) else os.path.join(directory, samples)
    if not os.path.isfile(samples_path):
        raise MissingFileError(f"{results_path} names the records file {samples!r}, which does not exist "
                                f"at {samples_path}")
    return samples_path


def _exported_run(cls: type, exported: Tuple[Dict[str, Any], str, Optional[str], Any], label: Optional[str]) -> Any:
    """The run an Every Eval Ever export was written from (see :mod:`StaICC.results.eee_import`)."""
    document, aggregate, samples_path, records = exported
    path = os.path.abspath(aggregate)
    parts = _parts(document["benchmarks"], aggregate)
    _add_records(records, parts, samples_path or aggregate)
    return cls(label or os.path.basename(os.path.dirname(path)), path, document["provenance"], parts, samples_path)


def _parts(benchmarks: Any, results_path: str) -> Dict[str, Part]:
    """The sub-benchmarks of a results document (compound ones unfolded into their parts), checked."""
    from ..spec import unfold
    if not isinstance(benchmarks, dict) or not benchmarks:
        raise _fail(results_path, "'benchmarks' must be a non-empty object of sub-benchmark results")
    parts: Dict[str, Part] = {}
    for name, entry in benchmarks.items():
        at = f"benchmarks.{name}"
        if not isinstance(entry, dict) or not isinstance(entry.get("results"), dict):
            raise _fail(results_path, f"{at} must be an object with 'results' and 'metadata'")
        metadata = entry.get("metadata") or {}
        metadata = metadata if isinstance(metadata, dict) else {}
        for unfolded in unfold({name: entry["results"]}):
            where = f"{at}.results.{unfolded.key}" if unfolded.compound else f"{at}.results"
            parts[unfolded.part] = Part(unfolded.part, _checked_results(unfolded.value, results_path, where),
                                        metadata.get(unfolded.key, {}) if unfolded.compound else metadata,
                                        compound=unfolded.compound_key)
    return parts


def _read_columns(path: str, samples_path: str, parts: Dict[str, Part]) -> bool:
    """Records from the compact samples file; False (nothing read) when it was not written with this
    ``samples.jsonl`` or is not in query order."""
    from ..results.columns import read_columns
    read = read_columns(path, samples_path)
    if read is None:
        return False
    for records in read:
        order = records.columns["query_index"]
        if any(a >= b for a, b in zip(order, order[1:])) or records.benchmark not in parts:
            return False
    for records in read:
        parts[records.benchmark].records[records.dataset] = records
    return True


def _checked_results(results: Any, path: str, at: str) -> Dict[str, Any]:
    if not isinstance(results, dict) or not isinstance(results.get("Averaged results"), dict):
        raise _fail(path, f"{at} must hold an 'Averaged results' object")
    divided = results.get("Divided results", {})
    if not isinstance(divided, dict) or not all(isinstance(v, dict) for v in divided.values()):
        raise _fail(path, f"{at}.'Divided results' must map dataset names to metric objects")
    return results


def _samples_limit(given: Optional[int]) -> int:
    if given is not None:
        return given
    text = os.environ.get("STAICC_MAX_SAMPLES_BYTES", "")
    if text.strip().isdigit():
        return int(text)
    if text.strip():
        raise InvalidValueError(f"STAICC_MAX_SAMPLES_BYTES must be a number of bytes, got {text!r}")
    return MAX_SAMPLES_BYTES


def _lines(samples_path: str, limit: int):
    """(number, line) of the records file, streamed; refused whole when over ``limit`` bytes."""
    size = os.path.getsize(samples_path)
    if size > limit:
        raise _fail(samples_path, f"is {size} bytes, over the {limit}-byte limit for a records file; raise it "
                                  "with STAICC_MAX_SAMPLES_BYTES if the file is genuine")
    longest = max(MAX_LINE_BYTES, size)  # a line is bounded by its file: a long answer StaICC wrote reads back
    with open(samples_path, "rb") as fh:
        for number, line, error in bounded_lines(fh, longest, skip_long=False):
            if isinstance(error, LineTooLong):
                raise _fail(f"{samples_path}, line {number}", f"is longer than {longest} bytes; a record "
                                                              "is one JSON object")
            if isinstance(error, UnicodeDecodeError):
                raise _fail(f"{samples_path}, line {number}", f"not UTF-8 text ({error.reason})") from None
            yield number, line


def _read_records(samples_path: str, parts: Dict[str, Part], limit: int = MAX_SAMPLES_BYTES) -> None:
    if not os.path.isfile(samples_path):
        raise _fail(samples_path, "is not a regular file")
    _add_records(_parsed_lines(samples_path, limit), parts, samples_path)


def _parsed_lines(samples_path: str, limit: int):
    """(where, record) of every line of a records file."""
    for number, line in _lines(samples_path, limit):
        if not line.strip():
            continue
        where = f"{samples_path}, line {number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(where, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
        except RecursionError:
            raise _fail(where, "nested too deeply to be a record") from None
        except ValueError as exc:  # e.g. a 5,000-digit label: Python refuses to read the integer
            raise _fail(where, f"holds a value that cannot be read ({str(exc).splitlines()[0]})") from None


def _add_records(records, parts: Dict[str, Part], samples_path: str) -> None:
    """Check each (where, record) and file it under its sub-benchmark and dataset, in query order."""
    for where, record in records:
        _check_record(record, where)
        part = parts.get(record["benchmark"])
        if part is None:
            raise _fail(where, f"benchmark {record['benchmark']!r} is not in results.json "
                               f"(it has {', '.join(parts)})")
        part.records.setdefault(record["dataset"], []).append(record)
    for part in parts.values():
        for dataset, recs in part.records.items():
            recs.sort(key=lambda r: r["query_index"])
            for a, b in zip(recs, recs[1:]):
                if a["query_index"] == b["query_index"]:
                    raise _fail(samples_path, f"{part.name} / {dataset}: query_index {a['query_index']} "
                                              "appears twice")


def _check_record(record: Any, where: str) -> None:
    if not isinstance(record, dict):
        raise _fail(where, f"expected a JSON object, found {type(record).__name__}")
    for name, types in _REQUIRED_FIELDS.items():
        if name not in record:
            raise _fail(where, f"missing field {name!r}")
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, types):
            expected = " or ".join("list" if t is list else t.__name__ for t in types)
            raise _fail(where, f"field {name!r} must be {expected}, found {value!r}")
    row_id = record.get("row_id")
    if row_id is not None and type(row_id) not in (int, str):
        raise _fail(where, f"field 'row_id' must be an int, a string or null, found {row_id!r}")
    for name in ("query_index", "pass", "test_index", "repeat", "label"):
        if record[name] < 0:
            raise _fail(where, f"field {name!r} must be >= 0, found {record[name]}")
    prediction = record["prediction"]
    if isinstance(prediction, list):
        if not prediction:
            raise _fail(where, "field 'prediction' is an empty list")
        for value in prediction:
            if not is_real(value):
                raise _fail(where, f"field 'prediction' must hold numbers, found {value!r}")
