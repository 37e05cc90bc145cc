"""A loaded task: its checked config, its dataset, its hooks, and what it changes in a run.

:func:`load_task` reads, parses and resolves a task file and checks every setting a run
will use (retriever, extra metrics, the evaluator's answer shape) before any model loads.
:class:`Task` then hands the suite builder what it needs: the dataset, the per-dataset
retriever and metrics, the model-argument defaults (scoring, parser, chat template,
``post_process`` / ``messages`` hooks) and the provenance entry of ``results.json``.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import error_name
from ..datasets import Dataset
from .errors import TaskError, nearest
from .files import USER_CODE_ERRORS, TaskSource, asset_metadata, read_task_file
from .resolve import describe_dataset, resolve_dataset
from .schema import TaskConfig, parse_task, to_mapping

#: the model table's named keys, passed on as model arguments of the same name
_MODEL_KEYS = ("scoring", "unparsed", "max_new_tokens", "apply_chat_template", "system_instruction",
               "fewshot_as_multiturn")


@dataclass(frozen=True)
class Task:
    """A checked task: ``departures`` lists each way it differs from the standard (empty: it is the
    standard dataset itself); ``evaluator_keys`` the numbers its asset's ``score`` reports."""

    config: TaskConfig
    source: TaskSource
    dataset: Dataset
    departures: Tuple[str, ...]
    evaluator_keys: Tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def standard(self) -> bool:
        return not self.departures

    # -- what a run takes from the task -------------------------------------------------
    def retriever(self) -> Any:
        """The task's retriever object, or None."""
        run = self.config.run
        if run.retriever is None:
            return None
        from ..retrieval import retriever_from_name
        try:
            return retriever_from_name(run.retriever, **(run.retriever_args or {}))
        except (TypeError, ValueError) as exc:
            raise TaskError(str(exc).splitlines()[0], path=self.source.path, key="run.retriever") from None

    def extra_metrics(self) -> Dict[str, Callable]:
        """Metrics added to Normal on this task's dataset: registry names, then the evaluator's keys."""
        from ..metrics import get_metric
        out: Dict[str, Callable] = {}
        for name in self.config.run.metrics:
            info = get_metric(name)
            out[info.result_key] = info.function
        score = self.source.hooks.get("score")
        if score is not None:
            words = list(self.dataset.label_space)
            for key in self.evaluator_keys:
                out[key] = _evaluator_metric(score, key, words)
        return out

    def model_defaults(self, scoring: Optional[str]) -> Dict[str, Any]:
        """Model arguments the task sets (``scoring``: the one in effect, for the parser settings)."""
        model = self.config.model
        out: Dict[str, Any] = dict(model.args or {})
        for key in _MODEL_KEYS:
            value = getattr(model, key)
            if value is not None:
                out[key] = value
        if (scoring or out.get("scoring")) == "generate":
            if self.config.labels.aliases:
                out["aliases"] = {word: list(p) for word, p in self.config.labels.aliases.items()}
            if "post_process" in self.source.hooks:
                out["postprocess"] = _LabelIndexHook(self.source.hooks["post_process"])
            if "messages" in self.source.hooks:
                out["message_builder"] = self.source.hooks["messages"]
        return out

    def provenance(self) -> Dict[str, Any]:
        """The entry of ``results.json``: file, format, SHA-256, standard or not, and the resolved content."""
        from ..backends.base import code_digest
        entry: Dict[str, Any] = {"name": self.name, "file": self.source.path, "format": self.source.format,
                                 "sha256": self.source.sha256, "standard": self.standard,
                                 "departures": list(self.departures),
                                 "resolved": {"config": _redacted(to_mapping(self.config)),
                                              "dataset": describe_dataset(self.dataset)}}
        if self.source.hooks:
            entry["hooks"] = {name: code_digest(hook) for name, hook in sorted(self.source.hooks.items())}
        metadata = asset_metadata(self.source)
        if metadata is not None:
            entry["metadata"] = _redacted(metadata)
        return entry

    # -- checks that need the run's settings ----------------------------------------------
    def check_for_run(self, benchmarks: Sequence[str], k: int) -> None:
        """Refuse, naming the key, what the dataset cannot run: before any model loads."""
        path = self.source.path
        from ..spec import SPECS
        templated = [b for b in benchmarks if b in SPECS and SPECS[b].procedure == "template"]
        if templated and self.dataset.alternate_template is None:
            raise TaskError(f"{templated[0]} needs 3 options for instruction, input_text_prefixes, label_prefix and "
                            "label_affix", path=path, key="template.alternates")
        sizes = self.dataset.split_sizes
        if sizes is None:
            return
        retriever = self.config.run.retriever
        if k > sizes[1] and retriever not in ("zero",):
            raise TaskError(f"k = {k} demonstrations but the demonstration part has {sizes[1]} rows", path=path,
                            key="run.k" if self.config.run.k is not None else "split.demonstration")
        from ..spec import reports_metric
        binned = [b for b in benchmarks if reports_metric(b, "expected_calibration_error_1")]
        if binned and 2 * sizes[2] < 10:
            raise TaskError(f"the ECE of {', '.join(binned)} needs 10 predictions (test rows x 2); the test "
                            f"part has {sizes[2]} rows: give at least 5", path=path, key="split.test")


