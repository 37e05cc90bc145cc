"""Reading a JSON or YAML task file's text with its bounds checked before any value is built.

A YAML file can name a value once (``&anchor``) and repeat it by reference (``*anchor``): nine
levels of ten references each make a file of under 500 bytes that expands to a billion values.
The document is therefore composed first (references stay shared, nothing expands), its
expanded size and nesting are counted over the shared graph (each node once), and only a
document within both bounds is built.  A key given twice in one table is refused in JSON and
YAML (TOML's reader refuses it itself): the later value would silently replace the earlier.
"""
import json
from typing import Any, Dict, List, Tuple

from ..errors import InvalidValueError
from .errors import TaskError

#: the most values a YAML document may expand to beyond what its text writes out
MAX_EXPANSION = 100_000


def json_without_duplicates(text: str, path: str) -> Any:
    """``json.loads(text)``, with a key given twice in one object refused (file and key named)."""
    def pairs(items: List[Tuple[str, Any]]) -> Dict[str, Any]:
        table: Dict[str, Any] = {}
        for key, value in items:
            if key in table:
                raise TaskError("is given twice in one table; keep one", path=path, key=key)
            table[key] = value
        return table
    return json.loads(text, object_pairs_hook=pairs)


def bounded_yaml(text: str, path: str, max_nesting: int) -> Any:
    """The YAML document ``text``, built only after its expansion, nesting and keys are checked."""
    from ..extras import require
    yaml = require("yaml", "reading a YAML task file")
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader already refuses unprintable characters
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node, yaml, path, max_nesting)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:  # not a ValueError: said here
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InvalidValueError(f"malformed YAML: {getattr(exc, 'problem', None) or exc}{at}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check(root: Any, yaml: Any, path: str, max_nesting: int) -> None:
    """Count each top-level entry's expanded size and depth over the shared node graph; the first entry
    over a bound is refused at its key."""
    written = _count_written(root, yaml)
    limit = written + MAX_EXPANSION
    memo: Dict[int, Tuple[int, int]] = {}
    entries = root.value if isinstance(root, yaml.MappingNode) else [(None, root)]
    total = 1
    for key_node, value_node in entries:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        size, depth = _measure(value_node, yaml, memo, (), limit, path, key)
        total += size
        if depth + 1 > max_nesting:
            raise TaskError(f"nested more than {max_nesting} levels deep; a task file nests a few tables",
                            path=path, key=key)
        if total > limit:
            raise TaskError(f"its aliases (*name) expand to more than {limit} values; write the values out "
                            "or put large data in a file that data.path names", path=path, key=key)
    _refuse_duplicate_keys(root, yaml, path)


def _count_written(root: Any, yaml: Any) -> int:
    """How many nodes the text itself writes (each shared node once)."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(_children(node, yaml))
    return len(seen)


def _children(node: Any, yaml: Any) -> List[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _measure(node: Any, yaml: Any, memo: Dict[int, Tuple[int, int]], open_nodes: tuple, limit: int,
             path: str, key: Any) -> Tuple[int, int]:
    """(expanded size capped just over ``limit``, depth) of ``node``, each shared node measured once."""
    known = memo.get(id(node))
    if known is not None:
        return known
    if id(node) in open_nodes:
        raise TaskError("an alias (*name) refers to a value that contains it", path=path, key=key)
    size, depth = 1, 0
    for child in _children(node, yaml):
        child_size, child_depth = _measure(child, yaml, memo, open_nodes + (id(node),), limit, path, key)
        size, depth = min(size + child_size, limit + 1), max(depth, child_depth)
    result = (size, depth + (1 if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else 0))
    memo[id(node)] = result
    return result


def _refuse_duplicate_keys(root: Any, yaml: Any, path: str) -> None:
    """A scalar key given twice in one mapping (shared mappings checked once)."""
    seen, stack = set(), [(root, None)]
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                dotted = name if where is None else f"{where}.{name}"
                if name is not None and name in keys:
                    raise TaskError("is given twice in one table; keep one", path=path, key=dotted)
                keys.add(name)
                stack.append((value_node, dotted))
        else:
            stack.extend((child, where) for child in _children(node, yaml))
