"""The error a custom dataset raises, and the locator that names where it happened.

Kept apart so that every reader and check builds its messages the same way: the file,
the row (1-based line in files, 0-based index in records and HuggingFace rows) and the
column.
"""
from typing import Optional
from ..errors import StaICCError


class CustomDatasetError(StaICCError, ValueError):
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

