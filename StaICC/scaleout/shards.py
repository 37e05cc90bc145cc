"""A deterministic shard plan over a run's distinct requests, and the shard run that fills a cache.

Rules of the plan (every process computes the same plan from the same run):

* the unit is the **query group** ``(dataset, query number within a pass)``: every pass of
  GLER, every template of Template_sens and every label of one query stays on one shard,
  because those prompts share demonstrations and so prefixes (a prefix cache or the hf
  engine's prefix tree computes them once);
* a prompt asked by several groups (Post_bias asks Normal's prompts, GLER's first pass is
  Normal again) belongs to the first group that asks it, in plan order;
* groups are placed largest first (by prompt characters, ties broken by the group key)
  on the shard with the fewest characters so far (ties: the lowest shard index);
* the plan's SHA-256 covers the unit, the shard count and every shard's sorted request
  keys, so two processes that print the same digest ask disjoint sets that cover the run.

With ``unit="call"`` the unit is instead one backend call of the one-process run (the
same requests in the same order, :func:`one_process_calls`): every answer is then computed
in a call of the same composition as without shards, so a backend whose numbers depend
on what else is in the call (prefix sharing, batch-shape-dependent GPU kernels) still
gives bit-identical results.  A query's passes may then land on different shards.

A shard run asks only its shard's requests and stores the answers in the cache; the final
run over the merged caches computes the results (and asks nothing).
"""
import hashlib
import heapq
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..requests import Request

GroupKey = Tuple[str, int]
UNITS = ("query", "call")


