"""Demonstration retrievers: choose which demonstrations each query sees.

The StaICC standard draws demonstrations at random with its stable generator.
Users of AISBench / OpenICL / LLMeBench also know *retrievers* (zero-shot,
fixed, random, BM25 "TopK", embedding TopK, MMR).  A retriever here produces a
*demonstration sampler*: one list of demonstration indexes per query, in prompt
order (the first index is the first demonstration of the prompt).  Any
retriever makes a run non-standard; the core records ``describe()`` in the
result metadata.

Conventions shared by every retriever:

* ``demonstrations`` are ``(inputs, label_text)`` rows, ``queries`` are
  ``(inputs, label_text_or_None)`` rows; multi-input rows are joined with " ".
  Query labels are never read (no label leakage).
* ``dedup=True`` (default): per query, a demonstration whose normalised text
  (lowercase, whitespace collapsed, stripped) equals the query's is never chosen.
* Asking for more demonstrations than a query can get raises ``ValueError``
  (``RandomRetriever(allow_repetition=True)`` excepted).
* Ranked retrievers break score ties by the lower demonstration index and, with
  the default ``order="ascending"``, put the most similar demonstration LAST,
  next to the query; ``order="descending"`` puts it first (OpenICL's order).

Modules: :mod:`.base` (this: the base class, argument checks and the ranking helpers
every retriever shares), :mod:`.simple` (zero, fixed, random), :mod:`.lexical` (BM25),
:mod:`.embedding` (embedding TopK), :mod:`.mmr` (maximal marginal relevance).  Only
the standard library is imported; sentence-transformers is imported lazily by
:func:`~StaICC.retrieval.embedding.sentence_transformers_embedder`.
"""
import heapq
import math
from collections import Counter
from operator import itemgetter
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..errors import InvalidTypeError, InvalidValueError
from ..validation import check_bool, check_choice, check_k, check_real

Sampler = List[List[int]]
Tokenizer = Callable[[str], List[str]]
EmbedFn = Callable[[Any], Any]

ORDERS = ("ascending", "descending")
METRICS = ("cosine", "dot")
_NO_BAN: Set[int] = frozenset()  # type: ignore[assignment]
_SCAN_TOP_K = 8  # up to this k, _best_positions locates values by scanning


class Retriever:
    """Base class: validates the inputs once, applies dedup, delegates the choice.

    Subclasses implement :meth:`_select`, which receives demonstration texts and
    labels, query texts, a validated ``k`` and, per query, the set of banned
    (duplicated) demonstration indexes.
    """

    def __init__(self, *, dedup: bool = True) -> None:
        self.dedup = check_bool(dedup, "dedup", at=self._at())

    def build_sampler(self, demonstrations: Sequence[Any], queries: Sequence[Any], k: int) -> Sampler:
        """One list of demonstration indexes per query, in prompt order."""
        k = check_k(k, at=f" in {type(self).__name__}.build_sampler")
        demo_texts, demo_labels = _read_rows(demonstrations, "demonstrations")
        query_texts, _ = _read_rows(queries, "queries")
        banned = _banned_per_query(demo_texts, query_texts) if self.dedup else [_NO_BAN] * len(query_texts)
        return self._select(demo_texts, demo_labels, query_texts, k, banned)

    def _at(self) -> str:
        """Where an argument error happened, for the shared checks' messages."""
        return f" in {type(self).__name__}"

    def describe(self) -> Dict[str, Any]:
        """JSON-serialisable record of the retriever for result metadata."""
        return {"retriever": type(self).__name__, "parameters": self._parameters()}

    def _parameters(self) -> Dict[str, Any]:
        return {"dedup": self.dedup}

    def _select(self, demo_texts: List[str], demo_labels: List[Optional[str]], query_texts: List[str],
                k: int, banned: List[Set[int]]) -> Sampler:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self._parameters().items())
        return f"{type(self).__name__}({params})"


