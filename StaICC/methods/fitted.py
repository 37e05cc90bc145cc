"""The built-in methods fitted on label probabilities (calibration queries' or the test pass's), and PMI.

Each is a :class:`~StaICC.methods.calibration.labelled.labelled_calibration`: ``requests`` is
its ``training_queries`` (k demonstrations and one query row of the calibration set per
prompt, the prompts hidden calibration and kNN write, asked for label scores: every method
here shares them, so a run of several asks them once), ``train`` is ``fit`` on their answers
and the queries' labels, ``apply`` is ``transform_rows`` over a pass of vanilla's answers.
So a method run computes what ``calibration.train(exp.prompt_former.write_prompt_from_dataline,
scorer, exp.calibration_set(), calibration_number, k)`` and a run with the calibrated inference
compute, from the same prompts and the same answers.

UCPA, SUCPA, LinC, per-class affine, temperature and Platt need no inference of their own: with
``calibration="crossfit"`` (the default) each is fitted on the test pass itself
(:func:`~StaICC.methods.calibration.labelled.crossfit_rows`: the supervised ones cross-fitted over
``folds`` interleaved folds, each fold calibrated by a fit on the others' scores and true labels;
UCPA, which reads no label, on the whole pass), as the papers fit them on held-out labelled (or
unlabelled) data of the task; ``calibration="prompts"`` fits them on calibration prompts as the
others.  A work whose queries are pseudo queries (the bias diagnoses) has no labels to cross-fit:
there they are fitted on calibration prompts.  PMI trains nothing: it asks each test prompt's
premise-free twin (``Method.premise_free``) and divides by its answer.
"""
from dataclasses import replace
from typing import Any, Callable, Dict, List, Tuple

from ..errors import InvalidValueError
from ..numeric import PredictionRows
from ..requests import ANCHORS, LABELS
from ..validation import check, check_int, Options
from .calibration import DEFAULT_BATCH_SIZE, DEFAULT_CALIBRATION_NUMBER
from .calibration.anchors import anchor_reweighting
from .calibration.bcl import batch_calibration_learnt
from .calibration.generative import generative_calibration
from .calibration.labelled import crossfit_values
from .calibration.linc import linc_calibration
from .calibration.platt import platt_scaling
from .calibration.prior_adaptation import DEFAULT_ITERATIONS, prior_adaptation
from .calibration.prototypical import prototypical_calibration
from .calibration.supervised import supervised_calibration
from .calibration.temperature import temperature_scaling
from .calibration.pmi import pmi_rows
from .protocol import PREMISE_FREE, Method, MethodData


def _steps(cls: type, number: int, **options: Any) -> Tuple[Callable, Callable, Callable]:
    """requests / train / apply of a calibration fitted on the calibration queries' label probabilities."""
    def requests(data: MethodData) -> List[Any]:
        prompts, _labels = cls(data.label_space, **options).training_queries(
            data.write_prompt, data.calibration_set, number, data.k)
        return prompts

    def train(data: MethodData, answers: List[Any]) -> Any:
        calibration = cls(data.label_space, **options)
        _prompts, labels = calibration.training_queries(None, data.calibration_set, number, data.k)
        calibration.fit(answers, labels)
        return calibration

    def apply(calibration: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        values = calibration.transform_values(answers[LABELS])  # the rows, their array kept for the summary
        return [] if values is None else PredictionRows.of_array(values)
    return requests, train, apply


def _method(name: str, description: str, cls: type, calibration_number: int, **options: Any) -> Method:
    check_int(calibration_number, "calibration_number", minimum=1, at=f" in the {name} method")
    try:
        cls(["a", "b"], **options)  # the options checked now, before any inference
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"method {name!r}: {exc}") from None
    requests, train, apply = _steps(cls, calibration_number, **options)
    return Method(name, description, requests=requests, train=train, apply=apply, test_kinds=(LABELS,),
                  parameters=tuple(sorted(dict(options, calibration_number=calibration_number).items())))


#: how a calibration that needs no inference of its own is fitted: on the test pass itself (cross-fitted, or
#: for UCPA transductive), or on calibration prompts asked for the purpose
CALIBRATION_MODES = ("crossfit", "prompts")
DEFAULT_FOLDS = 5


def _fitted_on_pass(name: str, description: str, cls: type, calibration_number: int, calibration: str,
                    folds: int, **options: Any) -> Method:
    """``_method``, cross-fitted on each pass's own scores and labels where ``calibration="crossfit"``."""
    check(calibration, Options(CALIBRATION_MODES, text=f"one of {', '.join(CALIBRATION_MODES)}"),
          f"method {name!r}: calibration")
    folds = check_int(folds, "folds", minimum=2, maximum=1_000_000, at=f" in the {name} method")
    method = _method(name, description, cls, calibration_number, **options)
    method = replace(method, parameters=tuple(sorted(dict(method.parameters, calibration=calibration,
                                                          folds=folds).items())))
    if calibration == "prompts":
        return method
    transductive = cls is prior_adaptation and not options.get("supervised")

    def crossfit(data: MethodData, rows: List[Any], labels: List[int]) -> List[Any]:
        values = crossfit_values(lambda: cls(data.label_space, **options), rows, labels, folds, transductive)
        return [list(row) for row in rows] if values is None else PredictionRows.of_array(values)  # as crossfit_rows
    return replace(method, crossfit=crossfit)


