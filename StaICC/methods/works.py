"""A method's share of a run: a work the one runner asks and summarises like a sub-benchmark's.

A :class:`MethodWork` wraps one sub-benchmark work (one dataset) and one calibration
method.  Its requests are, in order: the method's training prompts for each template the
work writes (one fit per template: Template_sens writes nine, the others one; GLER's
label-noise passes share theirs, since training prompts carry no label noise), then the
work's own requests once per kind the method's ``apply`` reads (``"labels"``: the very
requests of the plain run, which the runner's dedup answers once for both; a
representation: the same prompts asking for it).  Its ``summarize`` fits the method on the
training answers, applies it to each pass's answers and hands the resulting rows to the
sub-benchmark's own :func:`~StaICC.engine.outcome.summarize`, as if a calibrated inference
had answered: the metrics, procedure, records and prompt digest are the sub-benchmark's.
"""
import math
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError, error_name
from ..tasks.files import USER_CODE_ERRORS
from ..engine.outcome import STANDARD_RULE, Outcome, RowRule, summarize
from ..engine.plan import Work
from ..engine.scoring import check_output
from ..numeric import PredictionRows
from ..prompt.template import dataline_writer
from ..requests import KIND_NAMES, LABELS, Answer, Request, answers_with, label_answer, requests_asking
from .protocol import PREMISE_FREE, Method, MethodData, training_items

Training = Tuple[MethodData, Tuple[Tuple[str, str], ...]]


@dataclass(frozen=True)
class MethodPlan:
    """How a method work's requests split into the runner's passes (its calibration prompts, then the
    sub-benchmark's passes once per kind): ``bounds[i]`` .. ``bounds[i + 1]`` is pass ``i``."""

    benchmark: str
    dataset: str
    bounds: Tuple[int, ...]
    descriptions: Tuple[str, ...]

    @property
    def passes(self) -> Tuple[str, ...]:
        return self.descriptions

    @property
    def total(self) -> int:
        return self.bounds[-1]

    def pass_slice(self, number: int) -> slice:
        return slice(self.bounds[number], self.bounds[number + 1])

    def pass_description(self, number: int) -> str:
        return self.descriptions[number]


@dataclass(frozen=True, eq=False)
class _MethodShare:
    """What a method's share of a run names the same way, whatever it asks: its dataset, its part and its batches."""

    method: Method
    work: Work = field(repr=False)

    @property
    def dataset(self) -> str:
        return self.work.dataset

    @property
    def part(self) -> str:
        return f"{self.method.name}:{self.work.part}"

    @property
    def batch_group(self) -> str:
        """The method's new prompts are asked in batches of their own (see :func:`~StaICC.engine.batches.distinct_requests`)."""
        return self.method.name


