"""Which test items a lite run asks: a seeded, label-stratified share of every sub-benchmark's test items.

A :class:`LiteSample` is the picker a lite run hands to
:meth:`StaICC.engine.selection.QuerySubset.lite`: for each (sub-benchmark, dataset) it takes
``fraction`` of the test items (``staicc run --lite 0.125``), or ``items`` of them
(``--lite-items 64``), with :func:`~StaICC.sampling.subsets.pick_test_items`.  It has no
seed: the subset is the same for every model, every run and every Python, so two lite runs
at one fraction evaluate the same items and compare paired, and a larger fraction's subset
holds a smaller one's (the subsets are nested).

The items' random keys depend on the dataset and the item's position, not on the
sub-benchmark, wherever the items carry the ground truth: Normal, Post_bias and GLER then
evaluate the same test items of a dataset, so their shared prompts (Post_bias's are
Normal's, GLER's first pass is Normal's) are asked once, as in a full run, and a lite run
asks about ``fraction`` of the full run's distinct prompts.  Each sub-benchmark's subset is
still a stratified sample of its own test items, which is all its estimates assume.  The
pseudo queries of Contextual_bias and Domain_bias carry no label; they are sampled without
strata, keyed by the sub-benchmark too.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..spec import SPECS
from ..validation import check, Integer
from .subsets import check_fraction, pick_test_items


def percent(fraction: float) -> str:
    """0.125 -> "12.5 %": a fraction as people read it, without trailing zeros."""
    return f"{fraction * 100:g} %"


@dataclass(frozen=True)
class LiteSample:
    """A lite run's items: ``fraction`` of each (sub-benchmark, dataset)'s test items, or ``items`` of them."""

    fraction: Optional[float] = None
    items: Optional[int] = None

    def __post_init__(self) -> None:
        if (self.fraction is None) == (self.items is None):
            raise InvalidValueError("a lite run takes a fraction of the test items or a number of items, exactly one")
        if self.fraction is not None:
            object.__setattr__(self, "fraction", check_fraction(self.fraction))
        else:
            object.__setattr__(self, "items", check(self.items, Integer(1, text="a positive integer"),
                                                    "the number of test items of a lite run"))

    @property
    def description(self) -> str:
        """What the results' departures from the standard say: "lite run: 12.5 % of the test items"."""
        if self.fraction is not None:
            return f"lite run: {percent(self.fraction)} of the test items"
        return f"lite run: {self.items} test items of each sub-benchmark and dataset"

    def share_of(self, total: int) -> float:
        """The share of ``total`` test items this sample evaluates (the fraction, or items / total)."""
        if self.fraction is not None:
            return self.fraction
        return min(1.0, self.items / total) if total else 1.0  # type: ignore[operator]

    def __call__(self, benchmark: str, dataset: str, labels: Sequence[int]) -> List[int]:
        """The sorted test positions ``benchmark`` evaluates on ``dataset`` (``labels``: one per test item)."""
        stratified, identity = items_identity(benchmark, dataset, labels)
        if self.fraction is not None:
            return pick_test_items(stratified, identity, fraction=self.fraction)
        return pick_test_items(stratified, identity, count=self.items)


def items_identity(benchmark: str, dataset: str, labels: Sequence[int]) -> Tuple[object, Tuple[str, ...]]:
    """(what the picker stratifies: the labels, or the number of unlabelled items; the items' identity)."""
    spec = SPECS.get(benchmark)
    if spec is not None and spec.pseudo_query is not None:
        return len(labels), (benchmark, dataset)
    return list(labels), (dataset,)
