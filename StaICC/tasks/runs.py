"""What tasks change in a run: the sub-benchmarks, k, each dataset's retriever and metrics, the model's defaults.

The suite is built by the standard's own :func:`build_suite` over the tasks' datasets;
these functions only fill in what the command line left open and set, per dataset, what
a task asks for.  A setting two tasks disagree on that the suite holds once (the
sub-benchmarks, k, the backend) is refused rather than silently chosen.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..spec import DEFAULT_BENCHMARK, SCORE_PARTS
from ..standard import DEFAULT_K
from .task import Task


def _agreed(values: List[Tuple[Task, Any]], what: str, flag: str) -> Any:
    given = [(t, v) for t, v in values if v is not None]
    if not given:
        return None
    first_task, first = given[0]
    for task, value in given[1:]:
        if value != first:
            raise InvalidValueError(f"tasks {first_task.name!r} and {task.name!r} set different {what} ({first!r}, {value!r}); "
                                    f"run them separately or give {flag}")
    return first


def run_settings(tasks: Sequence[Task], benchmarks: Optional[str], k: Optional[int]) -> Tuple[Any, int]:
    """The sub-benchmarks and k of a run: the command's, else the tasks' (which must agree), else the defaults."""
    if benchmarks is None:
        chosen = _agreed([(t, t.config.run.benchmarks) for t in tasks], "sub-benchmarks", "--benchmarks")
        benchmarks = ",".join(chosen) if chosen is not None else DEFAULT_BENCHMARK
    if k is None:
        chosen_k = _agreed([(t, t.config.run.k) for t in tasks], "k", "--k")
        silent = [t for t in tasks if t.config.run.k is None]
        if chosen_k not in (None, DEFAULT_K) and silent:
            setter = next(t for t in tasks if t.config.run.k is not None)
            raise InvalidValueError(f"task {setter.name!r} sets run.k = {chosen_k} but task {silent[0].name!r} sets no k (it "
                                    f"would run at k = {chosen_k}, not the standard's {DEFAULT_K}); one run has one k: give "
                                    f"--k, set run.k in every task, or run them separately")
        k = chosen_k if chosen_k is not None else DEFAULT_K
    return benchmarks, k


def model_choice(tasks: Sequence[Task], model: Optional[str], arguments: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """The backend and its arguments: the command's ``--model`` (default: the tasks' backend, else
    ``reference``); the tasks' model defaults for that backend, overridden by ``--model-args``."""
    wanted = _agreed([(t, t.config.model.backend) for t in tasks], "model backends", "--model")
    name = model or wanted or "reference"
    merged: Dict[str, Any] = {}
    if tasks and (wanted is None or wanted == name):
        scoring = arguments.get("scoring")
        defaults = [(t, t.model_defaults(scoring)) for t in tasks]
        for key in sorted({k for _, d in defaults for k in d}):
            merged[key] = _agreed([(t, d.get(key)) for t, d in defaults], f"model argument {key}",
                                  "--model-args")
    merged.update(arguments)
    return name, merged


def task_options(tasks: Sequence[Task]) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    """What the tasks give the sub-benchmarks when they are built: (each task's retriever by dataset name,
    the options of each sub-benchmark by name: the extra metrics and evaluator, by dataset name, of each
    sub-benchmark that scores the test items)."""
    retrievers = {}
    for task in tasks:
        retriever = task.retriever()
        if retriever is not None:
            retrievers[task.dataset.name] = retriever
    metrics = {task.dataset.name: task.extra_metrics() for task in tasks}
    return retrievers, {name: {"extra_metrics": metrics} for name in SCORE_PARTS}


def provenance(tasks: Sequence[Task]) -> List[Dict[str, Any]]:
    return [task.provenance() for task in tasks]


def command_settings(specs: Optional[str], include_paths: Sequence[str], benchmarks: Optional[str],
                     k: Optional[int], model: Optional[str], arguments: Dict[str, Any]) -> Dict[str, Any]:
    """What ``staicc run`` runs once its tasks are read: tasks, sub-benchmarks, k, backend and model arguments.

    Every task is loaded and checked for the sub-benchmarks and k of the run here, before
    any model loads; without ``--tasks`` the command's own defaults stand.
    """
    from .registry import find_tasks
    from ..subbenchmarks.suite import resolve_benchmark_names
    names = [s.strip() for s in specs.split(",") if s.strip()] if specs else []
    if specs is not None and not names:
        raise InvalidValueError("--tasks names no task; give NAME or FILE[,...]")
    tasks = find_tasks(names, include_paths) if names else []
    benchmarks, k = run_settings(tasks, benchmarks, k)
    chosen = resolve_benchmark_names(benchmarks)
    for task in tasks:
        task.check_for_run(chosen, k)
    name, merged = model_choice(tasks, model, arguments)
    return {"tasks": tasks, "benchmarks": benchmarks, "k": k, "model": name, "arguments": merged,
            "recorded_arguments": recorded_arguments(merged)}


def recorded_arguments(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Model arguments as provenance can hold them: a task's hook (a function) by its name."""
    from ..backends.base import function_name
    return {key: f"<function {function_name(value)}>" if callable(value) else value
            for key, value in arguments.items()}
