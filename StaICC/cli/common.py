"""What every command shares: the one-line argument error and the checks that raise it, and the loading bars."""
import argparse
import contextlib
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, Union
from ..errors import InvalidValueError, StaICCError, error_name
from ..registry import Described, Registry

#: the sub-commands of `staicc`, in the order help lists them: each one's parser function, a lazy
#: ``"module:function"`` that adds its parser to ``staicc``'s sub-commands (so a command imports only its own
#: modules), and its help text (``--help`` and docs/cli.md say it); anything else is the original release's CLI
CLI_COMMANDS: Registry[Callable[[Any], Any]] = Registry("command", ordered=True)
for _name, _parser, _help in (
        ("run", "StaICC.cli.run:add_run_parser", "evaluate a model on sub-benchmarks and write a run directory"),
        ("compare", "StaICC.report.commands:add_compare_parser",
         "compare runs: differences, confidence intervals, significance tests, flips, a CI gate"),
        ("report", "StaICC.report.commands:add_report_parser",
         "tables with confidence intervals, or a self-contained HTML report with figures"),
        ("tasks", "StaICC.cli.tasks:add_tasks_parser", "list, show, validate or start task files"),
        ("batch", "StaICC.cli.batch:add_batch_parser", "OpenAI Batch API: export a run's prompts, import the results"),
        ("cache", "StaICC.cli.cache:add_cache_parser", "prediction-cache tools: merge shard caches"),
        ("export", "StaICC.cli.export:add_export_parser", "write a run as {formats} files"),
        ("verify", "StaICC.cli.verify:add_verify_parser",
         "check a run or an export: its numbers against its records, and an audit of its answers with your model")):
    CLI_COMMANDS.register(_name, _parser, info=Described(_help))
#: the sub-commands' names
COMMANDS = tuple(CLI_COMMANDS.names())


class ArgumentError(StaICCError):
    """A command-line argument is wrong: printed as one line, exit status 2."""


#: other tools' spellings of StaICC's options (lm-evaluation-harness's above all) -> what to write instead (where
#: commands differ, each candidate in turn: the first whose option the command has is named)
OTHER_TOOLS_FLAGS: Dict[str, Union[str, Tuple[str, ...]]] = {
    "--model_args": "--model-args", "--num_fewshot": "--k N (demonstrations per query; the standard's is 4)",
    "--batch_size": "--batch-size N (requests per backend call)", "--max_batch_size": "--batch-size N",
    "--output_path": ("--output-dir DIR", "--output PATH"), "--log_samples": "--log-samples", "--include_path": "--include-path",
    "--write_out": "--write-out N", "--show_config": "--show-config", "--use_cache": "--cache FILE",
    "--cache_requests": "--cache FILE", "--apply_chat_template": "--model-args apply_chat_template=true",
    "--system_instruction": "--model-args system_instruction=TEXT",
    "--fewshot_as_multiturn": "--model-args apply_chat_template=true,fewshot_as_multiturn=true",
    "--device": "--model-args device=cpu (or device=cuda)", "--gen_kwargs": "--model-args max_new_tokens=N",
    "--task": "--tasks", "--dataset": "--datasets", "--num-fewshot": "--k N", "--shots": "--k N",
    "--seed": "no seed option: the standard's generator is seeded with 42 for every split and draw",
}
#: values other tools accept where StaICC needs a number, and what to say
NUMBER_HINTS = {"--batch-size": "--batch-size is how many requests one backend call gets (a number); the hf backend "
                                "fits its forward passes to a token budget itself, so there is no 'auto'",
                "--limit": "--limit is a number of test items per dataset; a share of them is --lite FRACTION, "
                           "e.g. --lite 0.1"}


