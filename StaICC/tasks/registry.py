"""Finding tasks by name: the ten standard datasets, task files in include folders, and paths.

``--tasks TREC`` is the standard dataset's own task; ``--tasks my_reviews`` is the file
``my_reviews.toml`` (or ``.json``, ``.yaml``, ``.yml``, ``.py``) in a folder given with
``--include-path``; anything that names an existing file is that file.  Listing reads
no Python asset (that would run its code): a data file shows its ``name`` key.
"""
import hashlib
import os
import json
import re
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from .errors import TaskError, nearest
from .files import FORMATS, TaskSource, _parse_text, _toml_module, read_regular, read_task_file
from .show import standard_task_mapping, to_toml
from .task import Task, checked_config, resolve_task, task_from_source

#: the bytes of each task file that listing reads (the name is near the top)
LIST_READ_BYTES = 1 << 20
# a top-level name line: TOML (before any [table]), YAML (a block mapping's key at column 0), JSON (a key)
_TOML_NAME = re.compile(r"""\s*(name|"name"|'name')\s*=""")
_YAML_NAME = re.compile(r"""(name|"name"|'name')\s*:(\s|$)""")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def standard_source(name: str) -> TaskSource:
    """A standard dataset as a task source: the mapping ``tasks show`` prints, hashed as that text."""
    mapping = standard_task_mapping(name)
    text = to_toml(mapping)
    return TaskSource(f"<standard {mapping['name']}>", "standard", mapping,
                      hashlib.sha256(text.encode("utf-8")).hexdigest())


def standard_task(name: str) -> Task:
    return task_from_source(standard_source(name))


def included_files(include_paths: Sequence[str]) -> List[Tuple[str, str]]:
    """(stem, path) of every task file in the include folders, in folder then name order."""
    found = []
    for folder in include_paths:
        if not os.path.isdir(folder):
            raise InvalidValueError(f"--include-path {folder!r} is not a folder")
        for entry in sorted(os.listdir(folder)):
            stem, ending = os.path.splitext(entry)
            if ending.lower() in FORMATS and not entry.startswith((".", "_")):
                found.append((stem, os.path.join(folder, entry)))
    return found


def find_source(spec: str, include_paths: Sequence[str] = ()) -> TaskSource:
    """The task file ``spec`` names, read: a file path, a standard dataset, or a task in an include folder."""
    from ..datasets import standard_dataset_aliases, standard_dataset_names
    if os.path.isfile(spec) or os.path.splitext(spec)[1].lower() in FORMATS:
        return read_task_file(spec)
    if spec in standard_dataset_aliases():
        return standard_source(spec)
    matches = [path for stem, path in included_files(include_paths) if stem == spec]
    if not matches:  # a data file's own name key, as lm-eval finds a task by its `task:` key
        matches = [path for _, path in included_files(include_paths) if _declared_name(path) == spec]
    if len(matches) > 1:
        raise InvalidValueError(f"task {spec!r} is defined by several files: {', '.join(matches)}")
    if matches:
        return read_task_file(matches[0])
    known = list(standard_dataset_names()) + [stem for stem, _ in included_files(include_paths)]
    raise InvalidValueError(f"unknown task {spec!r}: not a file, a standard dataset, or a task file in --include-path"
                            + nearest(spec, known).replace("valid keys", "known tasks"))


def find_task(spec: str, include_paths: Sequence[str] = ()) -> Task:
    return task_from_source(find_source(spec, include_paths))


def find_tasks(specs: Iterable[str], include_paths: Sequence[str] = ()) -> List[Task]:
    """Each named task, checked: every file's keys first, then the data (nothing is loaded for a
    task while another has a wrong key); two tasks that would give results under one name are refused."""
    sources = [find_source(spec, include_paths) for spec in specs]
    configs = [checked_config(source) for source in sources]
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidValueError(f"two tasks are named {twice[0]!r}; results are keyed by task name")
    return [resolve_task(source, config) for source, config in zip(sources, configs)]


