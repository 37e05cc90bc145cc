"""The builder every input form shares, and the checks of its options.

:func:`_build` turns (row number, record) pairs into a :class:`~StaICC.datasets.Dataset`:
it checks the name, the columns, the template strings, the alternate templates and
the split sizes, reads every row's texts and label, and resolves the labels.  The
split-size and prefix defaults live here too, since the builder applies them.
"""
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..datasets import Dataset, standard_dataset_aliases
from ..standard import CALIBRATION_SIZE, DEMONSTRATION_SIZE, ECE_BINS, TEMPLATE_KEYS, TEST_SIZE
from ..validation import check, check_int, Integer
from .errors import _Locator
from .labels import LabelWords, _raw_label, _resolve_labels
from .split_parts import part_reader

#: the fewest rows a custom dataset may have: one each for calibration, demonstration and test
MIN_ROWS = 3
#: the fewest predictions ECE accepts (one per confidence bin); Normal makes test rows x 2 repeats
MIN_ECE_PREDICTIONS = ECE_BINS

Columns = Union[str, Sequence[str]]


def default_split_sizes(n_rows: int) -> Tuple[int, int, int]:
    """Default (calibration, demonstration, test) sizes for a dataset of ``n_rows`` rows.

    ``T = min(512, max(1, N // 5))``, ``C = min(1024, max(1, N // 5))`` and
    ``D = min(4096, N - C - T)``: a fifth of the data each for calibration and test and
    the rest for demonstrations, capped at the standard's (1024, 4096, 512), which a
    dataset of 5 640 rows or more gets exactly.  Every part has at least one row
    (``N >= 3``).
    """
    if check_int(n_rows, "n_rows") < MIN_ROWS:
        raise InvalidValueError(f"a custom dataset needs at least {MIN_ROWS} rows (one per split part), got {n_rows!r}")
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
        raise InvalidTypeError(f"input_columns must be a column name or a non-empty list of column names, "
                               f"got {input_columns!r}")
    for column in columns:
        if not isinstance(column, str) or not column:
            raise InvalidTypeError(f"input_columns must hold non-empty strings, got {column!r}")
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise InvalidValueError(f"input_columns lists {duplicated} more than once")
    return list(columns)


def _check_string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    return value


