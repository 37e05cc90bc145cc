"""Prefix trees over token sequences: compute a shared prefix once, continue every suffix from it.

A causal LM's output at position t depends only on tokens 0..t, so sequences that
start with the same tokens have the same logits (and the same keys and values) over
that common prefix.  :func:`build` sorts the sequences and folds them into a radix
tree (one node per run of shared tokens); :func:`plan` then decides, node by node,
whether computing the node once and continuing its children from its KV cache pays
for the extra forward call and the cache copies, and merges the node into its
children where it does not.  Standard library only, so the planning is testable
without torch.

Each sequence comes with *reads*: positions whose next-token logits are needed.  A
read lands in the node that holds its position; reads of different sequences at a
shared position are computed once.
"""
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

from ..errors import InvalidValueError

#: (position inside the node's segment, sequence index, read index of that sequence)
NodeRead = Tuple[int, int, int]

#: a shared prefix must save at least this many tokens on CPU, where one more forward call
#: costs about as much as this many tokens of computation
DEFAULT_OVERHEAD_TOKENS_CPU = 64
#: on a GPU a forward call's fixed cost is worth far more tokens
DEFAULT_OVERHEAD_TOKENS_GPU = 2048
#: ... and at least this share of the tokens its subtree would compute unshared
DEFAULT_MIN_SAVED_FRACTION = 0.05
#: deeper trees hold one KV cache per level in memory; below this depth everything is unshared
DEFAULT_MAX_DEPTH = 6


@dataclass(eq=False)
class Node:
    """A run of tokens computed in one forward row; ``children`` continue from its KV cache."""

    tokens: List[int]
    reads: List[NodeRead] = field(default_factory=list)
    children: List["Node"] = field(default_factory=list)
    paths: int = 1  # leaf paths below (and including) this node: rows it would take unshared
    weight: int = 0  # tokens the subtree computes when nothing in it is shared


def build(sequences: Sequence[Sequence[int]], read_positions: Sequence[Sequence[int]]) -> List[Node]:
    """The radix tree of the sequences: top-level nodes, one per distinct first token.

    ``read_positions[i][r]`` is the position of sequence i's read r.  Sorting puts
    sequences with common prefixes next to each other, and the longest common
    prefix of a sorted range is that of its first and last sequences, so the tree
    is built in O(n log n) comparisons plus one pass over each sequence's tokens.
    """
    for i, (ids, positions) in enumerate(zip(sequences, read_positions)):
        if not ids:
            raise InvalidValueError(f"prefix tree: sequence {i} is empty")
        for position in positions:
            if not 0 <= position < len(ids):
                raise InvalidValueError(f"prefix tree: read at position {position} outside sequence {i} "
                                        f"of {len(ids)} tokens")
    order = sorted(range(len(sequences)), key=lambda i: list(sequences[i]))
    pending = [sorted((p, i, r) for r, p in enumerate(read_positions[i])) for i in range(len(sequences))]
    cursor = [0] * len(sequences)  # next unassigned read of each sequence (reads sorted by position)
    top: List[Node] = []
    stack: List[Tuple[int, int, int, List[Node]]] = []  # (range of order, depth, list the node goes into)
    _push_groups(stack, sequences, order, 0, len(order), 0, top)
    while stack:
        lo, hi, depth, out = stack.pop()
        first, last = sequences[order[lo]], sequences[order[hi - 1]]
        end = depth + 1  # the range agrees on the token at ``depth``
        limit = min(len(first), len(last))
        while end < limit and first[end] == last[end]:
            end += 1
        node = Node(list(first[depth:end]))
        out.append(node)
        for j in range(lo, hi):
            i = order[j]
            reads = pending[i]
            while cursor[i] < len(reads) and reads[cursor[i]][0] < end:
                position, _, r = reads[cursor[i]]
                node.reads.append((position - depth, i, r))
                cursor[i] += 1
        split = lo
        while split < hi and len(sequences[order[split]]) == end:  # sequences ending here sort first
            split += 1
        _push_groups(stack, sequences, order, split, hi, end, node.children)
    return top


def _push_groups(stack: list, sequences: Sequence[Sequence[int]], order: List[int], lo: int, hi: int,
                 depth: int, out: List[Node]) -> None:
    """Push the sub-ranges of ``order[lo:hi]`` that agree on the token at ``depth`` (all are longer)."""
    start = lo
    for j in range(lo + 1, hi + 1):
        if j == hi or sequences[order[j]][depth] != sequences[order[start]][depth]:
            stack.append((start, j, depth, out))
            start = j


def plan(top: List[Node], *, overhead_tokens: int, min_saved_fraction: float, max_depth: int) -> List[Node]:
    """The nodes to compute: shared where it pays, merged into their children elsewhere.

    Keeping a node with c children computes its s tokens once instead of c times,
    saving (c − 1)·s tokens, at the price of one more forward call per batch and a
    copy of its KV cache per child.  It is kept when the saving reaches both
    ``overhead_tokens`` and ``min_saved_fraction`` of the tokens its subtree
    computes unshared, and it is less than ``max_depth`` levels deep.  Otherwise its
    tokens are prepended to each child (its reads go with the first child: the
    logits at a position do not depend on what follows it).  ``max_depth=0`` gives
    the unshared computation: one row per distinct sequence (a sequence that is a
    prefix of another is read from the longer one's row).  ``top`` is consumed.
    """
    _weigh(top)
    result: List[Node] = []
    work: List[Tuple[Node, int, List[Node]]] = [(node, 0, result) for node in reversed(top)]
    while work:
        node, level, out = work.pop()
        if not node.children:
            out.append(node)
            continue
        saving = (len(node.children) - 1) * len(node.tokens)
        if level < max_depth and saving > 0 and saving >= overhead_tokens \
                and saving >= min_saved_fraction * node.weight:
            children, node.children = node.children, []
            out.append(node)
            work.extend((child, level + 1, node.children) for child in reversed(children))
            continue
        for index, child in enumerate(node.children):
            shift = len(node.tokens)
            child.reads = [(position + shift, i, r) for position, i, r in child.reads]
            if index == 0:
                child.reads = node.reads + child.reads
            child.tokens = node.tokens + child.tokens
            child.weight += shift * child.paths
        work.extend((child, level, out) for child in reversed(node.children))
    return result


def _weigh(top: List[Node]) -> None:
    """Set ``paths`` and ``weight`` bottom-up (iteratively: trees can be deep before planning)."""
    stack: List[Tuple[Node, bool]] = [(node, False) for node in top]
    while stack:
        node, done = stack.pop()
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children)
            continue
        node.paths = sum(child.paths for child in node.children) if node.children else 1
        node.weight = len(node.tokens) * node.paths + sum(child.weight for child in node.children)


def count_tokens(nodes: List[Node]) -> int:
    """Tokens a plan computes (every node once)."""
    total, stack = 0, list(nodes)
    while stack:
        node = stack.pop()
        total += len(node.tokens)
        stack.extend(node.children)
    return total
