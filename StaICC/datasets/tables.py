"""Tables: where a dataset's rows come from.

A :class:`ListTable` holds a whole table in memory (custom data, or a standard dataset
built from source).  A standard dataset's bundled file holds only the rows the standard
uses: the first C+D+T rows of the standard split draw, in draw order.  Because the draw
is sequential, every split whose total does not exceed that (Normal, the diagnoses,
Template_sens, Demo_sens) is served exactly by a :class:`DrawnTable`, which reads its
file on first use; :class:`DrawnSlice` is a part of it that touches no data until read.
"""
from typing import Dict, List, Optional, Sequence

from ..errors import InvalidValueError, OutOfRangeError
from ..rng import StableRandom
from ..standard import SEED
from .bundled import _CACHES_BUILT_ON_THESE_FILES, Row, _lock, load_drawn_rows, manifest

_table_cache: Dict[str, "DrawnTable"] = {}
_CACHES_BUILT_ON_THESE_FILES.append(_table_cache.clear)


class ListTable:
    """A whole table in memory (custom data, or a standard dataset built from source)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def __iter__(self):
        return iter(self.rows)

    def draw(self, total: int, seed: int = SEED) -> List[Row]:
        """Rows at the first ``total`` indexes of the split draw ``index_set(total, N)``."""
        indexes = StableRandom(seed).index_set(total, len(self.rows))
        return [self.rows[i] for i in indexes]

    def verify(self) -> None:
        """Rows in memory need no file: nothing to verify."""


class DrawnTable:
    """A bundled standard table: only its split-draw prefix is shipped, loaded lazily."""

    def __init__(self, name: str) -> None:
        info = manifest()["files"][name]
        self.name = name
        self.table_rows: int = info["table_rows"]
        self.shipped_rows: int = info["rows"]
        self._rows: Optional[List[Row]] = None
        self._table_indexes: Optional[List[int]] = None

    def _ensure(self) -> None:
        if self._rows is None:
            with _lock:
                if self._rows is None:
                    self._rows, self._table_indexes = load_drawn_rows(self.name)

    def verify(self) -> None:
        """Read, hash-check and decode the bundled file now (once per process)."""
        self._ensure()

    @property
    def drawn_rows(self) -> List[Row]:
        self._ensure()
        return self._rows

    @property
    def table_indexes(self) -> List[int]:
        """Original table index of each shipped row, in draw order."""
        self._ensure()
        return list(self._table_indexes)

    def __len__(self) -> int:
        return self.table_rows

    def __getitem__(self, index: int) -> Row:
        raise OutOfRangeError(f"{self.name}: StaICC ships only the rows drawn by the standard split; "
                              "access rows through the split parts (calibration/demonstration/test)")

    def draw(self, total: int, seed: int = SEED) -> "DrawnSlice":
        if seed != SEED or total > self.shipped_rows:
            raise InvalidValueError(
                f"{self.name}: a split of {total} rows with seed {seed} needs the full table, but StaICC "
                f"ships only the {self.shipped_rows} rows of the standard draw (seed {SEED}). Splits of up "
                f"to {self.shipped_rows} rows with the standard seed are exact; for others build the "
                "dataset from source (from_cache=False, needs the `datasets` package).")
        return DrawnSlice(self, 0, total)


class DrawnSlice:
    """Rows ``start:stop`` of a bundled draw, read from disk only when first touched.

    Building a benchmark therefore reads no data at all; each dataset is decoded the
    first time one of its prompts is written (or when :func:`verify_datasets` runs).
    """

    def __init__(self, table: DrawnTable, start: int, stop: int) -> None:
        self.table, self.start, self.stop = table, start, stop
        self._rows: Optional[List[Row]] = None

    @property
    def rows(self) -> List[Row]:
        if self._rows is None:
            self._rows = self.table.drawn_rows[self.start:self.stop]
        return self._rows

    def verify(self) -> None:
        self.table.verify()

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, index):
        if isinstance(index, slice):
            begin, end, step = index.indices(len(self))
            if step == 1:
                return DrawnSlice(self.table, self.start + begin, self.start + max(begin, end))
            return self.rows[index]
        return self.rows[index]

    def __iter__(self):
        return iter(self.rows)


def bundled_table(name: str) -> DrawnTable:
    """The process's one :class:`DrawnTable` of a standard dataset (so each file is read once)."""
    with _lock:
        if name not in _table_cache:
            _table_cache[name] = DrawnTable(name)
        return _table_cache[name]
