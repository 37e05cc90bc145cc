"""The simple retrievers: zero-shot, fixed demonstrations, random demonstrations."""
from collections import Counter
from typing import Dict, List, Optional, Sequence, Set

from ..errors import InvalidTypeError, InvalidValueError
from ..rng import StableRandom
from ..standard import LCG_MODULUS, SEED
from ..validation import check_bool, check_int
from .base import Retriever, _allowed, _check_pool, _label_groups, _slot_labels


class ZeroRetriever(Retriever):
    """Zero-shot: every query gets no demonstration.

    ``k`` is validated but ignored, so the retriever plugs into an experiment
    whatever its configured k.
    """

    def _select(self, _demo_texts, _demo_labels, query_texts, _k, _banned):
        return [[] for _ in query_texts]


class FixKRetriever(Retriever):
    """The same demonstrations, in the given order, for every query.

    ``k`` is validated but ignored: rows have ``len(fix_id_list)`` entries.
    Repeated indexes are kept as given.  With ``dedup=True`` a fixed
    demonstration equal to the query is dropped from that query's row only
    (that row is one shorter); pass ``dedup=False`` to keep rows identical.
    """

    def __init__(self, fix_id_list: Sequence[int], *, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        if isinstance(fix_id_list, (str, bytes)) or not isinstance(fix_id_list, Sequence):
            raise InvalidTypeError(f"fix_id_list must be a sequence of ints{self._at()}, got {type(fix_id_list).__name__}")
        for position, index in enumerate(fix_id_list):
            index = check_int(index, f"fix_id_list[{position}]", at=self._at())
            if index < 0:
                raise InvalidValueError(f"fix_id_list[{position}] = {index} is negative; indexes start at 0")
        self.fix_id_list = [int(index) for index in fix_id_list]

    def _parameters(self):
        return {"fix_id_list": list(self.fix_id_list), **super()._parameters()}

    def _select(self, demo_texts, _demo_labels, _query_texts, _k, banned):
        for position, index in enumerate(self.fix_id_list):
            if index >= len(demo_texts):
                raise InvalidValueError(f"fix_id_list[{position}] = {index} is out of range: "
                                        f"expected 0 <= index < {len(demo_texts)} (number of demonstrations)")
        return [[i for i in self.fix_id_list if i not in ban] for ban in banned]


class RandomRetriever(Retriever):
    """k random distinct demonstrations per query, reproducible by ``seed``.

    One stable-generator stream seeded with ``seed`` draws the rows in query
    order (same inputs and seed, same sampler).  The stream is built without
    StableRandom's tampering warning: using a retriever already makes the run
    non-standard and the seed is recorded by :meth:`describe`.
    ``ice_num`` (OpenICL's name), when set, replaces the ``k`` of build_sampler.
    ``allow_repetition=True`` draws with replacement, so k may exceed the pool.
    ``balanced=True`` spreads k over labels (see :func:`_slot_labels`); the row
    follows the label slots, each label's picks in draw order.
    """

    def __init__(self, ice_num: Optional[int] = None, seed: int = SEED, *, allow_repetition: bool = False,
                 balanced: bool = False, dedup: bool = True) -> None:
        super().__init__(dedup=dedup)
        self.ice_num = None if ice_num is None else check_int(ice_num, "ice_num", minimum=0, at=self._at())
        self.seed = check_int(seed, "seed", at=self._at())
        self.allow_repetition = check_bool(allow_repetition, "allow_repetition", at=self._at())
        self.balanced = check_bool(balanced, "balanced", at=self._at())

    def _parameters(self):
        return {"ice_num": self.ice_num, "seed": self.seed, "allow_repetition": self.allow_repetition,
                "balanced": self.balanced, **super()._parameters()}

    def _select(self, demo_texts, demo_labels, _query_texts, k, banned):
        k = k if self.ice_num is None else self.ice_num
        stream = StableRandom.__new__(StableRandom)  # no tampering warning, see class docstring
        stream.state = self.seed % LCG_MODULUS
        groups = _label_groups(demo_labels) if self.balanced and k else {}
        rows = []
        for q, ban in enumerate(banned):
            if groups:
                rows.append(self._balanced_row(stream, groups, k, q, ban))
            else:
                pool = _allowed(range(len(demo_texts)), ban)
                if not self.allow_repetition:
                    _check_pool(k, len(pool), q)
                elif k and not pool:
                    _check_pool(k, 0, q)
                rows.append(stream.n_elements(pool, k, self.allow_repetition))
        return rows

    def _balanced_row(self, stream: StableRandom, groups: Dict[str, List[int]], k: int, q: int,
                      ban: Set[int]) -> List[int]:
        if not self.allow_repetition:
            _check_pool(k, sum(len(members) for members in groups.values()) - len(ban), q)
        slots = _slot_labels(list(groups), k, q)
        picks = {}
        for label, quota in Counter(slots).items():
            pool = _allowed(groups[label], ban)
            if not self.allow_repetition or not pool:
                _check_pool(quota, len(pool), q, label)
            picks[label] = iter(stream.n_elements(pool, quota, self.allow_repetition))
        return [next(picks[label]) for label in slots]
