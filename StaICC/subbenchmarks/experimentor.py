"""One dataset's experiment: the original's ``single_experimentor``, over an immutable run plan.

The experimentor keeps the original's mutating API but stores each setting once: the
template in its prompt writer, k, the repeat count and the rows in its
:class:`~StaICC.sampling.demonstrations.Demonstrations`.  Every run takes a frozen
:class:`~StaICC.engine.plan.RunPlan` of those settings, so a run has no hidden state: it starts
from fresh streams and leaves the writer as it found it.
"""
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..datasets import Dataset
from ..sampling.demonstrations import Demonstrations
from .accessors import OriginalAccessors
from ..errors import warn_tampering
from ..metrics import normal_metrics
from ..engine.plan import RunPlan, Work, pass_sources, plan_requests
from ..engine.preflight import check_experimentor
from ..engine.procedures import Procedure
from ..prompt import domain_query_generator, empty_query_generator, prompt_writter
from ..engine.outcome import Outcome
from ..datasets.split import triplet_dataset as TripletDataset
from ..standard import DEFAULT_K, DEFAULT_REPEAT_TIMES, DOMAIN_QUERY_LENGTH
from ..errors import InvalidTypeError, InvalidValueError

CUSTOM_ROWS = "custom demonstration sampler"


class single_experimentor(OriginalAccessors):
    """Runs one dataset: prompts, inference, metrics.

    Parameters follow the original (``triplet_dataset`` or ``original_dataset``, ``k``,
    ``metrics``, ``repeat_times``, ``dividing``, ``noisy_channel``); the keyword-only ones
    select the diagnosis variant (``pseudo_query`` "contextual" or "domain", ``procedure``,
    ``test_size``) and the benchmark name recorded in requests and records.
    """

    def __init__(self, triplet_dataset: Optional[TripletDataset] = None, original_dataset: Optional[Dataset] = None,
                 k: int = DEFAULT_K, metrics: Optional[Dict[str, Callable]] = None,
                 repeat_times: int = DEFAULT_REPEAT_TIMES, dividing: Optional[Sequence[int]] = None,
                 noisy_channel: bool = False, *, pseudo_query: Optional[str] = None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, procedure: Optional[Procedure] = None,
                 test_size: Optional[int] = None, standard_repeat_times: int = DEFAULT_REPEAT_TIMES,
                 benchmark: str = "single_experimentor") -> None:
        triplet = _split(triplet_dataset, original_dataset, dividing, test_size)
        self.demonstrations = Demonstrations(triplet, k, repeat_times)
        self.triplet_dataset, self.dataset_name, self.benchmark = triplet, triplet.name, benchmark
        self._non_standard: List[str] = []
        if repeat_times != standard_repeat_times:
            self._tamper(f"repeat_times {repeat_times} instead of {standard_repeat_times}")
        self.metrics: Dict[str, Callable] = dict(metrics) if metrics is not None else normal_metrics()
        self.procedure = procedure or Procedure()
        self.pseudo_query = pseudo_query
        self.prompt_former = prompt_writter(triplet, noisy_channel, _pseudo_query(triplet, pseudo_query,
                                                                                  domain_query_length))

    def _tamper(self, cause: str) -> None:
        warn_tampering(f"{cause} ({self.dataset_name})", stacklevel=4)
        self._non_standard.append(cause)

    # -- what the experimentor holds ------------------------------------------------------
    @property
    def k(self) -> int:
        return self.demonstrations.k

    @property
    def repeat_times(self) -> int:
        return self.demonstrations.repeat_times

    @property
    def demonstration_sampler(self):
        return self.demonstrations.current_sampler()

    @demonstration_sampler.setter
    def demonstration_sampler(self, rows) -> None:
        """The original's plain assignment: one row per query (R·T rows), the repeat count kept.

        Unlike :meth:`set_demonstration_sampler` (T rows, then R = 1) and as in the original,
        no warning is given; the run is marked non-standard all the same, and
        :meth:`reset_demonstration_sampler` brings the default rows back.
        """
        self.demonstrations.assign_rows(rows, dataset=self.dataset_name)
        self._non_standard = [c for c in self._non_standard if not c.startswith(CUSTOM_ROWS)]
        self._non_standard.append(CUSTOM_ROWS + " (assigned: one row per query)")

    def __len__(self) -> int:
        return self.demonstrations.query_count()

    def non_standard_settings(self) -> List[str]:
        """Every departure from the standard on this experimentor (empty: standard numbers).

        A k other than the standard's is one: published StaICC numbers are k = 4 (the original
        warns nothing for it, so neither does this; the results say it).
        """
        k = [] if self.k == DEFAULT_K else [f"k = {self.k} demonstrations per query (the standard's k is {DEFAULT_K})"]
        return k + self._non_standard + self.prompt_former.non_standard_settings()

    # -- demonstrations ----------------------------------------------------------------
    def set_k(self, k: int) -> None:
        """New k: the default rows with the construction-time repeat count, drawn when needed."""
        self.demonstrations.set_k(k)
        self.reset_demonstration_sampler()

    def reset_demonstration_sampler(self) -> None:
        self.demonstrations.reset()
        self._non_standard = [c for c in self._non_standard if not c.startswith(CUSTOM_ROWS)]

    def set_demonstration_sampler(self, sampler, *, allow_variable_length: bool = False,
                                  description: Optional[Dict[str, Any]] = None) -> None:
        """Use your own demonstrations: one index list per test item (then R = 1), copied and checked."""
        self.demonstrations.use_rows(sampler, allow_variable_length=allow_variable_length, dataset=self.dataset_name)
        self._tamper(CUSTOM_ROWS + (f": {in_words(description)}" if description else ""))

    def use_retriever(self, retriever) -> None:
        """Choose demonstrations with a retriever (see :mod:`StaICC.retrieval`); non-standard."""
        if not callable(getattr(retriever, "build_sampler", None)) or not callable(getattr(retriever, "describe", None)):
            raise InvalidTypeError("use_retriever expects a retriever (an object with build_sampler() and describe(), e.g. "
                                   f"StaICC.retrieval.retriever_from_name('bm25')), got {type(retriever).__name__}")
        rows = retriever.build_sampler(self.demonstration_set(), self.test_set(), self.k)
        self.set_demonstration_sampler(rows, allow_variable_length=True, description=retriever.describe())

    def set_out_of_domain_mode(self) -> None:
        """Redraw rows so that no demonstration carries the query's true label."""
        self.reset_demonstration_sampler()
        self.demonstrations.domain_resample(want_label=False)

    def set_in_domain_mode(self) -> None:
        """Redraw rows so that at least one demonstration carries the query's true label."""
        self.reset_demonstration_sampler()
        self.demonstrations.domain_resample(want_label=True)

    def limit_test_items(self, count: int) -> None:
        """Evaluate only the first ``count`` test items (a smoke run; not the standard)."""
        self.demonstrations.limit(count)
        self._tamper(f"limited to the first {count} test items")

    def select_test_items(self, items: Sequence[int], description: str) -> None:
        """Evaluate only test items ``items`` (distinct indexes, in this order), each with the rows it has in a
        full run; ``description`` says which in the departures (a subset is not the standard)."""
        self.demonstrations.select(items, dataset=self.dataset_name)
        self._tamper(description)

    def test_count(self) -> int:
        return self.demonstrations.test_count()

    # -- plan, prompts, runs -------------------------------------------------------------
    def plan(self) -> RunPlan:
        """The frozen description of what a run sends now."""
        rows = self.demonstrations.plan_rows()
        return RunPlan(self.benchmark, self.dataset_name, self.test_count(), rows, tuple(self.procedure.passes()),
                       self.demonstrations.test_items, self.demonstrations.full_run())

    def requests(self):
        plan = self.plan()
        return plan_requests(plan, pass_sources(plan, self.prompt_former))

    def ground_truth(self) -> List[int]:
        return self.demonstrations.ground_truth()

    def prompt_set(self) -> List:
        """Every prompt a run sends to the inference, in call order (all passes)."""
        return [list(r.prompt) if r.noisy_channel else r.prompt for r in self.requests()]

    def check_runnable(self) -> None:
        """Raise, in O(1) and before any inference, if this experimentor cannot run."""
        check_experimentor(self)

    def work(self, previous: Optional[List] = None) -> Work:
        """This experimentor's share of a run, checked (every check before any inference) and frozen."""
        self.check_runnable()
        plan = self.plan()
        prompts = pass_sources(plan, self.prompt_former)  # a frozen copy: the writer may change afterwards
        departures = tuple(self.non_standard_settings())
        dataset = self.triplet_dataset.original_dataset
        if not getattr(dataset, "standard", True):
            departures += tuple(getattr(dataset, "departures", None) or ["custom dataset"])
        return Work(self.benchmark, plan, prompts, self.procedure, dict(self.metrics), tuple(self.ground_truth()),
                    departures, list(previous) if previous is not None else None)

    def execute(self, model=None, preentered: Optional[Sequence] = None, *, batched: bool = False, cache=None,
                progress: Optional[bool] = None, previous: Optional[List] = None,
                prediction_kind: Optional[str] = None) -> Outcome:
        """Run the plan with a model (a function or a backend) or preentered predictions: a run of one work."""
        from ..backends.base import as_backend
        from ..engine.cache_use import opened_cache
        from ..engine.runner import run_works
        if model is None and preentered is None:
            raise InvalidValueError("You should provide either the forward_inference function or the input_prediction.")
        from ..metrics.exact_sum import check_prediction_kind
        check_prediction_kind(prediction_kind)
        backend = as_backend(model, batched=batched, prediction_kind=prediction_kind) if preentered is None else None
        work = self.work(previous)
        with opened_cache(cache) as store:
            return run_works([work], [backend], [preentered], cache=store, progress=progress,
                             distinct=store is not None, preentered_kind=prediction_kind)[0]

    def auto_run(self, forward_inference: Optional[Callable] = None, preentered_prediction: Optional[Sequence] = None,
                 batched_inference: bool = False, return_outputs: bool = False,
                 _previous_prediction: Optional[List] = None, *, progress: Optional[bool] = None, cache=None,
                 prediction_kind: Optional[str] = None):
        """Run the procedure; returns ``(results, True)`` or, with ``return_outputs``, ``(results, True, outputs)``
        (the original's label-noise, template and demonstration-sensitivity experimentors return
        ``(results, True)`` either way, and so do these).

        ``prediction_kind``: what the function's or the preentered vectors are (see
        :meth:`StaICC.subbenchmarks.generic.SubBenchmark.auto_run`); None keeps the standard's rule.
        """
        outcome = self.execute(forward_inference, preentered_prediction, batched=batched_inference, cache=cache,
                               progress=progress, previous=_previous_prediction, prediction_kind=prediction_kind)
        if return_outputs and self.procedure.name not in _NO_OUTPUTS_RETURNED:
            return outcome.summary, True, outcome.outputs
        return outcome.summary, True

    def __call__(self, forward_inference: Optional[Callable] = None, input_prediction: Optional[Sequence] = None,
                 batched_inference: bool = False, return_outputs: bool = False, *, progress: Optional[bool] = None):
        return self.auto_run(forward_inference, input_prediction, batched_inference, return_outputs, progress=progress)


