"""The stdlib-only examples run end to end and print what they promise."""
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)


@pytest.mark.parametrize("script, expected", [
    ("quick_start.py", "standard run: True"),
    ("preentered_predictions.py", "offline == live: True"),
    ("diagnosis.py", "Demo_sens"),
    ("compare_retrievers.py", "BM25"),
    ("custom_csv.py", "my_nli"),
])
def test_example_runs(script, expected):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout
