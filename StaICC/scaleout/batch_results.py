"""Reading OpenAI Batch-API results back: every line checked before any answer is stored.

A result line is ``{"custom_id", "response": {"status_code", "body"}, "error"}``.  Each is
checked, and a bad one is one error naming ``FILE:LINE``:

* its length (at most :data:`MAX_LINE_BYTES`; a longer line is skipped without being held),
  UTF-8, JSON (a line nested too deeply for Python's reader is refused, not a traceback);
* its ``custom_id`` belongs to **this export**: it carries this backend's tag (the start of
  its fingerprint, :func:`~StaICC.scaleout.batch_api.export_tag`) and a request of this run;
* its body was answered by **this model**: the body's ``model`` is the model the export
  asked (or a dated snapshot of it, ``gpt-4o-mini-2024-07-18`` for ``gpt-4o-mini``);
* its body reads as a direct run reads it (the backend's own parser: echo coverage,
  log-probabilities, generated text, redacted).

A custom_id repeated with the same answer is harmless; repeated with **another** answer, the
import stores nothing at all (which answer is right cannot be told).  Only the values read
(a score, or a generated text) are kept per custom_id, never the bodies.
"""
import json
import re
import sys
from dataclasses import dataclass
from typing import IO, Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..backends.http import object_pairs
from ..requests import Answer, Request
from ..results.jsonl import LineTooLong, bounded_lines
from .batch_api import Entry, export_entries, export_tag

#: the longest result line read (an echo answer for a prompt of 10,000 tokens is about 1 MB)
MAX_LINE_BYTES = 16 << 20
# a dated snapshot of a model: gpt-4o-mini-2024-07-18, gpt-4-0613
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})")


@dataclass(frozen=True)
class ImportReport:
    """What an import did: answers stored, requests still unanswered, one message per bad line, and how
    many custom_ids had conflicting answers (then nothing is stored)."""

    stored: int
    missing: int
    errors: Tuple[str, ...]
    conflicts: int = 0


def result_lines(handle: IO[bytes], max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Tuple[int, Any, Optional[str]]]:
    """(line number, text or None, error or None) of a binary file; an over-long line is skipped unread."""
    for number, text, error in bounded_lines(handle, max_line_bytes, skip_long=True):
        if isinstance(error, LineTooLong):
            yield number, None, (f"the line is longer than {max_line_bytes} bytes; a Batch result line is one "
                                 "answer (skipped unread)")
        elif isinstance(error, UnicodeDecodeError):
            yield number, None, f"not UTF-8 text ({error.reason} at byte {error.start})"
        else:
            yield number, text, None


def result_body(text: str) -> Tuple[str, Dict[str, Any]]:
    """(custom_id, response body) of one Batch result line, or ValueError saying what is wrong."""
    try:
        line = json.loads(text, object_pairs_hook=object_pairs)  # a token listed twice in top_logprobs is seen
    except RecursionError:
        raise InvalidValueError("JSON nested too deeply for Python's JSON reader (more than about "
                                f"{sys.getrecursionlimit()} levels)") from None
    except ValueError as exc:
        message = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else \
            str(exc).splitlines()[0]
        raise InvalidValueError(f"not JSON ({message})") from None
    if not isinstance(line, dict):
        raise InvalidValueError(f"expected a JSON object with custom_id and response, got {type(line).__name__}")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise InvalidValueError("no custom_id string")
    shown = custom_id[:100]
    error = line.get("error")
    if error:
        detail = error.get("message", error) if isinstance(error, dict) else error
        raise InvalidValueError(f"custom_id {shown} failed: {shown_text(detail, 200)}")
    response = line.get("response")
    if not isinstance(response, dict):
        raise InvalidValueError(f"custom_id {shown} has no response object")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        message = body.get("error", body) if isinstance(body, dict) else body
        raise InvalidValueError(f"custom_id {shown} has HTTP status {shown_text(status, 20)}: {shown_text(message, 200)}")
    if not isinstance(body, dict):
        raise InvalidValueError(f"custom_id {shown} has a response body that is not a JSON object")
    return custom_id, body


def shown_text(value: Any, limit: int) -> str:
    """``value`` as one line of at most ``limit`` characters, redacted; any value, however nested."""
    from ..backends.secrets import redact_prefix
    if not isinstance(value, str):
        try:
            value = json.dumps(value)
        except (TypeError, ValueError, RecursionError):
            value = f"<{type(value).__name__}>"
    return redact_prefix(" ".join(value[:limit * 4].split()), limit)


def same_model(answered: Any, asked: str) -> bool:
    """Whether a result's ``model`` is the exported one, or a dated snapshot of it (the API names those)."""
    if not isinstance(answered, str):
        return False
    return answered == asked or (answered.startswith(asked) and _SNAPSHOT.fullmatch(answered[len(asked):]) is not None)