def list_tasks(include_paths: Sequence[str] = ()) -> List[Tuple[str, str, str]]:
    """(name to pass to --tasks, kind, what it is) of every known task."""
    from ..datasets import dataset_constants, standard_dataset_names
    rows = [(name, "standard", dataset_constants(name)["task"]) for name in standard_dataset_names()]
    for stem, path in included_files(include_paths):
        rows.append((stem, FORMATS[os.path.splitext(path)[1].lower()], _describe(path)))
    return rows


def _declared_name(path: str) -> Optional[str]:
    """The ``name`` key of a data task file (None for a Python asset, whose code is not run to list it)."""
    return _listed(path)[0]


def _describe(path: str) -> str:
    if path.lower().endswith(".py"):
        return f"{path} (Python asset, read when run)"
    name, problem = _listed(path)
    return f"{path}" + (f" (name {name!r})" if name else f" ({problem})")


def _listed(path: str) -> Tuple[Optional[str], str]:
    """(the ``name`` a data task file declares, or None and why), reading at most :data:`LIST_READ_BYTES`.

    Listing reads only regular files (a FIFO or a link to ``/dev/zero`` is named, never
    read) and finds the name without parsing the task's data: a top-level ``name`` line
    (TOML, YAML) or key (JSON) in the file's first bytes; only a small file that hides
    it elsewhere is parsed whole.
    """
    if path.lower().endswith(".py"):
        return None, "Python asset"
    ending = FORMATS[os.path.splitext(path)[1].lower()]
    try:
        data, whole = read_regular(path, LIST_READ_BYTES)
        text = data.decode("utf-8", "ignore" if not whole else "strict")
        name = find_name(text, ending)
        if name is None and whole:
            mapping = _parse_text(text, ending, path)
            name = mapping.get("name") if isinstance(mapping, dict) else None
    except TaskError as exc:
        return None, exc.reason
    except (UnicodeDecodeError, ValueError, ImportError):
        return None, "no readable name"
    if isinstance(name, str):
        return name, ""
    return None, "no readable name" if whole else f"no name in its first {LIST_READ_BYTES} bytes"


def find_name(text: str, kind: str) -> Optional[Any]:
    """The top-level ``name`` of a task file's text, found without parsing the rest (None if not found)."""
    if kind == "json":
        return _json_name(text)
    in_multiline = False
    for line in text.splitlines():
        if kind == "toml":
            if not in_multiline and line.lstrip().startswith("["):
                return None  # the tables begin: top-level keys come before them
            if not in_multiline and _TOML_NAME.match(line):
                return _line_value(line, kind)
            in_multiline ^= (line.count('"""') + line.count("\'\'\'")) % 2 == 1
        elif _YAML_NAME.match(line):
            return _line_value(line, kind)
    return None


def _line_value(line: str, kind: str) -> Optional[Any]:
    try:
        if kind == "toml":
            mapping = _toml_module().loads(line)
        else:
            from ..extras import require
            mapping = require("yaml", "reading a YAML task file").safe_load(line)
    except Exception:  # the line alone does not parse: the caller parses the file whole
        return None
    return mapping.get("name") if isinstance(mapping, dict) else None


def _json_name(text: str) -> Optional[Any]:
    """The value of the ``name`` key of a JSON object, read key by key by the C scanner, stopping there."""
    decoder = json.JSONDecoder()
    at = _JSON_SPACE.match(text, 0).end()
    if text[at:at + 1] != "{":
        return None
    at += 1
    try:
        while True:
            at = _JSON_SPACE.match(text, at).end()
            key, at = decoder.raw_decode(text, at)
            at = _JSON_SPACE.match(text, at).end()
            if not isinstance(key, str) or text[at:at + 1] != ":":
                return None
            value, at = decoder.raw_decode(text, _JSON_SPACE.match(text, at + 1).end())
            if key == "name":
                return value
            at = _JSON_SPACE.match(text, at).end()
            if text[at:at + 1] != ",":
                return None
            at += 1
    except (ValueError, RecursionError):
        return None
