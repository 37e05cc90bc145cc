"""Write docs/cli.md, the command-line reference, from the argument parsers themselves.

    python tools/cli_reference.py            # rewrite docs/cli.md from the parsers
    python tools/cli_reference.py --check    # exit 1 when docs/cli.md differs from what the parsers say

Every command, its synopsis and each option with its help text come from ``StaICC.cli.full_parser()``
(and ``StaICC.cli.main_job.build_parser()`` for ``staicc`` alone), so the reference says what
``--help`` says. ``tests/tools/test_cli_reference.py`` regenerates the text and compares it with the
committed file: after changing a parser, run the first command above. The same test checks that the
README names every command.
"""
import argparse
import os
import sys
from typing import Iterator, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "docs", "cli.md")
REGENERATE = "python tools/cli_reference.py"
#: synopses wrap at this many characters, whatever the terminal
WIDTH = 100

INTRO = """\
# Command-line reference

`staicc` (or `python -m StaICC`, which is the same program) runs the commands below; with none it runs
the built-in main job, the original release's command line. Every command takes `-h` / `--help`.

Every argument is checked before any inference: a bad one (an unknown model, benchmark, dataset or
retriever, a k the data cannot serve, an output directory that cannot be written, a cache file that is not
a StaICC cache, a malformed task file) prints one line on stderr and exits with status 2, for example

```text
staicc: error: k = 2147483648 is larger than the demonstration set (4096 rows) at dataset 'GLUE-SST2': use k <= D (the original returned all-zero results here)
```

Exit statuses: 0 done; 1 an error while working (a run directory that cannot be read, a full disk, a
failed shard), with one line saying what and where; 2 an argument error, before any work; 3 `staicc compare
--fail-if` found a condition that holds; 130 interrupted (Ctrl-C), with the answers given so far in the
cache if one was used. What each command writes and prints is described in the guides linked from
[README.md](../README.md#where-next).

This file is generated from the argument parsers by `python tools/cli_reference.py`; a test regenerates it
and fails when it differs, so do not edit it by hand.
"""


def _parsers() -> Tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """(``staicc`` with every command, ``staicc`` alone: the main job)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from StaICC.cli import full_parser
    from StaICC.cli.main_job import build_parser
    return full_parser(), build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> List[Tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command of ``parser``, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found.extend((name, helps.get(name, ""), sub) for name, sub in action.choices.items())
    return found


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _arguments(action: argparse.Action) -> str:
    """What follows the flag (or stands for a positional), in argparse's notation."""
    if action.nargs == 0:
        return ""
    name = _metavar(action)
    if action.nargs is None:
        return name
    if action.nargs == "?":
        return f"[{name}]"
    if action.nargs == "+":
        return f"{name} [{name} ...]"
    if action.nargs == "*":
        return f"[{name} ...]"
    if isinstance(action.nargs, int):
        return " ".join([name] * action.nargs)
    return "..." if action.nargs == argparse.PARSER else name


def _flag(action: argparse.Action) -> str:
    """The spelling a synopsis shows: the first ``--long`` name (a short one when there is none), its value."""
    longs = [option for option in action.option_strings if option.startswith("--")]
    flag = (longs or action.option_strings)[0]
    value = _arguments(action)
    return f"{flag} {value}" if value else flag


def _spellings(action: argparse.Action) -> str:
    """Every spelling of an option (or a positional's name), as the options table lists it."""
    if not action.option_strings:
        return f"`{_cell(_arguments(action))}`"
    value = _cell(_arguments(action))
    return ", ".join(f"`{option} {value}`" if value and option.startswith("--") else f"`{option}`"
                     for option in action.option_strings)


def _shown(parser: argparse.ArgumentParser) -> List[argparse.Action]:
    return [action for action in parser._actions if not isinstance(action, argparse._HelpAction)]


def _synopsis_items(parser: argparse.ArgumentParser) -> List[str]:
    """One item per option (``[--k K]``) or exclusive group (``[--a | --b]``) in parser order, then the positionals."""
    groups = {id(action): group for group in parser._mutually_exclusive_groups for action in group._group_actions}
    items, positionals, done = [], [], set()
    for action in _shown(parser):
        if isinstance(action, argparse._SubParsersAction):
            positionals.append(f"{_metavar(action)} ...")
            continue
        if not action.option_strings:
            positionals.append(_arguments(action))
            continue
        group = groups.get(id(action))
        if group is not None:
            if id(group) not in done:
                done.add(id(group))
                items.append("[" + " | ".join(_flag(member) for member in group._group_actions) + "]")
            continue
        if isinstance(action, argparse.BooleanOptionalAction):
            items.append("[" + " | ".join(action.option_strings) + "]")
            continue
        items.append(_flag(action) if action.required else f"[{_flag(action)}]")
    return items + positionals  # as argparse's usage line: options first


