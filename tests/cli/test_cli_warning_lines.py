"""The package's warnings, printed by a command, are one ``staicc: warning: ...`` line each: no file and line
of the package (or ``<frozen runpy>``) in front, no source line after."""
import os
import subprocess
import sys
import warnings

import pytest

from conftest import REPO_ROOT
from StaICC.cli.common import one_line_warnings
from StaICC.errors import StaICCWarning


def test_a_package_warning_is_formatted_as_one_line_and_others_keep_pythons_format():
    with one_line_warnings():  # what Python's printing of a warning writes: formatwarning's text
        ours = warnings.formatwarning("two\nlines", StaICCWarning, "<frozen runpy>", 88)
        theirs = warnings.formatwarning("theirs", DeprecationWarning, "/x/y.py", 3, "")
    assert ours == "staicc: warning: two\\nlines\n"
    assert theirs == "/x/y.py:3: DeprecationWarning: theirs\n"
    assert warnings.formatwarning("m", StaICCWarning, "f.py", 1, "").startswith("f.py:1: StaICCWarning")  # restored


def test_a_recording_caller_still_gets_the_warning_itself():
    with warnings.catch_warnings(record=True) as caught, one_line_warnings():
        warnings.simplefilter("always")
        warnings.warn("kept", StaICCWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["kept"] and caught[0].category is StaICCWarning


def test_an_hf_runs_warning_is_one_line_on_the_command_line(tmp_path):
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    from backend_helpers import save_tiny
    model = save_tiny(str(tmp_path / "gpt2"), "gpt2")  # a family the invariant forward does not compute: it warns
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "hf", "--model-args",
                           f"pretrained={model}", "--datasets", "rotten_tomatoes", "--limit", "6", "--no-progress",
                           "--output-dir", str(tmp_path / "run")], capture_output=True, text=True, cwd=str(tmp_path),
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert any(line.startswith("staicc: warning: CausalLMScorer: invariant numerics") for line in lines), lines
    assert all(line.startswith("staicc: ") for line in lines), lines