def parse_shard(text: str) -> Tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``0 <= I < N``; anything else is a ValueError saying the form."""
    index, sep, count = str(text).partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"--shard must be I/N with integers 0 <= I < N (for example 0/4), got {text!r}")
    return check_shard(int(index), int(count))


def check_shard(index: Any, count: Any) -> Tuple[int, int]:
    from ..validation import check_int
    count = check_int(count, "the shard count", minimum=1)
    index = check_int(index, "the shard index", minimum=0, maximum=count - 1)
    return index, count


def group_keys(requests: Sequence[Request]) -> List[GroupKey]:
    """The query group of each request: (dataset, query number within its pass).

    A request's ``query_index`` continues across passes, so the number within the pass is
    ``query_index - pass_index * queries_per_pass``; a run's queries per pass is the number
    of its requests in pass 0 (one plan per sub-benchmark and dataset).
    """
    per_pass: Dict[Tuple[str, str], int] = {}
    for r in requests:
        if r.pass_index == 0:
            per_pass[(r.benchmark, r.dataset)] = per_pass.get((r.benchmark, r.dataset), 0) + 1
    return [(r.dataset, r.query_index - r.pass_index * per_pass.get((r.benchmark, r.dataset), 0)) for r in requests]


def prompt_characters(request: Request) -> int:
    """The work a request stands for: characters of its prompt(s), times its labels for a direct prompt.

    A per-label engine scores the prompt once per label; a noisy-channel request already
    carries one prompt per label.
    """
    prompt = request.prompt
    if isinstance(prompt, tuple):
        return sum(len(p) for p in prompt)
    return len(prompt) * max(1, len(request.label_space))


@dataclass(frozen=True)
class ShardPlan:
    """Which distinct request (by key) each shard asks; equal runs give equal plans."""

    count: int
    shard_of_key: Dict[str, int]
    characters: Tuple[int, ...]  # per shard
    digest: str

    def select(self, requests: Iterable[Request], index: int) -> List[Request]:
        """The distinct requests of shard ``index``, in the order they first occur."""
        chosen: List[Request] = []
        seen = set()
        for r in requests:
            key = r.key()
            if key not in seen and self.shard_of_key.get(key) == index:
                seen.add(key)
                chosen.append(r)
        return chosen

    def describe(self, index: int) -> Dict[str, Any]:
        """What provenance records about the plan and this shard."""
        sizes = [0] * self.count
        for shard in self.shard_of_key.values():
            sizes[shard] += 1
        return {"index": index, "count": self.count, "plan_sha256": self.digest,
                "distinct_requests": sizes[index], "characters": self.characters[index],
                "run_distinct_requests": len(self.shard_of_key)}


def shard_plan(requests: Sequence[Request], count: int, calls: Optional[Sequence[Sequence[Request]]] = None
               ) -> ShardPlan:
    """Place the distinct requests of ``requests`` (the run's, in plan order) on ``count`` shards.

    ``calls``: the one-process run's backend calls (:func:`one_process_calls`), placed whole
    instead of query groups.
    """
    _, count = check_shard(0, count)
    groups: Dict[GroupKey, List[str]] = {}
    weight: Dict[GroupKey, int] = {}
    seen = set()
    if calls is None:
        units = list(zip(requests, group_keys(requests)))
    else:
        units = [(r, ("call", n)) for n, call in enumerate(calls) for r in call]
    for request, group in units:
        key = request.key()
        if key in seen:
            continue
        seen.add(key)
        groups.setdefault(group, []).append(key)
        weight[group] = weight.get(group, 0) + prompt_characters(request)
    loads = [(0, shard) for shard in range(count)]  # a heap of (characters, shard index)
    shard_of_key: Dict[str, int] = {}
    characters = [0] * count
    for group in sorted(groups, key=lambda g: (-weight[g], g)):
        load, shard = heapq.heappop(loads)
        for key in groups[group]:
            shard_of_key[key] = shard
        characters[shard] = load + weight[group]
        heapq.heappush(loads, (characters[shard], shard))
    unit = "query" if calls is None else "call"
    return ShardPlan(count, shard_of_key, tuple(characters), _digest(shard_of_key, count, unit))


def _digest(shard_of_key: Dict[str, int], count: int, unit: str) -> str:
    head = f"staicc-shard-plan/1 {count}\n" if unit == "query" else f"staicc-shard-plan/1 {count} {unit}\n"
    digest = hashlib.sha256(head.encode())
    for shard in range(count):
        digest.update(f"shard {shard}\n".encode())
        for key in sorted(k for k, s in shard_of_key.items() if s == shard):
            digest.update(key.encode() + b"\n")
    return digest.hexdigest()


def select_shard(requests: Sequence[Request], index: int, count: int) -> List[Request]:
    """The distinct requests that shard ``index`` of ``count`` asks: the runner's one hook."""
    index, count = check_shard(index, count)
    return shard_plan(requests, count).select(requests, index)


# ----------------------------------------------------------------------------
# the shard run: ask the shard's requests, store the answers, summarise nothing
# ----------------------------------------------------------------------------
def planned_requests(planned: Dict[str, List[Any]]) -> List[Request]:
    """Every request of a planned suite (``plan_suite``'s value), in plan order."""
    return [r for plans in planned.values() for _plan, requests in plans for r in requests]


def text_order(request: Request) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """Sort key that puts prompts with a common beginning next to each other (as the suite does)."""
    prompt = request.prompt
    return request.label_space, (prompt,) if isinstance(prompt, str) else tuple(prompt)


def one_process_calls(backend: Any, planned: Dict[str, List[Any]],
                      requests_per_call: Optional[int] = None) -> List[List[Request]]:
    """The backend calls a one-process suite run without a cache makes, in order.

    The runner decides what a run asks (:func:`StaICC.engine.runner.distinct_requests`,
    dataset by dataset); ``score_requests`` cuts each of its batches into calls of
    ``requests_per_call`` (default: the backend's own).
    """
    from ..engine.runner import distinct_requests
    size = max(1, int(requests_per_call or getattr(backend, "requests_per_call", 1) or 1))
    works = [work for part_works in planned.values() for work in part_works]
    by_dataset: Dict[str, List[Any]] = {}
    for work in works:
        by_dataset.setdefault(work.dataset, []).append(work)
    calls: List[List[Request]] = []
    for group in by_dataset.values():
        requests = [work.requests() for work in group]
        batches = distinct_requests(group, requests, [backend] * len(group), distinct=True,
                                    in_text_order=bool(getattr(backend, "shares_prefixes", False)))
        for batch in batches:
            calls.extend(batch.requests[start:start + size] for start in range(0, len(batch.requests), size))
    return calls


def score_shard(backend: Any, planned: Dict[str, List[Any]], cache: Any, shard: Tuple[Any, ...],
                progress: Optional[bool] = None, requests_per_call: Optional[int] = None) -> Dict[str, Any]:
    """Ask shard ``shard = (index, count[, unit])`` of the run and store its answers in ``cache``.

    Unit ``query`` (the default): requests go dataset by dataset (a prefix-sharing backend:
    in text order, as a one-process run sends them).  Unit ``call``: the shard's calls of the
    one-process run, each as one call.  Returns the shard's metadata: the plan (with its
    hash) and how many prompts were asked or cached.
    """
    from ..engine.scoring import score_requests
    if cache is None:
        raise ValueError("a shard run needs a cache (--cache FILE): its answers are its only output")
    index, count = check_shard(shard[0], shard[1])
    unit = shard[2] if len(shard) > 2 else "query"
    if unit not in UNITS:
        raise ValueError(f"the shard unit must be one of {', '.join(UNITS)}, got {unit!r}")
    started = time.perf_counter()
    everything = planned_requests(planned)
    counts: Dict[str, int] = {"asked": 0, "cached": 0}
    if unit == "call":
        calls = one_process_calls(backend, planned, requests_per_call)
        plan = shard_plan(everything, count, calls)
        mine = [call for call in calls if plan.shard_of_key[call[0].key()] == index]
    else:
        plan = shard_plan(everything, count)
        by_dataset: Dict[str, List[Request]] = {}
        for r in plan.select(everything, index):
            by_dataset.setdefault(r.dataset, []).append(r)
        mine = [sorted(requests, key=text_order) if getattr(backend, "shares_prefixes", False) else requests
                for requests in by_dataset.values()]
    for requests in mine:
        score_requests(backend, requests, cache=cache, progress=progress, counts=counts,
                       description=f"shard {index}/{count} {requests[0].dataset}", requests_per_call=requests_per_call)
    return {"shard": dict(plan.describe(index), unit=unit), "model": backend.identity(), "fingerprint": backend.fingerprint(),
            "prompts": len(everything), "distinct_prompts": sum(map(len, mine)), "asked": counts["asked"],
            "from_cache": counts["cached"], "seconds": round(time.perf_counter() - started, 3), "standard": False}
