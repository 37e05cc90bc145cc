"""The shard plan: which of a run's distinct requests each shard asks; every process computes the same.

Two units (:class:`~StaICC.engine.selection.Shard`'s ``unit``):

* ``query`` (the default): the unit is the **query group** ``(dataset, query number within a
  pass)``: every pass of GLER, every template of Template_sens, every label and the same
  query number of every sub-benchmark stay on one shard, because those prompts share
  demonstrations and so prefixes.  The plan is made from the works' structure, without
  writing a prompt: a request is known by its **structural key** (the pass's template
  without its noise rate, each demonstration's input texts and the label word it is
  written with, the query's input texts), so equal keys mean equal prompts.  A key asked
  by several groups (Post_bias asks Normal's prompts, GLER's first pass is Normal again,
  a k = 0 run asks one prompt per test item in every repeat) belongs to the first group
  that asks it, in plan order, and only that group's shard writes and asks it; a shard
  writes only its own prompts.  Groups are weighed by the text characters of their rows
  (times the label count) and placed, dataset by dataset, largest first (ties: the lower
  query number) on the shard with the least weight so far (ties: the lower shard index).
  Two prompts equal only because two different templates render the same text would be
  asked by two shards; their answers must then agree when the caches are merged.
* ``call``: the unit is one backend call of the one-process run (each dataset's distinct
  requests in the runner's order, cut every ``requests_per_call``): every answer is then
  computed in a call of the same composition as without shards.  Finding the calls needs
  every prompt's text (they are sorted by it), so each shard writes every prompt.  Calls
  are placed in run order on the shard with the fewest characters so far.

The plan's SHA-256 covers the unit, the shard count, what each shard asks and the
templates, so two processes that print the same digest ask disjoint sets that cover the run.
"""
import hashlib
import heapq
from dataclasses import replace
from itertools import islice, repeat
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from .selection import Shard

#: per work, per pass, the query positions this shard writes (None: a work this shard does not touch)
Positions = List[List[int]]


class _Loads:
    """Shard loads as a heap of (weight, shard index): the next unit goes to the lightest (lowest index on ties)."""

    def __init__(self, count: int) -> None:
        self.heap = [(0, shard) for shard in range(count)]
        self.weights = [0] * count

    def place(self, weight: int) -> int:
        load, shard = heapq.heappop(self.heap)
        self.weights[shard] = load + weight
        heapq.heappush(self.heap, (self.weights[shard], shard))
        return shard


def check_shard(shard: Shard, works: Sequence[Any], backends: Sequence[Any]) -> None:
    """Refuse a shard count above the run's units (query groups, or requests for the call unit), in O(works)."""
    if shard.unit == "call":
        shard.check_units(sum(w.plan.total for w, b in zip(works, backends) if b is not None), "requests")
        return
    groups: Dict[str, int] = {}
    for work, backend in zip(works, backends):
        if backend is not None:
            groups[work.dataset] = max(groups.get(work.dataset, 0), work.plan.queries_per_pass)
    shard.check_units(sum(groups.values()), "queries")


