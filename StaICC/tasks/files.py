"""Reading a task file: TOML, JSON, YAML or a Python asset, into a mapping, its hooks and its SHA-256.

TOML is read with the standard library's ``tomllib`` (Python 3.11+) or the ``tomli``
package (the ``tasks`` extra on 3.9 and 3.10); YAML needs PyYAML (the same extra).  A
Python asset is the user's own code, named by the user: it is imported from its path
with :mod:`importlib` (it runs, as any script the user starts would), and it may define

* ``config()`` -> the same keys as a data file (required);
* ``metadata()`` -> free information kept in provenance;
* ``post_process(text) -> label index | None``: maps a generated answer to a label;
* ``score(predictions, references) -> dict``: an evaluator over label words, whose
  numbers are reported beside Normal's metrics;
* ``messages(request) -> list of chat messages``: the chat turns of a generative backend.
"""
import hashlib
import importlib.util
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from ..errors import error_name
from .errors import TaskError
from .structured import bounded_yaml, json_without_duplicates

#: file endings, by format
FORMATS = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".py": "python"}
#: the functions a Python asset may define besides ``config``
HOOKS = ("metadata", "post_process", "score", "messages")
#: the largest task file read (inline records included); a data file it names is read by its own reader
MAX_TASK_FILE_BYTES = 64 << 20
#: what the user's code may raise and have reported as its file's failure: an exit (``sys.exit(3)``) or an
#: interrupt raised by the code itself ends that file's part, never the process with nothing said
USER_CODE_ERRORS = (Exception, SystemExit, KeyboardInterrupt)
#: the deepest nesting of lists and tables a task file may have (a task file uses 4 levels)
MAX_NESTING = 64


@dataclass(frozen=True)
class TaskSource:
    """A read task file: its mapping, its hooks (Python assets), where it lies and its bytes' SHA-256."""

    path: str
    format: str
    mapping: Any
    sha256: str
    hooks: Dict[str, Callable] = field(default_factory=dict)

    @property
    def directory(self) -> str:
        return os.path.dirname(os.path.abspath(self.path))


def read_task_file(path: str) -> TaskSource:
    """The task file at ``path``, parsed; a missing file, a bad ending or a syntax error is a TaskError."""
    ending = os.path.splitext(path)[1].lower()
    if ending not in FORMATS:
        raise TaskError(f"unknown task file ending {ending or '(none)'!r}; expected one of "
                        f"{', '.join(sorted(FORMATS))}", path=path)
    data, whole = read_regular(path, MAX_TASK_FILE_BYTES)
    if not whole:
        raise TaskError(f"is larger than {MAX_TASK_FILE_BYTES} bytes, the limit for a task file; put large data in a "
                        "CSV or JSON Lines file that data.path names", path=path)
    digest = hashlib.sha256(data).hexdigest()
    kind = FORMATS[ending]
    if kind == "python":
        mapping, hooks = _python_asset(path)
        return TaskSource(path, kind, mapping, digest, hooks)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    return TaskSource(path, kind, _parse_text(text, kind, path), digest)


