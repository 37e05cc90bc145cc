"""The task schema: one frozen dataclass per section, checked key by key.

A task file (TOML, JSON, YAML) or a Python asset's ``config()`` is a mapping; :func:`parse_task`
turns it into a :class:`TaskConfig`.  Each field says its kind and what it means (the
``doc`` metadata, which ``docs/tasks.md`` lists); every key the schema does not name is
refused with the nearest valid key, because a misspelt key silently ignored would run a
different task than the one the user wrote.  Values are only shape-checked here; what
they mean together (a column that exists, a label word count) is checked when the task
is resolved against its data.
"""
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ..validation import Boolean, Integer
from .errors import TaskError, nearest

#: sources a task's data may come from
SOURCES = ("csv", "jsonl", "hf", "records", "standard")
#: scoring modes of the log-probability and generative backends
SCORINGS = ("last_token", "first_token", "sequence", "generate")


def _doc(kind: str, doc: str, default: Any = None) -> Any:
    return field(default=default, metadata={"kind": kind, "doc": doc})


def _section(cls: type, doc: str) -> Any:
    return field(default_factory=cls, metadata={"kind": "section", "doc": doc})


@dataclass(frozen=True)
class DataSpec:
    source: Optional[str] = _doc("source", "csv, jsonl, hf, records or standard (default: from the path's ending)")
    path: Optional[str] = _doc("name", "CSV or JSON Lines file, relative to the task file")
    dataset: Optional[str] = _doc("name", "source=standard: one of the ten standard datasets; source=hf: a "
                                          "HuggingFace dataset name")
    config: Optional[str] = _doc("name", "source=hf: the dataset configuration")
    split: Optional[str] = _doc("name", "source=hf: the split to read, e.g. train")
    delimiter: Optional[str] = _doc("char", "source=csv: the field delimiter (default ,)")
    records: Optional[Tuple[Dict[str, Any], ...]] = _doc("records", "source=records: the rows, inline")
    input_columns: Optional[Tuple[str, ...]] = _doc("columns", "the input column(s), in prompt order")
    label_column: Optional[str] = _doc("name", "the label column")
    deduplicate: bool = _doc("bool", "drop rows whose inputs repeat an earlier row before the split, so that "
                                     "no test query is also a demonstration (default false)", False)


@dataclass(frozen=True)
class LabelSpec:
    words: Any = _doc("words", "label words: a list (index = raw label id) or a table {raw value = word}")
    aliases: Optional[Dict[str, Tuple[str, ...]]] = _doc("aliases", "scoring=generate: other phrases naming a "
                                                                    "label, {word = [phrase, ...]}")


@dataclass(frozen=True)
class AlternatesSpec:
    instruction: Optional[Tuple[str, ...]] = _doc("three_texts", "3 instructions, the first the template's")
    input_text_prefixes: Optional[Tuple[Tuple[str, ...], ...]] = _doc("three_lists", "3 prefix lists, the first "
                                                                                      "the template's")
    label_prefix: Optional[Tuple[str, ...]] = _doc("three_texts", "3 label prefixes, the first the template's")
    label_affix: Optional[Tuple[str, ...]] = _doc("three_texts", "3 label affixes, the first the template's")


@dataclass(frozen=True)
class TemplateSpec:
    instruction: Optional[str] = _doc("text", "text before the demonstrations")
    input_text_prefixes: Optional[Tuple[str, ...]] = _doc("texts", "one prefix per input column")
    input_text_affixes: Optional[Tuple[str, ...]] = _doc("texts", "one affix per input column")
    label_prefix: Optional[str] = _doc("text", "text before each label word")
    label_affix: Optional[str] = _doc("text", "text after each demonstration's label word")
    query_prefix: Optional[str] = _doc("text", "text before the query")
    alternates: AlternatesSpec = _section(AlternatesSpec, "Template_sens: 3 options for each of 4 template parts")


@dataclass(frozen=True)
class SplitSpec:
    calibration: Optional[int] = _doc("count", "calibration rows")
    demonstration: Optional[int] = _doc("count", "demonstration rows")
    test: Optional[int] = _doc("count", "test rows (at least 1)")
    column: Optional[str] = _doc("name", "fixed split: the column that names each row's part (test, calibration, "
                                         "demonstration, train or unused)")
    values: Optional[Dict[str, str]] = _doc("part_map", "fixed split: other values of split.column, {value = part}")
    files: Optional[Dict[str, str]] = _doc("part_files", "fixed split: one file per part, {test = PATH, train = PATH, "
                                                         "...}, relative to the task file")
    id_column: Optional[str] = _doc("name", "fixed split: the column of row ids that split.test_ids names")
    test_ids: Optional[Tuple[str, ...]] = _doc("ids", "fixed split: the ids of the test rows; every other row is "
                                                      "train")


