"""The pseudo-query generators: the queries of the Contextual and Domain bias benchmarks.

They live apart from the template and the writer because they are data sources, not
prompt text: a writer draws its query from one of them (``pseudo_query_generater``)
instead of from the test part.  Each has ``restart()`` so that every run of a benchmark
sees the same queries.
"""
from typing import Iterator, List, Optional

from ..rng import StableRandom, fresh_stream
from ..standard import LCG_INCREMENT, LCG_MULTIPLIER
from ..validation import is_int


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


class domain_query_generator:
    """Domain bias: queries of ``length`` words sampled from a dataset's texts.

    For each input element, ``length`` times: pick a row s = int_in_range(0, n - 1) (so the
    last row is never picked), split its text on single spaces (empty pieces kept), pick a
    piece w = int_in_range(0, pieces - 1) (never the last piece); the words are joined with
    one space.  The stream is created at first use; ``restart()`` starts it afresh so that
    every run of a benchmark sees the same queries (the original kept advancing it).
    """

    def __init__(self, dataset, length: int) -> None:
        if not is_int(length) or length < 0:
            raise ValueError(f"domain query length must be a non-negative int, got {length!r}")
        self.dataset = dataset
        self.length = length
        self._stream: Optional[StableRandom] = None
        self._pieces: Optional[List[List[List[str]]]] = None

    def __iter__(self) -> Iterator[List[str]]:
        return self

    def restart(self) -> None:
        """Start the stream afresh and drop the per-run word cache."""
        self._stream = None
        self._pieces = None

    def __next__(self) -> List[str]:
        rows = self.dataset.table
        if not len(rows):
            raise ValueError(f"domain bias samples its pseudo-query words from the demonstration texts, but the "
                             f"demonstration set {self.dataset.name!r} is empty: give it at least one row")
        if self._stream is None:
            self._stream = fresh_stream()
        if self._pieces is None:  # split every text once, not once per sampled word
            self._pieces = [[row[0][e].split(" ") for row in rows] for e in range(len(rows[0][0]))]
        # Inlined int_in_range(0, n - 1): with u = X / 2**32 and n < 2**21 the product is
        # exact, so int((n - 1) * u) == ((n - 1) * X) >> 32.
        state = self._stream.state
        a, b, last = LCG_MULTIPLIER, LCG_INCREMENT, len(rows) - 1
        query = []
        for pieces_of_row in self._pieces:
            words: List[str] = []
            append = words.append
            for _ in range(self.length):
                state = (a * state + b) & 0xFFFFFFFF
                pieces = pieces_of_row[(last * state) >> 32]
                state = (a * state + b) & 0xFFFFFFFF
                append(pieces[((len(pieces) - 1) * state) >> 32])
            query.append(" ".join(words))
        self._stream.state = state
        return query