def prototypical(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, em_iterations: int = 100,
                 reg_covar: float = 1e-6) -> Method:
    return _method("prototypical", "prototypical calibration (Han et al. 2023): a Gaussian mixture over "
                   "label-probability vectors, clusters matched to labels", prototypical_calibration,
                   calibration_number, em_iterations=em_iterations, reg_covar=reg_covar)


def generative(calibration_number: int = DEFAULT_CALIBRATION_NUMBER) -> Method:
    return _method("generative", "generative calibration (Jiang et al. 2023), label marginal from pseudo-inputs "
                   "drawn from the calibration set", generative_calibration, calibration_number)


def bcl(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, batch_size: int = DEFAULT_BATCH_SIZE,
        gamma_bound: float = 5.0, gamma_steps: int = 100) -> Method:
    return _method("bcl", "few-shot batch calibration (Zhou et al. 2024): the batch mean subtracted with a "
                   "strength learnt on labelled calibration queries", batch_calibration_learnt, calibration_number,
                   batch_size=batch_size, gamma_bound=gamma_bound, gamma_steps=gamma_steps)


def linc(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 1e-3,
         calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("linc", "linear-probe calibration (Abbas et al. 2024): softmax(A p + b) fitted on "
                           "labelled queries", linc_calibration, calibration_number, calibration, folds, l2=l2)


def ucpa(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, iterations: int = DEFAULT_ITERATIONS,
         calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("ucpa", "unsupervised calibration through prior adaptation (Estienne et al. 2023): the "
                           "mean prediction re-weighted to the uniform prior", prior_adaptation, calibration_number,
                           calibration, folds, supervised=False, iterations=iterations)


def sucpa(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, iterations: int = DEFAULT_ITERATIONS,
          calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("sucpa", "semi-supervised prior adaptation (Estienne et al. 2023): the mean prediction "
                           "re-weighted to the labels' prior", prior_adaptation, calibration_number, calibration,
                           folds, supervised=True, iterations=iterations)


def supervised(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 1e-3,
               calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("supervised", "supervised calibration (Gundem et al. 2025): a per-class affine map in "
                           "logit space", supervised_calibration, calibration_number, calibration, folds, l2=l2)


def temperature(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 0.0,
                calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("temperature", "temperature scaling (Guo et al. 2017): one temperature fitted on "
                           "labelled queries", temperature_scaling, calibration_number, calibration, folds, l2=l2)


def platt(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 1e-3,
          calibration: str = "crossfit", folds: int = DEFAULT_FOLDS) -> Method:
    return _fitted_on_pass("platt", "Platt scaling (Platt 1999), multi-class: a shared slope and a bias per label "
                           "on the log-probabilities", platt_scaling, calibration_number, calibration, folds, l2=l2)


def anchors(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, l2: float = 1e-3) -> Method:
    """Label-word anchor re-weighting: the calibration queries' and the test prompts' anchors answers (hf only)."""
    method = _method("anchors", "label-word anchor re-weighting (Wang et al. 2023): the attention on the "
                     "demonstrations' label words re-weighted per layer, head and class, to first order",
                     anchor_reweighting, calibration_number, l2=l2)
    requests, train = method.requests, method.train

    def apply(calibration: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        return calibration.transform_rows(answers[ANCHORS])
    return replace(method, requests=lambda data: [(prompt, ANCHORS) for prompt in requests(data)],  # type: ignore[misc]
                   train=train, apply=apply, test_kinds=(LABELS, ANCHORS))


def pmi() -> Method:
    def apply(_state: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        return pmi_rows(answers[LABELS], answers[PREMISE_FREE])
    return Method("pmi", "domain-conditional PMI (Holtzman et al. 2021): each label's probability divided by its "
                  "probability after the query's premise-free prompt", train=lambda _data, _answers: None,
                  apply=apply, test_kinds=(LABELS,), premise_free=True)


#: the methods above by name
FITTED: Dict[str, Callable[..., Method]] = {
    "pmi": pmi,
    "generative": generative, "ucpa": ucpa, "bcl": bcl, "prototypical": prototypical, "sucpa": sucpa,
    "temperature": temperature, "platt": platt, "supervised": supervised, "linc": linc, "anchors": anchors,
}
