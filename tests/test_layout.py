"""The package's layout: every import points down the data flow, and no import circle crosses packages.

The import graph is read from the source with :mod:`ast` (module-level and function-level imports,
relative and absolute), so an import hidden inside a function counts as much as one at the top of
a file.  Each top-level module or package of ``StaICC`` has a floor in :data:`FLOORS`, in the order
data flows (docs/architecture.md); a module may import from its own floor or any floor below it.
"""
import ast
import collections
from pathlib import Path
from typing import Dict, List, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "StaICC"

#: floors, lowest first; a unit (a top-level module or package of StaICC) imports only from its floor or below
FLOORS: Tuple[Tuple[str, ...], ...] = (
    ("standard", "version"),                              # the standard's constants
    ("errors",),                                          # error classes, warnings, error locations
    ("validation", "extras", "rng", "numeric", "spec", "registry"),  # shared checks, optional deps, LCG, sums, the spec table, Registry
    ("data", "datasets"),                                 # bundled data, loaders, the triplet split
    ("custom_datasets",),                                 # the user's data
    ("sampling",),                                        # demonstration rows
    ("retrieval",),                                       # retrievers (rows chosen by similarity)
    ("prompt",),                                          # templates and prompt pieces
    ("requests",),                                        # Request, Answer
    ("backends",),                                        # models
    ("cache",),                                           # the prediction cache
    ("metrics",),                                         # metrics on the answers
    ("results",),                                         # ResultDict, records, provenance, exports
    ("engine",),                                          # plan -> score -> summarize
    ("subbenchmarks",),                                   # the experimentor, sub-benchmarks, the suite
    ("scaleout",),                                        # shards, batch APIs
    ("stats",),                                           # significance, bootstrap, comparisons
    ("tasks",),                                           # task files
    ("methods",),                                         # calibrations and other methods on the benchmark
    ("runs",),                                            # the application floor: a run planned, asked, recorded, written
    ("report",),                                          # tables, plots, HTML, the report commands
    ("cli", "__main__"),                                  # the command line
    ("legacy",),                                          # the original 0.1.1 API
    ("util", "normal", "diagnosis", "prefabricate_inference", "cached_dataset"),  # the original import paths
    ("__init__",),                                        # the package itself: lazy exports of everything
)

#: imports that run up a floor on purpose: (importing module, imported module) -> why
ALLOWED_UP: Dict[Tuple[str, str], str] = {
    ("StaICC.stats.lite_run", "StaICC.runs.lite"):
        "the earlier import path of run_lite and full_run_counts: a lite run is built and asked by the runs floor",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> Dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _targets(module: str, path: Path, node: ast.AST, modules: Dict[str, Path]) -> List[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    found = []
    for name in names:
        if name.split(".")[0] != "StaICC":
            continue
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        found.append(name)
    return found


def import_graph() -> Dict[str, Set[str]]:
    """module -> the StaICC modules it imports anywhere in its source (``from a.b import c`` counts a.b.c
    when c is a module, else a.b)."""
    modules = _modules()
    graph: Dict[str, Set[str]] = collections.defaultdict(set)
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module].update(target for target in _targets(module, path, node, modules) if target != module)
    return graph


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


FLOOR_OF = {unit: floor for floor, units in enumerate(FLOORS) for unit in units}


def upward_imports() -> List[str]:
    found = []
    for module, targets in sorted(import_graph().items()):
        for target in sorted(targets):
            if (module, target) in ALLOWED_UP:
                continue
            if FLOOR_OF[unit_of(target)] > FLOOR_OF[unit_of(module)]:
                found.append(f"{module} -> {target}")
    return found


def circles() -> List[List[str]]:
    """The import graph's strongly connected components of more than one module (allowed edges left out)."""
    graph = import_graph()
    for module, target in ALLOWED_UP:
        graph[module].discard(target)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: the graph is deep enough to trouble recursion
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for module in sorted(_modules()):
        if module not in index:
            visit(module)
    return components


def test_every_unit_of_the_package_has_a_floor():
    units = {unit_of(module) for module in _modules()}
    assert units - set(FLOOR_OF) == set(), "give each new top-level module or package a floor in FLOORS"
    assert set(FLOOR_OF) - units == set(), "a floor names a unit that no longer exists"


def test_the_graph_reader_sees_relative_absolute_and_function_level_imports():
    graph = import_graph()
    assert "StaICC.standard" in graph["StaICC.spec"]                        # from .standard import ...
    assert "StaICC.numeric" in graph["StaICC.metrics"]                      # from ..numeric import ...
    assert "StaICC.subbenchmarks.builtin" not in graph["StaICC"]            # a string, not an import
    assert "StaICC.results.display" in graph["StaICC.results"]              # inside a method


def test_no_import_runs_up_the_data_flow():
    found = upward_imports()
    assert not found, "imports that run up a floor (see FLOORS):\n" + "\n".join(found)


def test_no_import_circle_crosses_packages():
    crossing = [component for component in circles() if len({unit_of(module) for module in component}) > 1]
    assert not crossing, "import circles across packages:\n" + "\n".join(" <-> ".join(c) for c in crossing)


#: circles inside one package that are left on purpose: the package's modules, and why
ALLOWED_CIRCLES: Dict[Tuple[str, ...], str] = {
    ("StaICC.report.commands", "StaICC.report.compare_command"):
        "left for now: the compare command shares the report command's option helpers, which list it back",
    ("StaICC.cli.methods", "StaICC.cli.run"):
        "left for now: run and methods share run's helpers (the commands' parsers are found by name in "
        "cli/common.CLI_COMMANDS, so the package's main no longer closes a circle with every command)",
}


def test_no_import_circle_inside_a_package():
    found = [component for component in circles() if tuple(component) not in ALLOWED_CIRCLES]
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


#: files over the size limit, and why they are left for now
LONG_FILES_LEFT: Dict[str, str] = {
}


def test_no_file_over_400_lines_and_no_function_over_60():
    long_files, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400 and relative not in LONG_FILES_LEFT:
            long_files.append(f"{relative}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                long_functions.append(f"{relative}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not long_files and not long_functions, "\n".join(long_files + long_functions)
