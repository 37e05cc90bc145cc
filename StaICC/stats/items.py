"""The records of one (sub-benchmark, dataset) arranged by test item, and the drawing of resamples.

The unit of resampling is the **test item**: the R repeats of an item (and its GLER
passes, its Template_sens templates, its Demo_sens demonstration sets) move together,
because they share the query; resampling prompts would understate the variance.
:class:`ItemTable` holds every record at [pass][repeat][item], so a resample of items
can be laid out exactly as the run laid out its rows (pass-major, then repeat-major).

Randomness: :class:`random.Random` seeded with a string built from the seed, the
sub-benchmark and the dataset gives ``4 * T * B`` random bytes at once; each
little-endian 32-bit word x becomes the item ``(x * T) >> 32`` (the multiply-shift
map, unbiased to within T / 2**32).  The numbers depend only on the seed, not on the
other datasets of the run, the Python version or whether NumPy decodes the bytes.
"""
import array
import math
import random
import sys
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..metrics import PredictionRows, argmax, is_probability_matrix, softmax
from ..numeric import softmax_unless_probabilities
from ..metrics.exact_sum import _probability_like as probability_like, divided_by_exact_sum
from ..numeric import CHECK
from ..metrics.scores import _bin_among, _ece_bounds
from ..standard import ECE_BINS

#: the ECE bin bounds, computed once (ece_bin recomputes them per call)
_ECE_BOUNDS = _ece_bounds(ECE_BINS)

from ..spec import SPECS

#: sub-benchmarks whose metric is the consistency over all passes of an item (from the spec table)
CONSISTENCY_BENCHMARKS = tuple(s.name for s in SPECS.values() if s.has_consistency)
#: sub-benchmarks whose numbers are regression slopes over label-noise passes (from the spec table)
SLOPE_BENCHMARKS = tuple(s.name for s in SPECS.values() if s.has_slopes)


def is_consistency(benchmark: str) -> bool:
    """Whether the sub-benchmark's metric is the consistency over all passes of an item (the spec table)."""
    spec = SPECS.get(benchmark)
    return spec is not None and spec.has_consistency


def is_slope(benchmark: str) -> bool:
    """Whether the sub-benchmark reports regression slopes over label-noise passes (the spec table)."""
    spec = SPECS.get(benchmark)
    return spec is not None and spec.has_slopes


class Draws(Sequence):
    """Resamples: a sequence of lists of item positions.

    When NumPy decoded them, ``matrix`` holds them as one array (resamples x items) and a
    list is made only for a resample that is read one at a time.
    """

    def __init__(self, rows: Optional[List[List[int]]] = None, matrix: Any = None) -> None:
        self._rows, self.matrix = rows, matrix
        self._counts: Any = None

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else len(self.matrix)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._rows[i] if self._rows is not None else self.matrix[i].tolist()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy
        return numpy.asarray(self.matrix if self.matrix is not None else self._rows, dtype=dtype)

    def counts(self, np: Any) -> Any:
        """How often each resample draws each item, then the identity resample (every item once): a
        (resamples + 1) x items float array, made once (a paired comparison resamples both runs with it)."""
        if self._counts is None:
            index = self.matrix if self.matrix is not None else np.asarray(self._rows, dtype=np.intp)
            B, T = index.shape
            counts = np.ones((B + 1, T))
            counts[:B] = np.bincount((np.arange(B)[:, None] * T + index).ravel(), minlength=B * T).reshape(B, T)
            self._counts = counts
        return self._counts


def draw_resamples(item_count: int, resamples: int, seed: int, *tags: str) -> Draws:
    """``resamples`` lists of ``item_count`` item positions drawn with replacement."""
    if item_count < 1 or resamples < 1:
        return Draws([[] for _ in range(max(resamples, 0))])
    rng = random.Random("/".join([str(seed), *tags]))
    data = rng.randbytes(4 * item_count * resamples)
    try:
        import numpy
    except ImportError:
        words = array.array("I")
        if words.itemsize != 4:
            words = array.array("L")  # pragma: no cover - platforms whose C int is not 32 bits
        words.frombytes(data)
        if sys.byteorder == "big":  # pragma: no cover
            words.byteswap()
        flat = [(x * item_count) >> 32 for x in words]
        return Draws([flat[r * item_count:(r + 1) * item_count] for r in range(resamples)])
    words = numpy.frombuffer(data, dtype="<u4").astype(numpy.uint64)
    words *= numpy.uint64(item_count)  # in place: x * T < 2**64, exact
    words >>= numpy.uint64(32)
    return Draws(matrix=words.view(numpy.int64).reshape(resamples, item_count))  # each < T: the same ints


