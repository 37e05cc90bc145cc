"""The inference contract, checked where the model is called.

A user's function returns, per prompt, either a vector aligned with the label space
(probabilities or logits; lists, tuples, NumPy arrays and tensors are accepted) or
an int label index.  Everything else is refused with an error that names the
dataset and the query index.  Int predictions become one-hot rows as wide as the
label space (the original used max(prediction) + 1 and crashed).
"""
import math
import sys
import time
from itertools import repeat, takewhile
from operator import attrgetter
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple, Union

from ..backends.base import BadAnswersError, Backend, BatchShapeError, FunctionBackend
from ..errors import InferenceError, InvalidTypeError, InvalidValueError, error_name, where
from ..metrics import PredictionRows
from .cache_use import cached_answers, remember_batch
from .refusals import kept_answers, raise_refused
from .progress import progress_bar
from .protocols import AnswerCache, ScoringBackend
from ..requests import KIND_NAMES, LABELS, Answer, Request, label_answer, state_vector
from ..validation import is_int, is_real

Prediction = Union[int, List[float]]


def check_output(output: Any, label_count: int, dataset: Optional[str], query_index: Optional[int]) -> Prediction:
    """One prediction, validated: an int in range, or a finite vector of the right length.

    Every refusal is a TypeError (wrong kind of value) or ValueError (right kind, bad
    value) naming the dataset and the query, raised here so that no bad value reaches
    the metrics.  Scores must convert to finite floats; a huge int that does not fit a
    float is refused rather than overflowing later.
    """
    if type(output) is int and 0 <= output < label_count:
        return output  # the common case first: no message is built for a valid answer
    at = _Where(dataset, query_index)
    if hasattr(output, "tolist") and not isinstance(output, (list, tuple)):
        try:
            output = output.tolist()  # NumPy arrays and scalars, torch tensors
        except Exception as exc:
            raise InvalidTypeError(f"the inference returned {type(output).__name__}{at}, whose tolist() raised "
                                   f"{error_name(exc)}: {exc}; expected a list of {label_count} scores or an int label index") from None
    if isinstance(output, bool):
        raise InvalidTypeError(f"the inference returned a bool{at}; expected a list of {label_count} scores or an int label index")
    if is_int(output):
        if not 0 <= output < label_count:
            shown = output if abs(output) < 10 ** 30 else f"{str(output)[:12]}... ({len(str(abs(output)))} digits)"
            raise InvalidValueError(f"the inference returned label index {shown}{at}; expected an int in [0, {label_count})")
        return int(output)
    if isinstance(output, (str, bytes)):
        raise InvalidTypeError(f"the inference returned a string {output[:40]!r}{at}; expected a list of "
                               f"{label_count} scores or an int label index")
    if not isinstance(output, (list, tuple)):
        raise InvalidTypeError(f"the inference returned {type(output).__name__}{at}; expected a list of "
                               f"{label_count} scores (probabilities or logits) or an int label index")
    if len(output) != label_count:
        raise InvalidValueError(f"the inference returned {len(output)} scores{at}; expected {label_count}, "
                                f"one per label of the label space")
    row = [0.0] * label_count  # allocated at its size: a row built by append keeps spare slots for the whole run
    for position, value in enumerate(output):
        if not is_real(value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise InvalidTypeError(f"the inference returned a non-numeric score {shown}{at}; expected real numbers")
        try:
            value = float(value)
        except OverflowError:
            raise InvalidValueError(f"the inference returned a score too large for a float{at} "
                                    f"(a number of about {len(str(int(value)))} digits); return floats") from None
        if not math.isfinite(value):
            raise InvalidValueError(f"the inference returned a non-finite score {value}{at}; NaN and inf are not allowed")
        row[position] = value
    return row  # a row with a negative entry is logits, even when it sums to 1, as in the original


class _Where:
    """`` at dataset 'x', query 3``, formatted only when an error message needs it."""

    __slots__ = ("dataset", "query_index")

    def __init__(self, dataset: Optional[str], query_index: Optional[int]) -> None:
        self.dataset, self.query_index = dataset, query_index

    def __format__(self, spec: str) -> str:
        return where(self.dataset, self.query_index)


def expand(predictions: Sequence[Prediction], label_count: int, dataset: Optional[str], *,
           share_rows: bool = False) -> List[list]:
    """Rows the metrics read: vectors as they are, ints as one-hot rows of the label count.

    Each int's row is its own list (rows are lists a caller may change), unless ``share_rows``: then the queries
    with the same label share one row, for readers that never change rows (no row is allocated per query).  The
    rows are :class:`~StaICC.metrics.PredictionRows`; one-hot rows of in-range ints come marked as passing the
    probability check with the ints as their argmax labels (a one-hot row sums to exactly 1 and its 1 is its
    first maximum), so the metrics neither check nor scan them.
    """
    if not predictions:
        return PredictionRows()
    int_kind = isinstance(predictions[0], int)
    kinds = list(map(isinstance, predictions, repeat(int)))
    if kinds.count(int_kind) != len(kinds):
        i = kinds.index(not int_kind)
        raise InvalidTypeError(f"the inference mixed int labels and score vectors{where(dataset, i)}: "
                               f"query 0 returned {'an int' if int_kind else 'a vector'}; return one kind throughout")
    if not int_kind:
        rows = PredictionRows(predictions)
        rows.floats = getattr(predictions, "floats", None)  # a calibration's rows keep the array they come from
        return rows
    one_hot = [[1 if c == label else 0 for c in range(label_count)] for label in range(label_count)]
    if min(predictions) >= 0 and max(predictions) < label_count:
        rows = map(one_hot.__getitem__, predictions)
        return PredictionRows.passing(rows if share_rows else map(list.copy, rows), list(map(int, predictions)))
    return PredictionRows([one_hot[p][:] if 0 <= p < label_count else [1 if c == p else 0 for c in range(label_count)]
                           for p in predictions])


def predicted_labels(predictions: Sequence[Prediction]) -> List[int]:
    """The original's "predicted" output: argmax of each raw row, or the ints themselves."""
    from ..metrics import argmax
    return [p if isinstance(p, int) else argmax(p) for p in predictions]


def score_requests(backend: Backend, requests: Sequence[Request], *, cache: Optional[AnswerCache] = None,
                   progress: Optional[bool] = None, description: str = "",
                   counts: Optional[Dict[str, int]] = None, requests_per_call: Optional[int] = None) -> List[Answer]:
    """Answers for ``requests``, validated: the one place where a model is called.

    With a ``cache``, answers found there (written for this backend's fingerprint) are not
    asked again and a prompt that occurs several times is asked once; without one, every
    request is asked, as the standard does (a sampling model may answer a repeat differently).  New answers are stored
    after every backend call (grouped for one-at-a-time backends), and also before any
    error propagates, so that a crash, a bad return value or Ctrl-C loses at most the
    call in flight.  Every error raised from here carries ``partial_predictions``: the
    validated predictions of the leading requests that were answered.  ``counts`` (a dict)
    accumulates ``asked`` (requests sent to the model) and ``cached`` (answers from the cache).
    ``requests_per_call`` overrides the backend's own ``requests_per_call`` for this call.
    """
    check_kinds(backend, requests)
    answers: List[Optional[Answer]] = [None] * len(requests)
    fingerprint, batch = backend.fingerprint() if cache is not None else "", None
    if cache is not None and requests:
        answers, batch = cached_answers(cache, fingerprint, requests, _validated)
    todo, duplicates = _to_ask(requests, answers, cache is not None)
    counts = counts if counts is not None else {}
    counts["cached"] = counts.get("cached", 0) + (len(requests) - len(todo) - len(duplicates))
    counts.setdefault("asked", 0)
    if cache is not None and todo and hasattr(cache, "register_model"):
        cache.register_model(fingerprint, backend.identity())  # so the file says which model each entry is for
    bar = progress_bar(len(todo), description, progress)
    commits = _Commits(cache, fingerprint, requests, answers)
    try:
        if todo:  # nothing to ask: the backend is not touched (one built on demand stays unbuilt)
            _ask(backend, requests, todo, call_size(backend, requests_per_call), answers, bar, commits, counts)
    except BaseException as exc:
        commits.flush()
        _note_numerics(cache, fingerprint, backend, requests_per_call, counts["asked"])
        _copy_duplicates(answers, duplicates)
        exc.partial_predictions = leading_predictions(answers)  # type: ignore[attr-defined]
        raise
    finally:
        bar.close()
    commits.flush()
    _note_numerics(cache, fingerprint, backend, requests_per_call, counts["asked"])
    _copy_duplicates(answers, duplicates)
    remember_batch(cache, fingerprint, batch, requests, answers, commits.as_stored)  # type: ignore[arg-type]
    return answers  # type: ignore[return-value]


def check_kinds(backend: ScoringBackend, requests: Sequence[Request]) -> None:
    """Refuse, before anything is asked, requests of a kind the backend does not answer (a function or an HTTP
    server gives label scores only; a prompt's full-vocabulary logits and hidden states come from ``hf``)."""
    kinds = set(map(attrgetter("kind"), requests))
    if kinds <= {LABELS}:
        return
    missing = sorted(kinds - set(getattr(backend, "request_kinds", (LABELS,))))
    if missing:
        first = next(r for r in requests if r.kind in missing)
        raise InvalidValueError(f"the {backend.name} backend cannot answer {' or '.join(KIND_NAMES.get(k, repr(k)) for k in missing)}"
                                f"{where(first.dataset)}: it gives label scores only; use the hf backend")


def call_size(backend: ScoringBackend, requests_per_call: Optional[int] = None) -> int:
    """Requests per backend call: ``requests_per_call`` when given, else the backend's own (at least 1)."""
    return max(1, int(requests_per_call or getattr(backend, "requests_per_call", 1) or 1))


def _note_numerics(cache: Any, fingerprint: str, backend: Backend, requests_per_call: Optional[int],
                   asked: int) -> None:
    """Keep, beside the answers just stored, the settings they were computed under (``cache merge`` compares them);
    nothing asked, nothing noted: a backend built on demand stays unbuilt."""
    note = getattr(cache, "note_numerics", None)
    if note is not None and asked:
        from ..backends.numerics import answer_numerics
        note(fingerprint, answer_numerics(backend, call_size(backend, requests_per_call)))


#: a one-at-a-time backend's answers are committed in groups: at most this many ...
STORE_EVERY = 256
#: ... or this many seconds of work are lost when the process is killed
STORE_SECONDS = 2.0


def _to_ask(requests: Sequence[Request], answers: List[Optional[Answer]],
            keyed: bool) -> Tuple[List[int], Dict[int, int]]:
    """The requests to ask (indices), and each repeat's first occurrence (index -> index).

    ``keyed`` (a run with a cache): a request not answered yet whose content was seen
    before is a repeat, answered by its first occurrence; otherwise every request is asked.
    """
    if not keyed:
        return list(range(len(requests))), {}
    first_of: Dict[bytes, int] = {}
    duplicates: Dict[int, int] = {}
    todo: List[int] = []
    for i, request in enumerate(requests):
        if answers[i] is not None:
            continue
        key = request.digests[0]  # the content key (Request.key(), as bytes)
        if key in first_of:
            duplicates[i] = first_of[key]
        else:
            first_of[key] = i
            todo.append(i)
    return todo, duplicates


class _Commits:
    """New answers not stored yet: stored in groups of STORE_EVERY or every STORE_SECONDS, or at once."""

    __slots__ = ("cache", "fingerprint", "requests", "answers", "pending", "last", "as_stored")

    def __init__(self, cache: Optional[AnswerCache], fingerprint: str, requests: Sequence[Request],
                 answers: List[Optional[Answer]]) -> None:
        self.cache, self.fingerprint, self.requests, self.answers = cache, fingerprint, requests, answers
        self.pending: List[int] = []
        self.last, self.as_stored = time.monotonic(), True  # as_stored: each answer stored so far is a new entry

    def add(self, answered: Sequence[int], now: bool = False) -> None:
        """Requests just answered; stored when ``now`` or when the group is full or old enough."""
        if self.cache is None:
            return
        self.pending.extend(answered)
        if now or len(self.pending) >= STORE_EVERY or time.monotonic() - self.last > STORE_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            stored = self.cache.store(self.fingerprint, [self.requests[i] for i in self.pending],
                                      [self.answers[i] for i in self.pending])
            self.as_stored = self.as_stored and stored == len(self.pending)
            self.pending.clear()
        self.last = time.monotonic()


def _ask(backend: Backend, requests: Sequence[Request], todo: List[int], size: int, answers: List[Optional[Answer]],
         bar: Any, commits: "_Commits", counts: Dict[str, int]) -> None:
    if _one_at_a_time(backend, size):
        _ask_each(backend, requests, todo, answers, bar, commits, counts)  # type: ignore[arg-type]
    else:
        _ask_in_calls(backend, requests, todo, size, answers, bar, commits, counts)


def _one_at_a_time(backend: Backend, size: int) -> bool:
    """A plain unbatched function asked one request per call: the run calls it request by request itself."""
    return (size == 1 and isinstance(backend, FunctionBackend) and not backend.batched
            and type(backend).score is FunctionBackend.score)


def _ask_each(backend: FunctionBackend, requests: Sequence[Request], todo: List[int],
              answers: List[Optional[Answer]], bar: Any, commits: _Commits, counts: Dict[str, int]) -> None:
    """Answer ``todo`` through ``backend.output``, one request per call, as ``score([request])`` would.

    Without a ``score`` call (a chunk list, an Answer to unwrap) per request; the error for
    a failing request names it exactly as a one-request call's does.
    """
    output = backend.output
    storing = commits.cache is not None
    asked = 0
    try:
        for i in todo:
            request = requests[i]
            try:
                raw = output(request)
            except Exception as exc:
                _raise_call_error(backend, [request], exc)
            asked += 1
            prediction = check_output(raw, len(request.label_space), request.dataset, request.query_index)
            answers[i] = label_answer(prediction) if type(prediction) is int else Answer(prediction)
            bar.update(1)
            if storing:
                commits.add((i,))
    finally:
        counts["asked"] += asked


def _ask_in_calls(backend: Backend, requests: Sequence[Request], todo: List[int], size: int,
                  answers: List[Optional[Answer]], bar: Any, commits: _Commits, counts: Dict[str, int]) -> None:
    """Answer ``todo`` through ``backend.score``, ``size`` requests per call (refused answers: .refusals)."""
    refused: List[BadAnswersError] = []
    for start in range(0, len(todo), size):
        chunk = todo[start:start + size]
        outputs = _call_backend(backend, [requests[i] for i in chunk], refused)
        counts["asked"] += len(chunk)
        for i, answer in zip(chunk, outputs):
            answers[i] = None if answer is None else _validated(answer, requests[i])
        bar.update(len(chunk))
        commits.add([i for i in chunk if answers[i] is not None], now=size > 1)
    raise_refused(refused)


def _call_backend(backend: Backend, chunk: List[Request], refused: List[BadAnswersError]) -> List[Any]:
    try:
        outputs = backend.score(chunk)
    except BadAnswersError as exc:
        outputs = kept_answers(exc, len(chunk), refused)
    except Exception as exc:
        _raise_call_error(backend, chunk, exc)
    if not isinstance(outputs, list) or len(outputs) != len(chunk):
        raise InvalidValueError(f"the {backend.name} backend returned {len(outputs) if isinstance(outputs, list) else outputs!r}"
                                f" answers for {len(chunk)} requests{where(chunk[0].dataset)}")
    return outputs


def _raise_call_error(backend: Backend, chunk: Sequence[Request], exc: Exception) -> NoReturn:
    """Raise the error for a backend call that raised ``exc``: a wrong batch shape says what came back;
    anything else becomes an InferenceError naming the query of a one-request call, else the range of prompts."""
    first = chunk[0]
    if isinstance(exc, BatchShapeError):
        error = InvalidTypeError if exc.wrong_type else InvalidValueError
        raise error(f"the batched inference returned {exc.returned}{where(first.dataset)}; "
                    f"expected {exc.expected}") from None
    if len(chunk) == 1:
        location = where(first.dataset, first.query_index)
        kind = "inference function" if isinstance(backend, FunctionBackend) else f"{backend.name} backend"
    else:
        location = f"{where(first.dataset)} (prompts {first.query_index}..{chunk[-1].query_index})"
        kind = "batched inference" if isinstance(backend, FunctionBackend) else f"{backend.name} backend"
    raise InferenceError(f"the {kind} raised {type(exc).__name__}: {exc}{location}",
                         first.dataset, first.query_index) from exc


def _validated(answer: Answer, request: Request) -> Answer:
    if not isinstance(answer, Answer):
        raise InvalidTypeError(f"a backend must answer with StaICC.requests.Answer values, got {type(answer).__name__}"
                               f"{where(request.dataset, request.query_index)}")
    if request.kind != LABELS:
        vector = check_state(answer.prediction, request)
        return answer if vector is answer.prediction else Answer(vector, answer.text, answer.parsed, answer.thinking)
    prediction = check_output(answer.prediction, len(request.label_space), request.dataset, request.query_index)
    if prediction is answer.prediction:
        return answer
    return Answer(prediction, answer.text, answer.parsed, answer.thinking)


def check_state(output: Any, request: Request) -> Any:
    """A representation answer (full-vocabulary logits, hidden state), validated: a non-empty vector of finite
    numbers, as :func:`~StaICC.requests.state_vector` keeps it."""
    at = where(request.dataset, request.query_index)
    what = KIND_NAMES.get(request.kind, request.kind)
    if isinstance(output, (str, bytes, bool, int, float)) or not hasattr(output, "__len__"):
        raise InvalidTypeError(f"the backend answered {type(output).__name__} for {what}{at}; expected a vector of numbers")
    try:
        vector = state_vector(output)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidTypeError(f"the backend answered a {type(output).__name__} that is not a vector of numbers for "
                               f"{what}{at}: {exc}") from None
    if not len(vector):
        raise InvalidValueError(f"the backend answered an empty vector for {what}{at}")
    numpy = sys.modules.get("numpy")  # loaded wherever a model computed the vector: checks it in C
    finite = bool(numpy.isfinite(numpy.frombuffer(vector, numpy.float32)).all()) if numpy is not None \
        else all(map(math.isfinite, vector))
    if not finite:
        raise InvalidValueError(f"the backend answered {what} with a non-finite value{at}")
    return vector


def _copy_duplicates(answers: List[Optional[Answer]], duplicates: Dict[int, int]) -> None:
    for i, first in duplicates.items():
        if answers[i] is None:
            answers[i] = answers[first]


def leading_predictions(answers: Sequence[Optional[Answer]]) -> List[Prediction]:
    """The predictions of the answered requests before the first unanswered one (a failed run's partial work)."""
    return [answer.prediction for answer in takewhile(lambda answer: answer is not None, answers)]


def check_preentered(predictions: Any, count: int, label_space: List[str], dataset: str) -> List[Prediction]:
    """Predictions made elsewhere, aligned with ``prompt_set()``: count and content checked up front."""
    if hasattr(predictions, "tolist") and not isinstance(predictions, list):
        predictions = predictions.tolist()
    if isinstance(predictions, (str, bytes)) or not hasattr(predictions, "__len__"):
        raise InvalidTypeError(f"preentered predictions must be a list{where(dataset)}, got {type(predictions).__name__}")
    if len(predictions) != count:
        raise InvalidValueError(f"{len(predictions)} preentered predictions{where(dataset)}; expected {count}, "
                                "one per prompt of prompt_set(), in its order")
    return [check_output(p, len(label_space), dataset, i) for i, p in enumerate(predictions)]
