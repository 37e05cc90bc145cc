"""Bundled data files: located, read, verified and decoded once per process.

The data folder holds ``manifest.json`` (SHA-256, row count and split sizes of every data
file), ``datasets.json`` (the per-dataset constants) and one gzip JSON Lines file per
standard dataset.  The two index files are checked against hashes pinned in
:mod:`StaICC.datasets.pins`, each data file against its manifest hash, then every file's
structure is checked while it is decoded.  Every failure raises :class:`DataFileError`
naming the file's path and what is wrong: a standard run never uses data it has not
verified, and never fails later with an error that names no file.

``json``, ``hashlib``, ``gzip`` and ``importlib.resources`` are imported on first use, so
importing StaICC reads and imports nothing of this.
"""
import _thread  # the C lock of threading.RLock, without importing threading
from array import array
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import pins
from ..errors import InvalidValueError, StaICCError

Row = Tuple[Sequence[str], int]

_DATA_PACKAGE = "StaICC.data"
#: a folder to read the data files from instead of the installed ``StaICC/data`` (tests use a copy)
_data_dir: Optional[str] = None
_lock = _thread.RLock()
_json_cache: Dict[str, Any] = {}
#: ``clear`` of the caches other modules build from these files (``tables`` adds its own on import), emptied
#: with this module's by :func:`_reset_caches`
_CACHES_BUILT_ON_THESE_FILES: List[Callable[[], None]] = []

MANIFEST_FILE = "manifest.json"
CONSTANTS_FILE = "datasets.json"
_HEX = frozenset("0123456789abcdef")
_CONSTANT_KEYS = ("name", "loader", "label_space", "label_mapping", "ground_truth_label_space",
                  "reduced_label_space", "instruction", "input_text_prefixes", "input_text_affixes",
                  "label_prefix", "label_affix", "query_prefix", "alternate_template", "split_sizes",
                  "hf_source", "text_field", "label_field")
_STRING_KEYS = ("name", "loader", "instruction", "label_prefix", "label_affix", "query_prefix")


