"""README.md's code blocks, read as tests/examples/test_readme.py runs them.

The markers are HTML comments, which GitHub does not show:

* ```` ```console ```` blocks hold commands (lines starting ``$ ``; a trailing backslash continues one),
  each followed by what it printed; ```` ```bash ```` blocks hold commands only; ```` ```python ```` blocks
  are scripts. Other blocks (toml, text, bibtex) are not run.
* ``<!-- not run: REASON -->`` right before a block: the block is not run (a ``pip install`` line).
* ``<!-- needs: torch, transformers -->``: the block is skipped, with that reason, where a module is missing.
* ``<!-- file: NAME -->``: the block's text is written to NAME in the folder the commands run in.
* ``<!-- output -->`` ... ``<!-- /output -->`` right after a block: what its last command printed, shown as
  rendered Markdown (a table) or a ```` ```text ```` block.

Where the README shows output, the numbers the command prints must be the README's: the shown output is cut
into parts at lines of ``...`` or ``…`` alone (or table rows of ``…`` cells), and the numbers of each part must
appear in that order, one after another, among the numbers printed, part after part. Wall times (``0.04 s``)
and words holding a ``/`` (paths, ``n/a``) are left out on both sides.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

RUNNABLE = ("bash", "console", "python")
_MARKER = re.compile(r"<!--\s*(not run|needs|file|output|/output)\s*:?\s*(.*?)\s*-->")
_ELISION = re.compile(r"^\s*(?:\.\.\.|…)\s*$|^\s*\|(?:\s*(?:\.\.\.|…)\s*\|)+\s*$")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
_SECONDS = re.compile(r"(?<![\w.])\d+(?:\.\d+)? s\b")


@dataclass
class Block:
    """One fenced block: where it starts (1-based line of its fence), its language, text and markers."""

    line: int
    language: str
    text: str
    markers: Dict[str, str] = field(default_factory=dict)
    shown: Optional[str] = None  # the <!-- output --> region after it

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.language})"


def read_blocks(lines: List[str]) -> List[Block]:
    """Every fenced block of the README, with the markers right before it and the output region after it."""
    blocks: List[Block] = []
    pending: Dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = _MARKER.fullmatch(line.strip())
        if marker and marker.group(1) == "output":
            end = _closing(lines, index, lambda text: text.strip() == "<!-- /output -->", "<!-- /output -->")
            blocks[-1].shown = "\n".join(lines[index + 1:end])
            index = end + 1
        elif marker:
            pending[marker.group(1)] = marker.group(2)
            index += 1
        elif line.startswith("```") and line.strip() != "```":
            end = _closing(lines, index, lambda text: text.rstrip() == "```", "```")
            blocks.append(Block(index + 1, line[3:].strip(), "\n".join(lines[index + 1:end]), pending))
            pending = {}
            index = end + 1
        else:
            if line.strip():  # a marker applies to the block right after it (blank lines may come between)
                pending = {}
            index += 1
    return blocks


def _closing(lines: List[str], start: int, is_end, what: str) -> int:
    for index in range(start + 1, len(lines)):
        if is_end(lines[index]):
            return index
    raise AssertionError(f"README.md:{start + 1}: no closing {what}")


def console_commands(block: Block) -> List[Tuple[str, str]]:
    """(command, the output shown under it) for each ``$ `` line of a console block."""
    commands: List[Tuple[str, str]] = []
    lines = block.text.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith("$ "):
            raise AssertionError(f"{block.name}: {lines[index]!r} is neither a command ($ ...) nor under one")
        command = [lines[index][2:]]
        while command[-1].endswith("\\"):
            index += 1
            command.append(lines[index])
        index += 1
        shown = []
        while index < len(lines) and not lines[index].startswith("$ "):
            shown.append(lines[index])
            index += 1
        commands.append(("\n".join(command), "\n".join(shown)))
    return commands


def numbers(text: str) -> List[str]:
    """The numbers in ``text`` as written, wall times and words with a ``/`` left out."""
    words = [word for word in _SECONDS.sub(" ", text).split() if "/" not in word]
    return _NUMBER.findall(" ".join(words))


def shown_parts(shown: str) -> List[List[str]]:
    """The numbers of each part of the shown output, parts cut at elision lines; parts without numbers dropped."""
    parts: List[List[str]] = [[]]
    for line in shown.splitlines():
        if _ELISION.match(line):
            parts.append([])
        else:
            parts[-1].extend(numbers(line))
    return [part for part in parts if part]


def check_printed(shown: str, printed: str, where: str) -> None:
    """Each part's numbers appear in ``printed`` one after another, in order, part after part."""
    got = numbers(printed)
    start = 0
    for part in shown_parts(shown):
        found = next((at for at in range(start, len(got) - len(part) + 1) if got[at:at + len(part)] == part), None)
        if found is None:
            raise AssertionError(f"{where}: the README shows the numbers {part}, but the command printed "
                                 f"{got[start:]} (after what matched before it); output:\n{printed}")
        start = found + len(part)