class QueryPlanner:
    """The ``query`` unit, dataset by dataset: :meth:`choose` says which query positions this shard writes."""

    def __init__(self, shard: Shard, works: Sequence[Any], backends: Sequence[Any]) -> None:
        check_shard(shard, works, backends)
        self.shard, self.loads = shard, _Loads(shard.count)
        self.digest = hashlib.sha256(f"staicc-shard-plan/2 {shard.count} query\n".encode())
        self.templates: Dict[Any, int] = {}
        self.distinct = [0] * shard.count

    def choose(self, works: Sequence[Any], backends: Sequence[Any]) -> List[Optional[Positions]]:
        """Per work of one dataset, per pass, the query positions this shard writes (ascending)."""
        structure = _Structure(self.templates, self.digest, weigh=self.shard.count > 1)
        firsts = [None if backend is None else structure.first_positions(work)
                  for work, backend in zip(works, backends)]
        if self.shard.count == 1:  # a dry run: every first occurrence is the one shard's
            self.distinct[0] += sum(len(positions) for passes in firsts if passes for positions in passes)
            return firsts
        weights = structure.weights
        order = sorted(weights, key=lambda q: (-weights[q], q))
        shard_of = {q: self.loads.place(weights[q]) for q in order}
        self.digest.update(f"dataset {works[0].dataset}\n".encode())
        self.digest.update("".join(f"{q}>{shard_of[q]}\n" for q in order).encode())
        chosen: List[Optional[Positions]] = []
        for passes in firsts:
            mine = None
            if passes is not None:
                mine = []
                for positions in passes:
                    for q in positions:
                        self.distinct[shard_of[q]] += 1
                    mine.append([q for q in positions if shard_of[q] == self.shard.index])
            chosen.append(mine)
        return chosen

    def describe(self) -> Dict[str, Any]:
        """What provenance records about the plan and this shard."""
        index = self.shard.index
        return {"index": index, "count": self.shard.count, "unit": "query", "plan_sha256": self.digest.hexdigest(),
                "distinct_requests": self.distinct[index], "weight": self.loads.weights[index],
                "run_distinct_requests": sum(self.distinct)}


class _Structure:
    """The structural keys of one dataset's requests: which are seen first, and each query group's weight.

    A key is (template id, demonstrations, query): the pass's template without its noise
    rate, then the demonstrations as written (indexes, with the flipped ones marked, while
    the demonstration rows' input texts are all distinct; otherwise each as its input
    texts and the position of the label it is written with), then the query (a test index,
    the first with the same input texts; a pseudo query by its texts).
    """

    def __init__(self, templates: Dict[Any, int], digest: Any, weigh: bool) -> None:
        self.templates, self.digest = templates, digest
        self.seen: set = set()
        self.tables: Dict[Tuple[Any, ...], Any] = {}
        self.weights: Dict[int, int] = {}
        self.weigh = weigh
        self.generators: Dict[Any, Any] = {}
        self.pseudo_heads: Dict[Any, List[Any]] = {}
        self.pseudo_texts: Dict[Any, Tuple[str, ...]] = {}

    def first_positions(self, work: Any) -> Positions:
        """Per pass of ``work``, the query positions whose key no earlier request of the dataset had."""
        from ..rng import fresh_stream
        plan, source = work.plan, work.prompts
        # the rows by their (process-independent) int-tuple hash: a digest of the plan at C speed
        self.digest.update(repr((work.part, plan.dataset, plan.test_count, plan.test_items,
                                 hash(plan.demonstrations))).encode())
        demonstrations = self._table(source.triplet.demonstration, _Demonstrations)
        tests = self._table(source.triplet.test, _Tests)
        drawn_later = self._drawn_later(source, tests)
        noise, pseudo = fresh_stream(), None if drawn_later else source.fresh_queries()
        items = list(plan.tests())
        passes = []
        try:
            for number, template in enumerate(source.templates):
                flips = source.flips(number, plan.demonstrations, noise)
                if drawn_later is not None:  # pseudo queries by their place in the stream
                    queries: Sequence[Hashable] = [(drawn_later, number * len(items) + q) for q in range(len(items))]
                else:
                    queries = tests.query_ids(items) if pseudo is None else tests.pseudo_ids(pseudo, len(items))
                keys = demonstrations.keys(self._template_id(template), plan.demonstrations, flips, queries)
                if drawn_later is not None:
                    keys = self._pseudo_resolved(keys)
                passes.append(self._first(keys))
                if self.weigh:
                    self._weigh(passes[-1], plan.demonstrations, demonstrations, tests, items, pseudo is not None,
                                len(template.label_space))
        finally:
            if pseudo is not None and hasattr(pseudo, "restart"):
                pseudo.restart()
        return passes

    def _drawn_later(self, source: Any, tests: "_Tests") -> Optional[Tuple[Any, ...]]:
        """For the Domain_bias pseudo queries, an identity of their stream, when none of them can be a test
        query's text (each element of one has exactly length - 1 spaces, and no test row's has): then a query
        is known by its place in the stream and drawn only when it meets another with the same demonstrations."""
        from ..prompt.pseudo_queries import domain_query_generator
        generator = source.pseudo_queries
        if type(generator) is not domain_query_generator or tests.may_be_words(generator.length):
            return None
        identity = ("domain", _rows_key(generator.dataset.table), generator.length)
        self.generators[identity] = generator
        return identity

    def _pseudo_resolved(self, keys: List[Any]) -> List[Any]:
        """``keys`` whose pseudo query (identity, place) is replaced by an earlier one with the same text,
        among those asked with the same template and demonstrations (the only prompts it could equal)."""
        out = []
        for key in keys:
            place = key[2]
            members = self.pseudo_heads.setdefault(key[:2], [])
            if place not in members:
                if members:
                    text = self._pseudo_text(place)
                    place = next((m for m in members if self._pseudo_text(m) == text), place)
                if place not in members:
                    members.append(place)
            out.append(key if place is key[2] else key[:2] + (place,) + key[3:])
        return out

    def _pseudo_text(self, place: Tuple[Any, int]) -> Tuple[str, ...]:
        found = self.pseudo_texts.get(place)
        if found is None:
            found = self.pseudo_texts[place] = self.generators[place[0]].query(place[1])
        return found

    def _template_id(self, template: Any) -> int:
        plain = replace(template, label_wrong_rate=0) if template.label_wrong_rate else template
        found = self.templates.get(plain)
        if found is None:
            found = self.templates[plain] = len(self.templates)
            self.digest.update(f"template {found} {plain!r}\n".encode())
        return found

    def _table(self, part: Any, kind: Any) -> Any:
        key = (_rows_key(part.table), tuple(part.label_space), kind)
        found = self.tables.get(key)
        if found is None:
            found = self.tables[key] = kind(part)
        return found

    def _first(self, keys: List[Hashable]) -> List[int]:
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))  # each key -> its first position
        new = first.keys() - self.seen
        self.seen |= new
        return sorted(map(first.__getitem__, new))

    def _weigh(self, positions: List[int], rows: Sequence[Sequence[int]], demonstrations: "_Demonstrations",
               tests: "_Tests", items: List[int], pseudo: bool, labels: int) -> None:
        """Add each first occurrence's text length (its rows' characters, times the labels) to its group."""
        lengths, test_lengths, weights = demonstrations.lengths(), tests.lengths(), self.weights
        for q in positions:
            size = sum(map(lengths.__getitem__, rows[q])) + (0 if pseudo else test_lengths[items[q]])
            weights[q] = weights.get(q, 0) + size * labels


