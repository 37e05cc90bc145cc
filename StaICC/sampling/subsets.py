"""Seeded, label-stratified subsets of a dataset's test items: the items a lite run asks.

Every test position i of a (sub-benchmark, dataset) gets a fixed random key, the first 8
bytes of SHA-256("staicc-subset", salt, sub-benchmark, dataset, i): the same on every
platform and Python version, for every model and run, and independent of the other
items.  The positions are then put in one fixed order, and a subset of n items is the
first n of that order.  So a subset depends only on (labels, size, identity, salt), and
subsets of one identity are **nested**: the 6.25 % subset lies inside the 12.5 % one.

The order stratifies by label (the ground truth).  Within a label the positions go by
key.  Across labels, the first two positions of every label come first (the first of each
label, then the second: a subset of at least twice as many items as labels holds two of
each, so that each label's spread can be estimated); after them the r-th position of a
label with N_s items has priority (2r + 1) / (2 N_s) (Webster's divisor rule, ties broken
by key).  A prefix of n items therefore holds about n N_s / N items of each label, as a
proportional stratified sample does, except that a rare label is not left out; the
estimators weight each label by its share of the full test set, so the rounding and the
minimum do not bias them.  Items without a label (the pseudo queries of Contextual_bias
and Domain_bias) form a single stratum: the subset is a simple random one.

Only the standard library is used; sizes are computed in exact fractions.
"""
import hashlib
from fractions import Fraction
from typing import Dict, Hashable, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..validation import check, Integer, Real

#: what an item's label may be: an int (the ground truth) or None (no label)
Label = Optional[Hashable]
#: items of every label that come before the proportional allocation
MINIMUM_PER_LABEL = 2


def item_key(identity: Sequence[str], position: int, salt: str = "") -> int:
    """The fixed random key of one test position (a 64-bit integer)."""
    text = "\x1f".join(["staicc-subset", salt, *identity, str(position)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _labels(labels: Union[int, Sequence[Label]]) -> List[Label]:
    if isinstance(labels, bool):
        raise InvalidTypeError(f"labels must be a sequence of labels or a number of unlabelled items, got {labels!r}")
    if isinstance(labels, int):
        return [None] * check(labels, Integer(0), "the number of test items")
    return list(labels)


def stratified_order(labels: Union[int, Sequence[Label]], identity: Sequence[str], salt: str = "") -> List[int]:
    """Every test position, in the order subsets take them (see the module docstring).

    ``labels``: each test position's label (None: unlabelled), or a number of unlabelled
    items; ``identity``: what the items belong to, e.g. ``("Normal", "TREC")``.
    """
    values = _labels(labels)
    if len(values) >= 1 << 25:
        raise InvalidValueError(f"at most {1 << 25} test items can be ordered, got {len(values)}")
    keys = [item_key(identity, i, salt) for i in range(len(values))]
    strata: Dict[Label, List[int]] = {}
    for i, label in enumerate(values):
        strata.setdefault(label, []).append(i)
    ranked: List[Tuple[int, float, int, int]] = []
    for members in strata.values():
        members.sort(key=lambda i: (keys[i], i))
        size = len(members)
        # (2r + 1) / (2 N_s) as a double orders exactly: two such fractions with denominators below 2**26
        # differ by more than 2**-52, and equal ones round to the same double
        ranked.extend((min(rank, MINIMUM_PER_LABEL), (2 * rank + 1) / (2 * size), keys[i], i)
                      for rank, i in enumerate(members))
    ranked.sort()
    return [i for *_, i in ranked]


def subset_size(total: int, fraction: float) -> int:
    """round(fraction * total), halves up, at least 1 of a non-empty set: the items a fraction asks."""
    check_fraction(fraction)
    if total <= 0:
        return 0
    return max(1, min(total, int(Fraction(fraction) * total + Fraction(1, 2))))


def check_fraction(fraction: float) -> float:
    """A fraction of test items: a number in (0, 1]; ValueError otherwise."""
    return check(fraction, Real(0, 1, closed="right", text="a number in (0, 1]"), "the fraction of test items")


def pick_test_items(labels: Union[int, Sequence[Label]], identity: Sequence[str], *,
                    fraction: Optional[float] = None, count: Optional[int] = None, salt: str = "") -> List[int]:
    """The sorted test positions of a stratified subset: ``fraction`` of the items, or ``count`` of them.

    The same arguments give the same subset on every platform and Python version; a larger
    fraction (or count) gives a superset.  ``salt`` draws another subset of the same design
    (the coverage study uses one per seed); the lite runs use the empty salt.
    """
    values = _labels(labels)
    if (fraction is None) == (count is None):
        raise InvalidValueError("give exactly one of fraction= and count=")
    if count is not None:
        size = min(check(count, Integer(1, text="a positive integer"), "count"), len(values))
    else:
        size = subset_size(len(values), fraction)  # type: ignore[arg-type]
    return sorted(stratified_order(values, identity, salt)[:size])
