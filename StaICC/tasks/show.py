"""Tasks written out as TOML: the ten standard datasets, any loaded task, and a scaffold to edit.

``staicc tasks show TREC`` prints TREC's whole definition (data, label words, template,
Template_sens options, split sizes) as a task file; run back, it resolves to the
standard dataset itself, so its numbers are the standard's bit for bit.  The writer
covers what task files hold (strings, integers, booleans, lists, tables) and escapes
every control character, so that each string reads back exactly.
"""
import json
from typing import Any, Dict, List, Mapping, Optional

from ..errors import InvalidTypeError

#: the order of the top-level keys and tables in a written task
_ORDER = ("name", "description", "data", "labels", "template", "split", "run", "model")


def standard_task_mapping(name: str) -> Dict[str, Any]:
    """The task mapping of a standard dataset: exactly its definition in the standard."""
    from ..datasets import dataset_constants
    const = dataset_constants(name)
    sizes = const["split_sizes"]
    template: Dict[str, Any] = {key: const[key] for key in ("instruction", "input_text_prefixes", "input_text_affixes",
                                                             "label_prefix", "label_affix", "query_prefix")}
    template["alternates"] = const["alternate_template"]
    return {"name": const["name"], "description": f"{const['task']}: the standard StaICC dataset {const['name']}",
            "data": {"source": "standard", "dataset": const["name"]},
            "labels": {"words": const["label_space"]},
            "template": template,
            "split": {"calibration": sizes["calibration"], "demonstration": sizes["demonstration"],
                      "test": sizes["test"]}}


def scaffold_mapping(name: str, new_name: str) -> Dict[str, Any]:
    """A copy of a standard dataset's task to edit: renamed (so already non-standard) and runnable as is."""
    mapping = standard_task_mapping(name)
    mapping["name"] = new_name
    mapping["description"] = f"started from {mapping['data']['dataset']}; edit and run with staicc run --tasks FILE"
    return mapping


SCAFFOLD_HEADER = """\
# A StaICC task started from {source}.  It reads {source}'s bundled rows; to evaluate your own
# data, replace the [data] table, e.g.
#   [data]
#   path = "my_data.csv"          # or .jsonl; relative to this file
#   input_columns = ["text"]
#   label_column = "label"
# and drop [split] (the default rule sizes the split from your row count).
# Any change to the standard's definition makes the results non-standard.
# Keys: docs/tasks.md.   Check: staicc tasks validate FILE
"""


def to_toml(mapping: Mapping[str, Any], header: str = "") -> str:
    """``mapping`` as TOML text: scalars and arrays first, then each table (nested tables dotted)."""
    lines: List[str] = [header.rstrip("\n")] if header else []
    keys = sorted(mapping, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))
    _table(lines, mapping, keys, None)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(lines: List[str], mapping: Mapping[str, Any], keys: List[str], prefix: Optional[str]) -> None:
    scalars = [k for k in keys if not isinstance(mapping[k], Mapping)]
    tables = [k for k in keys if isinstance(mapping[k], Mapping)]
    if prefix is not None and (scalars or not tables):
        lines.append("")
        lines.append(f"[{prefix}]")
    for key in scalars:
        lines.append(f"{_key(key)} = {_value(mapping[key])}")
    for key in tables:
        inner = mapping[key]
        _table(lines, inner, list(inner), _key(key) if prefix is None else f"{prefix}.{_key(key)}")


def _key(key: str) -> str:
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, plus DEL, which TOML also wants escaped."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise InvalidTypeError(f"a task file cannot hold {type(value).__name__} {value!r}")
