"""Turn the package's raises of built-in exceptions into StaICC's refusal classes, and check that none is left.

Every refusal of the package is a :class:`StaICC.errors.StaICCError`.  The class that replaces a built-in also
subclasses it (``InvalidValueError(StaICCError, ValueError)``; the table is ``StaICC.errors.STAND_INS``), so a
caller's ``except ValueError`` keeps working while ``except StaICCError`` catches every refusal.  The change is
mechanical, so it is a script that can be re-run after any merge (it is idempotent):

* ``raise ValueError(...)`` becomes ``raise InvalidValueError(...)``: only the class name changes; the
  arguments, the message text and a ``from ...`` clause stay as written; a bare ``raise`` and raises of any
  other class are left alone;
* ``type(exc).__name__`` of an exception caught by an ``except ... as exc`` handler, outside a comparison,
  becomes ``error_name(exc)``, which shows a stand-in by its built-in's name: a message that names a caught
  error reads byte for byte as before;
* the names used are added to the module's ``from ..errors import ...`` (extended when there is one, else
  one line after the module's leading imports).

Raises that stay built-in are the ones :data:`ALLOWED` describes, each with its reason.  ``--check`` rewrites
nothing and exits 1 listing every other built-in raise (``tests/tools/test_refusals_codemod.py`` runs it).

    python tools/refusals_codemod.py          # rewrite StaICC/ in place, print a summary
    python tools/refusals_codemod.py --check  # exit 1 listing the built-in raises left

Standard library only; runs on Python 3.9 and later.
"""
import argparse
import ast
import builtins
import collections
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "StaICC"

def stand_ins(root: Path = ROOT) -> Dict[str, str]:
    """The stand-in class of each built-in, ``{"ValueError": "InvalidValueError", ...}``: ``STAND_INS`` read
    from StaICC/errors.py's source, so the script imports nothing of the package."""
    tree = ast.parse((root / PACKAGE / "errors.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "STAND_INS":
            assert isinstance(node.value, ast.Dict)
            return {key.id: value.id for key, value in zip(node.value.keys, node.value.values)}  # type: ignore
    raise SystemExit("refusals_codemod: StaICC/errors.py has no STAND_INS table")


@dataclass(frozen=True)
class Allowed:
    """Built-in raises that stay built-in: every field given must match ("" / () match anything)."""
    reason: str
    paths: Tuple[str, ...] = ()       # file paths or folder prefixes relative to the repository root
    builtins: Tuple[str, ...] = ()    # built-in class names
    function: str = ""                # the enclosing function's name
    messages: Tuple[str, ...] = ()    # how the message begins (its first string constant), one of these


ORIGINAL_API = ("StaICC/legacy/", "StaICC/util/", "StaICC/normal.py", "StaICC/diagnosis.py",
                "StaICC/prefabricate_inference/", "StaICC/cached_dataset/")
BELOW_ERRORS = ("StaICC/standard.py", "StaICC/version.py", "StaICC/errors.py")
#: how the original's refusals begin, where the package raises them with the original's words
ORIGINAL_MESSAGES = ("The label wrong rate should be in [0, 1]", "The length of prediction should be the multiple of "
                     "loop_length", "bins should be less than the length of ground_truth",
                     "The length of ground_truth and prediction should be the same",
                     "Invalid number of demonstrations", "The sensitivity test should be larger than 1",
                     "k should be a positive integer")

#: the justified exceptions: the only built-in raises the package keeps
ALLOWED: Tuple[Allowed, ...] = (
    Allowed("the original 0.1.1 API and its import paths: code written for the original catches the exact "
            "types it raised", paths=ORIGINAL_API),
    Allowed("standard.py and version.py sit below StaICC.errors, and errors.py defines the classes: they "
            "cannot import them", paths=BELOW_ERRORS),
    Allowed("an abstract method: Python's protocol for 'a subclass defines this', not a refusal",
            builtins=("NotImplementedError",)),
    Allowed("a module's missing attribute: Python's protocol, which hasattr() and getattr() defaults rely on",
            builtins=("AttributeError",), function="__getattr__"),
    Allowed("an exit status, not an error", builtins=("SystemExit",)),
    Allowed("the original's own refusals (their text is the spec's, ../shared/spec/STANDARD.md): tests compare "
            "their exact type with the original's (tests/subbenchmarks/test_golden.py, "
            "tests/metrics/test_shared_row_summaries.py)", builtins=("ValueError",), messages=ORIGINAL_MESSAGES),
)


def _under(path: str, prefixes: Sequence[str]) -> bool:
    """``path`` is one of ``prefixes`` or inside one that ends with "/"."""
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes)


def _kept(path: str) -> bool:
    """Files the script leaves as written: the original API, and the floors below StaICC.errors."""
    return _under(path, ORIGINAL_API + BELOW_ERRORS)


@dataclass(frozen=True)
class BuiltinRaise:
    """One ``raise <built-in>`` statement: where it is and what it raises."""
    path: str
    line: int
    column: int          # the class name's UTF-8 byte offset in its line (ast's col_offset)
    end_column: int
    builtin: str
    function: str
    message: str
    end_line: int = 0    # the raise statement's last line

    def allowed_by(self) -> Optional[Allowed]:
        for rule in ALLOWED:
            if ((not rule.paths or _under(self.path, rule.paths))
                    and (not rule.builtins or self.builtin in rule.builtins)
                    and (not rule.function or self.function == rule.function)
                    and (not rule.messages or self.message.startswith(rule.messages))):
                return rule
        return None


def _is_builtin_exception(name: str) -> bool:
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _first_text(node: ast.expr) -> str:
    """The leading string constant of a raise's first argument (an f-string's first literal part), or ""."""
    if not isinstance(node, ast.Call) or not node.args:
        return ""
    arg = node.args[0]
    while isinstance(arg, ast.BinOp):  # "a" + b: its left end
        arg = arg.left
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""


def _walk(node: ast.AST, function: str) -> Iterator[Tuple[ast.AST, str]]:
    """Every node below ``node`` with the name of the function that encloses it ("" at module level)."""
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
        yield child, inner
        yield from _walk(child, inner)


def builtin_raises(path: str, tree: ast.Module) -> List[BuiltinRaise]:
    """The module's ``raise X(...)`` / ``raise X`` statements whose X is a built-in exception class."""
    found = []
    for node, function in _walk(tree, ""):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and _is_builtin_exception(target.id):
            found.append(BuiltinRaise(path, target.lineno, target.col_offset, target.end_col_offset or 0,
                                      target.id, function, _first_text(node.exc), node.end_lineno or target.lineno))
    return found


def _name_spans(tree: ast.Module) -> List[Tuple[int, int, int, str]]:
    """``type(exc).__name__`` of a handler's caught exception, outside comparisons: (line, start, end, exc)."""
    compared: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            compared.update(id(operand) for operand in [node.left, *node.comparators])
    spans = []
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler) or not handler.name:
            continue
        for node in (n for statement in handler.body for n in ast.walk(statement)):
            if (isinstance(node, ast.Attribute) and node.attr == "__name__" and id(node) not in compared
                    and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "type"
                    and len(node.value.args) == 1 and getattr(node.value.args[0], "id", None) == handler.name):
                spans.append((node.lineno, node.col_offset, node.end_col_offset or 0, handler.name))
    return spans