class _Reader:
    """Reads result files into one value per custom_id (a score, or a generated text), with the errors."""

    def __init__(self, backend: Any, entries: Dict[str, Entry], max_line_bytes: int) -> None:
        self.backend, self.entries, self.max_line_bytes = backend, entries, max_line_bytes
        self.tag = export_tag(backend)
        self.values: Dict[str, Tuple[Any, str]] = {}
        self.errors: List[str] = []
        self.conflicts = 0

    def read(self, path: str) -> None:
        try:
            with open(path, "rb") as handle:
                self._read_lines(path, handle)
        except OSError as exc:
            self.errors.append(f"{path}: cannot read: {exc.strerror or exc}")

    def _read_lines(self, path: str, handle: IO[bytes]) -> None:
        for number, text, error in result_lines(handle, self.max_line_bytes):
            where = f"{path}:{number}"
            if error is None and not text.strip():
                continue
            try:
                if error is not None:
                    raise InvalidValueError(error)
                self.keep(where, *result_body(text))
            except (ValueError, TypeError, RuntimeError) as exc:
                self.errors.append(f"{where}: {' '.join(str(exc).split())[:400]}")

    def keep(self, where: str, custom_id: str, body: Dict[str, Any]) -> None:
        entry = self.entry(custom_id)
        if not same_model(body.get("model"), self.backend.model):
            answered = body.get("model")
            if answered is None:
                raise InvalidValueError(f"custom_id {custom_id}: the response body names no model; a Batch result must "
                                        "say which model answered")
            raise InvalidValueError(f"custom_id {custom_id} was answered by model {shown_text(answered, 80)!r}, but the "
                                    f"export asked {self.backend.model!r}: another model's answers are not stored as this "
                                    "model's")
        value = self.value(entry, body)
        earlier = self.values.get(custom_id)
        if earlier is None:
            self.values[custom_id] = (value, where)
        elif earlier[0] != value:
            self.conflicts += 1
            raise InvalidValueError(f"custom_id {custom_id} repeats {earlier[1]} with another answer; nothing is stored "
                                    "from results with conflicting answers: keep one of them")

    def entry(self, custom_id: str) -> Entry:
        entry = self.entries.get(custom_id)
        if entry is not None:
            return entry
        tag, colon, _ = custom_id.partition(":")
        shown = repr(custom_id[:100])
        if not colon:
            raise InvalidValueError(f"custom_id {shown} is not a request of this run: it carries no export tag "
                                    "(every custom_id of an export is TAG:KEY); export the requests again")
        if tag != self.tag:
            raise InvalidValueError(f"custom_id {shown} is not a request of this run: it was exported for another model "
                                    f"or other model settings (tag {tag[:20]!r}, this run's {self.tag!r}); import with "
                                    "the --model and --model-args of its export")
        raise InvalidValueError(f"custom_id {shown} is not a request of this run (export and import must name the same "
                                "model, sub-benchmarks and datasets)")

    def value(self, entry: Entry, body: Dict[str, Any]) -> Any:
        """What a direct run reads from ``body``: the generated text (redacted) or the label's score."""
        _, request, echo = entry
        if self.backend.scoring == "top_logprobs":  # the answer itself: its top-k list checked and kept
            path, _ = self.backend.top_request(request)
            return self.backend.top_answer(body, path, request)
        if echo is None:
            path, _ = self.backend.generation_request(request)
            return self.backend.generated_text(body, path)
        return self.backend.score_echo(body, echo[0], echo[1])


def import_batch(backend: Any, requests: Sequence[Request], paths: Sequence[str], cache: Any, *,
                 max_line_bytes: int = MAX_LINE_BYTES) -> ImportReport:
    """Store in ``cache`` the answers of every request whose Batch results are all present and valid,
    unless some custom_id has conflicting answers (then nothing is stored)."""
    entries: Dict[str, Entry] = {}
    ids_of: Dict[str, List[str]] = {}
    for entry in export_entries(backend, requests):
        entries[entry[0]] = entry
        ids_of.setdefault(entry[1].key(), []).append(entry[0])
    reader = _Reader(backend, entries, max_line_bytes)
    for path in paths:
        reader.read(path)
    if reader.conflicts:
        return ImportReport(0, len(ids_of), tuple(reader.errors), reader.conflicts)
    answered: List[Request] = []
    answers: List[Answer] = []
    missing = 0
    for request in {r.key(): r for r in requests}.values():
        ids = ids_of[request.key()]
        if not all(i in reader.values for i in ids):
            missing += 1
            continue
        try:
            answers.append(_answer(backend, request, [reader.values[i][0] for i in ids]))
            answered.append(request)
        except (ValueError, RuntimeError, TypeError) as exc:
            reader.errors.append(f"{reader.values[ids[0]][1]}: custom_id {ids[0]}: {' '.join(str(exc).split())[:300]}")
    if answered:
        cache.register_model(backend.fingerprint(), backend.identity())
        cache.store(backend.fingerprint(), answered, answers)
    return ImportReport(len(answered), missing, tuple(reader.errors))


def _answer(backend: Any, request: Request, values: List[Any]) -> Answer:
    """The answer a direct run computes from these values (validated like a direct answer)."""
    from ..backends.scores import answers_from_scores
    from ..engine.scoring import check_output
    if backend.scoring == "top_logprobs":
        answer = values[0]
    elif backend.scoring == "generate":
        answer = backend.mapper.answer(request, values[0])
    else:
        answer = answers_from_scores([request], values)[0]
    prediction = check_output(answer.prediction, len(request.label_space), request.dataset, request.query_index)
    return Answer(prediction, answer.text, answer.parsed)
