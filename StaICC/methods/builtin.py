"""The built-in methods: the plain run, the noisy channel, and the standard's calibrations as :class:`Method` values.

Each calibration's three steps are its class's own (:mod:`StaICC.methods.calibration`):
``requests`` is ``training_prompts`` / ``training_queries`` (the prompts ``train`` writes
and sends to its feedforward), ``train`` is ``fit`` on the backend's answers, ``apply`` is
``inference`` (``batch_calibration`` over a pass).  So a method run computes what the
hand-wired route computes (``calibration.train(exp.prompt_former.write_prompt_from_dataline,
feedforward, exp.calibration_set(), k=exp.get_k())``, then a run with the calibrated
inference), from the same prompts and the same answers.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import InvalidValueError
from ..numeric import PredictionRows
from ..registry import Registry
from ..requests import FULL_VOCAB, HIDDEN, LABELS
from ..validation import check_int
from .calibration import (DEFAULT_BATCH_SIZE, DEFAULT_CALIBRATION_NUMBER, DEFAULT_DOMAIN_SAMPLE_LENGTH,
                          batch_calibration, contextual_calibration, domain_calibration, hidden_calibration,
                          knn_prompt_centroid, knn_prompting)
from .calibration.base import MAX_CALIBRATION_NUMBER, batch_calibrated_values
from .fitted import FITTED
from .protocol import PLAIN, PROMPTS, VANILLA, Method, MethodData
from .surprise import surprise


def _float32(vector: Any) -> Any:
    """A representation answer (``array('f')``) as the float32 NumPy vector the kernels' feedforwards give."""
    from ..extras import require
    np = require("numpy", "the hidden and kNN calibrations")
    return np.frombuffer(vector, dtype=np.float32)


def _prior(cls: type, number: int, **options: Any) -> Tuple[Callable, Callable, Callable]:
    """Contextual or domain calibration: divide by the mean prediction for content-free (or in-domain) queries."""
    def requests(data: MethodData) -> List[Any]:
        return cls(data.label_space, **options).training_prompts(data.write_prompt, data.calibration_set,
                                                                 number, data.k)

    def train(data: MethodData, answers: List[Any]) -> Any:
        calibration = cls(data.label_space, **options)
        calibration.fit(answers)
        return calibration

    def apply(calibration: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        return [calibration.inference(probs) for probs in answers[LABELS]]
    return requests, train, apply


def _representation(cls: type, number: int, kind: str, **options: Any) -> Tuple[Callable, Callable, Callable]:
    """Hidden calibration or kNN: a representation of k demonstrations and a query of the calibration set each."""
    def requests(data: MethodData) -> List[Any]:
        prompts, _labels = cls(data.label_space, **options).training_queries(
            data.write_prompt, data.calibration_set, number, data.k)
        return [(prompt, kind) for prompt in prompts]

    def train(data: MethodData, answers: List[Any]) -> Any:
        calibration = cls(data.label_space, **options)
        _prompts, labels = calibration.training_queries(None, data.calibration_set, number, data.k)
        calibration.fit([_float32(vector) for vector in answers], labels)
        return calibration

    def apply(calibration: Any, answers: Dict[str, List[Any]]) -> List[Any]:
        if kind == HIDDEN:
            return [calibration.inference(probs, None, _float32(state))
                    for probs, state in zip(answers[LABELS], answers[HIDDEN])]
        return [calibration.inference(probs, _float32(logits)) for probs, logits in zip(answers[LABELS], answers[kind])]
    return requests, train, apply


def _batch(batch_size: int) -> Tuple[Callable, Callable, Callable]:
    def train(_data: MethodData, _answers: List[Any]) -> int:
        return batch_size

    def apply(size: int, answers: Dict[str, List[Any]]) -> List[Any]:
        values = batch_calibrated_values(answers[LABELS], size)  # batch_calibration's at-once path, its array kept
        return batch_calibration(answers[LABELS], size) if values is None else PredictionRows.of_array(values)
    return None, train, apply  # type: ignore[return-value]


def _calibration(name: str, description: str, steps: Tuple[Callable, Callable, Callable],
                 kinds: Tuple[str, ...], **parameters: Any) -> Method:
    requests, train, apply = steps
    return Method(name, description, requests=requests, train=train, apply=apply, test_kinds=kinds,
                  parameters=tuple(sorted(parameters.items())))


def vanilla() -> Method:
    return Method(VANILLA, "the sub-benchmarks' own run: the standard", mode=PLAIN, needs_probabilities=False)


def noisy_channel() -> Method:
    return Method("noisy_channel", "noisy-channel prompts (Min et al. 2022): each label scored by the "
                  "likelihood of the input after it", mode=PROMPTS, needs_probabilities=False)


def contextual(calibration_number: int = DEFAULT_CALIBRATION_NUMBER) -> Method:
    _checked(calibration_number, "calibration_number", 1, "contextual")
    return _calibration("contextual", "contextual calibration (Zhao et al. 2021): divide by the mean prediction "
                        "for content-free queries", _prior(contextual_calibration, calibration_number), (LABELS,),
                        calibration_number=calibration_number)


def domain(calibration_number: int = DEFAULT_CALIBRATION_NUMBER,
           sample_length: int = DEFAULT_DOMAIN_SAMPLE_LENGTH) -> Method:
    _checked(calibration_number, "calibration_number", 1, "domain")
    _checked(sample_length, "sample_length", 1, "domain")
    return _calibration("domain", "domain-context calibration (Fei et al. 2023): divide by the mean prediction "
                        "for random in-domain words", _prior(domain_calibration, calibration_number,
                                                             sample_length=sample_length), (LABELS,),
                        calibration_number=calibration_number, sample_length=sample_length)


def batch(batch_size: int = DEFAULT_BATCH_SIZE) -> Method:
    _checked(batch_size, "batch_size", 1, "batch")
    return _calibration("batch", "batch calibration (Zhou et al. 2024): subtract each batch's mean prediction",
                        _batch(batch_size), (LABELS,), batch_size=batch_size)


def hidden(calibration_number: int = DEFAULT_CALIBRATION_NUMBER) -> Method:
    _checked(calibration_number, "calibration_number", 1, "hidden")
    return _calibration("hidden", "hidden calibration (Cho et al. 2024): the nearest label centroid of the "
                        "last hidden state", _representation(hidden_calibration, calibration_number, HIDDEN),
                        (LABELS, HIDDEN), calibration_number=calibration_number)


def knn(calibration_number: int = DEFAULT_CALIBRATION_NUMBER, knn_k: int = 3) -> Method:
    _checked(calibration_number, "calibration_number", 1, "knn")
    _checked(knn_k, "knn_k", 1, "knn")
    return _calibration("knn", "kNN prompting (Xu et al. 2023): the majority label of the nearest "
                        "full-vocabulary anchors", _representation(knn_prompting, calibration_number, FULL_VOCAB,
                                                                   knn_k=knn_k),
                        (LABELS, FULL_VOCAB), calibration_number=calibration_number, knn_k=knn_k)


def knn_centroid(calibration_number: int = DEFAULT_CALIBRATION_NUMBER) -> Method:
    _checked(calibration_number, "calibration_number", 1, "knn_centroid")
    return _calibration("knn_centroid", "kNN prompting against per-label centroids of the anchors",
                        _representation(knn_prompt_centroid, calibration_number, FULL_VOCAB),
                        (LABELS, FULL_VOCAB), calibration_number=calibration_number)


#: every method by name: the built-in ones in the order ``--methods all`` runs them, each with its row
#: (:class:`MethodInfo`: family and help text); a new method is one :func:`register_method` call (a name
#: registered twice is refused), and ``--methods NAME`` runs it
METHODS: Registry[Callable[..., Method]] = Registry("method", ordered=True)


@dataclass(frozen=True)
class MethodInfo:
    """A method's row: the family its table row is grouped in, and its one-line help text."""

    family: str
    help: str


def register_method(name: str, factory: Callable[..., Method], *, family: Optional[str] = None,
                    help: Optional[str] = None) -> Callable[..., Method]:
    """Register ``factory`` (keyword parameters -> :class:`Method`) as the method ``name``: ``family`` its
    table group (default: the one :data:`FAMILIES` lists it in, else :data:`OWN_FAMILY`), ``help`` its one
    line (default: the description of the method the factory makes with its defaults)."""
    text = help if help is not None else factory().description
    return METHODS.register(name, factory, info=MethodInfo(family or _family_listed(name), text))


#: the methods tables' row groups, in their order: what each family estimates to correct the prediction
FAMILIES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("standard", ("vanilla",)),
    ("prompting", ("noisy_channel", "pmi")),
    ("label prior", ("contextual", "domain", "generative", "ucpa", "surprise")),
    ("batch", ("batch", "bcl")),
    ("clusters", ("prototypical",)),
    ("representations", ("knn", "knn_centroid", "hidden")),
    ("attention", ("anchors",)),
    ("supervised", ("sucpa", "temperature", "platt", "supervised", "linc")),
)
#: the family of a method that is not built in (a method file, a Method value)
OWN_FAMILY = "method files"


