"""Your own method in a Python file, run by path beside the built-in ones, recorded with its SHA-256.

A method file is imported from its path (it runs, as any script you start would; the
loading is the task files', :func:`StaICC.tasks.files.import_python_file`) and defines::

    NAME = "prior_matching"            # optional: its name in tables and results (default: the file's stem)
    TEST_KINDS = ("labels",)           # optional: what apply() reads of each query ("labels", "full_vocab", "hidden")
    NEEDS_PROBABILITIES = True         # optional: False if it copes with label indexes (generative backends)
    PARAMETERS = {"calibration_number": 128}   # optional: its settings, recorded in provenance
    PREMISE_FREE = False               # optional: True to read answers["premise_free"] (each query, input emptied)

    def requests(data):                # optional: the prompts train() needs answered (none without it)
        return [data.write_prompt(demonstrations, query_inputs), ...]   # or (prompt, kind) pairs

    def train(data, answers):          # required: the fitted state, from the answers to requests(data), in order
        ...

    def apply(state, answers):         # required: one row of label scores per query of one pass
        return [...]                   # answers["labels"][q]: the model's probabilities for query q

``data`` is a :class:`~StaICC.methods.protocol.MethodData` (the dataset's calibration rows,
its label words, k, a prompt writer in the run's template); see ``docs/methods.md``.
"""
import hashlib
import inspect
import json
import os
import re
import sys
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidValueError, error_name
from ..requests import LABELS, REQUEST_KINDS
from .builtin import METHODS, built_in, vanilla
from .protocol import VANILLA, Method

#: a method file's NAME: it names the method's results and their folder
MAX_NAME = 64
SAFE_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_\-]{{0,{MAX_NAME - 1}}}")
#: the ``--methods`` entry that names every built-in method
ALL = "all"
#: a method ``all`` named records so in its source: left out where the backend cannot serve it
NAMED_BY = "named_by"
_FROM_ALL = "\0all:"
#: a ``--methods`` entry that ends so, or holds a path separator, names a file
FILE_ENDING = ".py"


def takes(name: str) -> Tuple[str, ...]:
    """The parameters the built-in method ``name`` takes (none for a name that is not built in)."""
    factory = METHODS.entry(name)
    return tuple(inspect.signature(factory).parameters) if factory is not None else ()


def is_method_file(entry: str) -> bool:
    return entry.endswith(FILE_ENDING) or os.sep in entry or "/" in entry


def _fail(path: str, message: str) -> InvalidValueError:
    return InvalidValueError(f"method file {path!r}: {message}")