def _replace_spans(lines: List[bytes], spans: Sequence[Tuple[int, int, int, bytes, bytes]]) -> int:
    """Replace each (line, start, end, old, new) byte span whose text is ``old``; returns how many were replaced.

    Inside an f-string, Python before 3.12 may report a node's columns off; the span is then found by its
    text within the line (the text is exactly the expression, so the match is the expression)."""
    done = 0
    for line, start, end, old, new in sorted(set(spans), key=lambda s: (s[0], -s[1])):
        text = lines[line - 1]
        if text[start:end] != old:
            start = text.find(old)
            if start < 0:
                continue
            end = start + len(old)
        lines[line - 1] = text[:start] + new + text[end:]
        done += 1
    return done


def _string_interiors(source: str) -> Set[int]:
    """Lines that begin inside a string literal (a triple-quoted string's second line on): their
    indentation is text, never to be changed."""
    inside: Set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            inside.update(range(token.start[0] + 1, token.end[0] + 1))
    return inside


def _realign(lines: List[bytes], found: BuiltinRaise, grown: int, frozen: Set[int]) -> None:
    """Continuation lines aligned with the first argument move right as far as the class name grew."""
    for line in range(found.line + 1, found.end_line + 1):
        text = lines[line - 1]
        if line not in frozen and len(text) - len(text.lstrip(b" ")) == found.end_column + 1:
            lines[line - 1] = b" " * grown + text


