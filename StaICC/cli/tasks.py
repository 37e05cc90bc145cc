"""``staicc tasks list|show|validate|new``: look at, check and start task files, with no model.

``list`` names every task ``--tasks`` accepts; ``show NAME`` prints a task as TOML (each
standard dataset's is its exact definition: run back, it gives the standard numbers);
``validate FILE`` checks everything a run would check and counts rows, labels and split
sizes; ``new --from NAME`` writes a renamed copy of a task to edit.  Errors are one
line and exit status 2, like every argument error.
"""
import argparse
import os
import sys
from typing import Any, List

from ..errors import InvalidValueError
from ..validation import check, Integer
from .common import needs_a_command


def add_tasks_parser(sub: Any, parser_class: Any = None) -> None:
    p = sub.add_parser("tasks", description="Task files: your own classification task, run with staicc run --tasks.")
    commands = p.add_subparsers(dest="tasks_command", metavar="list|show|validate|new", parser_class=parser_class or type(p))
    listing = commands.add_parser("list", help="the tasks --tasks accepts: the standard datasets and included files")
    show = commands.add_parser("show", help="print a task as a TOML task file")
    show.add_argument("name", help="a standard dataset, a task file, or a task in --include-path")
    validate = commands.add_parser("validate", help="check a task file, no model loaded; count rows and labels")
    validate.add_argument("name", help="a task file (or any name --tasks accepts)")
    validate.add_argument("--benchmarks", metavar="NAMES", help="check for these sub-benchmarks (default: the task's)")
    validate.add_argument("--k", type=int, help="check for this k (default: the task's, else 4)")
    new = commands.add_parser("new", help="start a task file from a standard dataset's (or any task's)")
    new.add_argument("--from", dest="source", required=True, metavar="NAME", help="e.g. TREC")
    new.add_argument("--name", help="the new task's name (default: my_<name>)")
    new.add_argument("--output", "-o", metavar="FILE", help="write here (default: print)")
    for command in (listing, show, validate, new):
        command.add_argument("--include-path", action="append", default=[], metavar="DIR",
                             help="a folder of task files (.toml, .json, .yaml, .py); may be repeated")
        command.set_defaults(func=tasks_command)
    needs_a_command(p, "tasks", ["list", "show", "validate", "new"])


def tasks_command(args: argparse.Namespace) -> int:
    from .common import ArgumentError
    from .. import tasks
    try:
        if args.tasks_command == "list":
            return _list(tasks, args.include_path)
        if args.tasks_command == "show":
            return _show(tasks, args.name, args.include_path)
        if args.tasks_command == "validate":
            return _validate(tasks, args)
        return _new(tasks, args)
    except (ValueError, TypeError, ImportError) as exc:
        raise ArgumentError(str(exc).splitlines()[0]) from None


def _list(tasks: Any, include_paths: List[str]) -> int:
    rows = tasks.list_tasks(include_paths)
    width = max(len(name) for name, _, _ in rows)
    for name, kind, what in rows:
        print(f"{name:{width}s}  {kind:8s}  {what}")
    return 0


def _show(tasks: Any, name: str, include_paths: List[str]) -> int:
    from ..datasets import standard_dataset_aliases
    if name in standard_dataset_aliases() and not os.path.isfile(name):
        sys.stdout.write(tasks.to_toml(tasks.standard_task_mapping(name)))
        return 0
    from ..tasks.schema import to_mapping
    task = tasks.find_task(name, include_paths)
    sys.stdout.write(tasks.to_toml(to_mapping(task.config)))
    return 0


def _validate(tasks: Any, args: argparse.Namespace) -> int:
    from ..tasks.runs import run_settings
    from ..subbenchmarks.suite import resolve_benchmark_names
    task = tasks.find_task(args.name, args.include_path)
    if args.k is not None:
        check(args.k, Integer(0), "--k")
    benchmarks, k = run_settings([task], args.benchmarks, args.k)
    names = resolve_benchmark_names(benchmarks)
    task.check_for_run(names, k)
    entry = task.provenance()
    dataset = entry["resolved"]["dataset"]
    print(f"{task.source.path}: task {task.name!r} is valid ({task.source.format}, sha256 {task.source.sha256[:16]})")
    print(f"  rows: {dataset['rows']}" + (f" ({dataset['rows_dropped_as_duplicates']} duplicates dropped)"
                                          if dataset.get("rows_dropped_as_duplicates") else ""))
    counts = dataset.get("label_counts")
    print("  labels: " + ", ".join(f"{w} ({counts[w]})" if counts else w for w in dataset["label_words"]))
    sizes = dataset["split_sizes"]
    if sizes:
        fixed = dataset.get("fixed_split")
        print(f"  split: calibration {sizes[0]}, demonstration {sizes[1]}, test {sizes[2]}"
              + (f" (fixed by {fixed['how']})" if fixed else " (drawn by the standard generator)"))
    print(f"  runs: {', '.join(names)} with k={k}")
    print("  standard: yes" if task.standard else "  standard: no (" + "; ".join(task.departures) + ")")
    return 0


def _new(tasks: Any, args: argparse.Namespace) -> int:
    from ..datasets import dataset_constants, standard_dataset_aliases
    from ..tasks.show import SCAFFOLD_HEADER
    if args.source in standard_dataset_aliases():
        const_name = dataset_constants(args.source)["name"]
        mapping = tasks.scaffold_mapping(args.source, args.name or f"my_{const_name}")
        header = SCAFFOLD_HEADER.format(source=const_name)
    else:
        from ..tasks.schema import to_mapping
        task = tasks.find_task(args.source, args.include_path)
        mapping = to_mapping(task.config)
        mapping["name"] = args.name or f"my_{task.name}"
        _move_data_path(mapping, task.source.directory, args.output)
        header = f"# A StaICC task started from {task.source.path}.  Keys: docs/tasks.md\n"
    text = tasks.to_toml(mapping, header)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    if os.path.exists(args.output):
        raise InvalidValueError(f"--output {args.output!r} exists; choose another file")
    from ..results.safe_files import write_text
    write_text(args.output, text)
    print(f"wrote {args.output}; check it with: staicc tasks validate {args.output}")
    return 0


def _move_data_path(mapping: dict, source_directory: str, output: Any) -> None:
    """Relative data files (``data.path``, ``split.files``) rewritten so that the copy still finds them
    (relative to where it is written)."""
    target = os.path.dirname(os.path.abspath(output)) if output is not None else None

    def moved(path: str) -> str:
        if os.path.isabs(path):
            return path
        absolute = os.path.normpath(os.path.join(source_directory, path))
        return os.path.relpath(absolute, target) if target is not None else absolute
    if mapping.get("data", {}).get("path") is not None:
        mapping["data"]["path"] = moved(mapping["data"]["path"])
    files = mapping.get("split", {}).get("files")
    if files:
        mapping["split"]["files"] = {part: moved(path) for part, path in files.items()}
