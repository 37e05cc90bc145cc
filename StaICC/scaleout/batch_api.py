"""The OpenAI Batch API: a run's distinct requests as JSONL, and the Batch results read back into a cache.

Export writes one line per HTTP request the ``openai`` backend would send, with the body it
would send (``scoring=top_logprobs``: one answer token and its top-k list per prompt; ``vllm run-batch`` reads the format but serves only the chat route, so only a chat
generate-mode export goes through it; the log-probability modes' ``/v1/completions`` lines do not)::

    {"custom_id": TAG:KEY, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

``KEY`` is the request's cache key (:meth:`StaICC.requests.Request.key`); ``TAG`` is the
start of the backend's fingerprint, so that every line says which model (and which
model settings) it was exported for.  A log-probability scoring mode sends one echo
request per label (per prompt for noisy channel): its ``custom_id`` is ``TAG:KEY/J`` for
the J-th.  Files are split before 50,000 lines or 100 MB, the Batch API's limits per
file, and streamed to disk as they are written (nothing is held whole in memory).

Import (:mod:`StaICC.scaleout.batch_results`) joins result lines to the run's requests by
``custom_id``, checks that each belongs to this export and was answered by this model,
reads each body with the backend's own response parser (the same code a direct run uses,
so the answers are the same), applies the backend's policy for generated answers that
name no label, and stores the answers under the backend's fingerprint.
"""
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..requests import Request
from ..results.jsonl import jsonl_line

MAX_LINES = 50_000
MAX_BYTES = 100 * 1000 * 1000
#: characters of the backend's fingerprint that tag every custom_id of an export
TAG_LENGTH = 16
#: requests looked up in the cache at once while an export streams
_LOOKUP_CHUNK = 4096

#: (custom_id, request, (context, continuation or None) of an echo request, or None for a generated answer)
Entry = Tuple[str, Request, Optional[Tuple[str, Optional[str]]]]


def export_tag(backend: Any) -> str:
    """What every custom_id of ``backend``'s export starts with: its fingerprint's first characters."""
    return backend.fingerprint()[:TAG_LENGTH]


def export_entries(backend: Any, requests: Iterable[Request]) -> Iterator[Entry]:
    """Every Batch-API request needed to answer ``requests``, as :data:`Entry` tuples, in order."""
    from ..backends.openai_labels import scoring_jobs
    tag = export_tag(backend)
    for request in requests:
        key = request.key()
        if backend.scoring in ("generate", "top_logprobs"):  # one request per prompt
            yield f"{tag}:{key}", request, None
        else:
            for j, (_, context, continuation) in enumerate(scoring_jobs([request])):
                yield f"{tag}:{key}/{j}", request, (context, continuation)


def batch_lines(backend: Any, requests: Iterable[Request]) -> Iterator[Tuple[str, str]]:
    """(custom_id, JSON line) of every Batch-API request needed to answer ``requests``."""
    for custom_id, request, echo in export_entries(backend, requests):
        if backend.scoring == "top_logprobs":
            path, body = backend.top_request(request)
        elif echo is None:
            path, body = backend.generation_request(request)
        else:
            path, body = "/completions", backend.echo_body(echo[0] + (echo[1] or ""))
        yield custom_id, _line(custom_id, path, body)


def _line(custom_id: str, path: str, body: Dict[str, Any]) -> str:
    return jsonl_line({"custom_id": custom_id, "method": "POST", "url": "/v1" + path, "body": body},
                      ensure_ascii=False, separators=(",", ":"))


def part_paths(output: str, parts: int) -> List[str]:
    """``requests.jsonl`` for one part, else ``requests-00001.jsonl``, ``requests-00002.jsonl``, ..."""
    if parts == 1:
        return [output]
    stem, ext = os.path.splitext(output)
    return [f"{stem}-{n:05d}{ext or '.jsonl'}" for n in range(1, parts + 1)]


def export_batch(backend: Any, requests: Iterable[Request], output: str, *, max_lines: int = MAX_LINES,
                 max_bytes: int = MAX_BYTES) -> List[Tuple[str, int]]:
    """Write the Batch-API files for ``requests`` (any iterable: it is streamed); (path, lines) per file.

    Each part is written to a unique temporary file beside ``output`` and renamed once the
    number of parts (and so each part's name) is known; a link planted at any name is
    replaced, never followed (:mod:`StaICC.results.safe_files`).  Nothing is written when
    there is no request.
    """
    from ..results.safe_files import PendingFile
    from ..backends.registry import capabilities
    if not capabilities(getattr(backend, "name", None)).batch_api:
        raise InvalidValueError("batch export writes OpenAI Batch-API requests: use --model openai")
    parts: List[List[Any]] = []  # [pending file, lines, bytes]
    try:
        for _, line in batch_lines(backend, requests):
            data = line.encode("utf-8") + b"\n"
            if not parts or parts[-1][1] >= max_lines or parts[-1][2] + len(data) > max_bytes:
                parts.append([PendingFile(output, binary=True), 0, 0])
            part = parts[-1]
            part[0].handle.write(data)
            part[1] += 1
            part[2] += len(data)
        paths = part_paths(output, len(parts)) if parts else []
        for (pending, _, _), path in zip(parts, paths):
            pending.commit(path)
    except BaseException:
        for pending, _, _ in parts:
            pending.discard()
        raise
    return [(path, lines) for path, (_, lines, _) in zip(paths, parts)]


def distinct_requests(works: Iterable[Any]) -> Iterator[Request]:
    """The distinct requests of planned works, in plan order, one work's prompts written at a time."""
    seen = set()
    for work in works:
        _plan, requests = work
        for request in requests:
            key = request.key()
            if key not in seen:
                seen.add(key)
                yield request


def unanswered(backend: Any, requests: Iterable[Request], cache: Optional[Any]) -> Iterator[Request]:
    """The distinct requests not yet in ``cache`` for this backend (all of them without a cache), in order,
    streamed: the cache is asked :data:`_LOOKUP_CHUNK` requests at a time."""
    distinct = distinct_requests([(None, requests)])
    if cache is None:
        yield from distinct
        return
    fingerprint = backend.fingerprint()
    chunk: List[Request] = []
    for request in distinct:
        chunk.append(request)
        if len(chunk) == _LOOKUP_CHUNK:
            yield from _not_cached(cache, fingerprint, chunk)
            chunk = []
    yield from _not_cached(cache, fingerprint, chunk)


def _not_cached(cache: Any, fingerprint: str, requests: Sequence[Request]) -> List[Request]:
    if not requests:
        return []
    return [r for r, answer in zip(requests, cache.lookup(fingerprint, list(requests))) if answer is None]

