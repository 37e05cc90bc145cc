"""docs/cli.md says what the argument parsers say, and the README names every command.

docs/cli.md is written by tools/cli_reference.py from ``StaICC.cli.full_parser()``; after changing a parser,
run ``python tools/cli_reference.py`` and commit docs/cli.md. The test regenerates the text and compares.
"""
import argparse

import pytest
from conftest import REPO_ROOT, load_script


@pytest.fixture(scope="module")
def tool():
    return load_script("tools/cli_reference.py")


def test_docs_cli_md_is_what_the_parsers_say(tool):
    committed = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == tool.reference(), "docs/cli.md is stale: run python tools/cli_reference.py"


def test_the_readme_names_every_command_and_links_the_reference(tool):
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    full, _ = tool._parsers()
    names = [name for name, _, _ in tool._subcommands(full)]
    assert {"run", "compare", "report", "tasks", "batch", "cache", "export"} <= set(names), names
    row = next(line for line in readme.splitlines() if line.startswith("| [docs/api.md]"))
    missing = [name for name in names if f"`{name}`" not in row and f"`staicc {name}`" not in row]
    assert not missing, f"README.md's guide to the reference lacks the commands {missing}"
    assert "(docs/cli.md)" in row


def test_every_option_of_every_command_is_in_the_reference(tool):
    """An independent walk over the parsers: each command has a section and each option a row."""
    full, main_job = tool._parsers()
    text = tool.reference()
    parsers = [("staicc", main_job)]
    parsers += [(f"staicc {name}", sub) for name, _, sub in tool._subcommands(full)]
    for prog, parser in list(parsers):
        parsers += [(f"{prog} {name}", sub) for name, _, sub in tool._subcommands(parser)]
    for prog, parser in parsers:
        assert f"`{prog}`\n" in text, prog
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert f"`{action.option_strings[0]}" in text, (prog, action.option_strings)


def test_check_mode_reports_a_stale_file(tool, tmp_path, monkeypatch, capsys):
    stale = tmp_path / "cli.md"
    stale.write_text("# an old reference\n", encoding="utf-8")
    monkeypatch.setattr(tool, "REFERENCE", str(stale))
    assert tool.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().out
    assert tool.main([]) == 0
    assert tool.main(["--check"]) == 0
