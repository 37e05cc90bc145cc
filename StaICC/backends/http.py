"""The one HTTP client of StaICC's server backends: JSON POSTs with hard limits.

Why a client of our own rather than bare ``urllib``: urllib follows a redirect to any
host *with the Authorization header*, has no bound on the whole request (a server
that drips one byte per half second holds a socket timeout forever) and reads any
body size into memory.  This client:

* never follows a redirect: a 3xx answer is an error naming the new address (the
  credentials would go with it), so a key cannot reach another origin;
* bounds each request by ``deadline`` seconds in total — connecting, sending, waiting,
  reading, every retry and every backoff pause included — by shutting the socket down
  from a watchdog when the time is up, on top of ``timeout`` per socket operation;
* refuses an answer larger than ``max_response_bytes`` (announced or read) without
  holding more than that in memory;
* reads ``Retry-After`` sanely: a negative, NaN or unparsable value falls back to the
  exponential backoff, a huge one is capped at :data:`MAX_BACKOFF_SECONDS`, and a wait
  beyond the deadline ends the request at once;
* sends URL user info (``http://user:password@host``) as a Basic header, never in the
  request line, and prints every URL and error body redacted
  (:mod:`StaICC.backends.secrets`).

Standard library only (``urllib`` keeps the environment's proxy settings).
"""
import base64
import contextlib
import email.utils
import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .secrets import is_secret_name, redact_prefix, redact_text, redact_url, register_secret
from ..errors import StaICCError

#: HTTP statuses worth retrying: rate limiting and server-side failures
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 60.0
#: defaults of the limits (documented in docs/security.md)
DEFAULT_TIMEOUT = 120.0
DEFAULT_DEADLINE = 600.0
DEFAULT_MAX_RESPONSE_BYTES = 64 << 20
_READ_CHUNK = 1 << 16
_ERROR_BODY_BYTES = 1 << 16


class APIError(StaICCError, RuntimeError):
    """The server refused or failed a request after the allowed retries, or broke a limit."""


@dataclass(frozen=True)
class Limits:
    """How long and how much one request may take."""

    timeout: float = DEFAULT_TIMEOUT          # seconds per socket operation
    deadline: float = DEFAULT_DEADLINE        # seconds for the whole request, retries included
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    retries: int = 5
    backoff: float = 1.0                      # first pause; doubles per retry


class _Redirected(Exception):
    def __init__(self, status: int, location: str) -> None:
        super().__init__(status, location)
        self.status, self.location = status, location


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every redirect becomes an error: the request's headers (the key) would follow it.

    Each redirect status is handled here, not through ``redirect_request``: Python 3.9's
    handler knows no 308, which would otherwise surface as a bare HTTP error.
    """

    def _refuse(self, req: Any, fp: Any, code: int, _msg: str, headers: Any) -> None:
        location = (headers.get("Location") or headers.get("URI") or "") if headers else ""
        fp.close()
        raise _Redirected(code, urllib.parse.urljoin(req.full_url, location))

    http_error_301 = http_error_302 = http_error_303 = http_error_307 = http_error_308 = _refuse


class _Watchdog:
    """Shuts the request's socket down when its deadline passes (a blocked read then returns)."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._socket: Optional[socket.socket] = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._socket = sock
            if self.expired:
                _shutdown(sock)
        return sock

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            if self._socket is not None:
                _shutdown(self._socket)

    def cancel(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type, watchdog: _Watchdog) -> type:
    """A connection class whose sockets the watchdog can shut down."""
    class Watched(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            create = self._create_connection
            self._create_connection = lambda *a, **k: watchdog.attach(create(*a, **k))
    return Watched


class _Handler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPConnection, self.watchdog), req)


class _SecureHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def https_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPSConnection, self.watchdog), req, context=self._context)


def split_credentials(url: str) -> Tuple[str, Optional[str]]:
    """(``url`` without user info, a Basic ``Authorization`` value or None)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    info, _, host = parts.netloc.rpartition("@")
    user, _, password = info.partition(":")
    token = base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()).decode()
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), "Basic " + token


def _url_secrets(url: str) -> List[str]:
    """The password of the URL's user info and the values of its secret-named query and path parameters."""
    parts = urllib.parse.urlsplit(url)
    found = []
    if "@" in parts.netloc:
        info = parts.netloc.rpartition("@")[0]
        found.append(urllib.parse.unquote(info.partition(":")[2]))
    found += [value for name, value in urllib.parse.parse_qsl(parts.query) if is_secret_name(name)]
    for segment in parts.path.split("/"):  # path parameters: /v1;access_token=X
        for parameter in segment.split(";")[1:]:
            name, _, value = parameter.partition("=")
            if is_secret_name(name):
                found.append(urllib.parse.unquote(value))
    return [value for value in found if value]