# --------------------------------------------------------------------------
# argument checks shared by the retrievers
# --------------------------------------------------------------------------
def check_parameter(value: Any, name: str, owner: str, low: float, high: float) -> float:
    """A finite real number in ``[low, high]`` (bool refused), named with its retriever.

    Non-finite or out-of-range parameters would turn every score into NaN or infinity, and
    a ranking of NaN scores silently returns demonstrations in index order.
    """
    value = check_real(value, name, at=f" in {owner}")
    if not low <= value <= high:
        raise InvalidValueError(f"{owner}: {name} must be in [{low}, {high}], got {value:g}")
    return value


def check_order(order: Any, owner: str) -> str:
    return check_choice(order, "order", ORDERS, at=f" in {owner}")


def resolve_backend(backend: Any, owner: str) -> str:
    """``"auto"`` is ``"numpy"`` where NumPy is installed and ``"python"`` elsewhere (what ``describe()`` records)."""
    backend = check_choice(backend, "backend", ("auto", "python", "numpy"), at=f" in {owner}")
    if backend == "auto":
        import importlib.util
        return "numpy" if importlib.util.find_spec("numpy") is not None else "python"
    return backend


class Progress:
    """``Owner: what N/TOTAL`` on stderr, redrawn at most five times a second, for a retriever's long loop.

    Shown when ``enabled`` is True, or when it is None and stderr is a terminal (so tests and
    pipes see nothing); closed with a line break.
    """

    def __init__(self, total: int, what: str, enabled: Optional[bool] = None) -> None:
        import sys
        self.total, self.what, self.count, self.stream = total, what, 0, sys.stderr
        self.shown = bool(enabled) if enabled is not None else bool(getattr(sys.stderr, "isatty", lambda: False)())
        self._last = 0.0

    def update(self, n: int = 1) -> None:
        import time
        self.count += n
        now = time.monotonic()
        if self.shown and (now - self._last >= 0.2 or self.count >= self.total):
            self._last = now
            self.stream.write(f"\r{self.what} {self.count}/{self.total}")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def check_callable(fn: Any, name: str, what: str, owner: str) -> None:
    if not callable(fn):
        raise InvalidTypeError(f"{name} must be callable ({what}) in {owner}, got {type(fn).__name__}")


def callable_name(fn: Callable) -> str:
    """How a tokenizer or an embed_fn is recorded in ``describe()``."""
    return getattr(fn, "staicc_description", None) or getattr(fn, "__qualname__", None) or type(fn).__name__


# --------------------------------------------------------------------------
# rows, dedup and ranking helpers
# --------------------------------------------------------------------------
def normalise_text(text: str) -> str:
    """Dedup key: lowercase, whitespace collapsed, stripped."""
    return " ".join(text.lower().split())


def _read_rows(rows: Sequence[Any], what: str) -> Tuple[List[str], List[Optional[str]]]:
    """Texts (inputs joined with " ") and labels of a dataset-like sequence of rows."""
    try:
        size = len(rows)
    except TypeError:
        rows = list(rows)
        size = len(rows)
    texts: List[str] = []
    labels: List[Optional[str]] = []
    for i in range(size):
        row = rows[i]
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or not 1 <= len(row) <= 2:
            raise InvalidTypeError(f"{what}[{i}] must be an (inputs, label_text) pair, got {type(row).__name__}")
        inputs = row[0]
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, Sequence) or not all(isinstance(part, str) for part in inputs):
            raise InvalidTypeError(f"{what}[{i}] inputs must be a list of str, got {inputs!r:.80}")
        texts.append(" ".join(inputs))
        labels.append(row[1] if len(row) == 2 else None)
    return texts, labels


def _banned_per_query(demo_texts: List[str], query_texts: List[str]) -> List[Set[int]]:
    """Per query, the demonstrations whose normalised text equals the query's."""
    by_text: Dict[str, Set[int]] = {}
    for i, text in enumerate(demo_texts):
        by_text.setdefault(normalise_text(text), set()).add(i)
    return [by_text.get(normalise_text(text), _NO_BAN) for text in query_texts]


def _check_pool(k: int, available: int, q: int, label: Optional[str] = None) -> None:
    if k > available:
        of = f" with label {label!r}" if label is not None else ""
        raise InvalidValueError(f"query {q} needs {k} demonstrations{of} but only {available} are available "
                                f"(after dedup); lower k, add demonstrations or pass dedup=False")


