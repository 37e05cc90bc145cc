"""One dataset's experiment (spec §4, §6, §8): the original's ``single_experimentor``.

An experimentor owns a triplet split, a prompt writer and a demonstration sampler.
What it runs is a :class:`Procedure`: a list of *passes* over the R·T queries, each
pass configuring the writer first (label-noise rate for GLER, template for
Template_sens), and a summary of the pass results.  Normal, the bias diagnoses,
GLER, Template_sens and Demo_sens are all this one class with different parameters.

Runs have no hidden state: each starts from fresh label-noise and pseudo-query
streams and leaves the writer as it found it, so a second call (or a call after
``prompt_set()``/``example()``) gives the numbers of a freshly built experimentor.
"""
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .datasets import Dataset
from .errors import InferenceError, warn_tampering, where
from .inference import check_preentered, expand, predicted_labels, run_inference
from .metrics import PredictionRows, linear_regression, normal_metrics
from .prompt import domain_query_generator, empty_query_generator, prompt_writter
from .sampling import demonstration_sampler, fixed_sampler, validate_sampler
from .split import triplet_dataset as TripletDataset
from .standard import (DEFAULT_K, DEFAULT_REPEAT_TIMES, DOMAIN_QUERY_LENGTH, GLER_INTERPOLATIONS,
                       ORTHOGONAL_TABLE, TEMPLATE_KEYS)

Configure = Callable[[prompt_writter], None]


# ----------------------------------------------------------------------------
# procedures: what one run does
# ----------------------------------------------------------------------------
class Pass:
    """One sweep over all queries, after ``configure(writer)``.

    ``carry`` passes the predictions of the earlier passes of the same run to the
    metrics (Template_sens computes consistency across its 9 templates).
    """

    def __init__(self, configure: Optional[Configure] = None, carry: bool = False) -> None:
        self.configure = configure
        self.carry = carry


class Procedure:
    """A single pass whose metric dict is the result (Normal, the bias diagnoses)."""

    name = "normal"
    returns_outputs = True

    def passes(self) -> List[Pass]:
        return [Pass()]

    def summarize(self, pass_results: List[Dict[str, Any]]) -> Dict[str, Any]:
        return pass_results[0]

    def describe(self) -> Dict[str, Any]:
        return {"procedure": self.name}


class SensitivityProcedure(Procedure):
    """Demo_sens: one pass, reported as ``{"sensitivity": result}``."""

    name = "demonstration_sensitivity"

    def summarize(self, pass_results):
        return {"sensitivity": pass_results[-1]}


class LabelNoiseProcedure(Procedure):
    """GLER (spec §8.7): passes at label-noise rates 0 .. 1, then a regression per metric.

    ``abscissae="standard"`` uses the standard's cumulative x-values
    [1, 0.75, 0.25, -0.5, -1.5] (at n = 5); ``"correctness"`` uses the label-correctness
    fractions 1 - rate, which is what the published definition means (non-standard).
    """

    name = "label_noise"

    def __init__(self, interpolations: int = GLER_INTERPOLATIONS, abscissae: str = "standard") -> None:
        if not isinstance(interpolations, int) or isinstance(interpolations, bool) or interpolations < 2:
            raise ValueError(f"The sensitivity test should be larger than 1: interpolations = {interpolations!r}")
        if abscissae not in ("standard", "correctness"):
            raise ValueError(f"abscissae must be 'standard' or 'correctness', got {abscissae!r}")
        self.interpolations = interpolations
        self.abscissae = abscissae

    def rates(self) -> List[float]:
        rates = [0]
        for _ in range(1, self.interpolations):
            rates.append(rates[-1] + 1 / (self.interpolations - 1))
        return rates

    def x_values(self) -> List[float]:
        if self.abscissae == "correctness":
            return [1 - r for r in self.rates()]
        xs = [1]
        for i in range(1, self.interpolations):
            xs.append(xs[-1] - i / (self.interpolations - 1))
        return xs

    def passes(self):
        return [Pass(_set_rate(rate)) for rate in self.rates()]

    def summarize(self, pass_results):
        result: Dict[str, Any] = {str(i): r for i, r in enumerate(pass_results)}
        xs = self.x_values()
        result["sensitivity"] = {metric: linear_regression(xs, [r[metric] for r in pass_results])
                                 for metric in pass_results[0]}
        return result

    def describe(self):
        return {"procedure": self.name, "interpolations": self.interpolations, "abscissae": self.abscissae}


def _set_rate(rate: float) -> Configure:
    def configure(writer: prompt_writter) -> None:
        writer._set_label_wrong_rate(rate)
    return configure


