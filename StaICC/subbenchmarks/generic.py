"""The generic sub-benchmark: one experimentor per dataset, run in order, averaged by a rule.

A :class:`SubBenchmark` builds one :class:`~StaICC.subbenchmarks.experimentor.single_experimentor` per
dataset from a few class-level parameters (metrics, pseudo query, procedure, test size,
repeat count, averaging rule) and runs them.  The seven sub-benchmarks of the standard
(:mod:`StaICC.subbenchmarks.builtin`) only set those parameters.
"""
import platform
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..backends.base import Backend, as_backend
from ..engine.cache_use import opened_cache
from ..datasets import Dataset, resolve_datasets, verify_datasets
from .experimentor import single_experimentor
from ..metrics import normal_metrics
from ..engine.procedures import Procedure
from ..results import ResultDict
from ..results.records import Records
from ..standard import DEFAULT_K

FUNCTION_COUNT_ERROR = ("The length of list_of_forward_inference must be the same as the number of datasets in "
                        "the benchmark. You can use the get_experiment_data method to get the datasets and their order.")


# ----------------------------------------------------------------------------
# averaging rules
# ----------------------------------------------------------------------------
def average_metrics(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """Normal-style average: per metric, a left-to-right sum over datasets / dataset count.

    A value that cannot be added (the list-valued "distribution") contributes 0, so its
    average is 0.0, exactly as the standard reports it.
    """
    names: List[str] = []
    for result in divided.values():
        names.extend(n for n in result if n not in names)
    averaged = {}
    for name in names:
        total = 0
        for result in divided.values():
            try:
                total = total + result[name]
            except (TypeError, KeyError):
                total = total + 0
        averaged[name] = total / dataset_count
    return averaged


def _average_sensitivity(divided: Dict[str, Dict[str, Any]], dataset_count: int, slope: bool) -> Dict[str, Any]:
    first = next(iter(divided.values()))["sensitivity"]
    averaged = {}
    for metric in first:
        total = 0
        for result in divided.values():
            value = result["sensitivity"][metric]
            total += value[0] if slope else value
        averaged[metric] = total / dataset_count
    return averaged


def average_slopes(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """GLER: mean slope per metric."""
    return _average_sensitivity(divided, dataset_count, slope=True)


def average_sensitivity(divided: Dict[str, Dict[str, Any]], dataset_count: int) -> Dict[str, Any]:
    """Template_sens, Demo_sens: mean of each sensitivity value."""
    return _average_sensitivity(divided, dataset_count, slope=False)


# ----------------------------------------------------------------------------
# the generic sub-benchmark
# ----------------------------------------------------------------------------
class SubBenchmark:
    """Experimentors over a list of datasets, run in order, averaged by a rule."""

    benchmark_name = "SubBenchmark"
    pseudo_query: Optional[str] = None
    repeat_times = 2
    test_size: Optional[int] = None
    supports_noisy_channel = True
    averaging: Callable = staticmethod(average_metrics)

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics: Optional[Dict[str, Callable]] = None,
                 datasets: Optional[Sequence[Any]] = None, *, retriever=None, progress: Optional[bool] = None) -> None:
        self._datasets: List[Dataset] = resolve_datasets(datasets)
        names = [d.name for d in self._datasets]
        duplicated = {n for n in names if names.count(n) > 1}
        if duplicated:
            raise ValueError(f"datasets appear twice in the benchmark: {sorted(duplicated)}")
        self._metrics = dict(metrics) if metrics is not None else None
        self.retriever = retriever
        self.progress = progress
        self.last_partial_results: Dict[str, Any] = {}
        self.re_initialize(k, noisy_channel)

    # -- parameters a sub-benchmark overrides --------------------------------------
    def default_metrics(self, test_size: Optional[int] = None) -> Dict[str, Callable]:
        return normal_metrics()

    def make_procedure(self, dataset: Dataset) -> Procedure:
        return Procedure()

    def extra_experimentor_options(self) -> Dict[str, Any]:
        return {}

    def test_size_for(self, dataset: Dataset) -> Optional[int]:
        """The diagnosis test size; a custom dataset with fewer test rows uses all of them."""
        if self.test_size is None or dataset.standard or dataset.split_sizes is None:
            return self.test_size
        return min(self.test_size, dataset.split_sizes[2])

    # -- construction ----------------------------------------------------------------
    def _build(self, dataset: Dataset, k: int, noisy_channel: bool) -> single_experimentor:
        test_size = self.test_size_for(dataset)
        metrics = self._metrics if self._metrics is not None else self.default_metrics(test_size)
        return single_experimentor(
            original_dataset=dataset, k=k, metrics=dict(metrics), repeat_times=self.repeat_times,
            noisy_channel=noisy_channel, pseudo_query=self.pseudo_query, procedure=self.make_procedure(dataset),
            test_size=test_size, standard_repeat_times=self.repeat_times, benchmark=self.benchmark_name,
            **self.extra_experimentor_options())

    def re_initialize(self, k: int = DEFAULT_K, noisy_channel: Optional[bool] = None, keep_prompter: bool = False) -> None:
        """Rebuild every experimentor; ``noisy_channel=None`` keeps the current mode.

        With ``keep_prompter`` the prompt writers' settings carry over (the original crashed).
        """
        old = getattr(self, "_experimentors", [])
        if noisy_channel is None:
            noisy_channel = getattr(self, "noisy_channel", False)
        if noisy_channel and not self.supports_noisy_channel:
            raise ValueError(f"{self.benchmark_name} does not support noisy-channel prompts")
        self.noisy_channel = noisy_channel
        self._experimentors = [self._build(d, k, noisy_channel) for d in self._datasets]
        if keep_prompter:
            for new, previous in zip(self._experimentors, old):
                new.prompt_former.restore(previous.prompt_former.snapshot())
        if self.retriever is not None:
            for experimentor in self._experimentors:
                experimentor.use_retriever(self.retriever)

    def limit_test_items(self, count: int) -> None:
        """A smoke run: only the first ``count`` test items of each dataset (marked non-standard)."""
        for experimentor, dataset in zip(self._experimentors, self._datasets):
            experimentor.limit_test_items(count)
            if self._metrics is None:  # consistency loops over the items evaluated
                test_size = self.test_size_for(dataset)
                limited = min(count, test_size) if test_size is not None else None
                experimentor.metrics = dict(self.default_metrics(limited))

    # -- the original's accessors ---------------------------------------------------
    def __getitem__(self, index: int) -> single_experimentor:
        return self._experimentors[index]

    def __len__(self) -> int:
        return len(self._experimentors)

    def __iter__(self):
        return iter(self._experimentors)

    def get_experimentors(self) -> List[single_experimentor]:
        return list(self._experimentors)

    def get_experiment_data(self):
        return [e.triplet_dataset for e in self._experimentors]

    def get_label_spaces_for_experimentors(self) -> List[List[str]]:
        return [e.triplet_dataset.get_label_space() for e in self._experimentors]

    def dataset_names(self) -> List[str]:
        return [e.dataset_name for e in self._experimentors]

    # -- running ----------------------------------------------------------------------
    def _functions(self, list_of_forward_inference) -> List[Optional[Callable]]:
        if list_of_forward_inference is None:
            return [None] * len(self)
        if type(list_of_forward_inference) is not list:
            functions = [list_of_forward_inference] * len(self)
        elif len(list_of_forward_inference) == 1:
            functions = list_of_forward_inference * len(self)
        elif len(list_of_forward_inference) == len(self):
            functions = list(list_of_forward_inference)
        else:
            raise ValueError(f"{FUNCTION_COUNT_ERROR} Got {len(list_of_forward_inference)} functions for "
                             f"{len(self)} datasets: {self.dataset_names()}")
        for name, f in zip(self.dataset_names(), functions):
            if not callable(f) and not isinstance(f, Backend):
                raise TypeError(f"the inference for dataset {name!r} is {type(f).__name__}, not callable")
        return functions

    def _preentered(self, preentered_predictions) -> List[Optional[Sequence]]:
        if preentered_predictions is None:
            return [None] * len(self)
        if isinstance(preentered_predictions, dict):
            unknown = set(preentered_predictions) - set(self.dataset_names())
            if unknown:
                raise ValueError(f"preentered predictions for unknown datasets {sorted(unknown)}; "
                                 f"the benchmark has {self.dataset_names()}")
            return [preentered_predictions.get(n) for n in self.dataset_names()]
        if len(preentered_predictions) != len(self):
            raise ValueError(f"{len(preentered_predictions)} preentered prediction lists for {len(self)} datasets; "
                             "give one per dataset in benchmark order, or a dict by dataset name")
        return list(preentered_predictions)

    def auto_run(self, list_of_forward_inference=None, return_divided_results: bool = True,
                 batched_inference: bool = False, *, preentered_predictions=None, cache=None,
                 checkpoint: Optional[str] = None, model_id: Optional[str] = None,
                 progress: Optional[bool] = None) -> ResultDict:
        """Run every dataset in order and average.

        ``list_of_forward_inference``: a model (a function ``f(prompt, label_space)`` or a
        :class:`~StaICC.backends.Backend`) for all datasets, a list of one, or one per dataset.
        ``preentered_predictions``: predictions made elsewhere (a dict by dataset name or a list
        per dataset), aligned with each ``bench[i].prompt_set()``.  ``cache``: a prediction-cache
        file (or an open :class:`~StaICC.cache.PredictionCache`): answers already in it for this
        model are not asked again, and new ones are committed as they come, so an interrupted run
        resumes where it stopped.  ``checkpoint`` is the same as ``cache``.  ``model_id`` names a
        plain function's model for the cache (see :class:`~StaICC.backends.FunctionBackend`).
        """
        if cache is not None and checkpoint is not None:
            raise ValueError("give cache= or its alias checkpoint=, not both")
        plan = self.prepare(list_of_forward_inference, batched_inference, preentered_predictions, model_id)
        progress = self.progress if progress is None else progress
        with opened_cache(cache if cache is not None else checkpoint) as store:
            return self.run_prepared(plan, return_divided_results, store, progress)

    def prepare(self, models, batched: bool = False, preentered_predictions=None,
                model_id: Optional[str] = None) -> List[Tuple[Any, Any]]:
        """(backend or None, preentered or None) per dataset, every check done before any inference."""
        functions = self._functions(models)
        given = self._preentered(preentered_predictions)
        pairs = []
        for name, f, p in zip(self.dataset_names(), functions, given):
            if f is None and p is None:
                raise ValueError(f"You should provide either the forward_inference function or the input_prediction "
                                 f"(dataset {name!r}).")
            pairs.append((as_backend(f, batched=batched, model_id=model_id) if p is None else None, p))
        for experimentor in self._experimentors:
            experimentor.check_runnable()
        verify_datasets(self._datasets)
        return pairs

    def run_prepared(self, pairs, return_divided_results: bool = True, cache=None,
                     progress: Optional[bool] = None, planned: Optional[List] = None) -> ResultDict:
        """Run checked (backend, preentered) pairs; ``planned`` gives each experimentor's (plan, requests)."""
        divided: Dict[str, Any] = {}
        outcomes: Dict[str, Any] = {}
        self.last_partial_results = divided
        started = time.perf_counter()
        planned = planned if planned is not None else [None] * len(self)
        for experimentor, (backend, preentered), ready in zip(self._experimentors, pairs, planned):
            try:
                outcome = experimentor.execute(backend, preentered, cache=cache, progress=progress, planned=ready)
            except BaseException as exc:
                exc.completed_results = dict(divided)  # type: ignore[attr-defined]
                raise
            divided[experimentor.dataset_name] = outcome.summary
            outcomes[experimentor.dataset_name] = outcome
        averaged = self.averaging(divided, len(self))
        body = {"Divided results": divided, "Averaged results": averaged} if return_divided_results \
            else {"Averaged results": averaged}
        result = ResultDict(body, metadata=self._metadata(time.perf_counter() - started, pairs, outcomes))
        result.records = Records([o.records for o in outcomes.values()])
        return result

    def __call__(self, list_of_forward_inference=None, return_divided_results: bool = True,
                 batched_inference: bool = False, **options) -> ResultDict:
        return self.auto_run(list_of_forward_inference, return_divided_results, batched_inference, **options)

    @property
    def k(self):
        """The k of the experimentors: one int, or a dict by dataset when ``set_k`` made them differ."""
        return uniform_or_by_dataset({e.dataset_name: e.k for e in self._experimentors})

    def _metadata(self, seconds: float, pairs, outcomes) -> Dict[str, Any]:
        from ..version import __version__
        departures = {e.dataset_name: e.non_standard_settings() for e in self._experimentors
                      if e.non_standard_settings()}
        for dataset in self._datasets:
            if not dataset.standard:
                departures.setdefault(dataset.name, []).extend(getattr(dataset, "departures", None) or ["custom dataset"])
        models = {}
        for experimentor, (backend, _given) in zip(self._experimentors, pairs):
            identity = backend.identity() if backend is not None else {"backend": "preentered"}
            models[experimentor.dataset_name] = {"identity": identity,
                                                 "fingerprint": backend.fingerprint() if backend is not None else None}
            for setting in (backend.non_standard if backend is not None else []):
                departures.setdefault(experimentor.dataset_name, []).append(setting)
        unparsed = {name: o.unparsed for name, o in outcomes.items() if o.unparsed}
        return {"benchmark": self.benchmark_name, "staicc_version": __version__, "k": self.k,
                "noisy_channel": self.noisy_channel, "datasets": self.dataset_names(),
                "procedure": self._experimentors[0].procedure.describe(),
                "retriever": self.retriever.describe() if self.retriever is not None else None,
                "model": uniform_or_by_dataset(models),
                "standard": not departures, "non_standard_settings": departures,
                "unparsed_answers": unparsed,
                "prompt_sha256": {name: o.prompt_set_sha256 for name, o in outcomes.items()},
                "python": platform.python_version(), "seconds": round(seconds, 3)}

    def __repr__(self) -> str:
        return f"{self.benchmark_name}(k={self.k}, datasets={self.dataset_names()})"


def uniform_or_by_dataset(values: Dict[str, Any]) -> Any:
    """One value when every dataset has the same, else the dict by dataset."""
    distinct = list(values.values())
    if distinct and all(v == distinct[0] for v in distinct):
        return distinct[0]
    return values
