"""``StaICC.__all__`` is the documented API, and every name in it imports."""
import re
import subprocess
import sys
from pathlib import Path

import StaICC

ROOT = Path(__file__).resolve().parent.parent
#: the names the original 0.1.1 release offers at the package's top level (its dir(), modules aside)
ORIGINAL_TOP_LEVEL = {"Contextual_bias", "Demo_sens", "Domain_bias", "GLER", "Normal", "Post_bias", "Template_sens",
                      "Triplet_bias"}


def _documented_top_level_names():
    """Every name the README, docs and examples import from the package itself (``from StaICC import ...``)."""
    found = set()
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]
    for path in texts:
        for wrapped, line in re.findall(r"from StaICC import (?:\(([^)]*)\)|([^\n]*))", path.read_text(encoding="utf-8")):
            names = (wrapped or line).split("#")[0].split("\\n")[0]  # examples hold code in strings too
            found.update(name.split()[0] for name in names.split(",") if name.strip())  # "x as y": x
    return found


def test_all_lists_every_lazy_export_and_the_originals_names():
    assert set(StaICC.__all__) == set(StaICC._EXPORTS), "a lazy export is not in __all__, or the reverse"
    assert set(StaICC.__all__) >= ORIGINAL_TOP_LEVEL
    assert len(StaICC.__all__) == len(set(StaICC.__all__))


def test_every_documented_top_level_import_is_in_all():
    documented = _documented_top_level_names()
    assert {"Normal", "run_suite", "run_methods"} <= documented  # the reader finds the docs' imports
    assert documented - set(StaICC.__all__) == set()


def test_every_name_in_all_imports_in_a_fresh_interpreter():
    code = ("import StaICC\n"
            "for name in StaICC.__all__:\n"
            "    value = getattr(StaICC, name)\n"
            "    assert value is not None, name\n"

            "print(len(StaICC.__all__))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(StaICC.__all__)


def test_order_sens_and_format_spread_are_package_attributes():
    from StaICC.subbenchmarks.extensions import Format_spread, Order_sens
    assert StaICC.Order_sens is Order_sens and StaICC.Format_spread is Format_spread


def test_every_extra_a_message_or_a_document_names_exists_in_setup_py():
    import ast
    root = Path(__file__).resolve().parent.parent
    tree = ast.parse((root / "setup.py").read_text(encoding="utf-8"))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "extras_require")
    extras = {key.value for key in call.value.keys}
    named = {}
    for path in list((root / "StaICC").rglob("*.py")) + list((root / "docs").glob("*.md")) + [root / "README.md"]:
        for extra in re.findall(r"StaICC\[([a-z0-9_,-]+)\]", path.read_text(encoding="utf-8")):
            for name in extra.split(","):
                named.setdefault(name, path.relative_to(root).as_posix())
    from StaICC.extras import EXTRA_OF
    named.update(dict.fromkeys(EXTRA_OF.values(), "StaICC/extras.py"))
    missing = {name: where for name, where in named.items() if name not in extras}
    assert not missing, f"extras named but not in setup.py: {missing}"