@dataclass(frozen=True, eq=False)
class MethodWork(_MethodShare):
    """One method on one sub-benchmark work (see the module docstring); every field fixed when planned."""

    training: Tuple[Training, ...] = field(repr=False)
    pass_fits: Tuple[int, ...]  # the training (fit) each pass of the work applies
    plan: MethodPlan
    premise_free: Optional[Work] = field(default=None, repr=False)  # the work with each query's input emptied
    crossfitted: bool = False  # each pass calibrated by method.crossfit on its own scores and labels, no training

    @property
    def answer_keys(self) -> Tuple[str, ...]:
        """What ``apply`` reads, in the order the requests ask it: the test kinds, then the premise-free prompts."""
        return tuple(self.method.test_kinds) + ((PREMISE_FREE,) if self.premise_free is not None else ())

    def requests(self, rendered: Optional[Dict[Any, Any]] = None, *, segments: bool = False,
                 only: Optional[Sequence[Sequence[int]]] = None) -> List[Request]:
        """The training requests, then the work's requests once per test kind (``rendered``: shared with the
        dataset's other works, so the plain run's prompts are the same strings)."""
        if only is not None:
            raise InvalidValueError(f"method {self.method.name!r}: a method run is not split into shards; run it in one "
                                    "process (the cache still resumes it)")
        out: List[Request] = []
        for number, (data, items) in enumerate(self.training):
            out += [Request(prompt, data.label_space, f"{self.method.name} calibration", self.dataset, i, number,
                            None, kind) for i, (prompt, kind) in enumerate(items)]
        base = self.work.requests(rendered, segments=segments)
        for kind in self.method.test_kinds:
            out += requests_asking(base, kind)
        if self.premise_free is not None:
            out += self.premise_free.requests(rendered, segments=segments)
        return out

    def summarize(self, requests: Sequence[Request], answers: Sequence[Answer], rule: RowRule = STANDARD_RULE) -> Outcome:
        """Fit on the training answers, apply to every pass, then the sub-benchmark's own summary (the rows
        meeting the exact-sum rule as the backend's own rows do: a model's calibrated probabilities are
        floating-point probabilities too)."""
        fits = [None if self.crossfitted else
                self._fit(number, [a.prediction for a in answers[self.plan.pass_slice(number)]])
                for number in range(len(self.training))]
        first, passes = len(self.training), len(self.work.plan.passes)
        applied: List[Tuple[Sequence[Answer], Optional[Sequence[Any]]]] = []
        for p in range(passes):
            by_kind = {kind: [a.prediction for a in answers[self.plan.pass_slice(first + n * passes + p)]]
                       for n, kind in enumerate(self.answer_keys)}
            kept = answers[self.plan.pass_slice(first + p)]  # the first kind's: text and parsed flags
            applied.append(self._applied(self._pass_rows(p, fits, by_kind), kept, requests[self.plan.bounds[first + p]],
                                         p))
        tested = requests[self.plan.bounds[first]:self.plan.bounds[first + passes]]
        if all(rows is not None for _answers, rows in applied):  # the model's answers kept, the rows beside them
            return summarize(self.work, tested, [a for kept, _rows in applied for a in kept], rule,
                             [rows for _kept, rows in applied])
        return summarize(self.work, tested, [a for built, rows in applied
                                             for a in (built if rows is None else answers_with(rows, built))], rule)

    def _fit(self, number: int, answers: List[Any]) -> Any:
        data = self.training[number][0]
        try:
            return self.method.train(data, answers)  # type: ignore[misc]
        except USER_CODE_ERRORS as exc:  # the user's code, an exit too
            raise InvalidValueError(f"method {self.method.name!r}: train() raised {error_name(exc)}: {exc} "
                                    f"(dataset {self.dataset!r}, {self.work.part})") from exc

    def _pass_rows(self, number: int, fits: List[Any], by_kind: Dict[str, List[Any]]) -> Callable[[], Sequence[Any]]:
        """What computes pass ``number``'s rows: the cross-fit on its scores and its queries' true labels, or
        ``apply`` with the fit of its template."""
        fit = self.pass_fits[number]
        if self.crossfitted:
            labels = list(self.work.truth[:len(by_kind[LABELS])])
            return lambda: self.method.crossfit(self.training[fit][0], by_kind[LABELS], labels)  # type: ignore[misc]
        return lambda: self.method.apply(fits[fit], by_kind)  # type: ignore[misc]

    def _applied(self, compute: Callable[[], Sequence[Any]], kept: Sequence[Answer], first: Request,
                 number: int) -> Tuple[Sequence[Answer], Optional[Sequence[Any]]]:
        """One pass's answers as the method turns them into label scores (``compute()``: apply, or the
        cross-fit), checked as the inference contract: ``(answers, None)``, or where the rows are float rows
        that calibrate the model's label scores, ``(the model's answers, the rows)`` (no answer built per row)."""
        where = f"(dataset {self.dataset!r}, {self.work.plan.pass_description(number)})"
        try:
            rows = compute()
            rows = rows if type(rows) is PredictionRows else list(rows)
        except USER_CODE_ERRORS as exc:  # the user's code, an exit too
            raise InvalidValueError(f"method {self.method.name!r}: apply() raised {error_name(exc)}: {exc} "
                                    f"{where}") from exc
        if len(rows) != len(kept):
            raise InvalidValueError(f"method {self.method.name!r}: apply() returned {len(rows)} rows for {len(kept)} "
                                    f"queries {where}; return one row per query")
        labels, carries = len(first.label_space), self.method.test_kinds[0] == LABELS
        if _float_rows(rows, labels):  # the common case checked at once: what check_output keeps as it is
            return (kept, rows) if carries else (answers_with(rows), None)
        out = []
        for q, (row, answer) in enumerate(zip(rows, kept)):
            try:
                row = check_output(row, labels, self.dataset, first.query_index + q)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"method {self.method.name!r}: apply() {exc}") from None
            if not carries:
                out.append(label_answer(row) if type(row) is int else Answer(row))
            else:
                out.append(Answer(row, answer.text, answer.parsed, answer.thinking))
        return out, None


