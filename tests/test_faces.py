"""Each package's face: ``__all__`` names what the docs teach, and the documented API's examples run.

Every package of StaICC lists its public names in ``__all__`` (an empty list where the
documented names live in its modules), so ``from StaICC.x import *`` binds exactly those
names; every name a page of the docs imports from a package is among them.  The ``>>>``
examples in the docstrings of the documented API run here as doctests, on the built-in
reference model and a few test items, so CI runs them with the other tests.
"""
import doctest
import importlib
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "StaICC"

#: every package of StaICC, by its import name
PACKAGES = sorted("StaICC" + "".join("." + part for part in path.parent.relative_to(PACKAGE).parts)
                  for path in PACKAGE.rglob("__init__.py"))

#: the modules whose docstrings hold the documented API's examples, and the docstrings that must hold one (the
#: module's own, by its last name, where it shows its class: ``RunConfig``, ``Registry``)
EXAMPLES = {
    "StaICC.runs.config": ["config"],
    "StaICC.runs.execute": ["execute"],
    "StaICC.runs.observer": ["RunObserver"],
    "StaICC.runs.write": ["write"],
    "StaICC.runs.calls": ["run_suite", "run_methods"],
    "StaICC.registry": ["registry"],
    "StaICC.subbenchmarks.suite": ["run_suite"],
    "StaICC.subbenchmarks.builtin": ["Normal"],
    "StaICC.methods.run": ["run_methods"],
    "StaICC.metrics.scores": ["accuracy", "averaged_truelabel_likelihood", "macro_F1",
                              "expected_calibration_error_1", "consistency"],
}


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_names_its_face_in_all(name):
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    assert isinstance(names, list), f"{name} has no __all__ list"
    assert len(set(names)) == len(names), f"{name}.__all__ names a name twice"
    assert all(not n.startswith("_") or n == "__version__" for n in names), f"{name}.__all__ names a private name"
    namespace: dict = {}
    exec(f"from {name} import *", namespace)  # noqa: S102  (a fixed import statement, the test's subject)
    assert set(namespace) - {"__builtins__"} == set(names)


def _documented_imports():
    """(package, name) for every ``from StaICC[.package] import a, b`` line of the README and docs/."""
    found = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for match in re.finditer(r"^\s*from (StaICC(?:\.\w+)*) import ([\w, ]+?)\s*(?:#.*)?$", path.read_text(encoding="utf-8"),
                                 re.MULTILINE):
            if match.group(1) in PACKAGES:
                found.update((match.group(1), n.split()[0]) for n in match.group(2).split(",") if n.strip())
    return sorted(found)


def test_the_docs_import_only_names_the_packages_export():
    documented = _documented_imports()
    assert len(documented) > 10  # the reader found the docs' import lines
    missing = [f"from {package} import {name}" for package, name in documented
               if name not in importlib.import_module(package).__all__]
    assert not missing, "names the docs import but the package's __all__ does not list:\n" + "\n".join(missing)


@pytest.mark.parametrize("module_name", sorted(EXAMPLES))
def test_the_documented_apis_examples_run(module_name):
    module = importlib.import_module(module_name)
    tests = {test.name.rsplit(".", 1)[-1]: test for test in doctest.DocTestFinder().find(module) if test.examples}
    assert set(EXAMPLES[module_name]) <= set(tests), f"no >>> example in {module_name}: " \
                                                     f"{sorted(set(EXAMPLES[module_name]) - set(tests))}"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a smoke run's departures from the standard are warned about, as they should be
        for test in tests.values():
            runner.run(test)
    assert runner.failures == 0, f"{runner.failures} example(s) of {module_name} failed (see the output above)"