class TemplateProcedure(Procedure):
    """Template_sens (spec §8.8): one pass per row of the L9 table, consistency over all."""

    name = "template_sensitivity"

    def __init__(self, alternate_template: Dict[str, list], table: Sequence[Sequence[int]] = ORTHOGONAL_TABLE) -> None:
        if not alternate_template:
            raise ValueError("Template_sens needs the dataset's alternate templates")
        self.templates = [{key: alternate_template[key][row[c]] for c, key in enumerate(TEMPLATE_KEYS)}
                          for row in table]

    def passes(self):
        return [Pass(_apply_template(t), carry=True) for t in self.templates]

    def summarize(self, pass_results):
        return {"sensitivity": pass_results[-1]}


def _apply_template(template: Dict[str, Any]) -> Configure:
    def configure(writer: prompt_writter) -> None:
        writer.apply_template(template)
    return configure


# ----------------------------------------------------------------------------
# the experimentor
# ----------------------------------------------------------------------------
class single_experimentor:
    """Runs one dataset: prompts, inference, metrics.

    Parameters follow the original (``triplet_dataset`` or ``original_dataset``, ``k``,
    ``metrics``, ``repeat_times``, ``dividing``, ``noisy_channel``); the keyword-only
    ones select the diagnosis variant: ``pseudo_query`` ("contextual" or "domain"),
    ``procedure`` (a :class:`Procedure`) and ``test_size``.
    """

    def __init__(self, triplet_dataset: Optional[TripletDataset] = None, original_dataset: Optional[Dataset] = None,
                 k: int = DEFAULT_K, metrics: Optional[Dict[str, Callable]] = None,
                 repeat_times: int = DEFAULT_REPEAT_TIMES, dividing: Optional[Sequence[int]] = None,
                 noisy_channel: bool = False, *, pseudo_query: Optional[str] = None,
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, procedure: Optional[Procedure] = None,
                 test_size: Optional[int] = None, standard_repeat_times: int = DEFAULT_REPEAT_TIMES) -> None:
        if triplet_dataset is None and original_dataset is None:
            raise ValueError("You should provide at least one dataset.")
        if triplet_dataset is not None and original_dataset is not None:
            raise ValueError("You should provide only one dataset.")
        _check_k(k)
        if not isinstance(repeat_times, int) or isinstance(repeat_times, bool) or repeat_times < 1:
            raise ValueError(f"repeat_times must be a positive int, got {repeat_times!r}")
        if triplet_dataset is None:
            sizes = list(dividing) if dividing is not None else [None, None, None]
            if len(sizes) != 3:
                raise ValueError(f"dividing must give 3 sizes (calibration, demonstration, test), got {dividing!r}")
            if test_size is not None and dividing is None:
                sizes[2] = test_size
            triplet_dataset = TripletDataset(original_dataset, *sizes, expected_test_number=test_size)
        self.triplet_dataset = triplet_dataset
        self.dataset_name = triplet_dataset.name
        self._non_standard: List[str] = []
        if repeat_times != standard_repeat_times:
            self._tamper(f"repeat_times {repeat_times} instead of {standard_repeat_times}")
        self.k = k
        self.repeat_times = repeat_times
        self._default_repeat_times = repeat_times
        self.metrics: Dict[str, Callable] = dict(metrics) if metrics is not None else normal_metrics()
        self.procedure = procedure or Procedure()
        self.pseudo_query = pseudo_query
        self.prompt_former = prompt_writter(triplet_dataset, noisy_channel, self._make_pseudo_query(pseudo_query, domain_query_length))
        self.demonstration_sampler = demonstration_sampler(k, len(triplet_dataset.demonstration), repeat_times * len(triplet_dataset.test))
        self._stored_predictions: List[list] = []

    # -- construction helpers ---------------------------------------------------
    def _make_pseudo_query(self, kind: Optional[str], length: int):
        if kind is None:
            return None
        if kind == "contextual":
            return empty_query_generator(self.triplet_dataset.calibration)
        if kind == "domain":
            return domain_query_generator(self.triplet_dataset.demonstration, length)
        raise ValueError(f"pseudo_query must be None, 'contextual' or 'domain', got {kind!r}")

    def _tamper(self, cause: str) -> None:
        warn_tampering(f"{cause} ({self.dataset_name})", stacklevel=4)
        self._non_standard.append(cause)

    # -- accessors (original names) ---------------------------------------------
    def demonstration_set(self) -> Dataset:
        return self.triplet_dataset.demonstration

    def test_set(self) -> Dataset:
        return self.triplet_dataset.test

    def calibration_set(self) -> Dataset:
        return self.triplet_dataset.calibration

    def get_label_space(self) -> List[str]:
        return self.prompt_former.get_label_space()

    def get_k(self) -> int:
        return self.k

    def get_repeat_times(self) -> int:
        return self.repeat_times

    def __len__(self) -> int:
        return len(self.triplet_dataset.test) * self.repeat_times

    def non_standard_settings(self) -> List[str]:
        """Every departure from the standard on this experimentor (empty: standard numbers)."""
        return self._non_standard + self.prompt_former.non_standard_settings()

    def add_metric(self, name: str, metric: Callable) -> None:
        if not isinstance(name, str) or not callable(metric):
            raise TypeError("add_metric expects a name (str) and a callable metric(ground_truth, prediction)")
        self.metrics[name] = metric

    # -- demonstrations ---------------------------------------------------------
    def set_k(self, k: int) -> None:
        """New k: reset, then a fresh default sampler with the construction-time repeat count."""
        _check_k(k)
        self.reset_demonstration_sampler()
        self.k = k
        self.demonstration_sampler = demonstration_sampler(k, len(self.triplet_dataset.demonstration), len(self))

    def reset_demonstration_sampler(self) -> None:
        self.repeat_times = self._default_repeat_times
        sampler = self.demonstration_sampler
        if isinstance(sampler, demonstration_sampler) and sampler.k == self.k:
            sampler.reset()
        else:
            self.demonstration_sampler = demonstration_sampler(self.k, len(self.triplet_dataset.demonstration), len(self))
        self._non_standard = [c for c in self._non_standard if not c.startswith("custom demonstration sampler")]

    def set_demonstration_sampler(self, sampler, *, allow_variable_length: bool = False,
                                  description: Optional[Dict[str, Any]] = None) -> None:
        """Use your own demonstrations: one index list per test item (then R = 1).

        The sampler is copied and checked: one row per test item, every row of length k
        (unless ``allow_variable_length``), every index inside the demonstration set.
        """
        test_count = len(self.triplet_dataset.test)
        demo_count = len(self.triplet_dataset.demonstration)
        rows = validate_sampler(sampler, self.k if not allow_variable_length else None, test_count,
                                demo_count, self.dataset_name)
        self._tamper("custom demonstration sampler" + (f" {description}" if description else ""))
        self.demonstration_sampler = fixed_sampler(rows)
        self.repeat_times = 1

    def use_retriever(self, retriever) -> None:
        """Choose demonstrations with a retriever (see :mod:`StaICC.retrieval`); non-standard."""
        rows = retriever.build_sampler(self.demonstration_set(), self.test_set(), self.k)
        self.set_demonstration_sampler(rows, allow_variable_length=True, description=retriever.describe())

    def _domain_resample(self, want_label: bool) -> None:
        self.reset_demonstration_sampler()
        demo = self.triplet_dataset.demonstration
        test = self.triplet_dataset.test
        demo_labels = demo.label_indexes()
        test_labels = test.label_indexes()
        T = len(test)
        k, D = self.k, len(demo)

        def keep(i: int, row: List[int]) -> bool:
            has = any(demo_labels[v] == test_labels[i % T] for v in row)
            return has if want_label else not has

        def feasible(i: int) -> bool:
            matching = sum(1 for label in demo_labels if label == test_labels[i % T])
            if want_label:
                return k > 0 and matching > 0
            others = D - matching
            return others >= (1 if k > D else k)

        self.demonstration_sampler.resample(keep, feasible)

    def set_out_of_domain_mode(self) -> None:
        """Resample so that no demonstration carries the query's true label (spec §4.5)."""
        self._domain_resample(want_label=False)

    def set_in_domain_mode(self) -> None:
        """Resample so that at least one demonstration carries the query's true label."""
        self._domain_resample(want_label=True)

    # -- prompts ------------------------------------------------------------------
    def _query_plan(self) -> List[Tuple[List[int], int]]:
        """(demonstration indexes, test index) per query, repeat-major (spec §4.2)."""
        T = len(self.triplet_dataset.test)
        sampler = self.demonstration_sampler
        return [(sampler[j + r * T], j) for r in range(self.repeat_times) for j in range(T)]

    def _prompts(self, plan) -> Iterator:
        writer = self.prompt_former
        for demos, query in plan:
            yield writer.write_prompt(demos, query)

    def ground_truth(self) -> List[int]:
        labels = self.triplet_dataset.test.label_indexes()
        return labels * self.repeat_times

    def prompt_set(self) -> List:
        """Every prompt a run sends to the inference, in call order (all passes)."""
        writer = self.prompt_former
        state = writer.snapshot()
        writer.restart_streams()
        plan = self._query_plan()
        prompts: List = []
        try:
            for p in self.procedure.passes():
                if p.configure is not None:
                    p.configure(writer)
                prompts.extend(self._prompts(plan))
        finally:
            writer.restore(state)
            writer.restart_streams()
        return prompts

    def example(self, k: int = 8):
        return self.prompt_former.example(k)

    # -- running ------------------------------------------------------------------
    def check_runnable(self) -> None:
        """Raise before any inference if this experimentor cannot run (k larger than D)."""
        D = len(self.triplet_dataset.demonstration)
        if isinstance(self.demonstration_sampler, demonstration_sampler) and self.k > D:
            raise ValueError(f"k = {self.k} is larger than the demonstration set ({D} rows){where(self.dataset_name)}: "
                             "use k <= D (the original returned all-zero results here)")

    def auto_run(self, forward_inference: Optional[Callable] = None, preentered_prediction: Optional[Sequence] = None,
                 batched_inference: bool = False, return_outputs: bool = False,
                 _previous_prediction: Optional[List] = None, *, progress: Optional[bool] = None):
        """Run the procedure; returns ``(results, True)`` or ``(results, True, outputs)``.

        Give ``forward_inference`` (called as ``f(prompt=..., label_space=...)``, or once
        on all prompts of a pass with ``batched_inference=True``) or
        ``preentered_prediction`` (one prediction per prompt of ``prompt_set()``).
        """
        if forward_inference is None and preentered_prediction is None:
            raise ValueError("You should provide either the forward_inference function or the input_prediction.")
        self.check_runnable()
        writer = self.prompt_former
        state = writer.snapshot()
        writer.restart_streams()
        plan = self._query_plan()
        passes = self.procedure.passes()
        per_pass = len(plan)
        label_space = writer.get_label_space()
        if preentered_prediction is not None:
            given = check_preentered(preentered_prediction, per_pass * len(passes), label_space, self.dataset_name)
        truth = self.ground_truth()
        previous = list(_previous_prediction) if _previous_prediction is not None else []
        stored = previous
        results, outputs_pred, outputs_rows = [], [], []
        try:
            for number, p in enumerate(passes):
                if p.configure is not None:
                    p.configure(writer)
                offset = number * per_pass
                if preentered_prediction is not None:
                    raw = given[offset:offset + per_pass]
                else:
                    try:
                        raw = run_inference(forward_inference, self._prompts(plan), per_pass, label_space,
                                            batched_inference, self.dataset_name, progress, offset)
                    except InferenceError as exc:
                        exc.partial_predictions = outputs_pred + exc.partial_predictions
                        raise
                rows = expand(raw, len(label_space), self.dataset_name)
                stored = PredictionRows((stored if p.carry else previous) + rows)
                results.append(self._compute_metrics(truth, stored))
                outputs_pred.extend(raw)
                outputs_rows.extend(rows)
        finally:
            writer.restore(state)
            writer.restart_streams()  # also frees the domain generator's word cache
        self._stored_predictions = stored
        summary = self.procedure.summarize(results)
        if not return_outputs:
            return summary, True
        outputs = {"groundtruth": truth * len(passes), "predicted": predicted_labels(outputs_pred),
                   "prob.": outputs_rows}
        return summary, True, outputs

    def _compute_metrics(self, truth: List[int], stored: List[list]) -> Dict[str, Any]:
        results = {}
        for name, metric in self.metrics.items():
            try:
                results[name] = metric(truth, stored)
            except (ValueError, ZeroDivisionError, IndexError, TypeError) as exc:
                raise ValueError(f"metric {name!r} failed{where(self.dataset_name)} on {len(stored)} predictions: "
                                 f"{exc}") from exc
        return results

    def __call__(self, forward_inference: Optional[Callable] = None, input_prediction: Optional[Sequence] = None,
                 batched_inference: bool = False, return_outputs: bool = False, *, progress: Optional[bool] = None):
        return self.auto_run(forward_inference, input_prediction, batched_inference, return_outputs, progress=progress)

    def __repr__(self) -> str:
        return (f"single_experimentor({self.dataset_name!r}, k={self.k}, queries={len(self)}, "
                f"procedure={self.procedure.name!r})")


def _check_k(k: Any) -> None:
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k should be a positive integer: got k = {k} (0 means zero-shot)")
