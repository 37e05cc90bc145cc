"""Reading an Every Eval Ever export of a StaICC run back: the same results, metadata, provenance and records.

``staicc export RUN --format eee`` writes every number of the run at its place
(``score_details.details.path``), each sub-benchmark's metadata and the provenance whole,
and each record's fields in its instance's ``metadata``; :func:`read_export` rebuilds the
``results.json`` document and the records from them, so that
:func:`StaICC.report.runs.load_run` (hence ``staicc compare`` and ``staicc report``) loads an
export as the run it came from.  An EEE file another tool wrote has neither StaICC's
records nor its sub-benchmarks' structure and is refused with that reason.
"""
import glob
import json
import os
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import InvalidValueError, MissingFileError, RunFormatError, error_name
from .eee_export import EXPORT_FORMAT
from .eee_instances import TEXT_FIELDS
from .exchange import place
from .jsonl import LineTooLong, bounded_lines

#: the largest aggregate file read (a full suite's is well under 1 MB) and the longest instance line
MAX_AGGREGATE_BYTES = 64 << 20
MAX_LINE_BYTES = 4 << 20
#: the deepest place of a value in a result dict (a sub-benchmark's results nest 5 levels)
MAX_PATH_DEPTH = 16
_UUID_NAME = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\.json")


def find_export(path: str) -> Optional[str]:
    """The aggregate file of the StaICC export at ``path`` (a file, or a folder holding one); None when
    ``path`` is not an export (a run directory, a results.json, nothing)."""
    if os.path.isfile(path):
        return path if os.path.basename(path) != "results.json" and path.endswith(".json") and _is_export(path) \
            else None
    if not os.path.isdir(path) or os.path.isfile(os.path.join(path, "results.json")):
        return None
    found = [p for p in _uuid_files(path) if _is_export(p)]
    if len(found) > 1:
        raise RunFormatError(f"{path} holds {len(found)} StaICC exports ({', '.join(found[:4])}); give the file "
                             "of the one to read")
    return found[0] if found else None


def _uuid_files(root: str) -> List[str]:
    """Aggregate-file candidates where an export puts them: ``root`` as the folder given to ``staicc export``
    (``root/data/<collection>/<developer>/<model>/<uuid>.json``) or as the model's folder (``root/<uuid>.json``);
    nothing deeper is searched."""
    found = glob.glob(os.path.join(glob.escape(root), "data", "*", "*", "*", "*.json"))
    found += glob.glob(os.path.join(glob.escape(root), "*.json"))
    return sorted(p for p in found if _UUID_NAME.fullmatch(os.path.basename(p)))


def _is_export(path: str) -> bool:
    """Whether ``path`` is an aggregate written by ``staicc export`` (an EEE file of another tool is refused)."""
    document = _read_json(path)
    if not isinstance(document, dict) or "evaluation_results" not in document:
        return False
    library = document.get("eval_library") if isinstance(document.get("eval_library"), dict) else {}
    details = library.get("additional_details") if isinstance(library.get("additional_details"), dict) else {}
    if library.get("name") == "StaICC" and details.get("format") == EXPORT_FORMAT:
        return True
    raise RunFormatError(f"{path} is an Every Eval Ever file written by {library.get('name', 'another tool')!r}, not "
                         "by `staicc export`: compare and report read StaICC runs and their exports, which keep "
                         "StaICC's per-query records and sub-benchmarks")


def _read_json(path: str) -> Any:
    if os.path.getsize(path) > MAX_AGGREGATE_BYTES:
        raise RunFormatError(f"{path}: is {os.path.getsize(path)} bytes, over the {MAX_AGGREGATE_BYTES}-byte limit "
                             "of an exported aggregate file")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (ValueError, RecursionError) as exc:
        raise RunFormatError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None


def read_export(path: str, *, records: bool = True, max_samples_bytes: Optional[int] = None
                ) -> Optional[Tuple[Dict[str, Any], str, Optional[str], Iterator[Tuple[str, Dict[str, Any]]]]]:
    """(``results.json`` document, aggregate file, instance file or None, (where, record) pairs) of the
    export at ``path``; None when ``path`` is not an export."""
    aggregate = find_export(path)
    if aggregate is None:
        return None
    document = _read_json(aggregate)
    details = document["eval_library"]["additional_details"]
    try:
        rebuilt = _document(document, details)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        raise RunFormatError(f"{aggregate}: not a complete StaICC export ({error_name(exc)}: {exc})") from None
    samples = os.path.splitext(aggregate)[0] + "_samples.jsonl"
    if not os.path.isfile(samples):
        if document.get("detailed_evaluation_results"):
            raise MissingFileError(f"{aggregate} names instance records, but {samples} does not exist")
        samples = None
    rebuilt["samples"] = os.path.basename(samples) if samples else None
    lines = _records(samples, max_samples_bytes) if records and samples else iter(())
    return rebuilt, aggregate, samples, lines


