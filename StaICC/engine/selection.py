"""What a run asks, and what it does with the answers: the small frozen values the one runner takes.

What to ask (the runner's ``selection``):

- :class:`Everything` (the default): every request of every work;
- :class:`Shard`: shard ``index`` of ``count`` of the run's distinct requests, placed whole by
  ``unit`` (a query with all its passes, or a backend call of the one-process run; see
  :mod:`StaICC.engine.sharding`); parsed and checked once, from ``"I/N"`` on the command line;
- :class:`Nothing`: a dry run: the works are planned, their prompts written dataset by
  dataset through the same dedup as a run and counted (prompts, distinct, already cached,
  to ask), and nothing is asked (``Nothing(shard)``: one shard's part of the run).

Which test items a run evaluates is a :class:`QuerySubset`.  It is applied where the works
are planned (a sub-benchmark's ``test_items=``, ``build_suite(..., test_items=...)``), not by
the runner, because what a work is depends on the number of items it evaluates: the
consistency metrics loop over the items, Format_spread's intervals resample them and the
preflight's minimum for the calibration error counts them.  A subset keeps every repeat
and every pass of each chosen item, with the demonstration rows those queries have in the
full run, and the metrics are computed on the subset.  Three ways to make one:

- ``QuerySubset.first(n)``: the first ``n`` test items of every dataset (``--limit n``);
- ``QuerySubset.of({(benchmark, dataset): items, ...})``: the given test indexes, in that
  order; a key ``(None, dataset)`` applies to every sub-benchmark of the dataset, and a
  dataset not named keeps all its items;
- ``QuerySubset.picked(pick, description)``: ``pick(benchmark, dataset, labels)`` returns
  the test indexes to evaluate (``labels``: the label index of each test item, so a seeded,
  label-stratified sample can be drawn; return None to keep every item);
- ``QuerySubset.lite(fraction)`` / ``QuerySubset.lite(items=n)``: a lite run's seeded,
  label-stratified subset (:class:`~StaICC.sampling.lite.LiteSample`), the same for every
  model and run.

What to do with the answers (the runner's ``policy``): :class:`AnswerPolicy` —
``summarize`` (the results; ``False``: the answers only go to the cache, as a shard's do)
and ``write_out`` (print the first N prompts of each sub-benchmark and dataset as the
runner writes them).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from ..validation import check, check_exact_sum, check_int, Options
from ..errors import InvalidTypeError, InvalidValueError

UNITS = ("query", "call")

#: ``pick(benchmark, dataset, labels)`` -> the test indexes to evaluate (None: all)
Picker = Callable[[str, str, Sequence[int]], Optional[Sequence[int]]]


@dataclass(frozen=True)
class Everything:
    """Ask every request of every work (the default)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based), with ``unit`` ``"query"`` or ``"call"``; checked on construction."""

    index: int
    count: int
    unit: str = "query"

    def __post_init__(self) -> None:
        count = check_int(self.count, "the shard count", minimum=1)
        check_int(self.index, "the shard index", minimum=0, maximum=count - 1)
        check(self.unit, Options(UNITS, text=f"one of {', '.join(UNITS)}"), "the shard unit")

    @classmethod
    def parse(cls, text: str, unit: str = "query") -> "Shard":
        """``"I/N"`` -> ``Shard(I, N, unit)`` with ``0 <= I < N``; anything else is a ValueError saying the form."""
        index, sep, count = str(text).partition("/")
        if not sep or not index.strip().isdigit() or not count.strip().isdigit():
            raise InvalidValueError(f"--shard must be I/N with integers 0 <= I < N (for example 0/4), got {text!r}")
        if int(count) >= 1 and int(index) >= int(count):
            raise InvalidValueError(f"--shard {text.strip()}: shards count from 0, so I runs from 0 to {int(count) - 1} "
                                    f"(--shard 0/{int(count)} ... {int(count) - 1}/{int(count)})")
        return cls(int(index), int(count), unit)

    def check_units(self, units: int, what: str) -> None:
        """Refuse more shards than the run has units (``what`` names them): before anything is allocated."""
        if self.count > max(units, 1):
            raise InvalidValueError(f"--shard {self.index}/{self.count}: the run has {units} {what}, so it can be split "
                                    f"into at most {units} shards")


@dataclass(frozen=True)
class Nothing:
    """A dry run: plan, write and count through the runner's own dedup; ask nothing.

    ``shard``: count only that shard's part (its plan, and so its digest, as the shard makes it).
    ``measure(backend, requests)``: called with each batch of requests the run would ask the
    backend (distinct, not in the cache, in the order the run asks them): what a cost estimate
    counts (:mod:`StaICC.backends.token_counts`).  Without it, and without a cache, no prompt
    is written.
    """

    shard: Optional[Shard] = None
    measure: Optional[Callable[[Any, Sequence[Any]], None]] = field(default=None, compare=False)


Selection = Union[Everything, Shard, Nothing]
EVERYTHING = Everything()


@dataclass(frozen=True)
class QuerySubset:
    """Which test items each (sub-benchmark, dataset) evaluates (see the module docstring)."""

    first_count: Optional[int] = None
    chosen: Tuple[Tuple[Tuple[Optional[str], str], Tuple[int, ...]], ...] = ()
    pick: Optional[Picker] = None
    description: str = ""

    @classmethod
    def first(cls, count: int) -> "QuerySubset":
        return cls(first_count=check_int(count, "the number of test items", minimum=1))

    @classmethod
    def of(cls, items: Mapping[Tuple[Optional[str], str], Sequence[int]], description: str = "") -> "QuerySubset":
        chosen = tuple((key, tuple(values)) for key, values in items.items())
        return cls(chosen=chosen, description=description or "a chosen subset")

    @classmethod
    def picked(cls, pick: Picker, description: str) -> "QuerySubset":
        if not callable(pick):
            raise InvalidTypeError(f"QuerySubset.picked needs a function (benchmark, dataset, labels) -> items, got "
                                   f"{type(pick).__name__}")
        return cls(pick=pick, description=description)

    @classmethod
    def lite(cls, fraction: Optional[float] = None, *, items: Optional[int] = None) -> "QuerySubset":
        """A lite run's items: ``fraction`` of each (sub-benchmark, dataset)'s test items, or ``items`` of them."""
        from ..sampling.lite import LiteSample
        sample = LiteSample(fraction, items)
        return cls.picked(sample, sample.description)

    @property
    def lite_sample(self) -> Any:
        """The :class:`~StaICC.sampling.lite.LiteSample` of a lite run's subset (None for any other subset)."""
        from ..sampling.lite import LiteSample
        return self.pick if isinstance(self.pick, LiteSample) else None

    def items_for(self, benchmark: str, dataset: str, labels: Sequence[int]) -> Optional[Tuple[int, ...]]:
        """The test indexes ``benchmark`` evaluates on ``dataset`` (None: every item); ``labels``: one per test item."""
        if self.first_count is not None:
            return tuple(range(min(self.first_count, len(labels))))
        if self.pick is not None:
            picked = self.pick(benchmark, dataset, labels)
            return None if picked is None else tuple(picked)
        table: Dict[Tuple[Optional[str], str], Tuple[int, ...]] = dict(self.chosen)
        found = table.get((benchmark, dataset), table.get((None, dataset)))
        return found

    def departure(self, evaluated: int, available: int) -> str:
        """What the results' departures from the standard say about this subset."""
        if self.first_count is not None:
            return f"limited to the first {self.first_count} test items"
        if self.lite_sample is not None:  # the same words on every dataset: one notice line for the run
            return self.description
        return f"evaluated {evaluated} of {available} test items ({self.description})"


@dataclass(frozen=True)
class AnswerPolicy:
    """What the runner does with the answers: summarize them (else only store them), and print prompts.

    ``write_out``: print the first N prompts of each (sub-benchmark, dataset) as they are
    written; ``out``: where those lines go (default: standard output). ``exact_sum``: "standard" (a
    model backend's rows take the softmax branch always) or "original" (the original's exact check, to
    replicate a published run; see :mod:`StaICC.metrics.exact_sum`).
    """

    summarize: bool = True
    write_out: int = 0
    out: Optional[Callable[[str], None]] = None
    exact_sum: str = "standard"

    def __post_init__(self) -> None:
        check_int(self.write_out, "write_out", minimum=0)
        check_exact_sum(self.exact_sum)


SUMMARIZE = AnswerPolicy()
STORE_ONLY = AnswerPolicy(summarize=False)
