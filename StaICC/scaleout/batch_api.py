"""The OpenAI Batch API: a run's distinct requests as JSONL, and the Batch results read back into a cache.

Export writes one line per HTTP request the ``openai`` backend would send, with the body it
would send (``vllm run-batch`` reads the same format)::

    {"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

``custom_id`` is the request's cache key (:meth:`StaICC.requests.Request.key`).  A
log-probability scoring mode sends one echo request per label (per prompt for noisy
channel): its ``custom_id`` is ``KEY/J`` for the J-th.  Files are split before 50,000
lines or 100 MB, the Batch API's limits per file.

Import reads result lines (``{"custom_id", "response": {"status_code", "body"}, "error"}``),
joins them to the run's requests by ``custom_id``, reads each body with the backend's own
response parser (the same code a direct run uses, so the answers are the same), applies
the backend's policy for generated answers that name no label, and stores the answers
under the backend's fingerprint.  Every bad line is one error naming the file and line.
"""
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..requests import Answer, Request

MAX_LINES = 50_000
MAX_BYTES = 100 * 1000 * 1000


def batch_lines(backend: Any, requests: Sequence[Request]) -> Iterator[Tuple[str, str]]:
    """(custom_id, JSON line) of every Batch-API request needed to answer ``requests``."""
    from ..backends.openai import scoring_jobs
    for request in requests:
        key = request.key()
        if backend.scoring == "generate":
            path, body = backend.generation_request(request)
            yield key, _line(key, path, body)
        else:
            for j, (_, context, continuation) in enumerate(scoring_jobs([request])):
                custom_id = f"{key}/{j}"
                yield custom_id, _line(custom_id, "/completions", backend.echo_body(context + (continuation or "")))


def _line(custom_id: str, path: str, body: Dict[str, Any]) -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1" + path, "body": body},
                      ensure_ascii=False, separators=(",", ":"))


def part_paths(output: str, parts: int) -> List[str]:
    """``requests.jsonl`` for one part, else ``requests-00001.jsonl``, ``requests-00002.jsonl``, ..."""
    if parts == 1:
        return [output]
    stem, ext = os.path.splitext(output)
    return [f"{stem}-{n:05d}{ext or '.jsonl'}" for n in range(1, parts + 1)]


def export_batch(backend: Any, requests: Sequence[Request], output: str, *, max_lines: int = MAX_LINES,
                 max_bytes: int = MAX_BYTES) -> List[Tuple[str, int]]:
    """Write the Batch-API files for ``requests``; returns (path, lines) per file written."""
    if getattr(backend, "name", None) != "openai":
        raise ValueError("batch export writes OpenAI Batch-API requests: use --model openai")
    parts: List[List[bytes]] = [[]]
    size = 0
    for _, line in batch_lines(backend, requests):
        data = line.encode("utf-8") + b"\n"
        if parts[-1] and (len(parts[-1]) >= max_lines or size + len(data) > max_bytes):
            parts.append([])
            size = 0
        parts[-1].append(data)
        size += len(data)
    paths = part_paths(output, len(parts))
    for path, lines in zip(paths, parts):
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.writelines(lines)
        os.replace(tmp, path)
    return [(path, len(lines)) for path, lines in zip(paths, parts)]


# ----------------------------------------------------------------------------
# import
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportReport:
    """What an import did: answers stored, requests still unanswered, and one message per bad line."""

    stored: int
    missing: int
    errors: Tuple[str, ...]


def read_results(paths: Sequence[str], expected: Dict[str, Any]) -> Tuple[Dict[str, Tuple[Dict[str, Any], str]], List[str]]:
    """custom_id -> (response body, where) of every good line; and one error per bad line.

    ``expected`` maps the custom_ids of the run; a line whose id is unknown, repeated with
    another body, failed, or not a Batch result object is an error naming ``FILE:LINE``.
    """
    bodies: Dict[str, Tuple[Dict[str, Any], str]] = {}
    errors: List[str] = []
    for path in paths:
        try:
            handle = open(path, encoding="utf-8")
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        with handle:
            for number, raw in enumerate(handle, 1):
                where = f"{path}:{number}"
                if not raw.strip():
                    continue
                try:
                    custom_id, body = _result_body(raw)
                except ValueError as exc:
                    errors.append(f"{where}: {exc}")
                    continue
                if custom_id not in expected:
                    errors.append(f"{where}: custom_id {custom_id[:80]!r} is not a request of this run "
                                  "(export and import must name the same model, sub-benchmarks and datasets)")
                elif custom_id in bodies and bodies[custom_id][0] != body:
                    errors.append(f"{where}: custom_id {custom_id} repeats {bodies[custom_id][1]} with another answer")
                else:
                    bodies.setdefault(custom_id, (body, where))
    return bodies, errors