def _redacted(value: Any) -> Any:
    """``value`` as provenance may hold it: secret-named keys (``api_key``) and URL credentials masked."""
    from ..backends.secrets import REDACTED, is_secret_name, redact_text
    if isinstance(value, dict):
        return {k: REDACTED if is_secret_name(str(k)) else _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return redact_text(value) if isinstance(value, str) else value


def _evaluator_metric(score: Callable, key: str, words: List[str]) -> Callable:
    """A metric ``(truth, rows) -> number``: the evaluator's ``key`` over predicted and true label words."""
    from ..metrics import argmax

    def metric(truth: List[int], rows: List[list]) -> Any:
        predictions = [words[argmax(row)] for row in rows]
        references = [words[t] for t in truth]
        return score(predictions, references)[key]
    metric.__name__ = metric.__qualname__ = f"score[{key}]"
    return metric


class _LabelIndexHook:
    """``post_process(text)`` as the backends' ``postprocess(text, label_space)``: an index, a label word or None.

    ``__func__`` is the user's function, which the backend identity (the cache key of
    generated answers) names and hashes: it changes when the user's function does.
    """

    def __init__(self, post_process: Callable) -> None:
        self.__func__ = post_process

    def __call__(self, text: str, label_space: List[str]) -> Optional[int]:
        value = self.__func__(text)
        if isinstance(value, str):
            return label_space.index(value) if value in label_space else None
        return value


# ----------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------
def load_task(path: str) -> Task:
    """Read, parse, resolve and check the task file at ``path`` (no model is loaded)."""
    return task_from_source(read_task_file(path))


def task_from_source(source: TaskSource) -> Task:
    return resolve_task(source, checked_config(source))


def checked_config(source: TaskSource) -> TaskConfig:
    """Every check that needs no data: keys, kinds, sub-benchmark, metric and retriever names."""
    config = parse_task(source.mapping, source.path)
    model = config.model
    if model.backend is None and (model.args or any(getattr(model, key) is not None for key in _MODEL_KEYS)):
        raise TaskError("name the backend these model defaults are for (e.g. hf)", path=source.path,
                        key="model.backend")
    _check_metrics(config, source.path)
    _check_benchmarks(config, source.path)
    return config


def resolve_task(source: TaskSource, config: TaskConfig) -> Task:
    """The checked config against its data (which may load a HuggingFace dataset), then the evaluator."""
    dataset, departures = resolve_dataset(config, source)
    task = Task(config, source, dataset, tuple(departures), _evaluator_keys(source, dataset))
    task.retriever()
    return task


def _check_benchmarks(config: TaskConfig, path: str) -> None:
    from ..subbenchmarks.suite import resolve_benchmark_names
    if config.run.benchmarks is not None:
        try:
            resolve_benchmark_names(",".join(config.run.benchmarks))
        except ValueError as exc:
            raise TaskError(str(exc), path=path, key="run.benchmarks") from None


def _check_metrics(config: TaskConfig, path: str) -> None:
    from ..metrics import METRICS, get_metric
    for name in config.run.metrics:
        try:
            get_metric(name)
        except (KeyError, ValueError):
            raise TaskError(f"unknown metric {name!r}" + nearest(name, METRICS).replace("valid keys", "choose from"),
                            path=path, key="run.metrics") from None


def _evaluator_keys(source: TaskSource, dataset: Dataset) -> Tuple[str, ...]:
    """Call the evaluator once on the label words against themselves: it must return a dict of numbers."""
    score = source.hooks.get("score")
    if score is None:
        return ()
    words = list(dataset.label_space)
    try:
        value = score(list(words), list(words))
    except USER_CODE_ERRORS as exc:  # the user's code, an exit too
        raise TaskError(f"score(predictions, references) raised {error_name(exc)}: {exc}", path=source.path,
                        key="score") from None
    if not isinstance(value, dict) or not value:
        raise TaskError(f"score(predictions, references) must return a non-empty dict of numbers, got "
                        f"{type(value).__name__}", path=source.path, key="score")
    for key, number in value.items():
        if not isinstance(key, str) or isinstance(number, bool) or not isinstance(number, (int, float)):
            raise TaskError(f"score() returned {key!r}: {number!r}; expected string keys and numbers",
                            path=source.path, key="score")
    return tuple(value)
