"""Measuring one packing of the scoring engine on pre-tokenized prompts, for ``gpu_suite.py``.

The prompts are tokenized once and every packing scores the same token ids through the
scorer's own read path (``score`` minus its tokenization), group by group (one group per
dataset, as the suite runner sends them), with a deadline checked between groups: a run
that would overrun stops after the groups it finished and says so.  Host-side planning
(prefix trees, tree packs) and out-of-memory retries are counted by wrapping the engine's
module functions; the engine itself is not changed.

Tree packing's attention has three variants, tried in this order until one works:
``flex`` (FlexAttention block masks, what CUDA runs by default), ``flex-padded`` (every pack
padded to the token budget, so the compiled attention sees one static shape; for a torch
whose dynamic-shape FlexAttention compile fails) and ``dense`` (a dense mask, as on CPU).
"""
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from StaICC.backends import lm_engine, prefix_tree, tree_forward, tree_pack
from StaICC.metrics import softmax

TREE_VARIANTS = ("flex", "flex-padded", "dense")
#: host seconds spent planning (prefix trees, tree packs), out-of-memory retries, padding tokens added
COUNTERS: Dict[str, float] = {"plan_s": 0.0, "oom": 0, "padding": 0}


def _timed(function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            COUNTERS["plan_s"] += time.perf_counter() - start
    return wrapper


def _counted_oom(function: Callable[..., bool]) -> Callable[..., bool]:
    def wrapper(torch: Any, error: Exception) -> bool:
        found = function(torch, error)
        COUNTERS["oom"] += int(found)
        return found
    return wrapper


def instrument() -> None:
    """Count planning time and out-of-memory retries in every scorer of this process (idempotent)."""
    if getattr(prefix_tree, "_gpu_suite_instrumented", False):
        return
    prefix_tree.build, prefix_tree.plan = _timed(prefix_tree.build), _timed(prefix_tree.plan)
    tree_pack.plan_packs = _timed(tree_pack.plan_packs)
    lm_engine._is_out_of_memory = _counted_oom(lm_engine._is_out_of_memory)
    prefix_tree._gpu_suite_instrumented = True


# ------------------------------------------------------------------ variants
_ORIGINAL_FORWARD_PACKS = tree_forward.TreeForward._forward_packs


def _padded(pack: tree_pack.Pack, width: int, pad_id: int) -> tree_pack.Pack:
    """The pack left-padded to ``width`` tokens; a padding token sees only itself, as the engine pads a batch."""
    extra = width - len(pack.tokens)
    return tree_pack.Pack([pad_id] * extra + pack.tokens, [0] * extra + pack.positions,
                          list(range(1, extra + 1)) + [end + extra for end in pack.ends],
                          [(flat + extra, i, r) for flat, i, r in pack.reads], pack.given, pack.members)


def _forward_padded_packs(self: Any, batch: List[tree_pack.Pack], *rest: Any) -> None:
    if self._flex and len(batch) == 1:
        width = self.token_budget
        if len(batch[0].tokens) < width:
            COUNTERS["padding"] += width - len(batch[0].tokens)
            batch = [_padded(batch[0], width, self._pad_id)]
    return _ORIGINAL_FORWARD_PACKS(self, batch, *rest)


def use_variant(torch: Any, variant: str) -> None:
    """Set the process-wide part of a tree variant: packs padded to one shape and static compiles, or not."""
    padded = variant == "flex-padded"
    tree_forward.TreeForward._forward_packs = _forward_padded_packs if padded else _ORIGINAL_FORWARD_PACKS
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "config"):
        dynamo.config.automatic_dynamic_shapes = not padded
        dynamo.reset()


def apply_variant(scorer: Any, variant: Optional[str]) -> Any:
    """The scorer's own part of a tree variant (its attention, probed again on first use); returns the scorer."""
    if variant is not None and scorer.packing == "tree":
        scorer.tree_attention = "dense" if variant == "dense" else "flex"
        scorer._init_tree()
    return scorer


