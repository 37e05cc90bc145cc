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
        firsts, weights = _first_occurrences(works, backends, self.templates, self.digest)
        order = sorted(weights, key=lambda q: (-weights[q], q))
        shard_of = {q: self.loads.place(weights[q]) for q in order}
        self.digest.update(f"dataset {works[0].dataset}\n".encode())
        self.digest.update("".join(f"{q}>{shard_of[q]}\n" for q in order).encode())
        chosen: List[Optional[Positions]] = []
        for passes in firsts:
            if passes is None:
                chosen.append(None)
                continue
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


def _first_occurrences(works: Sequence[Any], backends: Sequence[Any], templates: Dict[Any, int],
                       digest: Any) -> Tuple[List[Optional[Positions]], Dict[int, int]]:
    """Per work, per pass, the positions whose structural key no earlier request of the dataset had; the weight
    of each query group (query number) over those first occurrences."""
    seen: Dict[Hashable, None] = {}
    weights: Dict[int, int] = {}
    firsts: List[Optional[Positions]] = []
    texts = _TextIds()
    for work, backend in zip(works, backends):
        if backend is None:
            firsts.append(None)
            continue
        passes = []
        for number, keys in enumerate(_structural_keys(work, templates, texts, digest)):
            positions = []
            for q, (key, weight) in enumerate(keys):
                if key in seen:
                    continue
                seen[key] = None
                positions.append(q)
                weights[q] = weights.get(q, 0) + weight
            passes.append(positions)
        firsts.append(passes)
    return firsts, weights


class _TextIds:
    """Small ints for equal texts of one dataset: a demonstration as (input texts, label word), a query's inputs."""

    def __init__(self) -> None:
        self.ids: Dict[Hashable, int] = {}
        self.demonstrations: Dict[Tuple[Any, Hashable], Tuple[List[int], List[int], List[int]]] = {}
        self.tests: Dict[Hashable, Tuple[List[int], List[int]]] = {}

    def of(self, text: Hashable) -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.ids)
        return found

    def demonstration_ids(self, compiled: Any) -> Tuple[List[int], List[int], List[int]]:
        """(id with its label, id with the next label, text length) of every demonstration row."""
        key = (compiled.template, _rows_key(compiled.triplet.demonstration.table))
        found = self.demonstrations.get(key)
        if found is None:
            rows = compiled.rows
            right = [self.of((tuple(inputs), compiled.word[raw])) for inputs, raw in rows]
            wrong = [self.of((tuple(inputs), compiled.wrong_word[raw])) for inputs, raw in rows]
            found = self.demonstrations[key] = (right, wrong, [sum(map(len, inputs)) + 1 for inputs, _ in rows])
        return found

    def test_ids(self, triplet: Any) -> Tuple[List[int], List[int]]:
        """(id, text length) of every test row's inputs."""
        key = _rows_key(triplet.test.table)
        found = self.tests.get(key)
        if found is None:
            rows = triplet.test.table.rows
            found = self.tests[key] = ([self.of(tuple(inputs)) for inputs, _ in rows],
                                       [sum(map(len, inputs)) + 1 for inputs, _ in rows])
        return found


def _structural_keys(work: Any, templates: Dict[Any, int], texts: _TextIds, digest: Any):
    """Per pass of ``work``, (structural key, weight) of each query, in order: no prompt is written."""
    from dataclasses import replace

    from ..prompt.template import CompiledTemplate
    from ..rng import fresh_stream
    plan, source = work.plan, work.prompts
    noise, pseudo = fresh_stream(), source.fresh_queries()
    tests = list(plan.tests())
    test_ids, test_lengths = texts.test_ids(source.triplet)
    try:
        for number, template in enumerate(source.templates):
            plain = replace(template, label_wrong_rate=0) if template.label_wrong_rate else template
            if plain not in templates:
                templates[plain] = len(templates)
                digest.update(f"template {templates[plain]} {plain!r}\n".encode())
            compiled = CompiledTemplate(plain, source.triplet)
            right, wrong, lengths = texts.demonstration_ids(compiled)
            flips = source.flips(number, plan.demonstrations, noise)
            if pseudo is not None:
                queries = [tuple(query) for query, _ in zip(pseudo, tests)]
                query_ids = [texts.of(query) for query in queries]
                query_lengths = [sum(map(len, query)) + 1 for query in queries]
            else:
                query_ids = [test_ids[j] for j in tests]
                query_lengths = [test_lengths[j] for j in tests]
            labels, tid = len(plain.label_space), templates[plain]
            yield [((tid, tuple([wrong[v] if v in flipped else right[v] for v in demos]) if flipped
                     else tuple(map(right.__getitem__, demos)), query),
                    (sum(map(lengths.__getitem__, demos)) + size) * labels)
                   for demos, flipped, query, size in zip(plan.demonstrations, flips, query_ids, query_lengths)]
    finally:
        if pseudo is not None and hasattr(pseudo, "restart"):
            pseudo.restart()


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