def _float_rows(rows: Sequence[Any], labels: int) -> bool:
    """Whether every row is a list of ``labels`` finite floats (rows that :func:`check_output` returns unchanged),
    tested over the whole pass at once (a calibration's rows: ``tolist()`` of a float array, which rows made by
    :meth:`~StaICC.numeric.PredictionRows.of_array` keep: only its shape is read)."""
    floats = getattr(rows, "floats", None)
    if floats is not None:
        return floats.shape == (len(rows), labels)
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {labels}:  # at C speed: no row by row loop
        return False
    values = list(chain.from_iterable(rows))
    return set(map(type, values)) <= {float} and all(map(math.isfinite, values))


@dataclass(frozen=True, eq=False)
class PromptModeWork(_MethodShare):
    """A sub-benchmark work written in a method's prompt mode (noisy_channel): asked in batches of the method's
    own, summarised as the sub-benchmark's."""

    @property
    def plan(self) -> Any:
        return self.work.plan

    def requests(self, rendered: Optional[Dict[Any, Any]] = None, *, segments: bool = False,
                 only: Optional[Sequence[Sequence[int]]] = None) -> List[Request]:
        return self.work.requests(rendered, segments=segments, only=only)

    def summarize(self, requests: Sequence[Request], answers: Sequence[Answer], rule: RowRule = STANDARD_RULE) -> Outcome:
        return summarize(self.work, requests, answers, rule)


def prompt_mode_work(method: Method, work: Work) -> PromptModeWork:
    """``work`` (planned in ``method``'s prompt mode) as that method's, its departures naming the method."""
    return PromptModeWork(method, replace(work, departures=tuple(work.departures) + (f"method {method.name}",)))


def method_work(method: Method, work: Work, k: int) -> MethodWork:
    """``method`` over ``work`` (``k``: the experimentor's demonstrations per prompt), its training prompts
    written now; a work written in noisy-channel mode is refused (one prompt per label has no one answer)."""
    source = work.prompts
    if any(template.noisy_channel for template in source.templates):
        raise InvalidValueError(f"method {method.name!r} calibrates direct prompts; {work.part} on {work.dataset} is "
                                "written in noisy-channel mode (noisy_channel is a method of its own: list it beside)")
    keys: List[Any] = []
    pass_fits = []
    for template in source.templates:
        key = replace(template, label_wrong_rate=0) if template.label_wrong_rate else template
        if key not in keys:
            keys.append(key)
        pass_fits.append(keys.index(key))
    # cross-fitting reads the true labels of the work's queries: test items (not pseudo queries), one per query
    crossfitted = (method.crossfit is not None and source.pseudo_queries is None
                   and len(work.truth) >= work.plan.queries_per_pass)
    training: List[Training] = []
    for key in keys:
        data = MethodData(work.dataset, work.part, tuple(key.label_space), source.triplet.calibration, k,
                          dataline_writer(key, source.triplet), source.triplet.demonstration,
                          tuple(work.plan.demonstrations))
        training.append((data, () if crossfitted else tuple(training_items(method, data))))
    companion = premise_free_work(work) if method.premise_free else None
    plan = _plan(method, work, training, companion is not None)
    departed = replace(work, departures=tuple(work.departures) + (f"method {method.name}",))
    return MethodWork(method, departed, tuple(training), tuple(pass_fits), plan, companion, crossfitted)


def premise_free_work(work: Work) -> Work:
    """``work`` with every query's input texts empty: the pseudo-query machinery of Contextual_bias (an empty
    query per test query), so each prompt keeps its demonstrations, template and label noise."""
    from ..prompt import empty_query_generator
    source = work.prompts
    return replace(work, prompts=replace(source, pseudo_queries=empty_query_generator(source.triplet.calibration)))


def _plan(method: Method, work: Work, training: List[Training], premise_free: bool = False) -> MethodPlan:
    bounds, descriptions = [0], []
    templates = len(training)
    for number, (_data, items) in enumerate(training):
        bounds.append(bounds[-1] + len(items))
        which = f" (template {number + 1}/{templates})" if templates > 1 else ""
        descriptions.append(f"{method.name} {work.dataset}: {len(items)} calibration prompts{which}")
    per_pass = work.plan.queries_per_pass
    for kind in tuple(method.test_kinds) + ((PREMISE_FREE,) if premise_free else ()):
        for p in range(len(work.plan.passes)):
            bounds.append(bounds[-1] + per_pass)
            what = "premise-free prompts" if kind == PREMISE_FREE else KIND_NAMES[kind]
            descriptions.append(f"{method.name} {work.plan.pass_description(p)} ({what})")
    return MethodPlan(work.plan.benchmark, work.dataset, tuple(bounds), tuple(descriptions))
