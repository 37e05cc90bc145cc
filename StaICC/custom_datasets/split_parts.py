"""A split that comes with the data: each row's part, read from a split column or from a list of test ids.

A paper names its test set; a drawn split cannot.  Two readers give every row its part
while the builder reads the rows, so that a bad value is refused naming the file, the row
and the column:

* :class:`SplitColumn`: a column whose value is the row's part (``test``, ``calibration``,
  ``demonstration``, ``train`` or ``unused``; other values through ``split_values``);
* :class:`TestIds`: a column of row ids and the ids of the test rows; every other row
  is ``train``.

The parts then become a :class:`~StaICC.datasets.split.FixedSplit`
(:func:`~StaICC.datasets.split.fix_split`): ``train`` rows give the calibration part when
no row is marked calibration, and the rest are demonstrations.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..datasets.split import ROW_PARTS, FixedSplit, fix_split
from .errors import _Locator

#: the split column's values that name a part without ``split_values`` (compared stripped, in lower case)
DEFAULT_SPLIT_VALUES = {part: part for part in ROW_PARTS}


class SplitColumn:
    """Each row's part is its value in ``column`` (stripped, case-insensitive), mapped by ``values``."""

    def __init__(self, column: str, values: Optional[Mapping[str, str]] = None, how: Optional[str] = None) -> None:
        self.column = column
        self.values = dict(DEFAULT_SPLIT_VALUES)
        for value, part in (values or {}).items():
            if not isinstance(value, str) or not value.strip():
                raise InvalidTypeError(f"split_values: every value must be a non-empty string, got {value!r}")
            if part not in ROW_PARTS:
                raise InvalidValueError(f"split_values[{value!r}]: expected one of {', '.join(ROW_PARTS)}, got {part!r}")
            self.values[value.strip().lower()] = part
        self.how = how or f"column {column!r}"

    def part(self, record: Mapping[str, Any], row: Any, locator: _Locator) -> str:
        if self.column not in record:
            raise locator.error("missing split column", row, self.column)
        value = record[self.column]
        if not isinstance(value, str) or not value.strip():
            kind = "empty" if isinstance(value, str) else "missing (null)" if value is None else \
                f"a {type(value).__name__} ({value!r})"
            raise locator.error(f"the split value is {kind}; expected {self._expected()}", row, self.column)
        part = self.values.get(value.strip().lower())
        if part is None:
            raise locator.error(f"split value {value.strip()!r} names no part; expected {self._expected()} (map "
                                "other values with split_values, e.g. validation = \"unused\")", row, self.column)
        return part

    def _expected(self) -> str:
        return ", ".join(sorted(self.values))

    def fixed(self, parts: List[str], names: List[str], locator: _Locator) -> FixedSplit:
        if "test" not in parts:
            raise locator.error(f"no row of the split {self.how} is a test row (values read: "
                                f"{', '.join(sorted(set(parts)))})", column=self.column)
        return fix_split(parts, self.how, names)


class TestIds:
    """Rows whose ``id_column`` value is in ``test_ids`` are the test part; every other row is ``train``."""

    def __init__(self, id_column: str, test_ids: Sequence[Union[str, int]]) -> None:
        if isinstance(test_ids, (str, bytes)) or not isinstance(test_ids, Sequence) or not test_ids:
            raise InvalidTypeError(f"test_ids must be a non-empty list of row ids, got {test_ids!r}")
        wanted: List[str] = []
        for value in test_ids:
            if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
                raise InvalidTypeError(f"test_ids: every id must be a non-empty string or an int, got {value!r}")
            wanted.append(str(value).strip())
        twice = sorted({v for v in wanted if wanted.count(v) > 1})
        if twice:
            raise InvalidValueError(f"test_ids lists {twice[0]!r} more than once")
        self.column, self.wanted = id_column, set(wanted)
        self.order = wanted
        self.seen: Dict[str, Any] = {}
        self.how = f"{len(wanted)} test ids in column {id_column!r}"

    def part(self, record: Mapping[str, Any], row: Any, locator: _Locator) -> str:
        if self.column not in record:
            raise locator.error("missing id column", row, self.column)
        value = record[self.column]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise locator.error(f"the row id is {value!r}; expected a non-empty string or an int", row, self.column)
        key = str(value).strip()
        if key in self.seen:
            raise locator.error(f"row id {key!r} repeats {locator.row_kind} {self.seen[key]}'s; the ids must be "
                                "unique to name the test rows", row, self.column)
        self.seen[key] = row
        return "test" if key in self.wanted else "train"

    def fixed(self, parts: List[str], names: List[str], locator: _Locator) -> FixedSplit:
        missing: Set[str] = self.wanted - set(self.seen)
        if missing:
            first = next(v for v in self.order if v in missing)
            raise locator.error(f"test id {first!r} is not in the data ({len(missing)} of {len(self.order)} test "
                                "ids are missing)", column=self.column)
        return fix_split(parts, self.how, names)


def part_reader(split_column: Optional[str], split_values: Optional[Mapping[str, str]], id_column: Optional[str],
                test_ids: Optional[Sequence[Union[str, int]]], used_columns: Sequence[str],
                how: Optional[str] = None) -> Optional[Union[SplitColumn, TestIds]]:
    """The reader of the builder's split options, checked (None: the split is drawn).

    An id column may be an input column (unique texts name their rows); a split column may not.
    """
    if split_column is None and split_values is not None:
        raise InvalidValueError("split_values maps the values of split_column; give split_column too")
    if (id_column is None) != (test_ids is None):
        raise InvalidValueError("test_ids and id_column go together: the ids of the test rows and the column that holds "
                                "each row's id")
    if split_column is not None and id_column is not None:
        raise InvalidValueError("split_column and test_ids both fix the split; give one")
    column = split_column if split_column is not None else id_column
    if column is None:
        return None
    what = "split_column" if split_column is not None else "id_column"
    if not isinstance(column, str) or not column:
        raise InvalidTypeError(f"{what} must be a column name, got {column!r}")
    if split_column is not None:
        if split_column in used_columns:
            raise InvalidValueError(f"split_column {split_column!r} is also an input or the label column")
        if split_values is not None and not isinstance(split_values, Mapping):
            raise InvalidTypeError(f"split_values must be a dict {{value: part}}, got {type(split_values).__name__}")
        return SplitColumn(split_column, split_values, how)
    return TestIds(column, test_ids)  # type: ignore[arg-type]