def _check_string_list(value: Any, count: int, what: str) -> List[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidTypeError(f"{what} must be a list of strings (one per input column), got {value!r}")
    if len(value) != count:
        raise InvalidValueError(f"{what} needs one entry per input column ({count}), got {len(value)}: {list(value)!r}")
    return list(value)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidTypeError(f"name must be a non-empty string, got {name!r}")
    reserved = {alias.lower() for alias in standard_dataset_aliases()}
    if name.lower() in reserved:
        raise InvalidValueError(f"name {name!r} is the name of a standard StaICC dataset; choose another name so that "
                                "custom results cannot be mistaken for standard ones")
    return name


def _check_alternate_template(alternate: Any, defaults: Dict[str, Any], count: int) -> Optional[Dict[str, list]]:
    """Shape check: the 4 keys of the L9 table, 3 options each, option 0 = the default."""
    if alternate is None:
        return None
    if not isinstance(alternate, Mapping):
        raise InvalidTypeError(f"alternate_template must be a dict with keys {list(TEMPLATE_KEYS)}, got "
                               f"{type(alternate).__name__}")
    missing = [key for key in TEMPLATE_KEYS if key not in alternate]
    extra = [key for key in alternate if key not in TEMPLATE_KEYS]
    if missing or extra:
        raise InvalidValueError(f"alternate_template needs exactly the keys {list(TEMPLATE_KEYS)}"
                                + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    checked: Dict[str, list] = {}
    for key in TEMPLATE_KEYS:
        options = alternate[key]
        if not isinstance(options, (list, tuple)) or len(options) != 3:
            raise InvalidValueError(f"alternate_template[{key!r}] must be a list of exactly 3 options "
                                    f"(option 0 = the default), got {options!r}")
        if key == "input_text_prefixes":
            options = [_check_string_list(o, count, f"alternate_template['input_text_prefixes'][{i}]")
                       for i, o in enumerate(options)]
        else:
            options = [_check_string(o, f"alternate_template[{key!r}][{i}]") for i, o in enumerate(options)]
        if options[0] != defaults[key]:
            raise InvalidValueError(f"alternate_template[{key!r}][0] must equal the dataset's default {key} "
                                    f"{defaults[key]!r} (row 0 of Template_sens is the Normal template), "
                                    f"got {options[0]!r}")
        checked[key] = options
    return checked


def _check_split_sizes(split_sizes: Any, n_rows: int, locator: _Locator) -> Tuple[int, int, int]:
    if split_sizes is None:
        return default_split_sizes(n_rows)
    if not isinstance(split_sizes, (list, tuple)) or len(split_sizes) != 3:
        raise InvalidTypeError(f"split_sizes must be (calibration, demonstration, test), got {split_sizes!r}")
    for what, value in zip(("calibration", "demonstration", "test"), split_sizes):
        check(value, Integer(0, text="a non-negative int"), f"split_sizes: the {what} size")
    c, d, t = (int(value) for value in split_sizes)
    if t < 1:
        raise InvalidValueError("split_sizes: the test part needs at least one row")
    if c + d + t > n_rows:
        raise locator.error(f"split_sizes {tuple(split_sizes)} need {c + d + t} rows, the data has only {n_rows}")
    return c, d, t


def _build(records: Iterable[Tuple[int, Any]], locator: _Locator, *, name: str, input_columns: Columns,
           label_column: str, label_words: LabelWords = None, instruction: str = "",
           input_text_prefixes: Optional[Sequence[str]] = None,
           input_text_affixes: Optional[Sequence[str]] = None, label_prefix: str = "Label: ",
           label_affix: str = "\n", query_prefix: str = "", alternate_template: Optional[Dict[str, list]] = None,
           split_sizes: Optional[Sequence[int]] = None, source: Optional[str] = None,
           split_column: Optional[str] = None, split_values: Optional[Mapping[str, str]] = None,
           id_column: Optional[str] = None, test_ids: Optional[Sequence[Union[str, int]]] = None,
           _split_how: Optional[str] = None) -> Dataset:
    """The dataset of ``records`` ((row, dict) pairs); ``locator`` names the rows in errors.

    ``split_column`` (with ``split_values``) or ``id_column`` with ``test_ids`` fix the split
    (:mod:`.split_parts`); ``_split_how`` names a fixed split in words where the caller made
    the split column itself (one file per part).
    """
    name = _check_name(name)
    columns = _columns(input_columns)
    if not isinstance(label_column, str) or not label_column:
        raise InvalidTypeError(f"label_column must be a column name, got {label_column!r}")
    if label_column in columns:
        raise InvalidValueError(f"label_column {label_column!r} is also an input column")
    template = _template(columns, instruction, input_text_prefixes, input_text_affixes, label_prefix, label_affix,
                         query_prefix)
    alternate = _check_alternate_template(alternate_template, template, len(columns))
    if source is not None:
        _check_string(source, "source")
    parts_of = part_reader(split_column, split_values, id_column, test_ids, columns + [label_column], _split_how)
    if parts_of is not None and split_sizes is not None:
        raise InvalidValueError("split_sizes and a fixed split (split_column or test_ids) both set the split; give one")
    inputs_per_row, raw_labels, parts = _read_rows(records, locator, columns, label_column, parts_of)
    n_rows = len(inputs_per_row)
    if n_rows == 0:
        raise locator.error("no data rows")
    if n_rows < MIN_ROWS:
        raise locator.error(f"only {n_rows} data rows; a custom dataset needs at least {MIN_ROWS} "
                            "(one each for calibration, demonstration and test)")
    words, ids = _resolve_labels(raw_labels, label_words, label_column, locator)
    names = [f"{locator.row_kind} {row}" for row, _ in raw_labels] if parts_of is not None else []
    fixed = parts_of.fixed(parts, names, locator) if parts_of is not None else None
    sizes = fixed.sizes if fixed is not None else _check_split_sizes(split_sizes, n_rows, locator)
    rows = [(inputs, label) for inputs, label in zip(inputs_per_row, ids)]
    dataset = Dataset(name, rows, words, instruction=template["instruction"],
                      input_text_prefixes=template["input_text_prefixes"],
                      input_text_affixes=template["input_text_affixes"], label_prefix=template["label_prefix"],
                      label_affix=template["label_affix"], query_prefix=template["query_prefix"],
                      alternate_template=alternate, split_sizes=sizes, standard=False)
    if fixed is not None:
        dataset.fixed_split = fixed
        dataset.departures = ["custom dataset", fixed.describe()]
    dataset.row_ids = _row_ids(raw_labels, parts_of)
    dataset.source = source if source is not None else locator.source
    dataset.input_columns = list(columns)
    dataset.label_column = label_column
    return dataset


def _row_ids(raw_labels: List[Tuple[Any, Any]], parts_of: Any) -> Tuple[Any, ...]:
    """Each row's own id, as records and ``compare --flips`` name it: its value in the id column
    (``id_column``), else where it sits (the 1-based line of a file, the index of a record; with one file per
    part, the line and the file's name)."""
    seen = getattr(parts_of, "seen", None)
    if seen:
        by_row = {row: key for key, row in seen.items()}
        return tuple(by_row[row] for row, _ in raw_labels)
    return tuple(row if type(row) in (int, str) else str(row) for row, _ in raw_labels)  # "7 of test.csv"


def _template(columns: List[str], instruction: Any, input_text_prefixes: Any, input_text_affixes: Any,
              label_prefix: Any, label_affix: Any, query_prefix: Any) -> Dict[str, Any]:
    """The template options, checked, with the defaults of the columns filled in."""
    count = len(columns)
    return {
        "instruction": _check_string(instruction, "instruction"),
        "input_text_prefixes": _check_string_list(default_input_text_prefixes(columns) if input_text_prefixes is None
                                                  else input_text_prefixes, count, "input_text_prefixes"),
        "input_text_affixes": _check_string_list([" "] * count if input_text_affixes is None
                                                 else input_text_affixes, count, "input_text_affixes"),
        "label_prefix": _check_string(label_prefix, "label_prefix"),
        "label_affix": _check_string(label_affix, "label_affix"),
        "query_prefix": _check_string(query_prefix, "query_prefix"),
    }


def _read_rows(records: Iterable[Tuple[Any, Any]], locator: _Locator, columns: List[str], label_column: str,
               parts_of: Any) -> Tuple[List[List[str]], List[Tuple[Any, Union[int, str]]], List[str]]:
    """Every row's input texts, raw label and (with a fixed split) part, each checked where it is read."""
    inputs_per_row: List[List[str]] = []
    raw_labels: List[Tuple[Any, Union[int, str]]] = []
    parts: List[str] = []
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
        if parts_of is not None:
            parts.append(parts_of.part(record, row, locator))
    return inputs_per_row, raw_labels, parts
