"""What a method is, whichever code defines it: the requests it needs, a fit from their answers, an apply.

A method is a frozen :class:`Method` value.  The built-in ones (:mod:`.builtin`) and a
method file (:mod:`.files`) give the same three functions:

* ``requests(data) -> prompts``: the prompts training needs answered, from the dataset's
  calibration rows (pure: ``data`` is a :class:`MethodData`).  Each item is a prompt (its
  label scores are asked) or a ``(prompt, kind)`` pair, ``kind`` one of
  :data:`~StaICC.requests.REQUEST_KINDS` (``"full_vocab"``: the prompt's last-position
  logits over the vocabulary; ``"hidden"``: its last hidden state);
* ``train(data, answers) -> state``: the fitted method, from the answers in the order of
  ``requests(data)`` (label scores: one probability list per prompt; a representation: a
  float32 vector, ``array('f')``);
* ``apply(state, answers) -> rows``: one pass of a sub-benchmark: ``answers[kind]`` lists the
  model's answers to the pass's prompts, in query order, for each kind in ``test_kinds``;
  returns one row of label scores (probabilities or logits, as the inference contract) per
  query.  A method that only transforms the label probabilities (contextual, domain, batch)
  reads ``answers["labels"]``: the plain run's answers, asked once for both.

``vanilla`` runs the sub-benchmarks' own works; ``noisy_channel`` is a way of writing the
prompts (``mode="prompts"``): its works are the sub-benchmarks' in noisy-channel mode.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError, error_name
from ..requests import LABELS, REQUEST_KINDS
from ..tasks.files import USER_CODE_ERRORS
from ..validation import check, Options

#: a calibration trained on the calibration set and applied to the answers (the default)
CALIBRATION = "calibration"
#: the sub-benchmarks' own run (vanilla)
PLAIN = "plain"
#: another way of writing the prompts (noisy_channel): the sub-benchmarks' works in that mode
PROMPTS = "prompts"
MODES = (CALIBRATION, PLAIN, PROMPTS)

VANILLA = "vanilla"
#: the key of ``apply``'s answers that holds the premise-free prompts' label scores (a method with ``premise_free``)
PREMISE_FREE = "premise_free"


@dataclass(frozen=True)
class MethodData:
    """What a method trains on, for one dataset and one template of a sub-benchmark.

    ``calibration_set``: the dataset's calibration part (row ``i`` is ``(input texts, label
    text)``; ``get_label_space()`` lists the label texts; what ``experimentor.calibration_set()``
    returns); ``label_space``: the label words the prompts use, in the order of the scores;
    ``k``: demonstrations per prompt (the experimentor's); ``write_prompt(demonstrations,
    query_inputs)``: the prompt for ``(input texts, label text)`` demonstrations and a query's
    input texts, in the template of the run (``experimentor.prompt_former.write_prompt_from_dataline``);
    ``demonstration_set`` and ``demonstrations``: the dataset's demonstration part and, per query of a pass of
    the work, the indexes of its demonstrations in it (what a method that reads each query's own context
    writes its prompts from: surprise calibration).
    """

    dataset: str
    benchmark: str
    label_space: Tuple[str, ...]
    calibration_set: Any = field(repr=False)
    k: int
    write_prompt: Callable[..., Any] = field(repr=False)
    demonstration_set: Any = field(default=None, repr=False)
    demonstrations: Tuple[Tuple[int, ...], ...] = field(default=(), repr=False)

    def fresh_stream(self) -> Any:
        """The standard's random stream from its seed: draws made from it are the same on every run."""
        from ..rng import fresh_stream
        return fresh_stream()


