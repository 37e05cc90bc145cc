"""The guides in docs/ and README.md: links that resolve, no tracker numbers, and the built-in model's table true.

Links are checked as GitHub renders them: a relative path from the file's folder, and a ``#anchor`` made from
a heading (lower case, punctuation dropped, spaces to hyphens). Fenced code is skipped.
"""
import re
from pathlib import Path
from typing import List, Set

import pytest
from conftest import REPO_ROOT

GUIDES = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "docs").glob("*.md"))
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> Set[str]:
    found = set()
    for line in _FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"^#+\s+(.*)", line)
        if heading:
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


def _broken_links(path: Path) -> List[str]:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no heading makes #{anchor})")
    return broken


@pytest.mark.parametrize("guide", GUIDES, ids=[guide.name for guide in GUIDES])
def test_every_link_resolves(guide):
    assert not _broken_links(guide), f"{guide.relative_to(REPO_ROOT)}: {_broken_links(guide)}"


def test_the_link_check_can_fail(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n[ok](a.md#title) [gone](b.md) [nowhere](a.md#other)\n",
                                   encoding="utf-8")
    assert _broken_links(tmp_path / "a.md") == ["b.md (no such file)", "a.md#other (no heading makes #other)"]


@pytest.mark.parametrize("guide", GUIDES, ids=[guide.name for guide in GUIDES])
def test_guides_speak_to_users_not_to_the_tracker(guide):
    text = guide.read_text(encoding="utf-8")
    found = re.findall(r"\b[Ii]ssue\s*#?\d+|(?<![\w/])#\d{1,4}\b(?!\w)", _FENCE.sub("", text))
    assert not found, f"{guide.name} names tracker items: {found}"


def test_the_built_in_models_table_is_what_staicc_prints():
    """docs/standard.md's table of the lexical model's Normal scores is the main job's output, row by row."""
    from StaICC import Normal
    from StaICC.backends.reference_model import lexical_icl

    result = Normal()(lexical_icl)
    rows = dict(result["Divided results"], average=result["Averaged results"])
    text = (REPO_ROOT / "docs" / "standard.md").read_text(encoding="utf-8")
    table = text[text.index("| dataset | accuracy | likelihood | macro-F1 | ECE |"):].split("\n\n")[0].splitlines()[2:]
    shown = {cells[0]: cells[1:] for cells in ([c.strip().strip("*") for c in line.strip("|").split("|")]
                                               for line in table)}
    keys = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")
    assert shown == {name: [f"{values[key]:.4f}" for key in keys] for name, values in rows.items()}
