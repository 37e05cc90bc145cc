"""Declarative tasks: a classification task from one file, run through the whole standard.

A task file says where the rows come from (CSV, JSON Lines, a HuggingFace dataset,
inline records, or one of the ten standard datasets), the label words, the template,
the split sizes, what to run and the model's defaults, in TOML, JSON or YAML; a Python
asset says the same from ``config()`` and may add ``post_process`` and an evaluator
``score``.  Every key is checked against one schema (:mod:`.schema`) and every error
names the file, the key and, for data, the row, before any model loads.

Modules, in data-flow order: :mod:`.errors`, :mod:`.schema` (keys and kinds),
:mod:`.files` (reading each format), :mod:`.splits` (the split table: sizes, or a split fixed by
the data), :mod:`.resolve` (config -> Dataset, standard or not), :mod:`.task` (a loaded task and its checks), :mod:`.show` (TOML writer),
:mod:`.registry` (tasks by name), :mod:`.runs` (what a task changes in a run).
"""
from .errors import TaskError
from .registry import find_task, find_tasks, list_tasks, standard_task
from .schema import TaskConfig, parse_task, schema_rows
from .show import scaffold_mapping, standard_task_mapping, to_toml
from .task import Task, load_task

__all__ = ["TaskError", "TaskConfig", "Task", "load_task", "find_task", "find_tasks", "list_tasks", "standard_task",
           "parse_task", "schema_rows", "standard_task_mapping", "scaffold_mapping", "to_toml"]