def _document(document: Dict[str, Any], details: Dict[str, str]) -> Dict[str, Any]:
    """The ``results.json`` document the export was written from."""
    parts = json.loads(details["sub_benchmarks"])
    results: Dict[str, Dict[str, Any]] = {part: {} for part, _, _ in parts}
    placed: List[Tuple[int, str, list, Any]] = []
    for entry in document["evaluation_results"]:
        item = entry["score_details"]["details"]
        placed.append((int(item["position"]), item["sub_benchmark"], json.loads(item["path"]),
                       entry["score_details"]["score"]))
    for part, values in json.loads(details["unscored_values"]).items():
        placed.extend((position, part, path, value) for position, path, value in values)
    for _position, part, path, value in sorted(placed, key=lambda p: p[0]):
        if part not in results:
            raise InvalidValueError(f"a value of sub-benchmark {part!r}, which the export does not list")
        place(results[part], _checked_path(path, len(placed)), value)
    benchmarks: Dict[str, Any] = {}
    for part, compound, key in parts:
        metadata = _table(json.loads(details[f"metadata.{part}"]), f"metadata.{part}")
        if compound is None:
            benchmarks[part] = {"results": results[part], "metadata": metadata}
        else:
            entry = benchmarks.setdefault(compound, {"results": {}, "metadata": {}})
            entry["results"][key], entry["metadata"][key] = results[part], metadata
    return {"format": "staicc-results/1", "provenance": _table(json.loads(details["provenance"]), "provenance"),
            "benchmarks": benchmarks}


def _table(value: Any, name: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidValueError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def _checked_path(path: Any, values: int) -> tuple:
    """A value's place as the export wrote it: keys and list positions, each position below the number of
    values the file holds (a list of n values has n leaves), so that a forged position of 10**12 is refused
    before anything is allocated for it."""
    if not isinstance(path, list) or not path or len(path) > MAX_PATH_DEPTH:
        raise InvalidValueError(f"a value's path must be a list of 1 to {MAX_PATH_DEPTH} keys, got {str(path)[:80]}")
    for step in path:
        if type(step) is int:
            if not 0 <= step < values:
                raise InvalidValueError(f"a value's list position {str(step)[:40]} is outside the {values} values the "
                                        "file holds")
        elif not isinstance(step, str):
            raise InvalidValueError(f"a value's path holds {str(step)[:40]!r}, neither a key nor a list position")
    return tuple(path)


def _records(path: str, limit: Optional[int]) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(where, StaICC record) of every instance line, in file order."""
    size = os.path.getsize(path)
    if limit is not None and size > limit:
        raise RunFormatError(f"{path}: is {size} bytes, over the {limit}-byte limit for a records file; raise it "
                             "with STAICC_MAX_SAMPLES_BYTES if the file is genuine")
    longest = max(MAX_LINE_BYTES, size)  # a line is bounded by its file, itself bounded: what StaICC writes reads back
    with open(path, "rb") as fh:
        for number, line, error in bounded_lines(fh, longest, skip_long=False):
            where = f"{path}, line {number}"
            if isinstance(error, LineTooLong):
                raise RunFormatError(f"{where}: is longer than {longest} bytes")
            if error is not None:
                raise _not_a_record(where, error)
            if line.strip(_BLANK):
                yield where, record_of(line, where)


#: what a blank line holds (ASCII whitespace only: any other character makes a line to be read)
_BLANK = " \t\n\r\x0b\x0c"


def _not_a_record(where: str, exc: BaseException) -> RunFormatError:
    return RunFormatError(f"{where}: not an instance record written by `staicc export` "
                          f"({error_name(exc)}: {str(exc)[:200]})")


def record_of(line: str, where: str) -> Dict[str, Any]:
    """The StaICC record an instance line was written from."""
    try:
        instance = json.loads(line)
        metadata = instance["metadata"]
        record = {name: text if name in TEXT_FIELDS else json.loads(text) for name, text in metadata.items()
                  if name not in ("generated", "prompt_logged", "prompt")}
        record["prompt_sha256"] = instance["sample_hash"]
        if json.loads(metadata.get("generated", "false")):
            record["text"] = instance["output"]["raw"][0]
        else:
            record["text"] = None
        if "prompt" in metadata:
            record["prompt"] = json.loads(metadata["prompt"])
        elif json.loads(metadata.get("prompt_logged", "false")):
            record["prompt"] = instance["input"]["raw"]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        raise _not_a_record(where, exc) from None
    return record