@dataclass(frozen=True)
class RunSpec:
    benchmarks: Optional[Tuple[str, ...]] = _doc("benchmarks", "'all' or sub-benchmark names (default: the "
                                                               "command's --benchmarks)")
    k: Optional[int] = _doc("count", "demonstrations per query (default: the command's --k)")
    retriever: Optional[str] = _doc("name", "zero, fixk, random, bm25, topk, mmr, embedding, votek or dpp "
                                            "(non-standard)")
    retriever_args: Dict[str, Any] = _doc("table", "the retriever's arguments", None)
    metrics: Tuple[str, ...] = _doc("texts", "extra metrics for Normal, by registry name", ())


@dataclass(frozen=True)
class ModelSpec:
    backend: Optional[str] = _doc("name", "the backend these defaults are for (used when --model is not given)")
    scoring: Optional[str] = _doc("scoring", "last_token (the standard), first_token, sequence or generate")
    unparsed: Optional[str] = _doc("name", "scoring=generate: uniform, error or label:<i> for an answer naming "
                                           "no label")
    max_new_tokens: Optional[int] = _doc("count", "scoring=generate: the longest answer")
    apply_chat_template: Optional[bool] = _doc("optbool", "hf: wrap every prompt in the tokenizer's chat template")
    system_instruction: Optional[str] = _doc("name", "hf with a chat template: a system message")
    fewshot_as_multiturn: Optional[bool] = _doc("optbool", "hf with a chat template: each demonstration as a "
                                                           "user turn and its label as the assistant's answer")
    args: Dict[str, Any] = _doc("table", "any other model arguments (as --model-args)", None)


@dataclass(frozen=True)
class TaskConfig:
    name: str = _doc("name", "the task's name: the key of its results")
    description: str = _doc("text", "free text", "")
    data: DataSpec = _section(DataSpec, "where the rows come from")
    labels: LabelSpec = _section(LabelSpec, "label words and aliases")
    template: TemplateSpec = _section(TemplateSpec, "the prompt template")
    split: SplitSpec = _section(SplitSpec, "split sizes (default: the builder's rule, or the standard's), or a "
                                           "fixed split")
    run: RunSpec = _section(RunSpec, "what to run: sub-benchmarks, k, retriever, extra metrics")
    model: ModelSpec = _section(ModelSpec, "model defaults; --model / --model-args override them")


# ----------------------------------------------------------------------------
# value checks, by kind: (value, key, path) -> checked value
# ----------------------------------------------------------------------------
def _fail(path: str, key: str, expected: str, value: Any) -> TaskError:
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return TaskError(f"expected {expected}, got {type(value).__name__} {shown}", path=path, key=key)


def _text(value: Any, key: str, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, key, "a string", value)
    return value


def _name(value: Any, key: str, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, key, "a non-empty string", value)
    return value


def _char(value: Any, key: str, path: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise _fail(path, key, "a single character", value)
    return value


def _bool(value: Any, key: str, path: str) -> bool:
    if Boolean().judge(value)[0]:
        raise _fail(path, key, "true or false", value)
    return value


def _count(value: Any, key: str, path: str) -> int:
    if Integer(0).judge(value)[0]:
        raise _fail(path, key, "a non-negative integer", value)
    return value


def _texts(value: Any, key: str, path: str) -> Tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(path, key, "a list of strings", value)
    return tuple(value)


def _columns(value: Any, key: str, path: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, key, "a column name or a non-empty list of column names", value)
    return tuple(value)


def _three_texts(value: Any, key: str, path: str) -> Tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != 3 or not all(isinstance(v, str) for v in value):
        raise _fail(path, key, "a list of exactly 3 strings (the first the template's own)", value)
    return tuple(value)


def _three_lists(value: Any, key: str, path: str) -> Tuple[Tuple[str, ...], ...]:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise _fail(path, key, "a list of exactly 3 prefix lists (one string per input column)", value)
    return tuple(_texts(v, f"{key}[{i}]", path) for i, v in enumerate(value))


def _words(value: Any, key: str, path: str) -> Any:
    if isinstance(value, Mapping):
        if not all(isinstance(w, str) for w in value.values()):
            raise _fail(path, key, "a table of raw label value = label word (strings)", value)
        return dict(value)
    return _texts(value, key, path)


def _aliases(value: Any, key: str, path: str) -> Dict[str, Tuple[str, ...]]:
    if not isinstance(value, Mapping):
        raise _fail(path, key, "a table {label word = [phrase, ...]}", value)
    return {word: _texts([p] if isinstance(p, str) else p, f"{key}.{word}", path) for word, p in value.items()}


def _table(value: Any, key: str, path: str) -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, key, "a table of name = value", value)
    for name, item in value.items():
        if not isinstance(item, (str, int, float, bool)):
            raise _fail(path, f"{key}.{name}", "a string, number or boolean", item)
    return dict(value)


def _records(value: Any, key: str, path: str) -> Tuple[Dict[str, Any], ...]:
    if not isinstance(value, (list, tuple)):
        raise _fail(path, key, "a list of tables, one per row", value)
    for i, row in enumerate(value):
        if not isinstance(row, Mapping):
            raise TaskError(f"expected a table of column = value, got {type(row).__name__}", path=path, key=key,
                            row=f"record {i}")
    return tuple(dict(row) for row in value)