def synopsis(prog: str, parser: argparse.ArgumentParser) -> str:
    """``prog`` and its items, wrapped at :data:`WIDTH` with continuation lines under the first item."""
    lines, line = [], prog
    for item in _synopsis_items(parser):
        if line != prog and len(line) + 1 + len(item) > WIDTH:
            lines.append(line)
            line = " " * len(prog)
        line += " " + item
    return "\n".join(lines + [line])


def _cell(text: Optional[str]) -> str:
    """Text for a Markdown table cell: no pipe, no HTML tag, no stray emphasis."""
    text = " ".join((text or "").split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")


def _help(action: argparse.Action) -> str:
    """The option's help, with argparse's ``%(default)s``-style fields filled in as ``--help`` fills them."""
    text = action.help or ""
    if "%" in text:
        fields = {name: value for name, value in vars(action).items() if value is not argparse.SUPPRESS}
        text = text % fields
    return text + (" (required)" if action.option_strings and action.required else "")


def _section(level: str, prog: str, parser: argparse.ArgumentParser, summary: str = "") -> Iterator[str]:
    yield f"{level} `{prog}`"
    yield ""
    description = " ".join((parser.description or summary).split())
    if description:
        yield description
        yield ""
    yield "```text"
    yield synopsis(prog, parser)
    yield "```"
    yield ""
    subcommands = _subcommands(parser)
    if subcommands:
        yield "| command | what it does |"
        yield "|---|---|"
        yield from (f"| `{prog} {name}` | {_cell(text)} |" for name, text, _ in subcommands)
        yield ""
    options = [action for action in _shown(parser) if not isinstance(action, argparse._SubParsersAction)]
    if options:
        yield "| argument | meaning |"
        yield "|---|---|"
        yield from (f"| {_spellings(action)} | {_cell(_help(action))} |" for action in options)
        yield ""
    for name, text, sub in subcommands:
        yield from _section(level + "#", f"{prog} {name}", sub, text)


def commands_table() -> List[str]:
    """The README's table of commands: each command and its one-line help, as ``staicc --help`` gives them."""
    full, _ = _parsers()
    rows = ["| command | what it does |", "|---|---|",
            "| `staicc` | the main job: a sub-benchmark with the built-in model, as the original command line ran it |"]
    return rows + [f"| `staicc {name}` | {_cell(text)} |" for name, text, _ in _subcommands(full)]


def names_tables() -> List[str]:
    """The names some options take, each with its help text, from the registries they are looked up in: the
    methods (``--methods``), the retrievers (``--retriever``) and the export formats (``--format``)."""
    from StaICC.methods.builtin import METHODS
    from StaICC.results.exchange import EXPORT_FORMATS
    from StaICC.retrieval import RETRIEVERS
    lines = ["## Names", "", "The names these options take, from the registries the options look them up in.", "",
             "`staicc run --methods NAME,...` (or `all`; [methods.md](methods.md)):", "",
             "| method | family | what it does |", "|---|---|---|"]
    lines += [f"| `{name}` | {_cell(row.family)} | {_cell(row.help)} |" for name, row in METHODS.rows().items()]
    lines += ["", "`staicc --retriever NAME[:K=V,...]` (non-standard):", "", "| retriever | what it does |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in RETRIEVERS.helps().items()]
    lines += ["", "`staicc export --format NAME`:", "", "| format | what it writes |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in EXPORT_FORMATS.helps().items()]
    return lines + [""]


def reference() -> str:
    """The whole of docs/cli.md."""
    full, main_job = _parsers()
    lines = [INTRO, "## Commands", ""] + commands_table() + [""] + names_tables()
    lines.extend(_section("##", "staicc", main_job))
    for name, text, sub in _subcommands(full):
        lines.extend(_section("##", f"staicc {name}", sub, text))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or check) docs/cli.md from the argument parsers.")
    parser.add_argument("--check", action="store_true", help="compare with docs/cli.md instead of writing it")
    args = parser.parse_args(argv)
    text = reference()
    if args.check:
        with open(REFERENCE, encoding="utf-8") as handle:
            same = handle.read() == text
        print("docs/cli.md is up to date" if same else f"docs/cli.md is stale: run {REGENERATE}")
        return 0 if same else 1
    with open(REFERENCE, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    print(f"wrote {os.path.relpath(REFERENCE, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
