"""The model interface: a backend answers a batch of requests and says who it is.

Every model a run uses is a :class:`Backend`.  ``score`` is the only way a run reaches
a model (``StaICC.engine.scoring.score_requests`` is its one caller); ``identity`` lists
everything that changes the model's outputs and ``fingerprint`` hashes it, so that a
cache entry written for one model is never read for another.
"""
import abc
import hashlib
import inspect
import json
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..requests import LABELS, Answer, Request
from ..validation import check_int, check_prediction_kind
from ..errors import InvalidTypeError, InvalidValueError, StaICCError


class Backend(abc.ABC):
    """A model that answers requests.

    ``requests_per_call``: how many requests one ``score`` call should receive (1: one at
    a time; the run still commits answers to the cache after every call, so a crash loses
    at most one call's work).  ``batch_size`` is its older name, kept as an alias; a
    scorer's rows per forward pass are a different thing (``rows_per_forward``).  ``non_standard``: the settings of this backend that depart
    from the standard's scoring (generative answers, a chat template, a scoring mode
    other than the last token); the run records them in ``metadata["non_standard_settings"]``.
    """

    name: str = "backend"
    requests_per_call: int = 1
    #: True for backends that compute a prefix shared by several prompts of one call once
    #: (the hf engine's prefix tree, a server's prefix cache): the suite then sends each
    #: dataset's prompts together, in text order, so that one call holds the prompts that
    #: share demonstrations (a query's GLER passes, Triplet_bias's parts)
    shares_prefixes: bool = False
    #: True for backends that read a prompt's demonstration boundaries (``Request.segments``,
    #: e.g. demonstrations as chat turns): the run then writes them; others never pay for them
    needs_segments: bool = False
    #: what the answers' rows are, which decides the branch of the standard's exact-sum rule they
    #: take (:mod:`StaICC.metrics.exact_sum`): None, the standard's check; "probabilities" (a model's
    #: floating-point softmax: the softmax branch always, so no last bit can choose it), "loglikelihoods"
    #: or "logits" (softmaxed once into the model's distribution first)
    prediction_kind: Optional[str] = None
    #: True when no route can move a last bit of the rows: pure-Python arithmetic (the built-in reference
    #: models) or exact values (generated answers mapped to one-hot or uniform rows); the exact-sum
    #: check is then never decided by rounding, and their numerics records never conflict
    reproducible_rows: bool = False
    #: what the backend answers (``Request.kind``): label scores only, unless it also gives a
    #: prompt's full-vocabulary logits or hidden state (the ``hf`` backend); a run whose method
    #: needs another kind is refused before any inference
    request_kinds: Tuple[str, ...] = (LABELS,)

    @abc.abstractmethod
    def score(self, requests: Sequence[Request]) -> List[Answer]:
        """One answer per request, in order."""

    @abc.abstractmethod
    def identity(self) -> Dict[str, Any]:
        """JSON-able description of everything that changes the outputs; never a secret."""

    def fingerprint(self) -> str:
        return fingerprint_of(self.identity())

    def __init_subclass__(cls, **options: Any) -> None:
        """A subclass that sets ``batch_size = n`` (the older name) sets ``requests_per_call``."""
        super().__init_subclass__(**options)
        older = cls.__dict__.get("batch_size")
        if isinstance(older, int) and not isinstance(older, bool):
            cls.requests_per_call = older
            delattr(cls, "batch_size")

    @property
    def batch_size(self) -> int:
        """The older name of :attr:`requests_per_call`."""
        return self.requests_per_call

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.requests_per_call = value

    @property
    def non_standard(self) -> List[str]:
        return []

    def close(self) -> None:  # noqa: B027  (an optional hook: most backends hold nothing to release)
        """Release what the backend holds (a server pool, GPU memory); idempotent."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity()!r})"


def fingerprint_of(identity: Dict[str, Any]) -> str:
    """SHA-256 of the identity's canonical JSON (sorted keys, no spaces)."""
    body = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class FunctionBackend(Backend):
    """A plain inference function as a backend: ``f(prompt=..., label_space=...)``.

    With ``batched=True`` the function receives a list of prompts and returns a list of
    predictions (the original's ``batched_inference=True``).  Noisy-channel prompts reach
    the function as lists, as they always did.

    A function has no identity of its own.  The rule: ``model_id`` when given (name your
    model and its settings there); otherwise the function's module and qualified name plus
    a hash of its compiled code.  That hash changes when the code changes, but not when a
    closure's captured model or weights change: pass ``model_id`` whenever one function
    body serves several models.

    ``prediction_kind`` says what the function's vectors are (see :attr:`Backend.prediction_kind`);
    None keeps the standard's rule.  It changes how the rows are read, not the answers, so it
    is no part of the identity (cached answers serve either reading).
    """

    name = "function"

    def __init__(self, function: Callable, *, batched: bool = False, model_id: Optional[str] = None,
                 batch_size: Optional[int] = None, prediction_kind: Optional[str] = None) -> None:
        if not callable(function):
            raise InvalidTypeError(f"the model must be callable or a Backend, got {type(function).__name__}")
        if model_id is not None and not isinstance(model_id, str):
            raise InvalidTypeError(f"model_id must be a string, got {type(model_id).__name__}")
        self.function = function
        self.batched = bool(batched)
        self.model_id = model_id
        self.prediction_kind = check_prediction_kind(prediction_kind)
        if batch_size is not None:
            self.requests_per_call = check_int(batch_size, "batch_size", minimum=1)
        elif self.batched:
            self.requests_per_call = 1 << 30  # the whole pass in one call, as the original did
        else:
            self.requests_per_call = 1

    def score(self, requests: Sequence[Request]) -> List[Answer]:
        if not self.batched:
            return [Answer(self.output(r)) for r in requests]
        f = self.function
        answers: List[Answer] = []
        for group in _runs_of_one_label_space(requests):
            outputs = f(prompt=[_user_prompt(r.prompt) for r in group], label_space=list(group[0].label_space))
            if hasattr(outputs, "tolist") and not isinstance(outputs, list):
                outputs = outputs.tolist()
            if isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__len__"):
                raise BatchShapeError(type(outputs).__name__, f"a list of {len(group)} predictions", True)
            if len(outputs) != len(group):
                raise BatchShapeError(f"{len(outputs)} predictions", f"{len(group)}, one per prompt", False)
            answers.extend(Answer(o) for o in outputs)
        return answers

    def output(self, request: Request) -> Any:
        """The unbatched function's raw, unvalidated output for one request: how a prompt reaches it.

        The run calls it request by request for a one-at-a-time function (so that an error
        names the exact query and the answers before it are kept); ``score`` is built on it.
        Every call receives a new label-space list (the function may change it).
        """
        return self.function(prompt=_user_prompt(request.prompt), label_space=list(request.label_space))

    def identity(self) -> Dict[str, Any]:
        if self.model_id is not None:
            return {"backend": "function", "model_id": self.model_id}
        return {"backend": "function", "function": function_name(self.function),
                "code_sha256": code_digest(self.function)}