class _Demonstrations:
    """One demonstration table: its rows as the texts they are written with (see :class:`_Structure`)."""

    def __init__(self, part: Any) -> None:
        rows = self.rows = part.table.rows
        space = list(part.label_space)
        count = len(space)
        position = {raw: space.index(space[index]) for raw, index in part.label_mapping.items()}
        following = {raw: space.index(space[(p + 1) % count]) for raw, p in position.items()}
        first: Dict[Any, int] = {}
        inputs = [first.setdefault(tuple(texts), v) for v, (texts, _) in enumerate(rows)]
        self.right = [i * count + position[raw] for i, (_, raw) in zip(inputs, rows)]
        self.wrong = [i * count + following[raw] for i, (_, raw) in zip(inputs, rows)]
        self.plain = len(first) == len(rows) and count > 1  # an index names its text, flipped or not
        self._lengths: Optional[List[int]] = None

    def keys(self, template: int, rows: Sequence[Sequence[int]], flips: Sequence[Sequence[int]],
             queries: Sequence[Hashable]) -> List[Hashable]:
        if self.plain:
            if not any(flips):
                return list(zip(repeat(template), rows, queries))
            return [(template, demos, query, tuple(sorted(set(flipped)))) if flipped else (template, demos, query)
                    for demos, flipped, query in zip(rows, flips, queries)]
        right, wrong = self.right, self.wrong
        return [(template, tuple([wrong[v] if v in flipped else right[v] for v in demos]) if flipped
                 else tuple(map(right.__getitem__, demos)), query)
                for demos, flipped, query in zip(rows, flips, queries)]

    def lengths(self) -> List[int]:
        if self._lengths is None:
            self._lengths = [sum(map(len, texts)) + 1 for texts, _ in self.rows]
        return self._lengths


