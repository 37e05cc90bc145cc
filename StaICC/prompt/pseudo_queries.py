"""The pseudo-query generators: the queries of the Contextual and Domain bias benchmarks.

They live apart from the template and the writer because they are data sources, not
prompt text: a writer draws its query from one of them (``pseudo_query_generater``)
instead of from the test part.  Each has ``restart()`` so that every run of a benchmark
sees the same queries.
"""
from typing import Dict, Iterator, List, Optional, Tuple

from ..errors import InvalidValueError
from ..rng import fresh_stream
from ..validation import check, Integer
from .word_draws import WordTable, draw_queries, queries_per_block, query_at


class empty_query_generator:
    """Contextual bias: a query made of empty strings, one per input element, forever.

    The element count is that of the dataset's first row (the standard reads calibration
    row 0), looked up at first use so that building a benchmark reads no data.
    """

    def __init__(self, dataset) -> None:
        self.dataset = dataset

    def __iter__(self) -> Iterator[List[str]]:
        return self

    def __next__(self) -> List[str]:
        return [""] * self.dataset.input_element_numbers()

    def restart(self) -> None:
        """Nothing to restart: the generator has no state."""

    def fresh(self) -> "empty_query_generator":
        """A generator at its first query: this one (it has no state)."""
        return self


class _Drawn:
    """The queries drawn so far from a fresh stream for one (texts, length), and the stream state after them."""

    __slots__ = ("holder", "queries", "states", "table")

    def __init__(self, holder, state: int) -> None:
        self.holder, self.queries, self.states = holder, [], [state]  # states[n]: the stream after n queries
        self.table: Optional[WordTable] = None  # the texts split on single spaces, when first needed


def _texts_identity(rows) -> Tuple[Tuple, object]:
    """A key equal for equal texts of one process (a slice of a bundled draw: the draw and the range), and its holder."""
    table, start, stop = getattr(rows, "table", None), getattr(rows, "start", None), getattr(rows, "stop", None)
    if table is not None and isinstance(start, int) and isinstance(stop, int):
        return ("slice", id(table), start, stop), table
    return ("rows", id(rows)), rows


#: (id of the texts, length) -> what a fresh stream drew from them: every run (and every Domain_bias
#: of a process) reads the same queries, so they are drawn once; the entry holds the texts, so the id stays theirs
_DRAWN: Dict[Tuple[Tuple, int], _Drawn] = {}
_DRAWN_LIMIT = 32


class domain_query_generator:
    """Domain bias: queries of ``length`` words sampled from a dataset's texts.

    For each input element, ``length`` times: pick a row s = int_in_range(0, n - 1) (so the
    last row is never picked), split its text on single spaces (empty pieces kept), pick a
    piece w = int_in_range(0, pieces - 1) (never the last piece); the words are joined with
    one space.  Every run starts from a fresh stream (``restart()``), so every run sees the
    same queries (the original kept advancing it); they are therefore drawn once per texts
    and length in a process, a block at a time (``word_draws``), and read back afterwards.
    """

    def __init__(self, dataset, length: int) -> None:
        self.dataset = dataset
        self.length = check(length, Integer(0, text="a non-negative int"), "domain query length")
        self._issued = 0

    def __iter__(self) -> Iterator[List[str]]:
        return self

    def fresh(self) -> "domain_query_generator":
        """A new generator over the same texts, at the first query: a run reads it, this one stays where it is."""
        return domain_query_generator(self.dataset, self.length)

    def query(self, index: int) -> Tuple[str, ...]:
        """Query ``index`` of a fresh stream, drawn alone (the queries before it are not drawn)."""
        rows = self.dataset.table
        drawn = self._drawn(rows)
        if index < len(drawn.queries):
            return drawn.queries[index]
        if drawn.table is None:
            drawn.table = WordTable([[row[0][e] for row in rows] for e in range(len(rows[0][0]))])
        return query_at(drawn.table, self.length, drawn.states[0], index)

    def restart(self) -> None:
        """Start again from the first query of a fresh stream; drop the split texts (the queries stay)."""
        self._issued = 0
        rows = self.dataset.table
        if len(rows):
            self._drawn(rows).table = None

    def __next__(self) -> List[str]:
        rows = self.dataset.table
        if not len(rows):
            raise InvalidValueError(f"domain bias samples its pseudo-query words from the demonstration texts, but the "
                                    f"demonstration set {self.dataset.name!r} is empty: give it at least one row")
        drawn = self._drawn(rows)
        while len(drawn.queries) <= self._issued:  # an entry dropped meanwhile is drawn again from its start
            self._draw(drawn, rows)
        self._issued += 1
        return list(drawn.queries[self._issued - 1])

    @property
    def _stream(self):
        """The stream as it stands after the queries this generator gave since its last restart."""
        stream = fresh_stream()
        rows = self.dataset.table
        if len(rows):
            drawn = self._drawn(rows)
            if self._issued < len(drawn.states):
                stream.state = drawn.states[self._issued]
        return stream

    def _drawn(self, rows) -> _Drawn:
        identity, holder = _texts_identity(rows)
        key = (identity, self.length)
        drawn = _DRAWN.get(key)
        if drawn is None or drawn.holder is not holder:
            if len(_DRAWN) >= _DRAWN_LIMIT:
                _DRAWN.pop(next(iter(_DRAWN)))
            drawn = _DRAWN[key] = _Drawn(holder, fresh_stream().state)
        return drawn

    def _draw(self, drawn: _Drawn, rows) -> None:
        """The next block of queries after ``drawn``'s, with the stream state after each."""
        if drawn.table is None:
            drawn.table = WordTable([[row[0][e] for row in rows] for e in range(len(rows[0][0]))])
        count = queries_per_block(drawn.table.elements, self.length)
        queries, states = draw_queries(drawn.table, self.length, drawn.states[-1], count)
        drawn.queries += queries
        drawn.states += states