def family(name: str) -> str:
    """The family ``name`` is in: its registered row's (a method that is not registered: :data:`OWN_FAMILY`)."""
    row = METHODS.info(name)
    return row.family if row is not None else OWN_FAMILY


def _family_listed(name: str) -> str:
    return next((group for group, names in FAMILIES if name in names), OWN_FAMILY)


def table_order(names: Any) -> List[str]:
    """``names`` family by family in :data:`FAMILIES`' order (method files last, as given), vanilla first."""
    order = [name for _group, members in FAMILIES for name in members]
    return sorted(names, key=lambda n: (order.index(n) if n in order else len(order)))


def built_in(name: str, **parameters: Any) -> Method:
    """The built-in method ``name`` with ``parameters`` (its keyword arguments above: ``knn_k``, ...)."""
    if name not in METHODS:
        raise InvalidValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}, or give a method file (.py)")
    try:
        return METHODS.get(name)(**parameters)
    except TypeError as exc:
        raise InvalidValueError(f"method {name!r}: {exc}") from None


#: the largest value of a size parameter: each unit is a prompt (or a word of one) written before any
#: inference, so a size beyond these would fill the memory before the first answer
MAXIMA = {"calibration_number": MAX_CALIBRATION_NUMBER, "sample_length": MAX_CALIBRATION_NUMBER,
          "knn_k": MAX_CALIBRATION_NUMBER, "batch_size": MAX_CALIBRATION_NUMBER}


def _checked(value: Any, name: str, minimum: int, method: str) -> int:
    return check_int(value, name, minimum=minimum, maximum=MAXIMA.get(name), at=f" in the {method} method")


for _name, _factory in {"vanilla": vanilla, "noisy_channel": noisy_channel, "contextual": contextual,
                        "domain": domain, "batch": batch, "knn": knn, "knn_centroid": knn_centroid,
                        "hidden": hidden, **FITTED, "surprise": surprise}.items():
    register_method(_name, _factory)
#: the built-in methods' earlier name (the registry itself: ``name in BUILT_IN``, ``list(BUILT_IN)``)
BUILT_IN = METHODS