def or_list(names: List[str]) -> str:
    """``a, b or c``: names as a help text lists them."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def command_help(name: str) -> str:
    """The help text of the command ``name``: its registry row's, naming the export formats by their titles
    where it says ``{formats}``."""
    text = CLI_COMMANDS.info(name).help
    if "{formats}" in text:
        from ..results.exchange import EXPORT_FORMATS
        text = text.format(formats=or_list([row.title for row in EXPORT_FORMATS.rows().values()]))
    return text


class HelpedCommands:
    """``staicc``'s sub-command action as a command's parser function sees it: the parser it adds gets its
    help text from :data:`CLI_COMMANDS` (the one place it is written)."""

    def __init__(self, sub: Any) -> None:
        self._sub = sub

    def add_parser(self, name: str, **options: Any) -> argparse.ArgumentParser:
        return self._sub.add_parser(name, **dict(options, help=command_help(name)))


def needs_a_command(parser: argparse.ArgumentParser, name: str, commands: List[str]) -> None:
    """``staicc NAME`` without one of its ``commands``: one line naming them (exit status 2), not a usage dump."""
    listed = or_list(commands)

    def refuse(_args: argparse.Namespace) -> int:
        raise ArgumentError(f"{name} needs a command: {listed} (staicc {name} --help says what each does)")
    parser.set_defaults(func=refuse)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an argument error is one line on stderr and exit status 2, with a hint where the
    mistake has a likely intent (another tool's spelling, ``_`` for ``-``, a misspelt command)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(message + argument_hint(self, message))


def argument_hint(parser: argparse.ArgumentParser, message: str) -> str:
    """``"; did you mean ..."`` for an argparse error message, or an empty string."""
    if message.startswith("argument ") and ": invalid int value" in message:
        flag = message[len("argument "):].split(":")[0].split("/")[0]
        return f" ({NUMBER_HINTS[flag]})" if flag in NUMBER_HINTS else ""
    if ": invalid choice: " in message:
        return _choice_hint(message)
    if message.startswith("ambiguous option: "):  # a prefix of several options: another tool's flag, perhaps
        name = message[len("ambiguous option: "):].split()[0].split("=")[0]
        suggestion = _other_tools_suggestion(name, _known(parser)[0], False)
        return f"; did you mean {suggestion}?" if suggestion is not None and suggestion.startswith("-") else ""
    if not message.startswith("unrecognized arguments: "):
        return ""
    options, commands = _known(parser)
    legacy = not commands and parser.prog == "staicc"  # ``staicc`` without a command: the main job's flags
    for word in message[len("unrecognized arguments: "):].split():
        name = word.split("=")[0]
        if not name.startswith("-"):  # a word: a misspelt command, where the bare ``staicc`` took it for one
            from ..validation import closest_name
            command = closest_name(name, COMMANDS, cutoff=0.6) if legacy else None
            if command is not None:
                return f"; did you mean 'staicc {command}'?"
            continue
        suggestion = _other_tools_suggestion(name, options, legacy)
        if suggestion is None:
            spelled = name.replace("_", "-")
            suggestion = spelled if spelled in options or (legacy and spelled in _RUN_FLAGS) else None
        if suggestion is not None:
            where = "staicc run " if legacy and suggestion.startswith("--") and suggestion.split()[0] not in options \
                else ""
            return f"; did you mean {where}{suggestion}?" if suggestion.startswith("-") else f" ({suggestion})"
    return ""


def _other_tools_suggestion(name: str, options: Set[str], legacy: bool) -> Optional[str]:
    """What to write instead of another tool's ``name``: a plain remark, or the first candidate option this
    command has (the bare ``staicc`` names ``staicc run``'s)."""
    candidates = OTHER_TOOLS_FLAGS.get(name, ())
    for candidate in (candidates,) if isinstance(candidates, str) else candidates:
        flag = candidate.split()[0]
        if not flag.startswith("--") or flag in options or legacy:
            return candidate
    return None


def _choice_hint(message: str) -> str:
    """argparse's ``invalid choice: 'x' (choose from 'a', 'b')`` -> ``"; did you mean 'a'?"``."""
    import re
    from ..validation import did_you_mean
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if found is None:
        return ""
    return did_you_mean(found.group(1), re.findall(r"'([^']*)'", found.group(2)))


#: flags of ``staicc run`` that a hint for the bare ``staicc`` (the main job) may name
_RUN_FLAGS = ("--model-args", "--batch-size", "--output-dir", "--log-samples", "--include-path", "--write-out",
              "--show-config", "--cache", "--tasks", "--limit")


def _known(parser: argparse.ArgumentParser):
    """(every option string of the parser and its sub-commands, the sub-command names)."""
    options, commands = set(), []
    stack = [parser]
    while stack:
        current = stack.pop()
        for action in current._actions:  # argparse keeps no public list of a parser's options
            options.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                if current is parser:
                    commands.extend(action.choices)
                stack.extend(action.choices.values())
    return options, commands


#: every character str.splitlines() breaks at, and every other control character a terminal acts on
#: (C0, DEL, C1, bidirectional overrides), shown escaped so that an error stays one inert line
_LINE_BREAKS = {code: ascii(chr(code))[1:-1] for code in
                [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                 *range(0x2066, 0x206A), 0x2028, 0x2029]}


def one_line(message: str) -> str:
    """``message`` as the command line prints it: secrets redacted (a URL's password, a key a
    server echoed, in any case) and line-breaking characters (an argument may hold any)
    written as escapes."""
    from ..backends.secrets import redact_text
    return redact_text(str(message)).translate(_LINE_BREAKS)


def parse_retriever(spec: str):
    from ..backends.registry import parse_model_args
    from ..retrieval import retriever_from_name
    name, _, text = spec.partition(":")
    arguments = {key: number_or_text(value) for key, value in parse_model_args(text).items()}
    try:
        return retriever_from_name(name, **arguments)
    except TypeError as exc:
        raise InvalidValueError(f"retriever {name!r}: {exc}") from None


def number_or_text(value: str) -> Any:
    """A retriever option from the command line: true/false, a ';'-separated list (``fix_id_list=1;5;9``),
    an int, a float, or the text itself."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if ";" in value:
        return [number_or_text(part) for part in value.split(";") if part != ""]
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


@contextlib.contextmanager
def argument_errors() -> Iterator[None]:
    """A block of checks or constructions, before any inference: its ValueError, TypeError, ImportError
    (a missing extra) or OSError becomes a one-line argument error."""
    try:
        yield
    except (ValueError, TypeError, ImportError, OSError) as exc:
        raise ArgumentError(str(exc).splitlines()[0] if str(exc) else error_name(exc)) from None


def as_argument_error(function, *args, **kwargs):
    """Call ``function`` under :func:`argument_errors`."""
    with argument_errors():
        return function(*args, **kwargs)


def dataset_specs(names: Optional[List[str]]) -> Optional[List[Any]]:
    """Names stay names; plain ASCII digits are benchmark indexes; each is resolved now."""
    if names is None:
        return None
    from ..datasets import resolve_dataset
    specs = [int(n) if n.isascii() and n.isdigit() else n for n in names]
    return [as_argument_error(resolve_dataset, spec) for spec in specs]


def bars_wanted(enabled: Optional[bool]) -> bool:
    """StaICC's rule for progress bars: as asked, else on a terminal or in a notebook."""
    if enabled is not None:
        return enabled
    from ..engine.progress import in_notebook
    return sys.stderr.isatty() or in_notebook()


@contextlib.contextmanager
def loading_bars(enabled: Optional[bool]) -> Iterator[None]:
    """Within the block, transformers' and huggingface_hub's bars ("Loading weights") are drawn only when
    StaICC's would be: with ``--progress``, or on a terminal or in a notebook; never with ``--no-progress``
    nor into a log file.

    transformers reads ``HF_HUB_DISABLE_PROGRESS_BARS`` when it is first imported (the hf backend
    imports it in the block); when it is already imported its switch is turned off, and on again after.
    """
    if bars_wanted(enabled):
        yield
        return
    logging = sys.modules.get("transformers.utils.logging")
    if logging is not None:
        was_enabled = logging.is_progress_bar_enabled()
        logging.disable_progress_bar()
        try:
            yield
        finally:
            if was_enabled:
                logging.enable_progress_bar()
        return
    previous = os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS")
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
        else:
            os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = previous


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """The package's warnings printed as ``staicc: warning: ...`` lines while a command runs.

    Python's format names the file and line that ``stacklevel`` points at, which for a command is
    ``<frozen runpy>`` or a line deep inside the package, and repeats that source line; neither helps
    the reader of a command's output.  Other packages' warnings keep Python's format.  Only the format
    changes: a caller recording warnings (``warnings.catch_warnings(record=True)``) still gets them.
    """
    import warnings
    from ..errors import StaICCWarning
    original = warnings.formatwarning

    def formatted(message: Any, category: type, filename: str, lineno: int, line: Optional[str] = None) -> str:
        if isinstance(category, type) and issubclass(category, StaICCWarning):
            return f"staicc: warning: {one_line(str(message))}\n"
        return original(message, category, filename, lineno, line)
    warnings.formatwarning = formatted
    try:
        yield
    finally:
        warnings.formatwarning = original