class ItemTable:
    """The records of one dataset of one sub-benchmark, indexed [pass][repeat][item].

    ``normalized`` holds the rows the score metrics read: the standard softmaxes every
    row of a metric call unless all of them pass the exact probability check, so the
    decision is taken once on the rows the run's metric saw together (one pass; all
    passes for the consistency benchmarks) and then kept for every resample.
    """

    @classmethod
    def of_part(cls, part: Any, dataset: str) -> "ItemTable":
        """The table of one dataset of a loaded run's sub-benchmark, under the exact-sum rule its rows took."""
        from ..metrics.exact_sum import recorded_rule
        return cls(part.name, dataset, part.records[dataset], recorded_rule(part.metadata, dataset))

    def __init__(self, benchmark: str, dataset: str, records: Sequence[Dict[str, Any]], rule: str = CHECK) -> None:
        self.rule = rule  # the exact-sum rule the run's rows took (recorded_rule): the softmax branch, or the check
        if not records:
            raise InvalidValueError(f"{benchmark} / {dataset}: no records")
        self.benchmark, self.dataset = benchmark, dataset
        *fields, hash_column = _fields(records)
        passes, repeats, tests, labels, predictions, queries = fields
        self.items = sorted(set(tests))
        self.passes = 1 + max(passes)
        self.repeats = 1 + max(repeats)
        position = {t: i for i, t in enumerate(self.items)}
        T = len(self.items)
        expected = self.passes * self.repeats * T
        if len(records) != expected:
            raise InvalidValueError(f"{benchmark} / {dataset}: {len(records)} records, expected {expected} "
                                    f"({self.passes} passes x {self.repeats} repeats x {T} test items)")
        self.rows: List[List[List[Any]]] = [[[None] * T for _ in range(self.repeats)] for _ in range(self.passes)]
        self.labels: List[Optional[int]] = [None] * T
        slots = array.array("q", bytes(8 * len(records)))  # each record's place, p * repeats * T + k * T + i
        width = len(predictions[0])
        for j, (p, k, test, label, prediction, query) in enumerate(zip(*fields)):
            i = position[test]
            if self.rows[p][k][i] is not None:
                raise InvalidValueError(f"{benchmark} / {dataset}: two records for pass {p}, repeat {k}, "
                                        f"test item {test} (query_index {query})")
            if len(prediction) != width:
                raise InvalidValueError(f"{benchmark} / {dataset}, query_index {query}: prediction of "
                                        f"{len(prediction)} scores, the others have {width}")
            if self.labels[i] is None:
                self.labels[i] = label
            elif self.labels[i] != label:
                raise InvalidValueError(f"{benchmark} / {dataset}: test item {test} has labels "
                                        f"{self.labels[i]} and {label} in different records")
            self.rows[p][k][i] = [float(v) for v in prediction]
            slots[j] = (p * self.repeats + k) * T + i
        self._hashes: Any = partial(_laid_out, hash_column, slots, self.passes, self.repeats, T)
        self.width = width
        self._finish()

    def restricted(self, positions: Sequence[int]) -> "ItemTable":
        """The table of some of its items (positions into :attr:`items`, kept in item order): what a run
        of only those test items would have recorded, with the softmax decision taken on them alone."""
        chosen = sorted(set(positions))
        if not chosen or chosen[0] < 0 or chosen[-1] >= len(self.items):
            raise InvalidValueError(f"{self.benchmark} / {self.dataset}: positions must be within 0..{len(self.items) - 1}")
        table = ItemTable.__new__(ItemTable)
        table.benchmark, table.dataset, table.rule = self.benchmark, self.dataset, self.rule
        table.items = [self.items[i] for i in chosen]
        table.passes, table.repeats, table.width = self.passes, self.repeats, self.width
        table.rows = [[[rep[i] for i in chosen] for rep in reps] for reps in self.rows]
        table._hashes = partial(_chosen_hashes, self, chosen)
        table.labels = [self.labels[i] for i in chosen]
        table._finish(self, chosen)
        return table

    @property
    def hashes(self) -> List[List[List[Any]]]:
        """Each record's ``prompt_sha256`` at [pass][repeat][item]: laid out when first read (a run in memory
        writes its prompts again to hash them, which only the readers of the hashes need)."""
        if callable(self._hashes):
            self._hashes = self._hashes()
        return self._hashes

    def _finish(self, whole: Optional["ItemTable"] = None, chosen: Sequence[int] = ()) -> None:
        """The normalized rows and per-row summaries, from the rows and labels.

        ``whole``: the table this one restricts to the positions ``chosen``; where it took the
        same softmax decision, its normalized rows and summaries are reused (a row's softmax
        does not depend on the other rows).
        """
        self.normalized = self._normalize(is_consistency(self.benchmark), whole, chosen)
        summaries = []
        for p, norm in enumerate(self.normalized):
            if whole is not None and whole.normalized[p] is not whole.rows[p] and norm is not self.rows[p]:
                summaries.append([[rep[i] for i in chosen] for rep in whole.summaries[p]])
            else:
                summaries.append([[_row_summary(row, self.labels[i]) for i, row in enumerate(rep)] for rep in norm])
        self.summaries = summaries

    def _normalize(self, together: bool, whole: Optional["ItemTable"] = None,
                   chosen: Sequence[int] = ()) -> List[List[List[List[float]]]]:
        """Each pass's rows as the metrics read them: softmaxed unless every row of the call passes the
        exact check (a call: one pass; every pass together for the consistency sub-benchmarks).  A pass
        kept raw is the very list of :attr:`rows`."""
        groups = [list(range(self.passes))] if together else [[p] for p in range(self.passes)]
        normalized: List[Any] = [None] * self.passes
        for group in groups:
            everything = PredictionRows([row for p in group for rep in self.rows[p] for row in rep], self.rule)
            keep = self.rule == CHECK and is_probability_matrix(everything)
            start, size = 0, self.repeats * len(self.items)
            for p in group:
                if keep:
                    normalized[p] = self.rows[p]
                elif whole is not None and whole.normalized[p] is not whole.rows[p]:
                    normalized[p] = [[rep[i] for i in chosen] for rep in whole.normalized[p]]
                else:  # every row softmaxed (at once where NumPy is loaded: the same bits), computed once
                    rows = softmax_unless_probabilities(everything)
                    normalized[p] = [rows[start + k * len(self.items):start + (k + 1) * len(self.items)]
                                     for k in range(self.repeats)]
                start += size
        return normalized

    def __len__(self) -> int:
        return len(self.items)

    def identity(self) -> List[int]:
        return list(range(len(self.items)))

    def layout(self, sample: Sequence[int], passes: Sequence[int]) -> Tuple[List[int], PredictionRows]:
        """Ground truth and rows of the sampled items, pass-major then repeat-major (the run's order)."""
        truth: List[int] = []
        rows = PredictionRows(rule=self.rule)
        normalized: List[List[float]] = []
        labels = self.labels
        for p in passes:
            for rep, norm in zip(self.rows[p], self.normalized[p]):
                for i in sample:
                    truth.append(labels[i])
                    rows.append(rep[i])
                    normalized.append(norm[i])
        rows.normalized = normalized
        return truth, rows

    def pass_zero_sums(self) -> Tuple[Any, Any]:
        """Per item of pass 0, as NumPy arrays: its rows summed over the repeats (items x labels), and whether one
        of them has a negative entry (1.0 or 0.0): what a weighted evaluation's Post_bias branch reads
        (:func:`~.lite_branches.softmaxed`), computed once, then kept (every subset of a study reads them)."""
        cached = self.__dict__.get("_pass_zero_sums")
        if cached is None:
            from ..extras import require
            np = require("numpy", "lite runs")
            raw = np.asarray(self.rows[0], dtype=np.float64)  # repeats x items x labels
            cached = self.__dict__["_pass_zero_sums"] = (raw.sum(axis=0),
                                                         (raw < 0).any(axis=2).any(axis=0).astype(np.float64))
        return cached

    def own_summaries(self, p: int) -> Tuple[List[List[Tuple[int, float, float, int]]],
                                             List[List[Tuple[int, float, float, int]]], List[int]]:
        """The row summaries of pass p on the model's own distribution, for both of its branches, and per item
        the number of its rows of pass p that are not probability-like (computed once, then kept).

        :func:`~StaICC.metrics.exact_sum.own_distribution` divides every row by its exact sum when all rows
        of the call are probability-like and softmaxes every row otherwise: a resample takes the first
        branch (its own row alone, ``own_distribution([row])``) exactly when it draws no item counted here.
        """
        cache = self.__dict__.setdefault("_own", {})
        if p not in cache:
            rows, normalized, done = self.rows[p], self.normalized[p], self.summaries[p]
            reuse = normalized is not rows  # the pass's rows are softmaxed: their summaries are the softmax branch's

            def softmaxed(k: int, i: int) -> Tuple[int, float, float, int]:
                return done[k][i] if reuse else _row_summary(softmax(rows[k][i]), self.labels[i])

            alone = [[None] * len(self.items) for _ in rows]
            unlike = [0] * len(self.items)
            for k, rep in enumerate(rows):
                for i, row in enumerate(rep):
                    if probability_like(row):
                        own = divided_by_exact_sum(row)  # own_distribution([row])[0]: the very row when its sum is 1
                        alone[k][i] = done[k][i] if own is normalized[k][i] else _row_summary(own, self.labels[i])
                    else:
                        unlike[i] += 1
                        alone[k][i] = softmaxed(k, i)
            mixed = 0 < sum(unlike) < len(rows) * len(self.items)  # else the two branches' rows are the same
            cache[p] = (alone, [[softmaxed(k, i) for i in range(len(rep))] for k, rep in enumerate(rows)]
                        if mixed else alone, unlike)
        return cache[p]

    def correct(self, p: int = 0) -> List[bool]:
        """Per prompt of pass p (repeat-major): whether the argmax is the true label."""
        return [argmax(norm[i]) == self.labels[i] for norm in self.normalized[p] for i in range(len(self.items))]


