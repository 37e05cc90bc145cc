"""An installed StaICC names the commit it was built from: setup.py writes StaICC/BUILD_COMMIT at build time."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from StaICC.results import provenance


def _head() -> str:
    out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout: no commit to record")
    return out.stdout.strip()


def test_build_writes_the_commit_and_provenance_reads_it(tmp_path):
    pytest.importorskip("setuptools", reason="building the package needs setuptools (not in a bare 3.12+ venv)")
    head = _head()
    build = tmp_path / "lib"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)], cwd=REPO_ROOT,
                   check=True, capture_output=True)
    recorded = (build / "StaICC" / "BUILD_COMMIT").read_text(encoding="ascii").strip()
    assert recorded.split("-")[0] == head
    # an installed copy (no .git beside it) reads the recorded commit
    installed = tmp_path / "site" / "StaICC"
    shutil.copytree(build / "StaICC", installed)
    code = "from StaICC.results.provenance import git_commit; print(git_commit())"
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert out.stdout.strip() == recorded


def test_an_unreadable_record_is_no_commit(tmp_path):
    package = tmp_path / "StaICC"
    package.mkdir()
    (package / "BUILD_COMMIT").write_text("not a commit\n", encoding="ascii")
    assert provenance._built_commit(str(package)) is None
    (package / "BUILD_COMMIT").write_text("a" * 40 + "-dirty\n", encoding="ascii")
    assert provenance._built_commit(str(package)) == "a" * 40 + "-dirty"