def _allowed(indexes: Sequence[int], ban: Set[int]) -> Sequence[int]:
    return [i for i in indexes if i not in ban] if ban else indexes


def _label_groups(labels: List[Optional[str]]) -> Dict[str, List[int]]:
    """Demonstration indexes per label, labels in order of first appearance."""
    groups: Dict[str, List[int]] = {}
    for i, label in enumerate(labels):
        if label is None:
            raise InvalidValueError(f"balanced=True needs labelled demonstrations; demonstrations[{i}] has none")
        groups.setdefault(label, []).append(i)
    return groups


def _slot_labels(order: List[str], k: int, q: int) -> List[str]:
    """Label of each of the k slots: round-robin over labels starting at label q mod L.

    Rotating the start per query means that, over many queries, every label
    gets the same share even when k is not a multiple of the label count.
    """
    start = q % len(order)
    return [order[(start + j) % len(order)] for j in range(k)]


def _top_k(scores: List[float], k: int, q: int, ban: Set[int], groups: Dict[str, List[int]]) -> List[int]:
    """Indexes of the k best scores, best first, ties to the lower index.

    Banned demonstrations are scored -inf in place (``scores`` belongs to this
    query).  With ``groups`` (balanced), each label's quota is taken from that
    label's demonstrations, then the picks are sorted by score.
    """
    for i in ban:
        scores[i] = -math.inf
    _check_pool(k, len(scores) - len(ban), q)
    if not groups:
        return _best_positions(scores, k)
    best: List[int] = []
    for label, quota in Counter(_slot_labels(list(groups), k, q)).items():
        members = groups[label]
        _check_pool(quota, len(members) - sum(1 for i in members if i in ban) if ban else len(members), q, label)
        best += [members[p] for p in _best_positions(_pick(scores, members), quota)]
    best.sort(key=lambda d: (-scores[d], d))
    return best


def _candidate_pool(relevance: List[float], k: int, q: int, ban: Set[int], groups: Dict[str, List[int]],
                    quotas: Optional[Counter], size: int) -> List[int]:
    """MMR candidates, most relevant first: the top ``size``, or each label's top share of it."""
    available = len(relevance) - len(ban)
    _check_pool(k, available, q)
    if quotas is None:
        return _top_k(relevance, min(size, available), q, ban, {})
    for i in ban:
        relevance[i] = -math.inf
    share = -(-size // len(groups))  # ceil: the pool stays about ``size`` in total
    pool: List[int] = []
    for label, quota in quotas.items():
        members = groups[label]
        available = len(members) - sum(1 for i in members if i in ban) if ban else len(members)
        _check_pool(quota, available, q, label)
        pool += [members[p] for p in _best_positions(_pick(relevance, members), min(max(share, quota), available))]
    pool.sort(key=lambda d: (-relevance[d], d))
    return pool


def _best_positions(values: Sequence[float], k: int) -> List[int]:
    """Positions of the k largest values, largest first, equal values by lower position.

    heapq.nlargest is documented as sorted(..., reverse=True)[:k], which is
    stable, so ties keep ascending positions.  For small k (the usual 1-8
    demonstrations) it is about twice as fast to find the k values with
    C-level comparisons and locate them with ``index`` scans, which also
    return the lowest position first for tied values.
    """
    if k > _SCAN_TOP_K:
        return heapq.nlargest(k, range(len(values)), key=values.__getitem__)
    positions: List[int] = []
    previous, start = None, 0
    for value in heapq.nlargest(k, values):
        start = start if value == previous else 0
        start = values.index(value, start) + 1
        positions.append(start - 1)
        previous = value
    return positions


def _pick(values: List[float], positions: List[int]) -> Sequence[float]:
    """values[p] for p in positions, gathered at C speed."""
    if len(positions) == 1:
        return [values[positions[0]]]
    return itemgetter(*positions)(values) if positions else []


def _in_prompt_order(best_first: List[int], order: str) -> List[int]:
    return best_first[::-1] if order == "ascending" else best_first


