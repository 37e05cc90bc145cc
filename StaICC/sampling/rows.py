"""Demonstration sampling: which demonstrations each query sees.

The sampler is a ``list[list[int]]``-like object: row ``q`` lists the demonstration
indexes of query ``q`` in prompt order.  The default rows come from one fresh stream,
consecutively: row q is ``index_set(k, D)``, k distinct indexes in pop order.  The
stream state after them is kept so that a reset, and the in/out-of-domain resampling
that continues the stream, are exact and cheap (rows are never mutated in place, so
the saved default is a shallow copy, not a deep one).
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..rng import fresh_stream
from ..validation import check_int, check_k, is_int
from ..errors import InvalidTypeError, InvalidValueError, OperationError


class _RowSampler:
    """``list[list[int]]``-like access; reading a row returns a copy."""

    _rows: List[List[int]]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> List[int]:
        return list(self._rows[index])

    def __iter__(self):
        return (list(row) for row in self._rows)

    def get_sampled_indexes(self, index: int) -> List[int]:
        """The demonstration indexes of query ``index`` (a copy), like ``sampler[index]``."""
        index = check_int(index, "query index", minimum=0, maximum=len(self._rows) - 1,
                          at=f" (sampler of {len(self._rows)} rows)")
        return list(self._rows[index])


#: (k, D, repetition) -> (rows drawn so far from a fresh stream, stream state after each prefix)
_DRAWN: Dict[Tuple[int, int, bool], Tuple[List[List[int]], List[int]]] = {}
_DRAWN_LIMIT = 64


def default_rows(k: int, demonstration_count: int, rows: int, allow_repetition: bool) -> List[List[int]]:
    """The first ``rows`` default rows for (k, D): drawn once per process and shared.

    Row q of every default sampler with the same k and D is the same draw of one fresh
    stream, whatever the row count, so the sub-benchmarks of a suite (and repeated
    constructions) share one drawing.  Rows are never mutated in place.
    """
    key = (k, demonstration_count, allow_repetition)
    drawn = _DRAWN.get(key)
    if drawn is None:
        if len(_DRAWN) >= _DRAWN_LIMIT:
            _DRAWN.pop(next(iter(_DRAWN)))
        stream = fresh_stream()
        drawn = _DRAWN[key] = ([], [stream.state])
    table, states = drawn
    if len(table) < rows:
        stream = fresh_stream()
        stream.state = states[-1]
        for _ in range(rows - len(table)):
            table.append(stream.index_set(k, demonstration_count, allow_repetition=allow_repetition))
            states.append(stream.state)
    return table[:rows]


class demonstration_sampler(_RowSampler):
    """Default sampler: ``rows`` rows of ``index_set(k, D)`` from one fresh stream.

    k larger than the demonstration count D is refused at once, before any draw: a row
    cannot hold more distinct demonstrations than there are.  The original built such
    rows with repetition (``index_set(k, D, allow_repetition=True)``, k independent
    uniform indexes) and then returned all-zero results; ``allow_repetition=True`` builds
    those rows (at a cost of k x rows draws).
    """

    def __init__(self, k: int, demonstration_count: int, rows: int, *, allow_repetition: bool = False) -> None:
        k = check_k(k)
        demonstration_count = check_int(demonstration_count, "demonstration_count", minimum=0)
        rows = check_int(rows, "rows", minimum=0)
        if k > demonstration_count and not allow_repetition:
            raise InvalidValueError(f"k = {k} is larger than the demonstration set ({demonstration_count} rows): "
                                    f"a prompt holds at most {demonstration_count} distinct demonstrations")
        self.k = k
        self.demonstration_count = demonstration_count
        self._repeat = k > demonstration_count
        self._stream = fresh_stream()
        self._rows: List[List[int]] = default_rows(k, demonstration_count, rows, self._repeat)
        self._default_rows = list(self._rows)
        self._stream.state = _DRAWN[(k, demonstration_count, self._repeat)][1][rows]
        self._default_state = self._stream.state

    def _draw_row(self) -> List[int]:
        return self._stream.index_set(self.k, self.demonstration_count, allow_repetition=self._repeat)

    def reset(self) -> None:
        """Back to the default rows and the stream state right after them."""
        self._rows = list(self._default_rows)
        self._stream.state = self._default_state

    def resample(self, keep: Callable[[int, List[int]], bool], feasible: Callable[[int], bool],
                 max_attempts: int = 10_000_000) -> None:
        """Redraw every row that ``keep`` rejects until a draw is accepted.

        The rejected rows are listed first, then redrawn in ascending order with the
        sampler's own stream, continuing where it stands (every rejected draw consumes
        stream state).  A row for which ``feasible`` says no valid draw exists raises
        instead of looping forever.
        """
        washed = [i for i, row in enumerate(self._rows) if not keep(i, row)]
        for i in washed:
            if not feasible(i):
                raise InvalidValueError(f"query {i}: no demonstration row of {self.k} can satisfy the "
                                        "in/out-of-domain condition with this demonstration set")
            for _ in range(max_attempts):
                row = self._draw_row()
                if keep(i, row):
                    self._rows[i] = row
                    break
            else:
                raise OperationError(f"query {i}: no valid demonstration row after {max_attempts} draws")


class fixed_sampler(_RowSampler):
    """A user-given sampler (validated by :func:`validate_sampler`)."""

    def __init__(self, rows: Sequence[Sequence[int]]) -> None:
        self._rows = [list(row) for row in rows]

    @property
    def k(self) -> int:
        """The length of the first row (read from the rows, not stored beside them)."""
        return len(self._rows[0]) if self._rows else 0


def validate_sampler(sampler, k: Optional[int], test_count: int, demonstration_count: int,
                     dataset: str, counted: str = "") -> List[List[int]]:
    """Copy a user sampler, checking its shape and index ranges; errors name the row.

    ``test_count`` is the number of rows expected (``counted`` says what they count when
    that is not the test items).
    """
    try:
        rows = list(sampler)
    except TypeError as exc:
        raise InvalidTypeError(f"the sampler must be a list of index lists, got {type(sampler).__name__} "
                               f"(dataset {dataset!r})") from exc
    if len(rows) != test_count:
        if counted:
            raise InvalidValueError(f"the sampler needs one row per query: got {len(rows)} rows, expected {test_count} "
                                    f"{counted} (dataset {dataset!r})")
        raise InvalidValueError(f"The length of the sampler should be equal to the number of the test samples: "
                                f"got {len(rows)} rows, expected {test_count} (dataset {dataset!r})")
    copied: List[List[int]] = []
    for q, row in enumerate(rows):
        if hasattr(row, "tolist"):
            row = row.tolist()
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise InvalidTypeError(f"sampler row {q} must be a list of ints, got {type(row).__name__} (dataset {dataset!r})")
        row = list(row)
        if k is not None and len(row) != k:
            raise InvalidValueError(f"The length of each sample in the sampler should be equal to k: row {q} has "
                                    f"{len(row)} indexes, k = {k} (dataset {dataset!r})")
        for index in row:
            if not is_int(index):
                raise InvalidTypeError(f"sampler row {q} holds {index!r}, expected an int demonstration index "
                                       f"(dataset {dataset!r})")
            if not 0 <= index < demonstration_count:
                raise InvalidValueError(f"sampler row {q} holds index {index}, outside the demonstration set "
                                        f"[0, {demonstration_count}) (dataset {dataset!r})")
        copied.append([int(i) for i in row])
    return copied
