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