def _result_body(raw: str) -> Tuple[str, Dict[str, Any]]:
    """(custom_id, response body) of one Batch result line, or ValueError saying what is wrong."""
    try:
        line = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(line, dict):
        raise ValueError(f"expected a JSON object with custom_id and response, got {type(line).__name__}")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise ValueError("no custom_id string")
    error = line.get("error")
    if error:
        detail = error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
        raise ValueError(f"custom_id {custom_id} failed: {_one_line(detail)[:200]}")
    response = line.get("response")
    if not isinstance(response, dict):
        raise ValueError(f"custom_id {custom_id} has no response object")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        message = body.get("error", body) if isinstance(body, dict) else body
        raise ValueError(f"custom_id {custom_id} has HTTP status {status}: {_one_line(json.dumps(message))[:200]}")
    if not isinstance(body, dict):
        raise ValueError(f"custom_id {custom_id} has a response body that is not a JSON object")
    return custom_id, body


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def import_batch(backend: Any, requests: Sequence[Request], paths: Sequence[str], cache: Any) -> ImportReport:
    """Store in ``cache`` the answers of every request whose Batch results are all present and valid."""
    jobs: Dict[str, List[str]] = {}
    expected: Dict[str, Request] = {}
    for custom_id, _ in batch_lines(backend, requests):
        key = custom_id.split("/", 1)[0]
        jobs.setdefault(key, []).append(custom_id)
    by_key = {r.key(): r for r in requests}
    for key, ids in jobs.items():
        for custom_id in ids:
            expected[custom_id] = by_key[key]
    bodies, errors = read_results(paths, expected)
    answered: List[Request] = []
    answers: List[Answer] = []
    missing = 0
    for key, ids in jobs.items():
        if not all(i in bodies for i in ids):
            missing += 1
            continue
        request = by_key[key]
        try:
            answers.append(_answer(backend, request, [bodies[i][0] for i in ids]))
            answered.append(request)
        except (ValueError, RuntimeError, TypeError) as exc:
            errors.append(f"{bodies[ids[0]][1]}: custom_id {ids[0]}: {_one_line(str(exc))[:300]}")
    if answered:
        cache.register_model(backend.fingerprint(), backend.identity())
        cache.store(backend.fingerprint(), answered, answers)
    return ImportReport(len(answered), missing, tuple(errors))


def _answer(backend: Any, request: Request, bodies: List[Dict[str, Any]]) -> Answer:
    """The answer a direct run computes from these response bodies (validated like a direct answer)."""
    from ..backends.openai import scoring_jobs
    from ..backends.scores import answers_from_scores
    from ..engine.scoring import check_output
    if backend.scoring == "generate":
        path, _ = backend.generation_request(request)
        answer = backend.mapper.answer(request, backend.generated_text(bodies[0], path))
    else:
        values = [backend.score_echo(body, context, continuation)
                  for body, (_, context, continuation) in zip(bodies, scoring_jobs([request]))]
        answer = answers_from_scores([request], values)[0]
    prediction = check_output(answer.prediction, len(request.label_space), request.dataset, request.query_index)
    return Answer(prediction, answer.text, answer.parsed)


def unanswered(backend: Any, requests: Sequence[Request], cache: Optional[Any]) -> List[Request]:
    """The distinct requests not yet in ``cache`` for this backend (all of them without a cache), in order."""
    distinct = list({r.key(): r for r in requests}.values())
    if cache is None or not distinct:
        return distinct
    found = cache.lookup(backend.fingerprint(), distinct)
    return [r for r, answer in zip(distinct, found) if answer is None]
