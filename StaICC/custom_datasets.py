"""Custom classification datasets: your own data through the standard's machinery.

Build a :class:`StaICC.datasets.Dataset` from a list of records (dicts), a JSON Lines
file, a CSV file or a HuggingFace ``datasets`` object, then pass it to any
sub-benchmark, alone or beside the standard ten::

    from StaICC import Normal
    from StaICC.custom_datasets import from_csv

    mine = from_csv("reviews.csv", name="my_reviews", input_columns="text", label_column="label")
    Normal(datasets=["GLUE-SST2", mine])(my_inference)

The split (calibration, demonstration, test), the demonstration sampler, the prompt
writer, the metrics and every diagnosis are the standard's; only the rows, the label
words, the template and the split sizes are yours.  Results that involve a custom
dataset are marked non-standard (``result.metadata["standard"] is False``).

Bad data is refused with :class:`CustomDatasetError` (a ``ValueError``) naming the
file, the row (1-based line number in files, 0-based index for records and HuggingFace
rows) and the column.  Only the standard library is used; ``datasets`` is imported
only when :func:`from_hf` is given a dataset *name* to load.
"""
import csv
import io
import json
import os
import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .datasets import Dataset, standard_dataset_aliases
from .standard import CALIBRATION_SIZE, DEMONSTRATION_SIZE, ECE_BINS, TEMPLATE_KEYS, TEST_SIZE
from .validation import check_int

__all__ = ["CustomDatasetError", "from_records", "from_jsonl", "from_csv", "from_hf", "default_split_sizes",
           "default_input_text_prefixes", "MIN_ROWS", "MIN_ECE_PREDICTIONS"]

#: the fewest rows a custom dataset may have: one each for calibration, demonstration and test
MIN_ROWS = 3
#: the fewest predictions ECE accepts (one per confidence bin); Normal makes test rows x 2 repeats
MIN_ECE_PREDICTIONS = ECE_BINS

Columns = Union[str, Sequence[str]]
LabelWords = Union[None, Sequence[str], Mapping[Any, str]]
_INTEGER = re.compile(r"[+-]?\d+\Z")