class DataFileError(StaICCError, RuntimeError):
    """A bundled data file is missing, corrupted or malformed; ``path`` names it."""

    def __init__(self, message: str, path: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = path


def _package_data_dir() -> Optional[str]:
    """``StaICC/data`` as a folder, or None when the package is not on a file system (a zip)."""
    import os
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    return folder if os.path.isdir(folder) else None


def data_path(file_name: str) -> str:
    """Where the bundled file ``file_name`` is read from (for messages and tools)."""
    import os
    folder = _data_dir if _data_dir is not None else _package_data_dir()
    if folder is not None:
        return os.path.join(folder, file_name)
    from importlib import resources  # a zipped package: ~50 ms to import, so only here
    return str(resources.files(_DATA_PACKAGE).joinpath(file_name))


def _fail(file_name: str, problem: str) -> DataFileError:
    path = data_path(file_name)
    return DataFileError(f"bundled data file {file_name!r} {problem} (path: {path}; reinstall StaICC, "
                         "or regenerate the data with tools/freeze_data.py)", path)


def _read_data_file(file_name: str) -> bytes:
    """The raw bytes of one bundled file."""
    try:
        if _data_dir is not None or _package_data_dir() is not None:
            with open(data_path(file_name), "rb") as fh:
                return fh.read()
        from importlib import resources
        return resources.files(_DATA_PACKAGE).joinpath(file_name).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise _fail(file_name, "is missing from the StaICC package") from None
    except OSError as exc:
        raise _fail(file_name, f"cannot be read ({exc.strerror or exc})") from None


def _sha256(payload: bytes) -> str:
    import hashlib
    return hashlib.sha256(payload).hexdigest()


def _verified_bytes(file_name: str, expected_sha256: str, pinned_where: str) -> bytes:
    payload = _read_data_file(file_name)
    digest = _sha256(payload)
    if digest != expected_sha256:
        raise _fail(file_name, f"is corrupted: SHA-256 {digest} instead of {expected_sha256} "
                               f"pinned in {pinned_where}")
    return payload


def _load_pinned_json(file_name: str, pin_name: str) -> Any:
    """One of the two index files, hash-checked against its pin, parsed; cached."""
    with _lock:
        if file_name not in _json_cache:
            payload = _verified_bytes(file_name, getattr(pins, pin_name), f"StaICC.datasets.pins.{pin_name}")
            import json
            try:
                _json_cache[file_name] = json.loads(payload.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise _fail(file_name, f"is not UTF-8 ({exc.reason} at byte {exc.start})") from None
            except ValueError as exc:  # json.JSONDecodeError
                raise _fail(file_name, f"is not valid JSON ({exc})") from None
            try:
                (_check_manifest if file_name == MANIFEST_FILE else _check_constants)(_json_cache[file_name])
            except BaseException:
                del _json_cache[file_name]
                raise
        return _json_cache[file_name]


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _check_manifest(data: Any) -> None:
    """Shape of ``manifest.json``: one entry per dataset naming a distinct, plainly named file."""
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not files:
        raise _fail(MANIFEST_FILE, "has no 'files' table")
    seen: Dict[str, str] = {}
    for name, info in files.items():
        what = f"entry {name!r}"
        if not isinstance(info, dict):
            raise _fail(MANIFEST_FILE, f"{what} is not an object")
        file_name = info.get("file")
        if not isinstance(file_name, str) or not file_name.endswith(".jsonl.gz") or "/" in file_name \
                or "\\" in file_name or file_name.startswith("."):
            raise _fail(MANIFEST_FILE, f"{what}: 'file' must be a plain *.jsonl.gz file name, got {file_name!r}")
        if file_name in seen:
            raise _fail(MANIFEST_FILE, f"{what} names the file {file_name!r} of entry {seen[file_name]!r}")
        seen[file_name] = name
        if not _is_sha256(info.get("sha256")):
            raise _fail(MANIFEST_FILE, f"{what}: 'sha256' must be 64 lowercase hex digits")
        sizes = info.get("split_sizes")
        if not (_is_count(info.get("rows")) and _is_count(info.get("table_rows"))
                and isinstance(sizes, list) and len(sizes) == 3 and all(_is_count(s) for s in sizes)
                and sum(sizes) == info["rows"] <= info["table_rows"]):
            raise _fail(MANIFEST_FILE, f"{what}: 'rows', 'table_rows' and 'split_sizes' must be counts with "
                                       "sum(split_sizes) == rows <= table_rows")


def _check_constants(data: Any) -> None:
    """Shape of ``datasets.json``: the fields the loaders read, one entry per manifest dataset."""
    entries = data.get("datasets") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise _fail(CONSTANTS_FILE, "has no 'datasets' list")
    files = manifest()["files"]
    for position, entry in enumerate(entries):
        what = f"datasets[{position}]"
        if not isinstance(entry, dict):
            raise _fail(CONSTANTS_FILE, f"{what} is not an object")
        missing = [key for key in _CONSTANT_KEYS if key not in entry]
        if missing:
            raise _fail(CONSTANTS_FILE, f"{what} lacks the fields {missing}")
        for key in _STRING_KEYS:
            if not isinstance(entry[key], str):
                raise _fail(CONSTANTS_FILE, f"{what}: {key!r} must be a string")
        name = entry["name"]
        if name not in files:
            raise _fail(CONSTANTS_FILE, f"{what} names the dataset {name!r}, which {MANIFEST_FILE} does not list")
        labels = entry["label_space"]
        if not isinstance(labels, list) or not labels or not all(isinstance(w, str) for w in labels):
            raise _fail(CONSTANTS_FILE, f"{what} ({name}): 'label_space' must be a list of strings")
        mapping = entry["label_mapping"]
        if not isinstance(mapping, dict) or not all(
                k.lstrip("-").isdigit() and type(v) is int and 0 <= v < len(labels) for k, v in mapping.items()):
            raise _fail(CONSTANTS_FILE, f"{what} ({name}): 'label_mapping' must map raw label ids to positions "
                                        f"in the label space (0..{len(labels) - 1})")
        sizes = entry["split_sizes"]
        parts = ("calibration", "demonstration", "test")
        if not isinstance(sizes, dict) or [sizes.get(p) for p in parts] != files[name]["split_sizes"]:
            raise _fail(CONSTANTS_FILE, f"{what} ({name}): 'split_sizes' differ from {MANIFEST_FILE}'s "
                                        f"{files[name]['split_sizes']}")


def manifest() -> Dict[str, Any]:
    """``manifest.json``, verified (do not modify the returned object: it is the process's copy)."""
    return _load_pinned_json(MANIFEST_FILE, "MANIFEST_SHA256")


def manifest_sha256() -> str:
    """SHA-256 of the bundled ``manifest.json`` (verified): identifies the data of a run."""
    manifest()
    return pins.MANIFEST_SHA256


def _all_constants() -> List[Dict[str, Any]]:
    return _load_pinned_json(CONSTANTS_FILE, "CONSTANTS_SHA256")["datasets"]


def load_drawn_rows(name: str) -> Tuple[List[Row], "array"]:
    """Rows of one standard dataset's bundled file, in draw order, and their table indexes.

    The file must match its manifest hash and row count; every line must be
    ``[table_index, [input, ...], raw_label]`` with a raw label of the dataset's label mapping.
    """
    info = manifest()["files"][name]
    file_name = info["file"]
    payload = _verified_bytes(file_name, info["sha256"], MANIFEST_FILE)
    labels = _raw_labels(name)
    import gzip
    import io
    import json
    import zlib
    rows: List[Row] = []
    table_indexes = array("l")
    number = 0
    try:
        # newline="\n": texts contain U+2028 and friends, which are not row ends.
        with io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(payload)), encoding="utf-8", newline="\n") as lines:
            for number, line in enumerate(lines, start=1):  # noqa: B007  (`number` names the failing row in the error below)
                index, inputs, label = json.loads(line)
                if type(index) is not int or type(inputs) is not list or type(label) is not int \
                        or label not in labels or not all(type(text) is str for text in inputs):
                    raise InvalidValueError("expected [table_index, [input, ...], raw_label] with a raw label of "
                                            f"{sorted(labels)}")
                table_indexes.append(index)
                rows.append((tuple(inputs), label))
    except (OSError, EOFError, zlib.error) as exc:
        raise _fail(file_name, f"is not a valid gzip file ({exc})") from None
    except UnicodeDecodeError as exc:
        raise _fail(file_name, f"is not UTF-8 near line {number + 1} ({exc.reason})") from None
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError; unpacking raises both
        raise _fail(file_name, f"line {number}: {exc}") from None
    if len(rows) != info["rows"]:
        raise _fail(file_name, f"has {len(rows)} rows, expected {info['rows']}")
    return rows, table_indexes


def _raw_labels(name: str) -> frozenset:
    for entry in _all_constants():
        if entry["name"] == name:
            return frozenset(int(key) for key in entry["label_mapping"])
    raise _fail(CONSTANTS_FILE, f"has no entry for the dataset {name!r}")


def _reset_caches() -> None:
    """Forget everything read (tests that point ``_data_dir`` elsewhere call this)."""
    with _lock:
        _json_cache.clear()
        for clear in _CACHES_BUILT_ON_THESE_FILES:
            clear()


def standard_dataset_aliases() -> List[str]:
    """Every name that designates a standard dataset: its name and its loader's name.

    Custom datasets may not take one of these, so that their results cannot pass for the
    standard's.
    """
    return [entry[key] for entry in _all_constants() for key in ("name", "loader")]
