"""Every command in README.md runs, in a fresh folder, and prints the numbers the README shows.

The blocks run in README order in one temporary folder (a step uses the files of the steps before it), with
this checkout's ``examples/`` and ``benchmarks/`` linked in, ``staicc`` meaning ``python -m StaICC`` and
``python`` this interpreter, each command's status 0. How the README's blocks and markers are read:
``tests/readme_blocks.py``. The README's steps are quick on purpose (one small CSV, a 0.3 M-parameter model).
"""
import importlib.util
import os
import subprocess
import sys
from typing import Dict, List

import pytest
from conftest import REPO_ROOT
from readme_blocks import RUNNABLE, Block, check_printed, console_commands, read_blocks

README_LINES = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
BLOCKS = read_blocks(README_LINES)
RUN = [block for block in BLOCKS if block.language in RUNNABLE or "file" in block.markers]
TEST_COMMAND = "python -m pytest -q tests"


def _missing(block: Block) -> List[str]:
    needed = [name.strip() for name in block.markers.get("needs", "").split(",") if name.strip()]
    return [name for name in needed if importlib.util.find_spec(name) is None]


class Workspace:
    """The folder the README's commands run in, and how far through the README it has got."""

    def __init__(self, folder) -> None:
        self.folder = str(folder)
        bin_dir = os.path.join(self.folder, ".bin")
        os.makedirs(bin_dir)
        for name, line in (("staicc", f'exec "{sys.executable}" -m StaICC "$@"'),
                           ("python", f'exec "{sys.executable}" "$@"')):
            path = os.path.join(bin_dir, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(f"#!/bin/sh\n{line}\n")
            os.chmod(path, 0o755)
        for name in ("examples", "benchmarks"):
            os.symlink(REPO_ROOT / name, os.path.join(self.folder, name))
        self.env: Dict[str, str] = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                                        PYTHONPATH=str(REPO_ROOT))
        self.done = 0

    def run_through(self, index: int) -> None:
        """Run every block before ``index`` not run yet (a test selected alone still gets their files)."""
        while self.done < index:
            block = RUN[self.done]
            self.done += 1
            if "not run" not in block.markers and not _missing(block):
                self.run(block, check_output=False)

    def run(self, block: Block, check_output: bool = True) -> None:
        if "file" in block.markers:
            with open(os.path.join(self.folder, block.markers["file"]), "w", encoding="utf-8") as handle:
                handle.write(block.text + "\n")
            return
        if block.language == "python":
            script = os.path.join(self.folder, f"readme_{block.line}.py")
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(block.text + "\n")
            steps = [(f'python "{script}"', "")]
        elif block.language == "console":
            steps = console_commands(block)
        else:
            steps = [(block.text, "")]
        for number, (command, shown) in enumerate(steps, 1):
            printed = self.shell(command, block)
            last = number == len(steps)
            if check_output:
                check_printed(shown + ("\n" + block.shown if last and block.shown else ""), printed,
                              f"{block.name}, `{command}`")

    def shell(self, command: str, block: Block) -> str:
        done = subprocess.run(["bash", "-e", "-c", command], cwd=self.folder, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=900)
        assert done.returncode == 0, f"{block.name}: `{command}` exited with {done.returncode}:\n{done.stdout}"
        return done.stdout


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return Workspace(tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("index", range(len(RUN)), ids=[block.name for block in RUN])
def test_readme_block(index, workspace):
    block = RUN[index]
    if "not run" in block.markers:
        assert block.markers["not run"], f"{block.name}: a block that is not run says why"
        pytest.skip(f"not run: {block.markers['not run']}")
    missing = _missing(block)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, which is not installed")
    workspace.run_through(index)
    workspace.run(block)
    workspace.done = max(workspace.done, index + 1)


def test_readme_is_a_path():
    """Short; a newcomer reaches a compare table of their own data within 150 lines; few blocks not run."""
    assert len(README_LINES) <= 256, f"README.md has {len(README_LINES)} lines: reference belongs in docs/"
    compare = [block for block in RUN if block.language == "console"
               and any(command.startswith("staicc compare") for command, _ in console_commands(block))]
    assert compare and compare[0].line <= 150 and compare[0].shown, "the compare step must come in 150 lines"
    not_run = [block for block in RUN if "not run" in block.markers]
    assert len(not_run) <= 3, [block.name for block in not_run]
    assert all(block.markers["not run"] for block in not_run)
    unknown = [block.name for block in BLOCKS if block.language not in RUNNABLE + ("toml", "text", "bibtex")]
    assert not unknown, f"blocks in a language the README test does not know: {unknown}"


def test_set_up_is_two_commands_and_ci_runs_the_tests_as_the_readme_says():
    set_up = next(block for block in RUN if "not run" in block.markers)
    commands = [line.split("#")[0].strip() for line in set_up.text.splitlines() if line.split("#")[0].strip()]
    assert commands == ["pip install . && staicc", f'pip install ".[test]" && {TEST_COMMAND}'], commands
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TEST_COMMAND in ci, ".ci/run must run the README's test command as it is written"
