"""The generic sub-benchmark: one experimentor per dataset, run in order, averaged by a rule.

A :class:`SubBenchmark` builds one :class:`~StaICC.subbenchmarks.experimentor.single_experimentor` per
dataset from a few class-level parameters (metrics, pseudo query, procedure, test size,
repeat count, averaging rule) and runs them.  The seven sub-benchmarks of the standard
(:mod:`StaICC.subbenchmarks.builtin`) only set those parameters.
"""
import platform
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..backends.base import Backend, as_backend
from ..engine.cache_use import opened_cache
from ..datasets import Dataset, resolve_datasets, verify_datasets
from .experimentor import single_experimentor
from ..metrics import normal_metrics
from ..engine.procedures import LabelNoiseProcedure, Procedure, SensitivityProcedure, TemplateProcedure
from ..engine.selection import QuerySubset
from ..results import ResultDict
from ..results.records import Records
from ..standard import DEFAULT_K, GLER_INTERPOLATIONS
from ..spec import SubBenchmarkSpec
from .averaging import AVERAGING, average_metrics, average_sensitivity, average_slopes  # noqa: F401  (importable here)
from ..errors import InvalidTypeError, InvalidValueError

FUNCTION_COUNT_ERROR = ("The length of list_of_forward_inference must be the same as the number of datasets in "
                        "the benchmark. You can use the get_experiment_data method to get the datasets and their order.")


def make_procedure(spec: SubBenchmarkSpec, dataset: Dataset, interpolations: int = GLER_INTERPOLATIONS) -> Procedure:
    """The procedure the spec table names for ``spec``, on ``dataset``."""
    if spec.procedure == "label_noise":
        return LabelNoiseProcedure(interpolations, spec.abscissae or "standard")
    if spec.procedure == "template":
        if not dataset.alternate_template:
            raise InvalidValueError(f"{spec.name} needs alternate templates for dataset {dataset.name!r}")
        return TemplateProcedure(dataset.alternate_template)
    if spec.procedure == "demonstration_sensitivity":
        return SensitivityProcedure()
    return Procedure()


def spec_metrics(spec: SubBenchmarkSpec, test_size: Optional[int]) -> Dict[str, Callable]:
    """The spec's metrics by result key; consistency loops over the test items evaluated."""
    from ..metrics import consistency_metrics
    from ..metrics.registry import METRICS
    if spec.has_consistency:
        return consistency_metrics(test_size or spec.consistency_loop)
    return {METRICS[n].result_key: METRICS[n].function for n in spec.metrics}