@dataclass(frozen=True)
class Method:
    """A method the run applies to every requested sub-benchmark (see the module docstring).

    ``test_kinds``: what ``apply`` reads of each query; ``needs_probabilities``: it reads the
    label probabilities (refused with a backend that answers label indexes, ``scoring=generate``);
    ``parameters``: its settings, recorded; ``source``: where it comes from (``{"built_in": True}``
    or a file's path and SHA-256), recorded in provenance; ``premise_free``: ``apply`` also reads
    ``answers["premise_free"]``, the label scores of each test prompt written with its query's
    input emptied (the same demonstrations, template and label noise: one extra prompt per query);
    ``crossfit``: ``crossfit(data, rows, labels) -> rows`` calibrates a whole pass from its own label scores
    and its queries' true labels, each query by a fit that never read its label (cross-fitting; see
    :func:`~StaICC.methods.calibration.labelled.crossfit_rows`): where a work's queries are labelled test
    items, the run asks no training prompt and calls it instead of ``train`` and ``apply``.
    """

    name: str
    description: str
    mode: str = CALIBRATION
    requests: Optional[Callable[[MethodData], Sequence[Any]]] = field(default=None, repr=False, compare=False)
    train: Optional[Callable[[MethodData, List[Any]], Any]] = field(default=None, repr=False, compare=False)
    apply: Optional[Callable[[Any, Dict[str, List[Any]]], Sequence[Any]]] = field(default=None, repr=False,
                                                                                 compare=False)
    test_kinds: Tuple[str, ...] = (LABELS,)
    needs_probabilities: bool = True
    parameters: Tuple[Tuple[str, Any], ...] = ()
    source: Tuple[Tuple[str, Any], ...] = (("built_in", True),)
    premise_free: bool = False
    crossfit: Optional[Callable[[MethodData, List[Any], List[int]], Sequence[Any]]] = field(default=None, repr=False,
                                                                                          compare=False)

    def __post_init__(self) -> None:
        check(self.mode, Options(MODES, text=f"one of {', '.join(MODES)}"), f"method {self.name!r}: mode")
        unknown = [k for k in self.test_kinds if k not in REQUEST_KINDS]
        if unknown or not self.test_kinds and self.mode == CALIBRATION:
            raise InvalidValueError(f"method {self.name!r}: test_kinds must name some of {', '.join(REQUEST_KINDS)}, "
                                    f"got {self.test_kinds!r}")
        if self.mode == CALIBRATION and (self.train is None or self.apply is None):
            raise InvalidValueError(f"method {self.name!r} needs train() and apply()")

    @property
    def calibrates(self) -> bool:
        return self.mode == CALIBRATION

    def describe(self) -> Dict[str, Any]:
        """The method as provenance records it."""
        return {"name": self.name, "description": self.description, "mode": self.mode,
                "test_kinds": list(self.test_kinds) if self.calibrates else [],
                "parameters": dict(self.parameters), **dict(self.source)}


def training_items(method: Method, data: MethodData) -> List[Tuple[Any, str]]:
    """``method.requests(data)`` as (prompt, kind) pairs, checked: prompts are strings, kinds known."""
    if method.requests is None:
        return []
    try:
        items = list(method.requests(data))
    except USER_CODE_ERRORS as exc:  # the user's code, an exit too
        raise InvalidValueError(f"method {method.name!r}: requests() raised {error_name(exc)}: {exc} "
                                f"(dataset {data.dataset!r})") from exc
    pairs = []
    for number, item in enumerate(items):
        prompt, kind = item if isinstance(item, tuple) and len(item) == 2 else (item, LABELS)
        if not isinstance(prompt, str) or kind not in REQUEST_KINDS:
            raise InvalidValueError(f"method {method.name!r}: requests() item {number} (dataset {data.dataset!r}) must "
                                    f"be a prompt string or a (prompt, kind) pair with kind one of "
                                    f"{', '.join(REQUEST_KINDS)}, got {item!r:.120}")
        pairs.append((prompt, kind))
    return pairs


def needed_kinds(method: Method, training: Sequence[Tuple[Any, str]] = ()) -> Tuple[str, ...]:
    """Every kind of answer a method asks for (its training prompts' and its test kinds), in a fixed order."""
    kinds = set(method.test_kinds if method.calibrates else (LABELS,)) | {kind for _prompt, kind in training}
    return tuple(k for k in REQUEST_KINDS if k in kinds)
