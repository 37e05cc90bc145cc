"""Which demonstrations each query of an experimentor sees: k, the repeat count and the rows.

Each of these is stored here once.  The default rows are drawn when first read (so a
retriever or a custom sampler that replaces them costs no draw, and a huge k costs
nothing until a run refuses it); custom rows come with R = 1; in/out-of-domain modes
redraw rejected rows from the default stream.
"""
from typing import List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from .rows import demonstration_sampler, fixed_sampler, validate_sampler
from ..validation import check_int, check_k, is_int


def domain_conditions(triplet, k: int, want_label: bool):
    """``keep(q, row)`` and ``feasible(q)`` for in-domain (``want_label``) or out-of-domain rows.

    In-domain rows hold at least one demonstration with the query's true label;
    out-of-domain rows hold none.  ``feasible`` says whether any row can satisfy that, so
    that resampling raises instead of looping forever.
    """
    demo_labels = triplet.demonstration.label_indexes()
    test_labels = triplet.test.label_indexes()
    T, D = len(test_labels), len(demo_labels)

    def keep(q: int, row) -> bool:
        has = any(demo_labels[v] == test_labels[q % T] for v in row)
        return has if want_label else not has

    def feasible(q: int) -> bool:
        matching = sum(1 for label in demo_labels if label == test_labels[q % T])
        if want_label:
            return k > 0 and matching > 0
        return D - matching >= (1 if k > D else k)

    return keep, feasible


class Demonstrations:
    def __init__(self, triplet, k: int, repeat_times: int) -> None:
        self.triplet = triplet
        self.k = check_k(k)
        self.default_repeat_times = self.repeat_times = check_int(repeat_times, "repeat_times", minimum=1)
        self.sampler = None  # None: the default rows, drawn when first read
        self.test_items: Optional[Tuple[int, ...]] = None  # None: every test item

    @property
    def uses_default_rows(self) -> bool:
        return self.sampler is None or isinstance(self.sampler, demonstration_sampler)

    def current_sampler(self):
        """The sampler in use; the default one is drawn now if it was not yet."""
        if self.sampler is None:
            D = len(self.triplet.demonstration)
            # k > D: rows repeat demonstrations, as the standard draws them (a run refuses such k first)
            self.sampler = demonstration_sampler(self.k, D, self.query_count(), allow_repetition=self.k > D)
        return self.sampler

    def query_count(self) -> int:
        """Rows of the sampler: every test item in every repeat."""
        return len(self.triplet.test) * self.repeat_times

    def set_k(self, k: int) -> None:
        self.k = check_k(k)
        self.reset()

    def reset(self) -> None:
        """Back to the default rows and the construction-time repeat count."""
        self.repeat_times = self.default_repeat_times
        if isinstance(self.sampler, demonstration_sampler) and self.sampler.k == self.k:
            self.sampler.reset()
        else:
            self.sampler = None

    def use_rows(self, rows, *, allow_variable_length: bool, dataset: str) -> None:
        """Custom rows, one per test item (then R = 1), copied and checked before anything changes."""
        checked = validate_sampler(rows, None if allow_variable_length else self.k, len(self.triplet.test),
                                   len(self.triplet.demonstration), dataset)
        self.sampler = fixed_sampler(checked)
        self.repeat_times = 1

    def assign_rows(self, rows, *, dataset: str) -> None:
        """The original's ``exp.demonstration_sampler = rows``: one row per query (R·T of them), R kept.

        Rows are copied and checked (each of k indexes inside the demonstration set) before
        anything changes; the repeat count stays what it is, so query ``j + r·T`` reads row
        ``j + r·T`` as with the default rows.
        """
        checked = validate_sampler(rows, self.k, self.query_count(), len(self.triplet.demonstration), dataset,
                                   counted="queries (test items x repeats)")
        self.sampler = fixed_sampler(checked)

    def domain_resample(self, want_label: bool) -> None:
        self.reset()
        keep, feasible = domain_conditions(self.triplet, self.k, want_label)
        self.current_sampler().resample(keep, feasible)

    def limit(self, count: int) -> None:
        """Only the first ``count`` test items (all of them when there are fewer)."""
        count = check_int(count, "limit", minimum=1)
        self.test_items = tuple(range(min(count, len(self.triplet.test))))

    def select(self, items: Sequence[int], *, dataset: str) -> None:
        """Only test items ``items``: distinct indexes of the test part, in the order the run asks them."""
        T = len(self.triplet.test)
        chosen = tuple(items)
        for item in chosen:
            if not is_int(item) or not 0 <= item < T:
                raise InvalidValueError(f"test item {item!r} is not an index of the test part [0, {T}) (dataset {dataset!r})")
        if len(set(chosen)) != len(chosen):
            raise InvalidValueError(f"test items repeat an index (dataset {dataset!r}); give each at most once")
        if not chosen:
            raise InvalidValueError(f"no test item selected (dataset {dataset!r}); nothing to evaluate")
        self.test_items = tuple(int(item) for item in chosen)

    def test_count(self) -> int:
        """Test items a run evaluates (all of them unless a subset was selected)."""
        return len(self.triplet.test) if self.test_items is None else len(self.test_items)

    def evaluated(self) -> Sequence[int]:
        """The test indexes a run evaluates, in order."""
        return range(len(self.triplet.test)) if self.test_items is None else self.test_items

    def full_run(self) -> Optional[Tuple[int, Tuple[Tuple[int, ...], ...]]]:
        """When a subset of the test items is evaluated: (the full run's test count, every query's rows in the full
        run), so that the subset's prompts can be written over the full run's label-noise and pseudo-query
        streams; None otherwise."""
        if self.test_items is None:
            return None
        sampler = self.current_sampler()
        return len(self.triplet.test), tuple(tuple(sampler[q]) for q in range(self.query_count()))

    def plan_rows(self) -> Tuple[Tuple[int, ...], ...]:
        """The rows a run reads, repeat-major over the evaluated test items (each item's rows of a full run)."""
        sampler = self.current_sampler()
        T, items = len(self.triplet.test), self.evaluated()
        return tuple(tuple(sampler[j + r * T]) for r in range(self.repeat_times) for j in items)

    def ground_truth(self) -> List[int]:
        labels = self.triplet.test.label_indexes()
        return [labels[j] for j in self.evaluated()] * self.repeat_times