class BatchShapeError(StaICCError, ValueError):
    """A batched function returned the wrong number or kind of predictions.

    The caller, which knows the dataset, turns it into the user-facing ``TypeError``
    (``wrong_type``) or ``ValueError``.
    """

    def __init__(self, returned: str, expected: str, wrong_type: bool) -> None:
        super().__init__(f"the batched inference returned {returned}; expected {expected}")
        self.returned, self.expected, self.wrong_type = returned, expected, wrong_type


class BadAnswersError(StaICCError, ValueError):
    """Answers a backend refused (a hostile or broken server): one line per refused answer in ``lines``, the
    call's other answers in ``answered`` (None where refused).

    The runner keeps the good answers (they are stored in the cache), asks on, and refuses the run
    at its end with every line (:meth:`merged`): no number is computed from a refused answer.  The
    message is one line: the only refusal, or the first and how many there are.
    """

    def __init__(self, lines: Sequence[str], answered: Sequence[Any] = ()) -> None:
        self.lines, self.answered = list(lines), list(answered)
        more = f" ({len(self.lines)} bad answers; this is the first)" if len(self.lines) > 1 else ""
        super().__init__((self.lines[0] if self.lines else "a bad answer") + more)

    @classmethod
    def merged(cls, errors: Sequence["BadAnswersError"]) -> "BadAnswersError":
        """One error holding every line of ``errors``, of the first one's class."""
        return type(errors[0])([line for error in errors for line in error.lines])


def _runs_of_one_label_space(requests: Sequence[Request]) -> List[Sequence[Request]]:
    """Consecutive requests that share a label space: a batched function receives one label space."""
    runs, start = [], 0
    for i in range(1, len(requests) + 1):
        if i == len(requests) or requests[i].label_space != requests[start].label_space:
            runs.append(requests[start:i])
            start = i
    return runs


def _user_prompt(prompt: Any) -> Any:
    return list(prompt) if isinstance(prompt, tuple) else prompt


def function_name(function: Callable) -> str:
    target = getattr(function, "__func__", function)
    module = getattr(target, "__module__", None) or type(target).__module__
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{qualname}"


def code_digest(function: Callable) -> str:
    """SHA-256 of the function's bytecode, constants and names (or its class's ``__call__``)."""
    target = getattr(function, "__func__", function)
    code = getattr(target, "__code__", None)
    if code is None:
        call = type(target).__call__ if callable(target) else None
        code = getattr(call, "__code__", None)
    digest = hashlib.sha256()
    if code is None:
        digest.update(repr(type(target)).encode())
        return digest.hexdigest()
    _hash_code(code, digest)
    return digest.hexdigest()


def _hash_code(code: Any, digest: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if inspect.iscode(const):
            _hash_code(const, digest)
        else:
            digest.update(repr(const).encode())


def as_backend(model: Any, *, batched: bool = False, model_id: Optional[str] = None,
               prediction_kind: Optional[str] = None) -> Backend:
    """A backend as it is; a function wrapped (``batched``, ``model_id`` and ``prediction_kind`` apply to
    functions only: a backend says what its rows are itself)."""
    if isinstance(model, Backend):
        if model_id is not None:
            raise InvalidValueError("model_id names a plain function; a backend carries its own identity")
        if prediction_kind is not None and prediction_kind != model.prediction_kind:
            raise InvalidValueError(f"prediction_kind={prediction_kind!r} describes a plain function's rows; the {model.name} "
                                    f"backend says what its rows are itself ({model.prediction_kind!r})")
        return model
    return FunctionBackend(model, batched=batched, model_id=model_id, prediction_kind=prediction_kind)