def _file_sha256(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError as exc:
        raise _fail(path, f"cannot read it: {exc.strerror or exc}") from None


def _optional(module: Any, name: str, kinds: Union[type, tuple], default: Any, path: str) -> Any:
    value = getattr(module, name, default)
    if not isinstance(value, kinds) or isinstance(value, bool) and kinds is not bool:
        raise _fail(path, f"{name} must be {getattr(kinds, '__name__', kinds)}, got {type(value).__name__}")
    return value


def _safe_name(name: str, path: str) -> str:
    """The method's name, which names its results and its folder: an identifier (letters, digits, '_' and
    '-', a letter or '_' first, at most :data:`MAX_NAME` characters), never a built-in method's in any case."""
    if not SAFE_NAME.fullmatch(name):
        raise _fail(path, f"NAME must be letters, digits, '_' or '-', starting with a letter or '_' (at most "
                    f"{MAX_NAME} characters), got {name[:MAX_NAME + 8]!r}")
    if name.lower() in {built_in_name.lower() for built_in_name in METHODS}:
        raise _fail(path, f"NAME {name!r} is a built-in method's; give the method another NAME")
    return name


def _recorded_parameters(parameters: Dict[str, Any], path: str) -> Dict[str, Any]:
    """``PARAMETERS`` as results record them: JSON values with string keys (checked here, one line), with
    secret-named values and secrets inside texts redacted."""
    from ..backends.secrets import redact_json
    from ..tasks.files import MAX_NESTING, nesting_over
    try:
        if nesting_over(parameters, MAX_NESTING):
            raise InvalidValueError(f"nested more than {MAX_NESTING} levels deep")
        json.dumps(parameters, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _fail(path, f"PARAMETERS must be JSON values (text, numbers, lists, tables with text keys): "
                    f"{str(exc).splitlines()[0] if str(exc) else error_name(exc)}") from None
    return redact_json(parameters)


def load_method_file(path: str) -> Method:
    """The method defined by the file at ``path`` (see the module docstring), with its path and SHA-256."""
    from ..tasks.files import import_python_file
    if not os.path.isfile(path):
        raise _fail(path, "no such file")
    digest = _file_sha256(path)
    module = import_python_file(path, "staicc_method", lambda message: _fail(path, message))
    if _file_sha256(path) != digest:
        raise _fail(path, "it changed while it was read; run again")
    stem = os.path.splitext(os.path.basename(path))[0]
    name = _safe_name(_optional(module, "NAME", str, stem, path), path)
    functions = {}
    for function in ("requests", "train", "apply"):
        value = getattr(module, function, None)
        if value is None and function != "requests":
            raise _fail(path, f"a method file must define {function}() (see docs/methods.md)")
        if value is not None and not callable(value):
            raise _fail(path, f"{function} must be a function, got {type(value).__name__}")
        functions[function] = value
    kinds = tuple(_optional(module, "TEST_KINDS", (tuple, list), (LABELS,), path))
    if not kinds or any(kind not in REQUEST_KINDS for kind in kinds):
        raise _fail(path, f"TEST_KINDS must name some of {', '.join(REQUEST_KINDS)}, got {kinds!r}")
    parameters = _recorded_parameters(_optional(module, "PARAMETERS", dict, {}, path), path)
    paragraph = (module.__doc__ or "").strip().split("\n\n")[0]
    description = " ".join(paragraph.split()) or f"the method in {os.path.basename(path)}"
    return Method(name, description, requests=functions["requests"],
                  train=functions["train"], apply=functions["apply"], test_kinds=kinds,
                  needs_probabilities=_optional(module, "NEEDS_PROBABILITIES", bool, True, path),
                  premise_free=_optional(module, "PREMISE_FREE", bool, False, path),
                  parameters=tuple(sorted((str(k), v) for k, v in parameters.items())),
                  source=(("file", os.path.abspath(path)), ("sha256", digest)))


def resolve_methods(entries: Sequence[Union[str, Method]],
                    parameters: Optional[Dict[str, Any]] = None) -> List[Method]:
    """Built-in names, method files and :class:`Method` values, as methods: vanilla first (added when not named,
    since every method is compared with it), each name once.  ``parameters`` go to every built-in method that
    takes them (``calibration_number=32`` to all the calibrations, ``knn_k=5`` to knn); one that no named
    method takes is refused.  ``"all"`` names every built-in method."""
    if isinstance(entries, (str, Method)):
        entries = [entries]
    entries = _expanded(entries)
    parameters = dict(parameters or {})
    used = set()
    methods: List[Method] = []
    for entry in entries:
        if isinstance(entry, Method):
            methods.append(entry)
        elif not isinstance(entry, str) or not entry.strip():
            raise InvalidValueError(f"a method is a built-in name, a method file (.py) or a Method, got {entry!r}")
        elif is_method_file(entry.strip()):
            methods.append(load_method_file(entry.strip()))
        else:
            name = entry.strip()
            from_all = name.startswith(_FROM_ALL)
            name = name[len(_FROM_ALL):] if from_all else name
            taken = {k: v for k, v in parameters.items() if k in takes(name)}
            used.update(taken)
            method = built_in(name, **taken)
            methods.append(replace(method, source=method.source + ((NAMED_BY, ALL),)) if from_all else method)
    unused = sorted(set(parameters) - used)
    if unused:
        offered = "; ".join(f"{m.name} takes {', '.join(takes(m.name))}" for m in methods if takes(m.name))
        raise InvalidValueError(f"method parameter {', '.join(unused)}: no method named takes it"
                                + (f" ({offered})" if offered else " (the named methods take none)"))
    names = [m.name.lower() for m in methods]  # a folder per method: names that differ in case only collide
    twice = sorted({m.name for m in methods if names.count(m.name.lower()) > 1})
    if twice:
        raise InvalidValueError(f"methods named twice: {', '.join(twice)}")
    if VANILLA not in names:
        methods.insert(0, vanilla())
    return sorted(methods, key=lambda m: m.name != VANILLA)


def _expanded(entries: Sequence[Union[str, Method]]) -> List[Union[str, Method]]:
    """:data:`ALL` replaced by every built-in method not named beside it, in the built-in order."""
    named = {e.strip() for e in entries if isinstance(e, str)}
    out: List[Union[str, Method]] = []
    for entry in entries:
        if isinstance(entry, str) and entry.strip() == ALL:
            out += [_FROM_ALL + name for name in METHODS if name not in named]
        else:
            out.append(entry)
    return out


def servable(backend: Any, methods: Sequence[Method], check_backend: Callable[..., None]) -> List[Method]:
    """``methods`` less those that ``all`` named and ``backend`` cannot serve (a representation from a backend
    that answers label scores; probabilities from one that answers label indexes), said once on stderr.  A
    method named on its own is kept: ``check_backend`` (:func:`~StaICC.methods.run.check_backend`, which raises
    on what the backend cannot serve) refuses it, one line."""
    kept, left = [], []
    for method in methods:
        try:
            if (NAMED_BY, ALL) in method.source:
                check_backend(backend, method, ())
            kept.append(method)
        except ValueError:
            left.append(method.name)
    if left:
        print(f"staicc: note: methods 'all' names that the {backend.name} backend cannot serve, left out: "
              f"{', '.join(left)}", file=sys.stderr)
    return kept
