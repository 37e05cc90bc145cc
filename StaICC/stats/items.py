"""The records of one (sub-benchmark, dataset) arranged by test item, and the drawing of resamples.

The unit of resampling is the **test item**: the R repeats of an item (and its GLER
passes, its Template_sens templates, its Demo_sens demonstration sets) move together,
because they share the query; resampling prompts would understate the variance.
:class:`ItemTable` holds every record at [pass][repeat][item], so a resample of items
can be laid out exactly as the run laid out its rows (pass-major, then repeat-major).

Randomness: :class:`random.Random` seeded with a string built from the seed, the
sub-benchmark and the dataset, drawing each index as ``int(random() * T)``; the numbers
depend only on the seed, not on the other datasets of the run or the Python version.
"""
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..metrics import PredictionRows, argmax, ece_bin, is_probability_matrix, softmax

from ..subbenchmarks.spec import SPECS

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


def draw_resamples(item_count: int, resamples: int, seed: int, *tags: str) -> List[List[int]]:
    """``resamples`` lists of ``item_count`` item positions drawn with replacement."""
    rng = random.Random("/".join([str(seed), *tags]))
    draw = rng.random
    return [[int(draw() * item_count) for _ in range(item_count)] for _ in range(resamples)]


class ItemTable:
    """The records of one dataset of one sub-benchmark, indexed [pass][repeat][item].

    ``normalized`` holds the rows the score metrics read: the standard softmaxes every
    row of a metric call unless all of them pass the exact probability check, so the
    decision is taken once on the rows the run's metric saw together (one pass; all
    passes for the consistency benchmarks) and then kept for every resample.
    """

    def __init__(self, benchmark: str, dataset: str, records: Sequence[Dict[str, Any]]) -> None:
        if not records:
            raise ValueError(f"{benchmark} / {dataset}: no records")
        self.benchmark, self.dataset = benchmark, dataset
        self.items = sorted({r["test_index"] for r in records})
        self.passes = 1 + max(r["pass"] for r in records)
        self.repeats = 1 + max(r["repeat"] for r in records)
        position = {t: i for i, t in enumerate(self.items)}
        T = len(self.items)
        expected = self.passes * self.repeats * T
        if len(records) != expected:
            raise ValueError(f"{benchmark} / {dataset}: {len(records)} records, expected {expected} "
                             f"({self.passes} passes x {self.repeats} repeats x {T} test items)")
        self.rows: List[List[List[Any]]] = [[[None] * T for _ in range(self.repeats)] for _ in range(self.passes)]
        self.hashes: List[List[List[Any]]] = [[[None] * T for _ in range(self.repeats)] for _ in range(self.passes)]
        self.labels: List[Optional[int]] = [None] * T
        width = len(records[0]["prediction"])
        for r in records:
            p, k, i = r["pass"], r["repeat"], position[r["test_index"]]
            if self.rows[p][k][i] is not None:
                raise ValueError(f"{benchmark} / {dataset}: two records for pass {p}, repeat {k}, "
                                 f"test item {r['test_index']} (query_index {r['query_index']})")
            if len(r["prediction"]) != width:
                raise ValueError(f"{benchmark} / {dataset}, query_index {r['query_index']}: prediction of "
                                 f"{len(r['prediction'])} scores, the others have {width}")
            if self.labels[i] is None:
                self.labels[i] = r["label"]
            elif self.labels[i] != r["label"]:
                raise ValueError(f"{benchmark} / {dataset}: test item {r['test_index']} has labels "
                                 f"{self.labels[i]} and {r['label']} in different records")
            self.rows[p][k][i] = [float(v) for v in r["prediction"]]
            self.hashes[p][k][i] = r["prompt_sha256"]
        self.width = width
        self.normalized = self._normalize(is_consistency(benchmark))
        self.summaries = [[[_row_summary(row, self.labels[i]) for i, row in enumerate(rep)] for rep in norm]
                          for norm in self.normalized]

    def _normalize(self, together: bool) -> List[List[List[List[float]]]]:
        groups = [list(range(self.passes))] if together else [[p] for p in range(self.passes)]
        normalized: List[Any] = [None] * self.passes
        for group in groups:
            everything = [row for p in group for rep in self.rows[p] for row in rep]
            keep = is_probability_matrix(everything)
            for p in group:
                normalized[p] = [rep if keep else [softmax(row) for row in rep] for rep in self.rows[p]]
        return normalized

    def __len__(self) -> int:
        return len(self.items)

    def identity(self) -> List[int]:
        return list(range(len(self.items)))

    def layout(self, sample: Sequence[int], passes: Sequence[int]) -> Tuple[List[int], PredictionRows]:
        """Ground truth and rows of the sampled items, pass-major then repeat-major (the run's order)."""
        truth: List[int] = []
        rows = PredictionRows()
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

    def correct(self, p: int = 0) -> List[bool]:
        """Per prompt of pass p (repeat-major): whether the argmax is the true label."""
        return [argmax(norm[i]) == self.labels[i] for norm in self.normalized[p] for i in range(len(self.items))]


def _row_summary(row: List[float], label: int) -> Tuple[int, float, float, int]:
    """(argmax, confidence, true-label probability, ECE bin) of a normalized row."""
    confidence = max(row)
    return argmax(row), confidence, row[label], ece_bin(confidence)
