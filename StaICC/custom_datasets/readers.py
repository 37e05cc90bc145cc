"""The input forms: records (dicts), JSON Lines files, CSV files, HuggingFace datasets.

Each reader turns its source into (row number, record) pairs with a locator that names
the file or source, and hands them to the shared builder; only the standard library is
used, and ``datasets`` is imported only when :func:`from_hf` is given a dataset name.
"""
import csv
import io
import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError, MissingExtraError, error_name
from ..datasets import Dataset
from .builder import Columns, _build, _columns
from .errors import CustomDatasetError, _Locator
from .labels import LabelWords


def from_records(records: Iterable[Mapping[str, Any]], *, name: str, input_columns: Columns, label_column: str,
                 label_words: LabelWords = None, instruction: str = "",
                 input_text_prefixes: Optional[Sequence[str]] = None,
                 input_text_affixes: Optional[Sequence[str]] = None, label_prefix: str = "Label: ",
                 label_affix: str = "\n", query_prefix: str = "",
                 alternate_template: Optional[Dict[str, list]] = None,
                 split_sizes: Optional[Sequence[int]] = None, source: Optional[str] = None,
                 split_column: Optional[str] = None, split_values: Optional[Mapping[str, str]] = None,
                 id_column: Optional[str] = None, test_ids: Optional[Sequence[Union[str, int]]] = None) -> Dataset:
    """A dataset from an iterable of dicts (errors name the 0-based record index).

    ``split_column`` (values test, calibration, demonstration, train, unused; others mapped by
    ``split_values``) or ``id_column`` with ``test_ids`` fix the split instead of drawing it
    (docs/custom_datasets.md, "Fixed splits").

    The split sizes used are ``dataset.split_sizes`` (calibration, demonstration, test):
    ``split_sizes`` if given, else :func:`default_split_sizes`.  Minimum sizes:

    * building: at least ``MIN_ROWS`` (3) rows, one per part, and a test part of >= 1 row;
    * Normal, Post_bias and GLER compute ECE over 10 confidence bins, which needs at least
      ``MIN_ECE_PREDICTIONS`` (10) predictions: test rows x 2 repeats >= 10, so a test part
      of >= 5 rows (25 rows with the default sizes);
    * the default sampler needs at least k demonstration rows (k = 4 by default).

    Smaller datasets build, so that they can be inspected, but a run refuses them before
    any inference.
    """
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise InvalidTypeError(f"records must be an iterable of dicts, got {type(records).__name__}")
    return _build(enumerate(records), _Locator(None, "records", "record"), name=name, input_columns=input_columns,
                  label_column=label_column, label_words=label_words, instruction=instruction,
                  input_text_prefixes=input_text_prefixes, input_text_affixes=input_text_affixes,
                  label_prefix=label_prefix, label_affix=label_affix, query_prefix=query_prefix,
                  alternate_template=alternate_template, split_sizes=split_sizes, source=source,
                  split_column=split_column, split_values=split_values, id_column=id_column, test_ids=test_ids)