def _fields(records: Sequence[Dict[str, Any]]) -> Tuple[Any, ...]:
    """(passes, repeats, test indexes, labels, predictions, query indexes) of the records, and a function
    giving their prompt hashes: read from the columns of the compact samples file, or of a run in memory
    (``statistics_columns``), without making a dict per record."""
    columns = getattr(records, "columns", None)
    if columns is not None:
        w = records.width
        flat = [math.nan if v is None else v for v in columns["prediction"]]
        predictions = [flat[i:i + w] for i in range(0, len(flat), w)]
        return (columns["pass"], columns["repeat"], columns["test_index"], columns["label"], predictions,
                columns["query_index"], lambda: columns["prompt_sha256"])
    if hasattr(records, "statistics_columns"):
        columns = records.statistics_columns(rows=True)
        return (columns["pass"], columns["repeat"], columns["test_index"], columns["label"], columns["prediction"],
                columns["query_index"], records.prompt_hashes)
    names = ("pass", "repeat", "test_index", "label", "prediction", "prompt_sha256", "query_index")
    passes, repeats, tests, labels, predictions, hashes, queries = ([r[n] for r in records] for n in names)
    return passes, repeats, tests, labels, predictions, queries, lambda: hashes


def _laid_out(column_of: Callable[[], Sequence[Any]], slots: Sequence[int], passes: int, repeats: int,
              T: int) -> List[List[List[Any]]]:
    """A column in record order (``column_of()``) placed at [pass][repeat][item] (``slots``: each record's
    flat place, ``(pass * repeats + repeat) * T + item``)."""
    flat: List[Any] = [None] * (passes * repeats * T)
    for slot, value in zip(slots, column_of()):
        flat[slot] = value
    return [[flat[(p * repeats + k) * T:(p * repeats + k + 1) * T] for k in range(repeats)] for p in range(passes)]


def _chosen_hashes(whole: ItemTable, chosen: Sequence[int]) -> List[List[List[Any]]]:
    """The hashes of a table's items at the positions ``chosen`` (a restricted table's)."""
    return [[[rep[i] for i in chosen] for rep in reps] for reps in whole.hashes]


def _row_summary(row: List[float], label: int) -> Tuple[int, float, float, int]:
    """(argmax, confidence, true-label probability, ECE bin) of a normalized row."""
    confidence = max(row)
    return argmax(row), confidence, row[label], _bin_among(confidence, _ECE_BOUNDS)