# ------------------------------------------------------------------ one measurement
@dataclass
class Measure:
    """What one packing did on a selection of prompts (see :func:`measure`)."""

    name: str
    scope: str
    groups: int
    groups_done: int = 0
    prompts: int = 0
    seconds: float = 0.0
    given: int = 0
    computed: int = 0
    reads: int = 0
    logit_positions: int = 0
    forward_calls: int = 0
    padded_tokens: int = 0
    largest_rows: int = 0
    peak_mib: Optional[float] = None
    oom_retries: int = 0
    plan_s: float = 0.0
    padding: int = 0
    switched_off: List[str] = field(default_factory=list)
    token_budget_after: Optional[int] = None  # the scorer's token budget at the end (an OOM halves it)
    warnings: List[str] = field(default_factory=list)
    probs: Dict[int, List[float]] = field(default_factory=dict, repr=False)

    def public(self) -> Dict[str, Any]:
        """Everything but the probability rows (for the JSON record)."""
        return {key: value for key, value in vars(self).items() if key != "probs"}


def score_ids(scorer: Any, ids: List[List[int]], labels: List[str]) -> List[List[float]]:
    """``scorer.score`` on token ids already computed: the same reads, the same softmax, no tokenization."""
    values = scorer._last_position(ids, scorer._last_token_ids(labels))[0]
    return [softmax(list(row)) for row in values]


def measure(torch: Any, scorer: Any, name: str, scope: str, selection: List[Tuple[List[int], List[str]]],
            ids: List[List[int]], until: float, prior_rate: Optional[float] = None) -> Measure:
    """Score each group of ``selection`` (global prompt indices, labels) in order until ``until``.

    A group starts only when the tokens it holds, at the rate measured so far (or
    ``prior_rate`` tokens given per second before the first group), fit before ``until``.
    """
    cuda = scorer.device.type == "cuda"
    result = Measure(name, scope, groups=sum(1 for members, _ in selection if members))
    start_counters, before = dict(COUNTERS), _stats(scorer)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for members, labels in selection:
            if not members:
                continue
            tokens = sum(len(ids[i]) for i in members)
            rate = result.given / result.seconds if result.seconds > 0 else prior_rate
            if rate and time.perf_counter() + tokens / rate > until:
                break
            began = time.perf_counter()
            rows = score_ids(scorer, [ids[i] for i in members], labels)
            if cuda:
                torch.cuda.synchronize()
            result.seconds += time.perf_counter() - began
            result.probs.update(zip(members, rows))
            result.groups_done += 1
            result.prompts += len(members)
            result.given += tokens
    _fill(result, scorer, before, start_counters, cuda, torch)
    result.warnings = sorted({str(w.message)[:300] for w in caught})
    for message in result.warnings:
        print(f"[{name}] warning: {message}", flush=True)
    return result


def _stats(scorer: Any) -> Dict[str, int]:
    return dict(vars(scorer.stats))


def _fill(result: Measure, scorer: Any, before: Dict[str, int], counters: Dict[str, float], cuda: bool,
          torch: Any) -> None:
    after = _stats(scorer)
    delta = {key: after[key] - before[key] for key in after}
    result.padding = int(COUNTERS["padding"] - counters["padding"])
    result.computed = delta["tokens_computed"] - result.padding
    result.reads, result.logit_positions = delta["reads"], delta["logit_positions"]
    result.forward_calls, result.padded_tokens = delta["forward_calls"], delta["padded_tokens"]
    result.largest_rows = after["largest_batch_rows"]
    result.oom_retries = int(COUNTERS["oom"] - counters["oom"])
    result.plan_s = round(COUNTERS["plan_s"] - counters["plan_s"], 2)
    result.switched_off = list(scorer.switched_off)
    result.token_budget_after = scorer.token_budget
    result.seconds = round(result.seconds, 3)
    if cuda:
        result.peak_mib = round(torch.cuda.max_memory_allocated() / 2 ** 20)
