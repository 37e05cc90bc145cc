"""Compatibility stays in its room: core modules never import the legacy API, a shim or presentation code,
and every earlier module path of this package resolves, through the one alias table, to the module itself.

The import graph is read from the source with ``ast`` (relative imports resolved), so a function-level
import counts as much as a module-level one.
"""
import ast
import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "StaICC"

# The original 0.1.1 API (legacy/), its original import paths (few-line re-exports) and the
# presentation layer: core may be imported by them, never the other way round.
LEGACY = ("StaICC.legacy",)
SHIMS = ("StaICC.util", "StaICC.normal", "StaICC.diagnosis", "StaICC.prefabricate_inference",
         "StaICC.cached_dataset")
PRESENTATION = ("StaICC.report", "StaICC.cli", "StaICC.__main__")
NOT_CORE = LEGACY + SHIMS + PRESENTATION


def _module_name(path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


#: Jupyter's display protocol: the notebook calls these methods on a result object, so a core class
#: defines them, and they (only they) may import the presentation module made for them
DISPLAY_METHODS = ("_repr_html_", "_repr_markdown_")
DISPLAY_MODULE = "StaICC.report.notebook"


def _display_hook_imports(tree):
    """The import nodes inside display-protocol methods that import only :data:`DISPLAY_MODULE`."""
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in DISPLAY_METHODS:
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").endswith("report.notebook"):
                    allowed.add(id(inner))
    return allowed


def _imports(path):
    """Absolute names of every module ``path`` imports (``from X import y`` counts X and X.y)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    display_hooks = _display_hook_imports(tree)
    for node in ast.walk(tree):
        if id(node) in display_hooks:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


CORE_FILES = [p for p in sorted(PACKAGE.rglob("*.py")) if not _within(_module_name(p), NOT_CORE)]


def test_the_scan_sees_the_core_and_resolves_relative_imports():
    names = {_module_name(p) for p in CORE_FILES}
    assert {"StaICC", "StaICC.engine.scoring", "StaICC.subbenchmarks.experimentor", "StaICC.stats.bootstrap"} <= names
    assert not any(_within(n, NOT_CORE) for n in names)
    imported = _imports(PACKAGE / "subbenchmarks" / "experimentor.py")
    assert "StaICC.subbenchmarks.accessors" in imported and "StaICC.sampling.demonstrations" in imported


def test_only_the_display_methods_reach_the_notebook_module():
    tree = ast.parse("class R:\n    def _repr_html_(self):\n        from ..report.notebook import x\n"
                     "    def other(self):\n        from ..report.notebook import y\n")
    assert len(_display_hook_imports(tree)) == 1


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: _module_name(p))
def test_core_never_imports_legacy_shims_or_presentation(path):
    wrong = sorted({name for name in _imports(path) if _within(name, NOT_CORE)})
    assert wrong == [], f"{_module_name(path)} imports {wrong}"


def test_every_earlier_path_is_the_moved_module_with_a_deprecation_warning():
    code = (
        "import importlib, json, sys, warnings\n"
        "import StaICC\n"
        "out = {}\n"
        "for old, new in StaICC._MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]\n"
        "    out[old] = [module is importlib.import_module(new), module.__name__ == new, messages]\n"
        "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO_ROOT), capture_output=True, text=True,
                          check=True)
    table = json.loads(done.stdout)
    assert "StaICC.metrics.original" in table and "StaICC.experiment_accessors" in table
    for old, (same, named, messages) in table.items():
        assert same and named, old
        assert len(messages) == 1 and messages[0].startswith(f"{old} moved to "), (old, messages)


def test_the_original_helpers_live_in_legacy_and_keep_their_original_path():
    from StaICC.legacy import functional
    from StaICC.util import functional as original_path
    import StaICC.metrics as metrics
    assert original_path.kl_divergence is functional.kl_divergence
    assert original_path.accuracy is metrics.accuracy  # the original module held the metrics too
    assert not hasattr(metrics, "kl_divergence") and not hasattr(metrics, "math")
    assert "math" not in metrics.__all__


@pytest.mark.parametrize("name", ["StaICC.cache", "StaICC.prompt", "StaICC.metrics"])
def test_a_package_namespace_holds_its_public_names_only(name):
    import importlib
    import types
    module = importlib.import_module(name)
    private = [n for n in vars(module) if n.startswith("_") and not n.startswith("__")]
    unlisted = [n for n, value in vars(module).items()
                if not n.startswith("_") and not isinstance(value, types.ModuleType) and n not in module.__all__]
    assert private == [] and unlisted == [], (private, unlisted)
    assert all(hasattr(module, n) for n in module.__all__)