class PairedDict(dict):
    """A JSON object that named a key twice: its dict, and every ``(key, value)`` in ``pairs`` (a token listed
    twice in a completions server's ``top_logprobs`` object must be seen)."""


def object_pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: a plain dict, or a :class:`PairedDict` where a key repeats."""
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    paired = PairedDict(value)
    paired.pairs = pairs  # type: ignore[attr-defined]
    return paired


def join_url(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` appended to its path (its query string kept after it)."""
    parts = urllib.parse.urlsplit(base_url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, ""))


def retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds a ``Retry-After`` header asks for; None (use the own backoff) when it is unusable.

    A number or an HTTP date; negative, NaN or unparsable values are ignored, infinite or
    huge ones capped at :data:`MAX_BACKOFF_SECONDS`.
    """
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if moment is None or moment.tzinfo is None:
            return None
        seconds = moment.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_BACKOFF_SECONDS)


class JSONClient:
    """POSTs JSON to one server under :class:`Limits`; errors are :class:`APIError`, redacted.

    ``headers`` are sent with every request (an ``Authorization`` among them);
    ``secrets`` are removed from every message; ``hint(status)`` adds advice to an error.
    """

    def __init__(self, base_url: str, *, limits: Limits, headers: Optional[Dict[str, str]] = None,
                 secrets: Iterable[str] = (), hint: Optional[Callable[[int], str]] = None) -> None:
        self.base_url, basic = split_credentials(base_url)
        self.limits = limits
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        if basic is not None and "Authorization" not in self.headers:
            self.headers["Authorization"] = basic
        self.secrets = [s for s in secrets if s] + _url_secrets(base_url) + ([basic.split(" ", 1)[1]] if basic else [])
        for secret in self.secrets:
            register_secret(secret)  # so that the command line's error printer redacts them too
        self.hint = hint or (lambda _status: "")

    def redact(self, text: str) -> str:
        return redact_text(text, self.secrets)

    def post(self, path: str, body: Dict[str, Any], read: Optional[Callable[[Dict[str, Any]], Any]] = None) -> Any:
        """POST ``body`` to ``base_url + path``; retries 429/5xx/timeouts within the deadline.

        ``read`` (the decoded answer -> what the caller keeps: a generated text, redacted) runs
        inside the same deadline: a result that is ready only after it is an error, not an answer.
        """
        url = join_url(self.base_url, path)
        shown = redact_url(url)
        data = json.dumps(body).encode("utf-8")
        limits = self.limits
        end = time.monotonic() + limits.deadline
        attempt = 0
        while True:
            wait: Optional[float] = None
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise self._over_deadline(shown, attempt)
            try:
                value = self._decoded(self._attempt(url, data, remaining), shown)
                kept = value if read is None else read(value)
                if time.monotonic() > end:
                    raise self._over_deadline(shown, attempt + 1, "; the answer was read after it")
                return kept
            except _Redirected as redirect:
                raise APIError(f"POST {shown} was redirected (HTTP {redirect.status}) to "
                               f"{self.redact(redact_url(redirect.location))}; StaICC does not follow redirects "
                               "(the credentials would go with them): set base_url to the final address") from None
            except _Status as status:
                if status.code not in RETRY_STATUSES or attempt >= limits.retries:
                    raise APIError(self._status_message(shown, status.code, status.message, attempt)) from None
                wait = retry_after(status.retry_after)
            except _DeadlinePassed:
                raise self._over_deadline(shown, attempt + 1) from None
            except (socket.timeout, TimeoutError, urllib.error.URLError, http.client.HTTPException,
                    ConnectionError, OSError) as error:
                reason = getattr(error, "reason", error)
                if isinstance(reason, ConnectionRefusedError):  # nothing listens there: waiting will not help
                    raise APIError(f"POST {shown}: connection refused (not retried): is the server running at "
                                   f"{urllib.parse.urlsplit(url).netloc.rpartition('@')[2]}? Start it, or fix "
                                   "base_url") from None
                if attempt >= limits.retries:
                    raise APIError(f"POST {shown} failed after {attempt + 1} attempt(s): "
                                   f"{self.redact(str(reason)) or type(reason).__name__} "
                                   f"(timeout={limits.timeout:g}s; is the server running?)") from None
            delay = min(MAX_BACKOFF_SECONDS, wait if wait is not None else limits.backoff * (2 ** attempt))
            if delay >= end - time.monotonic():
                raise self._over_deadline(shown, attempt + 1, f"; the next retry would start after {delay:g} s")
            attempt += 1
            time.sleep(delay)

    def _attempt(self, url: str, data: bytes, seconds: float) -> bytes:
        """One request under a watchdog of ``seconds``: the body, at most ``max_response_bytes``.

        An error status's body is read here too, under the same watchdog: a server that drips
        it is cut off at the deadline like one that drips an answer.
        """
        watchdog = _Watchdog(seconds)
        try:
            opener = urllib.request.build_opener(_NoRedirects(), _Handler(watchdog), _SecureHandler(watchdog))
            request = urllib.request.Request(url, data=data, headers=self.headers, method="POST")
            try:
                try:
                    with opener.open(request, timeout=min(self.limits.timeout, max(seconds, 0.001))) as response:
                        return self._read(response, url, watchdog)
                except urllib.error.HTTPError as error:
                    with contextlib.closing(error):
                        body = _error_body(error)
                    if watchdog.expired:
                        raise _DeadlinePassed() from None
                    retry = error.headers.get("Retry-After") if error.headers else None
                    raise _Status(error.code, self.redact_shown(body, 300), retry) from None
            except (OSError, http.client.HTTPException):
                if watchdog.expired:
                    raise _DeadlinePassed() from None
                raise
        finally:
            watchdog.cancel()

    def redact_shown(self, text: str, limit: int) -> str:
        """The first ``limit`` characters of ``text``, redacted (the cost bounded by what is shown)."""
        return redact_prefix(text, limit, self.secrets)

    def _read(self, response: Any, url: str, watchdog: _Watchdog) -> bytes:
        limit = self.limits.max_response_bytes
        announced = response.headers.get("Content-Length")
        if announced is not None and announced.strip().isdigit() and int(announced) > limit:
            raise APIError(f"POST {redact_url(url)} announced a {int(announced)}-byte answer, over "
                           f"max_response_bytes={limit}; raise it if the answer is expected")
        chunks, total = [], 0
        while True:
            chunk = response.read1(_READ_CHUNK)
            if watchdog.expired:
                raise _DeadlinePassed()
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise APIError(f"POST {redact_url(url)} sent more than max_response_bytes={limit} bytes; "
                               "the answer was dropped (raise the limit if it is expected)")
            chunks.append(chunk)
        return b"".join(chunks)

    def _decoded(self, raw: bytes, shown: str) -> Dict[str, Any]:
        try:
            value = json.loads(raw.decode("utf-8"), object_pairs_hook=object_pairs)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise APIError(f"POST {shown} returned malformed JSON: "
                           f"{self.redact_shown(raw[:1024].decode('utf-8', 'replace'), 200)!r}") from None
        if not isinstance(value, dict):
            raise APIError(f"POST {shown} returned JSON {type(value).__name__}, expected an object")
        if "error" in value and "choices" not in value:
            raise APIError(f"POST {shown} returned an error: {self.redact_shown(_json_text(value['error']), 300)}")
        return value

    def _status_message(self, shown: str, status: int, message: str, attempt: int) -> str:
        return (f"POST {shown} failed with HTTP {status} after {attempt + 1} attempt(s): "
                f"{' '.join(message.split())}" + self.hint(status))

    def _over_deadline(self, shown: str, attempts: int, detail: str = "") -> APIError:
        return APIError(f"POST {shown} got no complete answer within deadline={self.limits.deadline:g}s "
                        f"({attempts} attempt(s){detail}); raise deadline= if the server is just slow")


class _DeadlinePassed(Exception):
    """The watchdog shut the socket down."""


class _Status(Exception):
    """An HTTP error status, with its body's message (read under the deadline, redacted) and Retry-After."""

    def __init__(self, code: int, message: str, retry_after: Optional[str]) -> None:
        super().__init__(code)
        self.code, self.message, self.retry_after = code, message, retry_after


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return repr(type(value))


def _error_body(error: urllib.error.HTTPError) -> str:
    """The message of an error status's body: its first :data:`_ERROR_BODY_BYTES` bytes, read once."""
    try:
        raw = error.read(_ERROR_BODY_BYTES).decode("utf-8", "replace")
    except Exception:  # the body is a courtesy; the status is what matters
        return ""
    try:
        value = json.loads(raw)
        if isinstance(value, dict) and "error" in value:
            inner = value["error"]
            return str(inner.get("message", _json_text(inner))) if isinstance(inner, dict) else str(inner)
    except (ValueError, RecursionError):
        pass
    return raw.strip()