def _part_map(value: Any, key: str, path: str) -> Dict[str, str]:
    from ..datasets.split import ROW_PARTS
    if not isinstance(value, Mapping):
        raise _fail(path, key, "a table {value = part}", value)
    for name, part in value.items():
        if part not in ROW_PARTS:
            raise TaskError(f"expected one of {', '.join(ROW_PARTS)}, got {part!r}" + _close(str(part), ROW_PARTS),
                            path=path, key=f"{key}.{name}")
    return {str(name): part for name, part in value.items()}


def _part_files(value: Any, key: str, path: str) -> Dict[str, str]:
    from ..datasets.split import ROW_PARTS
    if not isinstance(value, Mapping) or not value:
        raise _fail(path, key, "a table {part = file}, e.g. { train = \"train.csv\", test = \"test.csv\" }", value)
    for part, file in value.items():
        if part not in ROW_PARTS:
            raise TaskError(f"unknown part; expected one of {', '.join(ROW_PARTS)}" + _close(str(part), ROW_PARTS),
                            path=path, key=f"{key}.{part}")
        _name(file, f"{key}.{part}", path)
    if "test" not in value:
        raise TaskError("give the test file (test = PATH): a fixed split names its test rows", path=path, key=key)
    return dict(value)


def _ids(value: Any, key: str, path: str) -> Tuple[str, ...]:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip() for v in value):
        raise _fail(path, key, "a non-empty list of row ids (strings or integers)", value)
    return tuple(str(v).strip() for v in value)


def _close(word: str, choices: Tuple[str, ...]) -> str:
    hint = nearest(word, choices)
    return hint if hint.startswith("; did you mean") else ""


def _benchmarks(value: Any, key: str, path: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    return _texts(value, key, path)


def _choice(choices: Tuple[str, ...]) -> Callable[[Any, str, str], str]:
    def check(value: Any, key: str, path: str) -> str:
        if value not in choices:
            hint = nearest(str(value), choices)
            hint = hint if hint.startswith("; did you mean") else ""
            raise TaskError(f"expected one of {', '.join(choices)}, got {value!r}{hint}", path=path, key=key)
        return value
    return check


_CHECKS: Dict[str, Callable[[Any, str, str], Any]] = {
    "text": _text, "name": _name, "char": _char, "bool": _bool, "optbool": _bool, "count": _count,
    "texts": _texts, "columns": _columns, "three_texts": _three_texts, "three_lists": _three_lists,
    "words": _words, "aliases": _aliases, "table": _table, "records": _records, "benchmarks": _benchmarks,
    "source": _choice(SOURCES), "scoring": _choice(SCORINGS), "part_map": _part_map, "part_files": _part_files,
    "ids": _ids,
}


def parse_section(cls: type, mapping: Any, prefix: str, path: str) -> Any:
    """One section's dataclass from its mapping: unknown keys refused, each value checked by kind."""
    if not isinstance(mapping, Mapping):
        raise _fail(path, prefix.rstrip(".") or "(top level)", "a table of keys", mapping)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values: Dict[str, Any] = {}
    for key, value in mapping.items():
        dotted = prefix + str(key)
        if key not in fields:
            raise TaskError("unknown key" + nearest(str(key), fields).replace("; valid keys", "; valid keys here"),
                            path=path, key=dotted)
        kind = fields[key].metadata["kind"]
        if kind == "section":
            values[key] = parse_section(fields[key].default_factory, value, dotted + ".", path)  # type: ignore[misc]
        elif value is None:
            continue  # JSON null / YAML ~: the default
        else:
            values[key] = _CHECKS[kind](value, dotted, path)
    return cls(**values)


def parse_task(mapping: Any, path: str) -> TaskConfig:
    """The :class:`TaskConfig` of a parsed task file; ``path`` names the file in errors."""
    config = parse_section(TaskConfig, mapping, "", path)
    if config.name is None:
        raise TaskError("missing: every task needs a name (the key of its results)", path=path, key="name")
    return config


def to_mapping(section: Any) -> Dict[str, Any]:
    """The plain dict of a parsed section, keys left at their defaults dropped (what ``show`` writes)."""
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.metadata["kind"] == "section":
            inner = to_mapping(value)
            if inner:
                out[f.name] = inner
        elif value is not None and value != f.default and value != ():
            out[f.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def schema_rows(cls: type = TaskConfig, prefix: str = "") -> list:
    """(dotted key, kind, doc) of every key, in schema order: the table ``docs/tasks.md`` shows."""
    rows = []
    for f in dataclasses.fields(cls):
        if f.metadata["kind"] == "section":
            rows.extend(schema_rows(f.default_factory, prefix + f.name + "."))  # type: ignore[arg-type]
        else:
            rows.append((prefix + f.name, f.metadata["kind"], f.metadata["doc"]))
    return rows