def read_regular(path: str, limit: int) -> Tuple[bytes, bool]:
    """(the first ``limit`` bytes of the regular file ``path``, whether that is all of it).

    A FIFO, a device (``/dev/zero``), a socket or a folder — or a link to one — is refused
    before anything is read: the file is opened without blocking and checked by its open
    handle, so it cannot be swapped between the check and the read.
    """
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise TaskError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
            raise TaskError(f"is {kind}, not a regular file; a task file is read only from a regular file", path=path)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(handle, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise TaskError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    finally:
        os.close(handle)
    data = b"".join(chunks)
    return data[:limit], len(data) <= limit


def _parse_text(text: str, kind: str, path: str) -> Any:
    """The mapping of a data task file; a syntax error, or nesting deeper than :data:`MAX_NESTING`, is a TaskError."""
    try:
        value = _parsed(text, kind, path)
    except RecursionError:
        value = None
        deep = True
    else:
        deep = nesting_over(value, MAX_NESTING)
    if deep:
        raise TaskError(f"nested more than {MAX_NESTING} levels deep; a task file nests a few tables", path=path)
    return value


def nesting_over(value: Any, limit: int) -> bool:
    """Whether the lists and tables of a parsed value nest deeper than ``limit`` levels (walked iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parsed(text: str, kind: str, path: str) -> Any:
    try:
        return _parser(kind, path)(text)
    except TaskError:
        raise
    except ValueError as exc:  # each parser's syntax error, or a value Python refuses (a 5,000-digit integer)
        raise TaskError(_syntax_message(exc, kind), path=path) from None


def _parser(kind: str, path: str) -> Any:
    if kind == "json":
        return lambda text: json_without_duplicates(text, path)
    if kind == "toml":
        return _toml_module().loads
    return lambda text: bounded_yaml(text, path, MAX_NESTING)


def _syntax_message(exc: ValueError, kind: str) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if kind == "toml" and type(exc).__name__ == "TOMLDecodeError":
        return f"malformed TOML: {first}"
    return first if first.startswith("malformed") else f"a value cannot be read ({first})"


def _toml_module(version: Tuple[int, ...] = tuple(sys.version_info)) -> Any:
    """``tomllib`` on Python 3.11+, else ``tomli`` (the ``tasks`` extra)."""
    if version >= (3, 11):
        import tomllib
        return tomllib
    from ..extras import require
    return require("tomli", "reading a TOML task file on Python < 3.11")


def import_python_file(path: str, prefix: str, fail: Callable[[str], Exception]) -> Any:
    """Import the user's Python file at ``path`` as a module named ``<prefix>_<stem>_<path hash>``; a file that
    cannot be imported, or whose code raises, is ``fail(message)`` (one line).  Task assets and method files
    are read this way."""
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    name = f"{prefix}_{stem}_{hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise fail("cannot import this file as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: code that looks its module up (dataclasses) finds it
    try:
        spec.loader.exec_module(module)
    except USER_CODE_ERRORS as exc:  # the user's code: any error it raises, an exit too, is reported, one line
        del sys.modules[name]
        raise fail(f"importing the file raised {error_name(exc)}: "
                   f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    return module


def _python_asset(path: str) -> tuple:
    """Import the asset from its path (the user's code) and read ``config()`` and its hooks."""
    module = import_python_file(path, "staicc_task", lambda message: TaskError(message, path=path))
    if "prompt" in vars(module):
        raise TaskError("StaICC writes every prompt from the template keys, so that the diagnoses can vary "
                        "them; replace prompt() by config()'s template table", path=path, key="prompt")
    if not callable(getattr(module, "config", None)):
        raise TaskError("a Python asset must define config() returning the task's keys", path=path, key="config")
    hooks = {}
    for hook in HOOKS:
        value = getattr(module, hook, None)
        if value is not None:
            if not callable(value):
                raise TaskError(f"expected a function, got {type(value).__name__}", path=path, key=hook)
            hooks[hook] = value
    return _call(module.config, "config", path), hooks


def _call(function: Callable, name: str, path: str) -> Any:
    try:
        return function()
    except USER_CODE_ERRORS as exc:  # the user's code, an exit too
        raise TaskError(f"{name}() raised {error_name(exc)}: {exc}", path=path, key=name) from None


def asset_metadata(source: TaskSource) -> Optional[Dict[str, Any]]:
    """The asset's ``metadata()`` (a dict), or None."""
    hook = source.hooks.get("metadata")
    if hook is None:
        return None
    value = _call(hook, "metadata", source.path)
    if not isinstance(value, dict):
        raise TaskError(f"metadata() must return a dict, got {type(value).__name__}", path=source.path, key="metadata")
    return value