# ----------------------------------------------------------------------------
# the generic sub-benchmark
# ----------------------------------------------------------------------------
class SubBenchmark:
    """Experimentors over a list of datasets, run in order, averaged by a rule.

    A subclass with ``spec = SPECS["Name"]`` takes its name, pseudo query, repeat count,
    test size, noisy-channel support, averaging, metrics and procedure from that row of
    the table (:mod:`StaICC.spec`); a subclass without one sets the class
    attributes below itself, as before.
    """

    spec: Optional[SubBenchmarkSpec] = None
    benchmark_name = "SubBenchmark"
    pseudo_query: Optional[str] = None
    repeat_times = 2
    test_size: Optional[int] = None
    supports_noisy_channel = True
    averaging: Callable = staticmethod(average_metrics)
    interpolations = GLER_INTERPOLATIONS

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        spec = cls.__dict__.get("spec")
        if spec is not None:
            cls.benchmark_name, cls.pseudo_query = spec.name, spec.pseudo_query
            cls.repeat_times, cls.test_size = spec.repeat_times, spec.test_size
            cls.supports_noisy_channel = spec.noisy_channel
            cls.averaging = staticmethod(AVERAGING[spec.averaging])

    def __init__(self, k: int = DEFAULT_K, noisy_channel: bool = False, metrics: Optional[Dict[str, Callable]] = None,
                 datasets: Optional[Sequence[Any]] = None, *, retriever=None, progress: Optional[bool] = None,
                 test_items: Optional[QuerySubset] = None, retrievers: Optional[Mapping[str, Any]] = None,
                 extra_metrics: Optional[Mapping[str, Mapping[str, Callable]]] = None,
                 own_distribution: bool = False) -> None:
        """``test_items``: which test items each dataset evaluates (non-standard; see
        :class:`~StaICC.engine.selection.QuerySubset`); ``retrievers``: a retriever per dataset name,
        after ``retriever``; ``extra_metrics``: metrics added per dataset name; ``own_distribution``:
        beside the standard's likelihood and ECE, the same on the model's own distribution
        (non-standard metrics, :func:`~StaICC.metrics.with_own_distribution_metrics`).  All of them
        hold for every rebuild (``re_initialize``)."""
        self._datasets: List[Dataset] = resolve_datasets(datasets)
        names = [d.name for d in self._datasets]
        duplicated = {n for n in names if names.count(n) > 1}
        if duplicated:
            raise InvalidValueError(f"datasets appear twice in the benchmark: {sorted(duplicated)}")
        self._metrics = dict(metrics) if metrics is not None else None
        self.retriever = retriever
        self.test_items, self.retrievers = test_items, dict(retrievers or {})
        self.extra_metrics = {name: dict(m) for name, m in (extra_metrics or {}).items()}
        self.own_distribution = own_distribution
        self.progress = progress
        self.last_partial_results: Dict[str, Any] = {}
        self.re_initialize(k, noisy_channel)

    # -- parameters a sub-benchmark overrides --------------------------------------
    def default_metrics(self, test_size: Optional[int] = None) -> Dict[str, Callable]:
        return spec_metrics(self.spec, test_size) if self.spec is not None else normal_metrics()

    def make_procedure(self, dataset: Dataset) -> Procedure:
        return make_procedure(self.spec, dataset, self.interpolations) if self.spec is not None else Procedure()

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
            raise InvalidValueError(f"{self.benchmark_name} does not support noisy-channel prompts")
        self.noisy_channel = noisy_channel
        self._experimentors = [self._build(d, k, noisy_channel) for d in self._datasets]
        if keep_prompter:
            for new, previous in zip(self._experimentors, old):
                new.prompt_former.restore(previous.prompt_former.snapshot())
        for experimentor, dataset in zip(self._experimentors, self._datasets):
            for retriever in (self.retriever, self.retrievers.get(dataset.name)):
                if retriever is not None:
                    experimentor.use_retriever(retriever)
            if self.test_items is not None:
                self._select(experimentor, dataset, self.test_items)
            experimentor.metrics.update(self.extra_metrics.get(dataset.name, {}))
            if self.own_distribution:
                from ..metrics import with_own_distribution_metrics
                experimentor.metrics = with_own_distribution_metrics(experimentor.metrics)

    def limit_test_items(self, count: int) -> None:
        """A smoke run: only the first ``count`` test items of each dataset (marked non-standard)."""
        subset = QuerySubset.first(count)
        for experimentor, dataset in zip(self._experimentors, self._datasets):
            self._select(experimentor, dataset, subset)

    def _select(self, experimentor: single_experimentor, dataset: Dataset, subset: QuerySubset) -> None:
        """Evaluate the subset's test items of ``dataset``; the metrics are then those of that many items."""
        available = len(experimentor.triplet_dataset.test)
        items = subset.items_for(self.benchmark_name, dataset.name, experimentor.triplet_dataset.test.label_indexes())
        if items is None:
            return
        experimentor.select_test_items(items, subset.departure(len(items), available))
        if self._metrics is None:  # consistency loops over the items evaluated
            experimentor.metrics = self.metrics_for_items(experimentor, dataset)

    def metrics_for_items(self, experimentor: single_experimentor, dataset: Dataset) -> Dict[str, Callable]:
        """The default metrics of a run over the experimentor's evaluated test items."""
        test_size = self.test_size_for(dataset)
        return dict(self.default_metrics(experimentor.test_count() if test_size is not None else None))

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
            raise InvalidValueError(f"{FUNCTION_COUNT_ERROR} Got {len(list_of_forward_inference)} functions for "
                                    f"{len(self)} datasets: {self.dataset_names()}")
        for name, f in zip(self.dataset_names(), functions):
            if not callable(f) and not isinstance(f, Backend):
                raise InvalidTypeError(f"the inference for dataset {name!r} is {type(f).__name__}, not callable")
        return functions

    def _preentered(self, preentered_predictions) -> List[Optional[Sequence]]:
        if preentered_predictions is None:
            return [None] * len(self)
        if isinstance(preentered_predictions, dict):
            unknown = set(preentered_predictions) - set(self.dataset_names())
            if unknown:
                raise InvalidValueError(f"preentered predictions for unknown datasets {sorted(unknown)}; "
                                        f"the benchmark has {self.dataset_names()}")
            return [preentered_predictions.get(n) for n in self.dataset_names()]
        if len(preentered_predictions) != len(self):
            raise InvalidValueError(f"{len(preentered_predictions)} preentered prediction lists for {len(self)} datasets; "
                                    "give one per dataset in benchmark order, or a dict by dataset name")
        return list(preentered_predictions)

    def auto_run(self, list_of_forward_inference=None, return_divided_results: bool = True,
                 batched_inference: bool = False, *, preentered_predictions=None, cache=None,
                 checkpoint: Optional[str] = None, model_id: Optional[str] = None,
                 progress: Optional[bool] = None, prediction_kind: Optional[str] = None) -> ResultDict:
        """Run every dataset in order and average: a run of this sub-benchmark's works.

        ``list_of_forward_inference``: a model (a function ``f(prompt, label_space)`` or a
        :class:`~StaICC.backends.Backend`) for all datasets, a list of one, or one per dataset.
        ``preentered_predictions``: predictions made elsewhere (a dict by dataset name or a list
        per dataset), aligned with each ``bench[i].prompt_set()``.  ``cache``: a prediction-cache
        file (or an open :class:`~StaICC.cache.PredictionCache`): answers already in it for this
        model are not asked again, and new ones are committed as they come, so an interrupted run
        resumes where it stopped.  ``checkpoint`` is the same as ``cache``.  ``model_id`` names a
        plain function's model for the cache (see :class:`~StaICC.backends.FunctionBackend`).
        ``prediction_kind``: what a function's or the preentered vectors are, "probabilities",
        "loglikelihoods" or "logits" (None, the default: the standard's exact-sum rule decides;
        see :mod:`StaICC.metrics.exact_sum`): "loglikelihoods" makes log-likelihoods handed back
        give the numbers of the ``hf`` backend that computed them.
        """
        from ..engine.runner import run_works
        from ..metrics.exact_sum import check_prediction_kind
        if cache is not None and checkpoint is not None:
            raise InvalidValueError("give cache= or its alias checkpoint=, not both")
        check_prediction_kind(prediction_kind)
        pairs = self.prepare(list_of_forward_inference, batched_inference, preentered_predictions, model_id,
                             prediction_kind)
        works = self.works()
        progress = self.progress if progress is None else progress
        self.last_partial_results = {}
        started = time.perf_counter()
        with opened_cache(cache if cache is not None else checkpoint) as store:
            try:
                outcomes = run_works(works, [b for b, _ in pairs], [p for _, p in pairs], cache=store,
                                     progress=progress, distinct=store is not None, preentered_kind=prediction_kind)
            except BaseException as exc:
                completed = {o.work.dataset: o.summary for o in getattr(exc, "completed_outcomes", [])}
                self.last_partial_results.update(completed)
                exc.completed_results = dict(completed)  # type: ignore[attr-defined]
                raise
        return self.collect(outcomes, [b for b, _ in pairs], return_divided_results, time.perf_counter() - started)

    def prepare(self, models, batched: bool = False, preentered_predictions=None,
                model_id: Optional[str] = None, prediction_kind: Optional[str] = None) -> List[Tuple[Any, Any]]:
        """(backend or None, preentered or None) per dataset; each model becomes a backend once."""
        functions = self._functions(models)
        given = self._preentered(preentered_predictions)
        pairs = []
        made: Dict[int, Backend] = {}
        for name, f, p in zip(self.dataset_names(), functions, given):
            if f is None and p is None:
                raise InvalidValueError(f"You should provide either the forward_inference function or the input_prediction "
                                        f"(dataset {name!r}).")
            if p is None and id(f) not in made:
                made[id(f)] = as_backend(f, batched=batched, model_id=model_id, prediction_kind=prediction_kind)
            pairs.append((made[id(f)] if p is None else None, p))
        return pairs

    def works(self) -> List[Any]:
        """Every experimentor's work, each checked before any inference (the one preflight)."""
        works = [experimentor.work() for experimentor in self._experimentors]
        verify_datasets(self._datasets)
        return works

    def collect(self, outcomes: Sequence[Any], backends: Sequence[Any], return_divided_results: bool = True,
                seconds: float = 0.0, described: Optional[Dict[int, Any]] = None) -> ResultDict:
        """The result of this sub-benchmark from its works' outcomes, averaged by its rule."""
        divided = {o.work.dataset: o.summary for o in outcomes}
        averaged = self.averaging(divided, len(self))
        body = {"Divided results": divided, "Averaged results": averaged} if return_divided_results \
            else {"Averaged results": averaged}
        described = described if described is not None else {}
        result = ResultDict(body, metadata=self._metadata(seconds, outcomes, backends, described))
        result.records = Records([o.records for o in outcomes])
        return result

    def __call__(self, list_of_forward_inference=None, return_divided_results: bool = True,
                 batched_inference: bool = False, **options) -> ResultDict:
        return self.auto_run(list_of_forward_inference, return_divided_results, batched_inference, **options)

    @property
    def k(self):
        """The k of the experimentors: one int, or a dict by dataset when ``set_k`` made them differ."""
        return uniform_or_by_dataset({e.dataset_name: e.k for e in self._experimentors})

    def _metadata(self, seconds: float, outcomes, backends, described: Dict[int, Any]) -> Dict[str, Any]:
        from ..version import __version__
        departures: Dict[str, List[str]] = {}
        models = {}
        for outcome, backend in zip(outcomes, backends):
            name = outcome.work.dataset
            departures[name] = list(outcome.work.departures) + (list(backend.non_standard) if backend is not None else []) \
                + ([ORIGINAL_RULE_DEPARTURE] if outcome.rule.original else [])
            if backend is not None and id(backend) not in described:
                described[id(backend)] = {"identity": backend.identity(), "fingerprint": backend.fingerprint()}
            models[name] = described[id(backend)] if backend is not None else \
                {"identity": {"backend": "preentered"}, "fingerprint": None}
        departures = {name: settings for name, settings in departures.items() if settings}
        unparsed = {o.work.dataset: o.unparsed for o in outcomes if o.unparsed}
        thinking = {o.work.dataset: summary for o in outcomes if (summary := o.records.thinking_summary())}
        return {"benchmark": self.benchmark_name, "staicc_version": __version__, "k": self.k,
                "noisy_channel": self.noisy_channel, "datasets": self.dataset_names(),
                "label_words": dict(zip(self.dataset_names(), self.get_label_spaces_for_experimentors())),
                "procedure": self._experimentors[0].procedure.describe(),
                "retriever": self.retriever.describe() if self.retriever is not None else None,
                "model": uniform_or_by_dataset(models),
                "standard": not departures, "non_standard_settings": departures,
                "unparsed_answers": unparsed, "exact_sum": exact_sum_metadata(outcomes),
                "answer_counts": {o.work.dataset: len(o.records) for o in outcomes},
                "prompt_sha256": {o.work.dataset: o.prompt_set_sha256 for o in outcomes},
                "python": platform.python_version(), "seconds": round(seconds, 3),
                **({"thinking": thinking} if thinking else {})}

    def __repr__(self) -> str:
        return f"{self.benchmark_name}(k={self.k}, datasets={self.dataset_names()})"


def exact_sum_metadata(outcomes: Sequence[Any]) -> Dict[str, Any]:
    """Per dataset: what its rows were declared to be and how each pass met the exact-sum rule
    (:class:`~StaICC.metrics.exact_sum.PassCensus`), for the numerics record and the notices."""
    return {o.work.dataset: {"prediction_kind": o.rule.kind, "passes": [c.as_dict() for c in o.exact_sum],
                             **({"rule": "original"} if o.rule.original else {})}
            for o in outcomes}


#: the departure a run with exact_sum="original" records (its numbers may change with the route)
ORIGINAL_RULE_DEPARTURE = ("exact_sum=original: the original's exact-sum rule, so likelihood, ECE and the bias "
                           "entropy may change with batch size, shards and hardware")


def uniform_or_by_dataset(values: Dict[str, Any]) -> Any:
    """One value when every dataset has the same, else the dict by dataset."""
    distinct = list(values.values())
    if distinct and all(v == distinct[0] for v in distinct):
        return distinct[0]
    return values