#: procedures whose ``auto_run(..., return_outputs=True)`` returns two items, as the original's sensitivity
#: experimentors did
_NO_OUTPUTS_RETURNED = frozenset({"label_noise", "template_sensitivity", "demonstration_sensitivity"})


def _split(triplet, original_dataset, dividing, test_size) -> TripletDataset:
    """The triplet of ``original_dataset`` (sizes from ``dividing``, else the dataset's own, with ``test_size``)."""
    if triplet is None and original_dataset is None:
        raise InvalidValueError("You should provide at least one dataset.")
    if triplet is not None and original_dataset is not None:
        raise InvalidValueError("You should provide only one dataset.")
    if triplet is not None:
        return triplet
    sizes = list(dividing) if dividing is not None else [None, None, None]
    if len(sizes) != 3:
        raise InvalidValueError(f"dividing must give 3 sizes (calibration, demonstration, test), got {dividing!r}")
    if test_size is not None and dividing is None:
        sizes[2] = test_size
    return TripletDataset(original_dataset, *sizes, expected_test_number=test_size)


def _pseudo_query(triplet: TripletDataset, kind: Optional[str], length: int):
    """The pseudo-query generator of a bias diagnosis: empty queries (contextual) or random in-domain words."""
    if kind is None:
        return None
    if kind == "contextual":
        return empty_query_generator(triplet.calibration)
    if kind == "domain":
        return domain_query_generator(triplet.demonstration, length)
    raise InvalidValueError(f"pseudo_query must be None, 'contextual' or 'domain', got {kind!r}")


def in_words(description: Any) -> str:
    """A sampler's description as a departure line: ``the BM25 retriever (k1=1.5, b=0.75, dedup=true)``,
    not a Python dict (a retriever's ``describe()`` gives ``{"retriever": ..., "parameters": {...}}``)."""
    if not isinstance(description, dict):
        return str(description)
    description = dict(description)
    name = description.pop("retriever", None)
    parameters = description.pop("parameters", None)
    fields = dict(parameters) if isinstance(parameters, dict) else ({} if parameters is None else {"parameters": parameters})
    fields.update(description)
    shown = ", ".join(f"{key}={_plain(value)}" for key, value in fields.items())
    if name is None:
        return shown
    name = str(name)[:-len("Retriever")] if str(name).endswith("Retriever") and str(name) != "Retriever" else name
    return f"the {name} retriever" + (f" ({shown})" if shown else "")


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={_plain(v)}" for key, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    return str(value)