def _read_text(path: Union[str, "os.PathLike[str]"]) -> Tuple[str, str]:
    """(path as str, text) of a UTF-8 file (a BOM is dropped); empty files are refused."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        payload = fh.read()
    try:
        text = payload.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = payload[:exc.start].count(b"\n") + 1
        raise CustomDatasetError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", path=path, row=line) from None
    if not text.strip():
        raise CustomDatasetError("the file is empty", path=path)
    return path, text


def _jsonl_records(_path: str, text: str, locator: _Locator) -> Iterator[Tuple[int, Any]]:
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): texts may hold U+2028
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise locator.error(f"malformed JSON ({exc.msg} at character {exc.colno})", number) from None
        except RecursionError:
            raise locator.error("JSON nested too deeply", number) from None
        except ValueError as exc:  # e.g. an integer of thousands of digits, which Python refuses to read
            raise locator.error(f"a value cannot be read ({str(exc).splitlines()[0]})", number) from None
        if not isinstance(record, dict):
            raise locator.error(f"expected a JSON object, got {type(record).__name__}", number)
        yield number, record


def from_jsonl(path: Union[str, "os.PathLike[str]"], **options: Any) -> Dataset:
    """A dataset from a JSON Lines file: one JSON object per line, UTF-8; blank lines are skipped.

    Takes the keyword arguments of :func:`from_records`; errors name the 1-based line.
    """
    path, text = _read_text(path)
    locator = _Locator(path, path, "line")
    options.setdefault("source", path)
    return _build(_jsonl_records(path, text, locator), locator, **options)


def _csv_records(text: str, delimiter: str, locator: _Locator, columns: List[str]) -> Iterator[Tuple[int, Any]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: Optional[List[str]] = None
    header_line = 0
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise locator.error(f"malformed CSV ({exc})", start) from None
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            continue  # blank line
        if header is None:
            header, header_line = [h.strip() for h in fields], start
            for column in columns:
                if column not in header:
                    raise locator.error(f"missing column: the header has {header}", start, column)
                if header.count(column) > 1:
                    raise locator.error("the header lists this column more than once", start, column)
            continue
        if len(fields) != len(header):
            raise locator.error(f"the row has {len(fields)} fields, the header (line {header_line}) has "
                                f"{len(header)}; check the delimiter and the quoting", start)
        yield start, dict(zip(header, fields))
    if header is None:
        raise locator.error("no header row")


def from_csv(path: Union[str, "os.PathLike[str]"], *, delimiter: str = ",", **options: Any) -> Dataset:
    """A dataset from a CSV file with a header row (UTF-8, read with :mod:`csv`).

    Every value is a string: integer labels such as ``"0"``/``"1"`` are read as label ids
    (see :func:`from_records`).  Takes the keyword arguments of :func:`from_records`;
    errors name the 1-based line where the record starts (the header is line 1).
    """
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise InvalidTypeError(f"delimiter must be a single character, got {delimiter!r}")
    path, text = _read_text(path)
    locator = _Locator(path, path, "line")
    options.setdefault("source", path)
    needed = _columns(options.get("input_columns", [])) if options.get("input_columns") else []
    label_column = options.get("label_column")
    if isinstance(label_column, str):
        needed.append(label_column)
    return _build(_csv_records(text, delimiter, locator, needed), locator, **options)


def _class_label_names(hf_dataset: Any, label_column: str) -> Optional[List[str]]:
    features = getattr(hf_dataset, "features", None)
    try:
        feature = features[label_column] if features is not None else None
    except (KeyError, TypeError, IndexError):
        return None
    names = getattr(feature, "names", None)
    return list(names) if isinstance(names, (list, tuple)) and names else None


def from_hf(hf_dataset: Any, *, split: Optional[str] = None, config: Optional[str] = None,
            **options: Any) -> Dataset:
    """A dataset from a HuggingFace ``datasets`` object (or its name, loaded with ``load_dataset``).

    Accepts a ``datasets.Dataset`` (anything iterable of dicts with ``column_names``), a
    ``DatasetDict`` with ``split=``, or a dataset name (then ``datasets`` is imported and
    ``load_dataset(name, config, split=split)`` is called), or the folder of a dataset
    saved with ``save_to_disk`` (read with ``load_from_disk``: a ``DatasetDict`` folder
    needs ``split=``, a single ``Dataset`` folder is that split).  The generic readers
    (``"csv"``, ``"json"``, ``"parquet"`` ...) are refused: without ``data_files`` they read
    every file of the current folder; use :func:`from_csv` / :func:`from_jsonl`, or load
    the files yourself and pass the ``Dataset``.  When ``label_words`` is not
    given and the label column is a ``ClassLabel``, its ``names`` are the label words.
    Errors name the 0-based row index.
    """
    if isinstance(hf_dataset, str):
        name_loaded = hf_dataset
        hf_dataset, split = _load_named(name_loaded, split, config)
        options.setdefault("source", f"HuggingFace {name_loaded}" + (f"/{config}" if config else "")
                           + (f"[{split}]" if split else ""))
    column_names = getattr(hf_dataset, "column_names", None)
    if isinstance(column_names, Mapping):  # a DatasetDict: one entry per split
        if split is None or split not in column_names:
            raise InvalidValueError(f"from_hf: this DatasetDict has the splits {list(column_names)}; "
                                    f"choose one with split= (got {split!r})")
        hf_dataset = hf_dataset[split]
        column_names = getattr(hf_dataset, "column_names", None)
    quacks = column_names is not None or hasattr(hf_dataset, "features")  # IterableDataset: column_names may be None
    if not quacks or not isinstance(hf_dataset, Iterable):
        raise InvalidTypeError(f"from_hf expects a HuggingFace datasets.Dataset (iterable of dicts with column_names), "
                               f"got {type(hf_dataset).__name__}")
    label_column = options.get("label_column")
    if options.get("label_words") is None and isinstance(label_column, str):
        names = _class_label_names(hf_dataset, label_column)
        if names is not None:
            options["label_words"] = names
    if "source" not in options:
        info = getattr(hf_dataset, "info", None)
        builder = getattr(info, "dataset_name", None) or getattr(info, "builder_name", None)
        options["source"] = f"HuggingFace {builder}" if builder else "HuggingFace dataset"
    locator = _Locator(None, str(options["source"]), "row")
    if isinstance(column_names, (list, tuple)):
        wanted = _columns(options.get("input_columns", [])) if options.get("input_columns") else []
        if isinstance(label_column, str):
            wanted.append(label_column)
        for column in wanted:
            if column not in column_names:
                raise locator.error(f"missing column: the dataset has {list(column_names)}", column=column)
    return _build(enumerate(hf_dataset), locator, **options)


#: the datasets package's generic readers: given as a name without data_files, they read the current folder
_GENERIC_READERS = frozenset({"csv", "json", "jsonl", "parquet", "text", "arrow", "pandas", "sql", "xml", "hdf5",
                              "webdataset", "generator", "cache", "imagefolder", "audiofolder", "videofolder",
                              "pdffolder", "niftifolder"})


def _load_named(name: str, split: Optional[str], config: Optional[str]) -> Tuple[Any, Optional[str]]:
    """(the dataset ``name`` names, its split): a hub or script name, or a ``save_to_disk`` folder."""
    if name.strip().lower() in _GENERIC_READERS and not os.path.exists(name):
        own = {"csv": "from_csv(path) (a task file: data.path = 'file.csv')",
               "json": "from_jsonl(path) (a task file: data.path = 'file.jsonl')"}
        instead = own.get(name.strip().lower().replace("jsonl", "json"),
                          f"datasets.load_dataset({name!r}, data_files=...) yourself, then from_hf(that dataset)")
        raise InvalidValueError(f"from_hf({name!r}): {name!r} is the datasets package's generic {name} reader, which needs "
                                f"data_files (without them it reads every file of the current folder); use {instead}")
    try:
        import datasets as hf_datasets  # optional dependency, imported only here
    except ImportError as exc:
        raise MissingExtraError("from_hf with a dataset name needs the HuggingFace `datasets` package: "
                                "pip install datasets (or pass a list of dicts to from_records)") from exc
    saved = _saved_kind(name)
    if saved is None and split is None:
        raise InvalidValueError(f"from_hf({name!r}): give split=, e.g. split='train'")
    try:
        if saved is None:
            return hf_datasets.load_dataset(name, config, split=split), split
        loaded = hf_datasets.load_from_disk(name)
    except Exception as exc:  # the datasets package's own errors (hub, network, files): said in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InvalidValueError(f"from_hf({name!r}): the datasets package could not load it: "
                                f"{error_name(exc)}: {first[:300]}") from None
    if saved == "splits":
        if split is None or split not in loaded:
            raise InvalidValueError(f"from_hf({name!r}): this saved DatasetDict has the splits {list(loaded)}; choose one "
                                    f"with split= (got {split!r})")
        return loaded[split], split
    recorded = getattr(loaded, "split", None)
    if split is not None and recorded is not None and str(recorded) != split:
        raise InvalidValueError(f"from_hf({name!r}): this saved Dataset is the {str(recorded)!r} split, not {split!r}")
    return loaded, split or (str(recorded) if recorded is not None else None)


def _saved_kind(path: str) -> Optional[str]:
    """``"splits"`` for a ``DatasetDict.save_to_disk`` folder, ``"one"`` for a ``Dataset`` one, else None."""
    if not os.path.isdir(path):
        return None
    if os.path.isfile(os.path.join(path, "dataset_dict.json")):
        return "splits"
    if os.path.isfile(os.path.join(path, "state.json")) and os.path.isfile(os.path.join(path, "dataset_info.json")):
        return "one"
    return None