def _order(name: str) -> Tuple[int, str]:
    """isort's order of imported names: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def _import_text(module: str, names: Sequence[str], width: int = 120) -> str:
    one = f"from {module} import {', '.join(names)}"
    if len(one) <= width:
        return one
    rows, row = [], f"from {module} import ("
    for i, name in enumerate(names):
        piece = name + (", " if i < len(names) - 1 else ")")
        if len(row) + len(piece.rstrip()) > width:
            rows.append(row.rstrip())
            row = "    "
        row += piece
    return "\n".join(rows + [row])


def _errors_module(path: str) -> str:
    """``..errors`` for StaICC/pkg/mod.py: the relative path of StaICC/errors.py, as the package imports it."""
    depth = len(Path(path).parts) - 1  # StaICC/x.py -> 1, StaICC/pkg/x.py -> 2
    return "." * depth + "errors"


def _add_import(source: str, tree: ast.Module, path: str, needed: Set[str]) -> str:
    """``source`` with ``needed`` imported from StaICC.errors at module level (an existing import extended)."""
    module = _errors_module(path)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and ((node.level and "." * node.level + (node.module or "") == module)
                                                 or node.module == "StaICC.errors"):
            have = {alias.asname or alias.name for alias in node.names}
            if needed <= have:
                return source
            written = [alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in node.names]
            names = sorted(set(written) | (needed - have), key=_order)
            lines = source.splitlines(keepends=True)
            head = lines[node.lineno - 1].encode()[:node.col_offset].decode()
            tail = lines[node.end_lineno - 1].encode()[node.end_col_offset:].decode()  # type: ignore[index]
            new = head + _import_text("." * node.level + (node.module or "") if node.level else node.module or "",
                                      names) + tail
            return "".join(lines[:node.lineno - 1] + [new] + lines[node.end_lineno:])  # type: ignore[index]
    # the new import goes first among the package's own imports (errors is the lowest floor), else after the
    # module's leading docstring and imports, a blank line apart from other packages' imports and from code
    after, gap, among_imports = 0, "", False
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.ImportFrom) and node.level:
            after, gap, among_imports = node.lineno - 1, "", True
            break
        if not (docstring or isinstance(node, (ast.Import, ast.ImportFrom))):
            break
        after, gap = node.end_lineno or node.lineno, "" if docstring else "\n"
    lines = source.splitlines(keepends=True)
    apart = "\n" if not among_imports and after < len(lines) and lines[after].strip() else ""
    new = gap + _import_text(module, sorted(needed, key=_order)) + "\n" + apart
    return "".join(lines[:after] + [new] + lines[after:])


def rewrite(source: str, path: str, table: Dict[str, str]) -> Tuple[str, collections.Counter]:
    """``source`` with its built-in raises turned into stand-ins (outside :data:`ALLOWED`), and what changed."""
    tree = ast.parse(source)
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    changed: collections.Counter = collections.Counter()
    spans, rewritten = [], []
    for found in builtin_raises(path, tree):
        if found.builtin in table and found.allowed_by() is None:
            spans.append((found.line, found.column, found.end_column, found.builtin.encode(),
                          table[found.builtin].encode()))
            rewritten.append(found)
            changed[found.builtin] += 1
    if not _kept(path):  # a caught error may be a stand-in raised anywhere: shown by its built-in's name
        for line, start, end, name in _name_spans(tree):
            spans.append((line, start, end, f"type({name}).__name__".encode(), f"error_name({name})".encode()))
            changed["type(...).__name__"] += 1
    if not spans:
        return source, changed
    _replace_spans(lines, spans)
    frozen = _string_interiors(source)
    for found in rewritten:
        _realign(lines, found, len(table[found.builtin]) - len(found.builtin), frozen)
    text = b"".join(lines).decode()
    needed = {table[b] for b in changed if b in table}
    if changed["type(...).__name__"]:
        needed.add("error_name")
    return _add_import(text, ast.parse(text), path, needed), changed


def package_files(root: Path = ROOT) -> List[Path]:
    return sorted((root / PACKAGE).rglob("*.py"))


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def check(root: Path = ROOT) -> List[BuiltinRaise]:
    """Every built-in raise of the package that :data:`ALLOWED` does not allow."""
    left = []
    for file in package_files(root):
        path = _relative(file, root)
        left.extend(r for r in builtin_raises(path, ast.parse(file.read_text(encoding="utf-8")))
                    if r.allowed_by() is None)
    return left


def _count(root: Path) -> Tuple[int, int]:
    """(built-in raises in the package, of which allowed)."""
    every = [r for file in package_files(root)
             for r in builtin_raises(_relative(file, root), ast.parse(file.read_text(encoding="utf-8")))]
    return len(every), sum(r.allowed_by() is not None for r in every)


def apply(root: Path = ROOT) -> collections.Counter:
    """Rewrite the package in place; returns the number of rewrites per built-in, and files changed."""
    table, total = stand_ins(root), collections.Counter()
    for file in package_files(root):
        source = file.read_text(encoding="utf-8")
        new, changed = rewrite(source, _relative(file, root), table)
        if new != source:
            file.write_text(new, encoding="utf-8")
            total.update(changed)
            total["files"] += 1
    return total


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 listing built-in raises left")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout)")
    args = parser.parse_args(argv)
    before, allowed = _count(args.root)
    if args.check:
        left = check(args.root)
        for r in left:
            print(f"{r.path}:{r.line}: raise {r.builtin} (use {stand_ins(args.root).get(r.builtin, 'a StaICCError')}"
                  f" or add a reason to ALLOWED in tools/refusals_codemod.py)")
        print(f"{before} built-in raises in {PACKAGE}/: {allowed} allowed, {len(left)} not")
        return 1 if left else 0
    done = apply(args.root)
    after, allowed_after = _count(args.root)
    for name in sorted(k for k in done if k != "files"):
        print(f"  {name}: {done[name]} rewritten")
    print(f"{done['files']} files changed; built-in raises in {PACKAGE}/: {before} before, {after} after "
          f"({allowed_after} allowed, {after - allowed_after} not)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