class _Tests:
    """One test table: each query by the first test index with the same input texts."""

    def __init__(self, part: Any) -> None:
        rows = self.rows = part.table.rows
        self.index_of: Dict[Any, int] = {}
        self.canonical = [self.index_of.setdefault(tuple(texts), j) for j, (texts, _) in enumerate(rows)]
        self.plain = len(self.index_of) == len(rows)
        self._lengths: Optional[List[int]] = None
        self._spaces: Optional[set] = None

    def may_be_words(self, length: int) -> bool:
        """Whether some test row could be a domain pseudo query of ``length`` words per input element."""
        if length == 0:
            return True
        if self._spaces is None:
            self._spaces = {tuple(text.count(" ") for text in texts) for texts, _ in self.rows}
        return any(all(count == length - 1 for count in counts) for counts in self._spaces)

    def query_ids(self, items: List[int]) -> Sequence[int]:
        return items if self.plain else [self.canonical[j] for j in items]

    def pseudo_ids(self, pseudo: Any, count: int) -> List[Hashable]:
        """The next ``count`` pseudo queries: a test index where a test row has the same texts, else the texts."""
        found = self.index_of.get
        return [found(texts, texts) for texts in map(tuple, islice(pseudo, count))]

    def lengths(self) -> List[int]:
        if self._lengths is None:
            self._lengths = [sum(map(len, texts)) + 1 for texts, _ in self.rows]
        return self._lengths


def _rows_key(table: Any) -> Tuple[Any, ...]:
    source, start, stop = getattr(table, "table", None), getattr(table, "start", None), getattr(table, "stop", None)
    if source is not None and isinstance(start, int) and isinstance(stop, int):
        return id(source), start, stop
    return (id(table),)


class CallPlanner:
    """The ``call`` unit: the one-process run's calls, placed in run order; :meth:`calls` keeps this shard's."""

    def __init__(self, shard: Shard, works: Sequence[Any], backends: Sequence[Any]) -> None:
        check_shard(shard, works, backends)
        self.shard, self.loads = shard, _Loads(shard.count)
        self.digest = hashlib.sha256(f"staicc-shard-plan/2 {shard.count} call\n".encode())
        self.distinct = [0] * shard.count

    def calls(self, batches: Sequence[Any], size_of: Any) -> List[Any]:
        """This shard's calls among ``batches`` (one dataset's, in the runner's order), each a batch of one call."""
        from .batches import Batch
        mine = []
        for batch in batches:
            size = size_of(batch.backend)
            for start in range(0, len(batch.requests), size):
                requests = batch.requests[start:start + size]
                weight = sum(map(_prompt_characters, requests))
                shard = self.loads.place(weight)
                self.distinct[shard] += len(requests)
                self.digest.update(f"call {shard}\n".encode() + b"".join(r.digests[0] for r in requests))
                if shard == self.shard.index:
                    mine.append(Batch(batch.backend, batch.description, requests,
                                      batch.targets[start:start + size]))
        return mine

    def describe(self) -> Dict[str, Any]:
        index = self.shard.index
        return {"index": index, "count": self.shard.count, "unit": "call", "plan_sha256": self.digest.hexdigest(),
                "distinct_requests": self.distinct[index], "characters": self.loads.weights[index],
                "run_distinct_requests": sum(self.distinct)}


def _prompt_characters(request: Any) -> int:
    """The work a request stands for: characters of its prompt(s), times its labels for a direct prompt."""
    prompt = request.prompt
    if isinstance(prompt, tuple):
        return sum(map(len, prompt))
    return len(prompt) * max(1, len(request.label_space))


def shard_planner(shard: Shard, works: Sequence[Any], backends: Sequence[Any]) -> Any:
    """The planner of ``shard``'s unit; the shard count is checked against the run's units first."""
    return (QueryPlanner if shard.unit == "query" else CallPlanner)(shard, works, backends)