# ----------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------
class CustomDatasetError(ValueError):
    """Bad custom data.  ``path``: the file (None for records); ``row``: 1-based line
    number in a file, 0-based index in records / HuggingFace rows (None when the error
    is not about one row); ``column``: the column concerned (or None)."""

    def __init__(self, message: str, *, path: Optional[str] = None, row: Optional[int] = None,
                 column: Optional[str] = None, source: Optional[str] = None, row_kind: str = "line") -> None:
        self.path = path
        self.row = row
        self.column = column
        self.reason = message
        where = []
        if path is not None:
            where.append(f"file {path!r}")
        elif source is not None:
            where.append(source)
        if row is not None:
            where.append(f"{row_kind} {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__((", ".join(where) + ": " if where else "") + message)


class _Locator:
    """Where rows come from, to name them in errors."""

    def __init__(self, path: Optional[str], source: str, row_kind: str) -> None:
        self.path = path
        self.source = source
        self.row_kind = row_kind  # "line" (files) or "record"/"row" (0-based indexes)

    def error(self, message: str, row: Optional[int] = None, column: Optional[str] = None) -> CustomDatasetError:
        return CustomDatasetError(message, path=self.path, row=row, column=column, source=self.source,
                                  row_kind=self.row_kind)


# ----------------------------------------------------------------------------
# split sizes and template defaults
# ----------------------------------------------------------------------------
def default_split_sizes(n_rows: int) -> Tuple[int, int, int]:
    """Default (calibration, demonstration, test) sizes for a dataset of ``n_rows`` rows.

    ``T = min(512, max(1, N // 5))``, ``C = min(1024, max(1, N // 5))`` and
    ``D = min(4096, N - C - T)``: a fifth of the data each for calibration and test and
    the rest for demonstrations, capped at the standard's (1024, 4096, 512), which a
    dataset of 5 640 rows or more gets exactly.  Every part has at least one row
    (``N >= 3``).
    """
    if check_int(n_rows, "n_rows") < MIN_ROWS:
        raise ValueError(f"a custom dataset needs at least {MIN_ROWS} rows (one per split part), got {n_rows!r}")
    fifth = max(1, n_rows // 5)
    test = min(TEST_SIZE, fifth)
    calibration = min(CALIBRATION_SIZE, fifth)
    demonstration = min(DEMONSTRATION_SIZE, n_rows - calibration - test)
    return calibration, demonstration, test


def default_input_text_prefixes(input_columns: Columns) -> List[str]:
    """One prefix per input column: the column name followed by ``": "``."""
    return [f"{column}: " for column in _columns(input_columns)]


def _columns(input_columns: Columns) -> List[str]:
    columns = [input_columns] if isinstance(input_columns, str) else input_columns
    if not isinstance(columns, (list, tuple)) or not columns:
        raise TypeError(f"input_columns must be a column name or a non-empty list of column names, "
                        f"got {input_columns!r}")
    for column in columns:
        if not isinstance(column, str) or not column:
            raise TypeError(f"input_columns must hold non-empty strings, got {column!r}")
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise ValueError(f"input_columns lists {duplicated} more than once")
    return list(columns)


def _check_string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    return value


def _check_string_list(value: Any, count: int, what: str) -> List[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{what} must be a list of strings (one per input column), got {value!r}")
    if len(value) != count:
        raise ValueError(f"{what} needs one entry per input column ({count}), got {len(value)}: {list(value)!r}")
    return list(value)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    reserved = {alias.lower() for alias in standard_dataset_aliases()}
    if name.lower() in reserved:
        raise ValueError(f"name {name!r} is the name of a standard StaICC dataset; choose another name so that "
                         "custom results cannot be mistaken for standard ones")
    return name


def _check_alternate_template(alternate: Any, defaults: Dict[str, Any], count: int) -> Optional[Dict[str, list]]:
    """Shape check: the 4 keys of the L9 table, 3 options each, option 0 = the default."""
    if alternate is None:
        return None
    if not isinstance(alternate, Mapping):
        raise TypeError(f"alternate_template must be a dict with keys {list(TEMPLATE_KEYS)}, got "
                        f"{type(alternate).__name__}")
    missing = [key for key in TEMPLATE_KEYS if key not in alternate]
    extra = [key for key in alternate if key not in TEMPLATE_KEYS]
    if missing or extra:
        raise ValueError(f"alternate_template needs exactly the keys {list(TEMPLATE_KEYS)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    checked: Dict[str, list] = {}
    for key in TEMPLATE_KEYS:
        options = alternate[key]
        if not isinstance(options, (list, tuple)) or len(options) != 3:
            raise ValueError(f"alternate_template[{key!r}] must be a list of exactly 3 options "
                             f"(option 0 = the default), got {options!r}")
        if key == "input_text_prefixes":
            options = [_check_string_list(o, count, f"alternate_template['input_text_prefixes'][{i}]")
                       for i, o in enumerate(options)]
        else:
            options = [_check_string(o, f"alternate_template[{key!r}][{i}]") for i, o in enumerate(options)]
        if options[0] != defaults[key]:
            raise ValueError(f"alternate_template[{key!r}][0] must equal the dataset's default {key} "
                             f"{defaults[key]!r} (row 0 of Template_sens is the Normal template), "
                             f"got {options[0]!r}")
        checked[key] = options
    return checked


def _check_split_sizes(split_sizes: Any, n_rows: int, locator: _Locator) -> Tuple[int, int, int]:
    if split_sizes is None:
        return default_split_sizes(n_rows)
    if not isinstance(split_sizes, (list, tuple)) or len(split_sizes) != 3:
        raise TypeError(f"split_sizes must be (calibration, demonstration, test), got {split_sizes!r}")
    for what, value in zip(("calibration", "demonstration", "test"), split_sizes):
        if check_int(value, f"split_sizes: the {what} size") < 0:
            raise ValueError(f"split_sizes: the {what} size must be a non-negative int, got {value!r}")
    c, d, t = (int(value) for value in split_sizes)
    if t < 1:
        raise ValueError("split_sizes: the test part needs at least one row")
    if c + d + t > n_rows:
        raise locator.error(f"split_sizes {tuple(split_sizes)} need {c + d + t} rows, the data has only {n_rows}")
    return c, d, t


# ----------------------------------------------------------------------------
# labels
# ----------------------------------------------------------------------------
def _raw_label(value: Any, row: int, column: str, locator: _Locator) -> Union[int, str]:
    """An int, or a stripped non-empty string; anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        kind = "missing (null)" if value is None else f"a {type(value).__name__} ({value!r})"
        raise locator.error(f"the label is {kind}; labels must be ints or strings", row, column)
    if isinstance(value, str):
        value = value.strip()
        if not value:
            raise locator.error("the label is empty", row, column)
    return value


def _check_words(words: Sequence[Any], what: str) -> List[str]:
    words = list(words)
    for word in words:
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"{what}: every label word must be a non-empty string, got {word!r}")
    duplicated = sorted({w for w in words if words.count(w) > 1})
    if duplicated:
        raise ValueError(f"{what}: duplicate label words {duplicated}; each label needs its own word "
                         "(to merge classes, map their values in your records first)")
    if len(words) < 2:
        raise ValueError(f"{what}: a classification task needs at least 2 label words, got {words!r}")
    return words


def _resolve_labels(raw: List[Tuple[int, Union[int, str]]], label_words: LabelWords, column: str,
                    locator: _Locator) -> Tuple[List[str], List[int]]:
    """(label words, label id per row) with ids 0..n-1 in label-word order."""
    if label_words is None:
        ints = [(row, v) for row, v in raw if isinstance(v, int)]
        texts = [(row, v) for row, v in raw if isinstance(v, str)]
        numeric_texts = all(_INTEGER.match(v) for _row, v in texts)
        if ints and texts and not numeric_texts:
            (int_row, int_value), (text_row, text_value) = ints[0], next((r, v) for r, v in texts
                                                                        if not _INTEGER.match(v))
            raise locator.error(f"labels mix ints ({locator.row_kind} {int_row}: {int_value!r}) and strings "
                                f"({locator.row_kind} {text_row}: {text_value!r}); give label_words",
                                text_row, column)
        if numeric_texts:  # ints, or integer strings as CSV files give them
            values = sorted({int(v) for _row, v in raw})
            words = _check_words([str(v) for v in values], "default label words (distinct label values)")
            position = {v: i for i, v in enumerate(values)}
            return words, [position[int(v)] for _row, v in raw]
        words = _check_words(sorted({v for _row, v in texts}), "default label words (distinct label values)")
        position = {w: i for i, w in enumerate(words)}
        return words, [position[v] for _row, v in raw]

    if isinstance(label_words, Mapping):
        keys = list(label_words)
        words = _check_words([label_words[k] for k in keys], "label_words")
        lookup: Dict[Any, int] = {}
        for i, key in enumerate(keys):
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise TypeError(f"label_words keys must be raw label values (ints or strings), got {key!r}")
            lookup[key.strip() if isinstance(key, str) else key] = i
        ids = []
        for row, value in raw:
            if value in lookup:
                ids.append(lookup[value])
            elif isinstance(value, str) and _INTEGER.match(value) and int(value) in lookup:
                ids.append(lookup[int(value)])
            elif isinstance(value, int) and str(value) in lookup:
                ids.append(lookup[str(value)])
            else:
                raise locator.error(f"label {value!r} is not a key of label_words {keys!r}", row, column)
        return words, ids

    if isinstance(label_words, (str, bytes)) or not isinstance(label_words, Sequence):
        raise TypeError(f"label_words must be a list (index = raw label id), a dict {{raw value: word}} or None, "
                        f"got {type(label_words).__name__}")
    words = _check_words(label_words, "label_words")
    position = {w: i for i, w in enumerate(words)}
    ids = []
    for row, value in raw:
        if isinstance(value, str) and value in position:
            ids.append(position[value])
            continue
        index = int(value) if isinstance(value, int) or _INTEGER.match(value) else None
        if index is None or not 0 <= index < len(words):
            expected = f"a label id 0..{len(words) - 1} or one of the words {words!r}"
            raise locator.error(f"label {value!r} is outside the label words: expected {expected}", row, column)
        ids.append(index)
    return words, ids


# ----------------------------------------------------------------------------
# the builder shared by every input form
# ----------------------------------------------------------------------------
def _build(records: Iterable[Tuple[int, Any]], locator: _Locator, *, name: str, input_columns: Columns,
           label_column: str, label_words: LabelWords = None, instruction: str = "",
           input_text_prefixes: Optional[Sequence[str]] = None,
           input_text_affixes: Optional[Sequence[str]] = None, label_prefix: str = "Label: ",
           label_affix: str = "\n", query_prefix: str = "", alternate_template: Optional[Dict[str, list]] = None,
           split_sizes: Optional[Sequence[int]] = None, source: Optional[str] = None) -> Dataset:
    name = _check_name(name)
    columns = _columns(input_columns)
    if not isinstance(label_column, str) or not label_column:
        raise TypeError(f"label_column must be a column name, got {label_column!r}")
    if label_column in columns:
        raise ValueError(f"label_column {label_column!r} is also an input column")
    count = len(columns)
    template = {
        "instruction": _check_string(instruction, "instruction"),
        "input_text_prefixes": _check_string_list(default_input_text_prefixes(columns) if input_text_prefixes is None
                                                  else input_text_prefixes, count, "input_text_prefixes"),
        "input_text_affixes": _check_string_list([" "] * count if input_text_affixes is None
                                                 else input_text_affixes, count, "input_text_affixes"),
        "label_prefix": _check_string(label_prefix, "label_prefix"),
        "label_affix": _check_string(label_affix, "label_affix"),
        "query_prefix": _check_string(query_prefix, "query_prefix"),
    }
    alternate = _check_alternate_template(alternate_template, template, count)
    if source is not None:
        _check_string(source, "source")

    inputs_per_row: List[List[str]] = []
    raw_labels: List[Tuple[int, Union[int, str]]] = []
    for row, record in records:
        if not isinstance(record, Mapping):
            raise locator.error(f"expected a mapping of column names to values, got {type(record).__name__}", row)
        inputs = []
        for column in columns + [label_column]:
            if column not in record:
                present = ", ".join(repr(str(k)) for k in record)
                raise locator.error(f"missing column (the row has {present or 'no columns'})", row, column)
        for column in columns:
            text = record[column]
            if not isinstance(text, str):
                kind = "missing (null)" if text is None else f"a {type(text).__name__} ({text!r})"
                raise locator.error(f"the text is {kind}, expected a string", row, column)
            if not text.strip():
                raise locator.error("the text is empty", row, column)
            inputs.append(text)
        inputs_per_row.append(inputs)
        raw_labels.append((row, _raw_label(record[label_column], row, label_column, locator)))

    n_rows = len(inputs_per_row)
    if n_rows == 0:
        raise locator.error("no data rows")
    if n_rows < MIN_ROWS:
        raise locator.error(f"only {n_rows} data rows; a custom dataset needs at least {MIN_ROWS} "
                            "(one each for calibration, demonstration and test)")
    words, ids = _resolve_labels(raw_labels, label_words, label_column, locator)
    sizes = _check_split_sizes(split_sizes, n_rows, locator)
    rows = [(inputs, label) for inputs, label in zip(inputs_per_row, ids)]
    dataset = Dataset(name, rows, words, instruction=template["instruction"],
                      input_text_prefixes=template["input_text_prefixes"],
                      input_text_affixes=template["input_text_affixes"], label_prefix=template["label_prefix"],
                      label_affix=template["label_affix"], query_prefix=template["query_prefix"],
                      alternate_template=alternate, split_sizes=sizes, standard=False)
    dataset.source = source if source is not None else locator.source
    dataset.input_columns = list(columns)
    dataset.label_column = label_column
    return dataset


# ----------------------------------------------------------------------------
# the input forms
# ----------------------------------------------------------------------------
def from_records(records: Iterable[Mapping[str, Any]], *, name: str, input_columns: Columns, label_column: str,
                 label_words: LabelWords = None, instruction: str = "",
                 input_text_prefixes: Optional[Sequence[str]] = None,
                 input_text_affixes: Optional[Sequence[str]] = None, label_prefix: str = "Label: ",
                 label_affix: str = "\n", query_prefix: str = "",
                 alternate_template: Optional[Dict[str, list]] = None,
                 split_sizes: Optional[Sequence[int]] = None, source: Optional[str] = None) -> Dataset:
    """A dataset from an iterable of dicts (errors name the 0-based record index).

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
        raise TypeError(f"records must be an iterable of dicts, got {type(records).__name__}")
    return _build(enumerate(records), _Locator(None, "records", "record"), name=name, input_columns=input_columns,
                  label_column=label_column, label_words=label_words, instruction=instruction,
                  input_text_prefixes=input_text_prefixes, input_text_affixes=input_text_affixes,
                  label_prefix=label_prefix, label_affix=label_affix, query_prefix=query_prefix,
                  alternate_template=alternate_template, split_sizes=split_sizes, source=source)


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


def _jsonl_records(path: str, text: str, locator: _Locator) -> Iterator[Tuple[int, Any]]:
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): texts may hold U+2028
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise locator.error(f"malformed JSON ({exc.msg} at character {exc.colno})", number) from None
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
        raise TypeError(f"delimiter must be a single character, got {delimiter!r}")
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
    ``load_dataset(name, config, split=split)`` is called).  When ``label_words`` is not
    given and the label column is a ``ClassLabel``, its ``names`` are the label words.
    Errors name the 0-based row index.
    """
    if isinstance(hf_dataset, str):
        try:
            import datasets as hf_datasets  # optional dependency, imported only here
        except ImportError as exc:
            raise ImportError("from_hf with a dataset name needs the HuggingFace `datasets` package: "
                              "pip install datasets (or pass a list of dicts to from_records)") from exc
        if split is None:
            raise ValueError(f"from_hf({hf_dataset!r}): give split=, e.g. split='train'")
        name_loaded = hf_dataset
        hf_dataset = hf_datasets.load_dataset(name_loaded, config, split=split)
        options.setdefault("source", f"HuggingFace {name_loaded}" + (f"/{config}" if config else "") + f"[{split}]")
    column_names = getattr(hf_dataset, "column_names", None)
    if isinstance(column_names, Mapping):  # a DatasetDict: one entry per split
        if split is None or split not in column_names:
            raise ValueError(f"from_hf: this DatasetDict has the splits {list(column_names)}; "
                             f"choose one with split= (got {split!r})")
        hf_dataset = hf_dataset[split]
        column_names = getattr(hf_dataset, "column_names", None)
    quacks = column_names is not None or hasattr(hf_dataset, "features")  # IterableDataset: column_names may be None
    if not quacks or not isinstance(hf_dataset, Iterable):
        raise TypeError(f"from_hf expects a HuggingFace datasets.Dataset (iterable of dicts with column_names), "
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
