"""Secrets never written: the one place that decides what is redacted and how.

A secret is a configured API key, the user info of a URL (``http://user:password@host``)
or the value of a query parameter whose name looks secret (``?api_key=...``,
``&token=...``).  Every text StaICC writes that could hold one — provenance, the
recorded command line, stdout, error messages, generated text stored in samples or the
cache — goes through :func:`redact_text` (or the narrower helpers below) first.

A key is redacted in any letter case: a server that echoes it upper-cased in an error
body must not leak it either.  Keys are registered by the backend that reads them
(:func:`register_secret`), so that the command line's error printer can redact them
without knowing which backend ran.
"""
import re
import threading
import urllib.parse
from typing import Any, Dict, Iterable, List, Set

#: words that make an argument or query-parameter name secret (``api_key_env`` names a variable: kept)
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "authorization", "auth", "credential",
                "signature", "sig", "session", "cookie")
#: a name part ending so is secret too (``apikey``, ``accesstoken``, ``clientsecret``)
_SECRET_ENDINGS = ("key", "token", "secret", "password")
REDACTED = "<redacted>"
#: what stands in for a secret found inside a text (a URL, an error body, generated text)
MASK = "***"
#: shorter values are not searched for in free text (redacting "1234" everywhere would garble numbers);
#: inside URLs they are still redacted, by position
MIN_SECRET_LENGTH = 8

_registered: Set[str] = set()
_lock = threading.Lock()
# scheme://userinfo@ inside any text; the user info ends at the last '@' before the host
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<info>[^/\s@?#'\"]+)@")
# name=value pairs of a query string or of K=V model arguments inside any text
_PAIR = re.compile(r"(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&\s,;'\"#]+)")


def is_secret_name(name: str) -> bool:
    """Whether an argument or query parameter called ``name`` holds a secret."""
    lowered = name.lower()
    if lowered.endswith("_env"):
        return False
    parts = re.split(r"[^a-z0-9]+", lowered)
    return any(part in SECRET_WORDS or part.endswith(_SECRET_ENDINGS) for part in parts)


def register_secret(value: Any) -> None:
    """Remember ``value`` (an API key) so that every later redaction removes it, in any case."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def registered_secrets() -> List[str]:
    with _lock:
        return sorted(_registered, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with its user info and every secret-looking query value replaced."""
    if not isinstance(url, str):
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return redact_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = _redact_pairs("?" + parts.query)[1:]  # every pair of a query string is a query pair
    fragment = _redact_pairs("?" + parts.fragment)[1:]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: Any, secrets: Iterable[str] = ()) -> Any:
    """``text`` without registered or given secrets (any case), URL user info, or secret query values."""
    if not isinstance(text, str):
        return text
    for secret in list(secrets) + registered_secrets():
        if isinstance(secret, str) and len(secret) >= MIN_SECRET_LENGTH:
            text = re.sub(re.escape(secret), MASK, text, flags=re.IGNORECASE)
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    return _redact_pairs(text)


def redact_arguments(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Model arguments with secret-named values replaced and URLs inside values cleaned."""
    clean: Dict[str, Any] = {}
    for name, value in arguments.items():
        if is_secret_name(str(name)):
            clean[name] = REDACTED
        elif isinstance(value, str):
            clean[name] = redact_text(value)
        else:
            clean[name] = value
    return clean


def redact_command(argv: Iterable[Any]) -> List[Any]:
    """A command line as it may be recorded or printed: each argument through :func:`redact_text`."""
    return [redact_text(argument) for argument in argv]


def _redact_pairs(text: str) -> str:
    """Secret-named ``name=value`` pairs with the value masked: always in a query string (after
    ``?``, ``&`` or ``;``), elsewhere only when the value is long enough to be a key (so that a
    message such as "expected key=value" stays readable)."""
    def mask(match: "re.Match[str]") -> str:
        before = text[match.start() - 1] if match.start() else ""
        secret = is_secret_name(match.group("name")) and \
            (before in ("?", "&", ";") or len(match.group("value")) >= MIN_SECRET_LENGTH)
        return match.group("name") + "=" + MASK if secret else match.group(0)
    return _PAIR.sub(mask, text)
