"""One file per split part: a test file, a training file, optionally calibration and demonstration files.

Many datasets ship as ``train.csv`` and ``test.csv``; :func:`from_files` reads them as one
dataset whose split is fixed by the files: every row of the test file is a test row, and
so on (:mod:`.split_parts` for what ``train`` rows become).  The files are read by the
CSV and JSON Lines readers (each file's ending says which), with the same columns and
label words, and every error names the file and the line.
"""
import os
from typing import Any, Iterator, Mapping, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..datasets import Dataset
from ..datasets.split import ROW_PARTS
from .builder import _build, _columns
from .errors import CustomDatasetError, _Locator
from .readers import _csv_records, _jsonl_records, _read_text

#: the builder's split column for the part a file gives its rows (no data column can be named so)
PART_COLUMN = "\x00part"
#: file endings by reader
CSV_ENDINGS, JSONL_ENDINGS = (".csv", ".tsv"), (".jsonl", ".json")


class FileRow:
    """A row of one of several files: errors name the file and its line."""

    __slots__ = ("path", "line")

    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line

    def __str__(self) -> str:
        return f"{self.line} of {os.path.basename(self.path)}"


class _FilesLocator(_Locator):
    """Names a :class:`FileRow` by its own file and line."""

    def error(self, message: str, row: Any = None, column: Any = None) -> CustomDatasetError:
        if isinstance(row, FileRow):
            return CustomDatasetError(message, path=row.path, row=row.line, column=column)
        return CustomDatasetError(message, row=row, column=column, source=self.source)


def from_files(files: Mapping[str, Union[str, "os.PathLike[str]"]], *, delimiter: str = ",",
               **options: Any) -> Dataset:
    """A dataset from one file per part, ``{"train": "train.csv", "test": "test.csv"}``.

    Keys are parts (``test`` is required; ``calibration``, ``demonstration``, ``train``,
    ``unused``), values CSV (``.csv``, ``.tsv``) or JSON Lines (``.jsonl``, ``.json``)
    files.  Takes the keyword arguments of :func:`~StaICC.custom_datasets.from_records`
    except the split options, which the files replace.
    """
    if not isinstance(files, Mapping) or not files:
        raise InvalidTypeError(f"files must be a dict {{part: path}}, got {files!r}")
    for part in files:
        if part not in ROW_PARTS:
            raise InvalidValueError(f"files: unknown part {part!r}; expected {', '.join(ROW_PARTS)}")
    if "test" not in files:
        raise InvalidValueError("files: give the test file ({'test': PATH, ...}); a fixed split names its test rows")
    for key in ("split_sizes", "split_column", "split_values", "id_column", "test_ids"):
        if options.get(key) is not None:
            raise InvalidValueError(f"{key} and files both set the split; give one")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise InvalidTypeError(f"delimiter must be a single character, got {delimiter!r}")
    paths = {part: os.fspath(path) for part, path in files.items()}
    seen: dict = {}
    for part, path in paths.items():
        if os.path.abspath(path) in seen:
            raise InvalidValueError(f"files: {path!r} is both the {seen[os.path.abspath(path)]} and the {part} file; a row "
                                    "belongs to one part")
        seen[os.path.abspath(path)] = part
    for part, path in paths.items():
        if not path.lower().endswith(CSV_ENDINGS + JSONL_ENDINGS):
            raise InvalidValueError(f"files[{part!r}]: cannot tell the format of {path!r} from its ending; expected "
                                    f"{', '.join(CSV_ENDINGS + JSONL_ENDINGS)}")
    how = "files (" + ", ".join(f"{part}: {os.path.basename(path)}" for part, path in paths.items()) + ")"
    options.setdefault("source", ", ".join(paths.values()))
    locator = _FilesLocator(None, how, "line")
    return _build(_rows(paths, delimiter, options), locator, split_column=PART_COLUMN, _split_how=how, **options)


def _rows(paths: Mapping[str, str], delimiter: str, options: Mapping[str, Any]) -> Iterator[Tuple[FileRow, Any]]:
    """Every file's records in turn, each tagged with its file's part."""
    needed = _columns(options["input_columns"]) if options.get("input_columns") else []
    if isinstance(options.get("label_column"), str):
        needed.append(options["label_column"])
    for part, path in paths.items():
        path, text = _read_text(path)
        locator = _Locator(path, path, "line")
        if path.lower().endswith(CSV_ENDINGS):
            records = _csv_records(text, delimiter, locator, needed)
        else:
            records = _jsonl_records(path, text, locator)
        for line, record in records:
            yield FileRow(path, line), dict(record, **{PART_COLUMN: part})
