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

Every rule here runs in time linear in the text: a hostile server sends answers and
error bodies of megabytes, and redaction runs on each of them.  The patterns can start
only where a name, or a URL's ``://``, starts (a one-character look-behind), so a long
run of letters is scanned once, not once per position; keys are found by a plain
substring search in a lower-cased copy of the same length.  Where only the start of a
text is shown (an error body), :func:`redact_prefix` redacts a bounded prefix.
"""
import functools
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
# ://userinfo@ inside any text (whatever the scheme); the user info ends at the last '@' before the host
_URL_USERINFO = re.compile(r"://(?P<info>[^/\s?#'\"]+)@")
# a secret-named name=value pair inside any text, as one regular expression that runs in linear time: a
# name starts where no name character precedes it (so a run is tried once), the name is read once,
# possessively (a look-ahead that captures it, then the capture: a look-ahead never backtracks), and it
# must hold a secret part (a part ending in a secret word, or one of the whole-part words) and not end in
# "_env".  A pair is matched wherever it stands (inside a ``name=URL`` value too): a name that is not
# secret consumes nothing.
_NAME_CHAR = r"[A-Za-z0-9_.\-]"
_VALUE_CHAR = r"[^&\s,;'\"#]"
_SECRET_PART = (r"(?:(?:key|token|secret|password)|(?<![A-Za-z0-9])(?:passwd|authorization|auth|credential"
                r"|signature|sig|session|cookie))(?![A-Za-z0-9])")
_NAME_START = rf"(?<!{_NAME_CHAR})(?={_NAME_CHAR})"
_SECRET_NAME = rf"(?=(?P<name>{_NAME_CHAR}*?{_SECRET_PART}{_NAME_CHAR}*)(?<!_env)=)"
# outside a URL a pair is a secret when it follows ?, &, ; or # (a query) or its value is as long as a key
_OUTSIDE_URL = rf"(?:(?<=[?&;#])|(?=(?P=name)={_VALUE_CHAR}{{{MIN_SECRET_LENGTH}}}))"
_SECRET_PAIR = re.compile(rf"(?P<head>{_NAME_START}{_SECRET_NAME}{_OUTSIDE_URL}(?P=name)=){_VALUE_CHAR}+",
                          re.IGNORECASE)
_SECRET_PAIR_IN_URL = re.compile(rf"(?P<head>{_NAME_START}{_SECRET_NAME}(?P=name)=){_VALUE_CHAR}+", re.IGNORECASE)
# a secret name holds one of these in its lower-cased form (most texts hold none, or few)
_STEMS = ("key", "token", "secret", "passw", "auth", "credential", "sig", "session", "cookie")
_NAME_RUN = re.compile(rf"{_NAME_CHAR}*", re.IGNORECASE)
#: with more than one secret word per this many characters, the whole text is substituted at once
_DENSE_STEMS = 16
# the characters that re.IGNORECASE matches to an ASCII letter besides A-Z (K is the Kelvin sign)
_FOLDS_TO_ASCII = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
#: characters redacted beyond a shown prefix, so that a secret cut by the prefix's end is still found
_PREFIX_MARGIN = 512


def is_secret_name(name: str) -> bool:
    """Whether an argument or query parameter called ``name`` holds a secret."""
    lowered = name.lower()
    if lowered.endswith("_env"):
        return False
    parts = re.split(r"[^a-z0-9]+", lowered)
    return any(part in SECRET_WORDS or part.endswith(_SECRET_ENDINGS) for part in parts)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    """:func:`is_secret_name`, remembered: a text repeats the same few names."""
    return is_secret_name(name)


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
    # every pair of a query string, a fragment or a path parameter (/v1;access_token=X) is a URL pair
    path = _redact_pairs(parts.path, always=True)
    query = _redact_pairs("?" + parts.query)[1:]
    fragment = _redact_pairs("?" + parts.fragment)[1:]
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, query, fragment))


def redact_text(text: Any, secrets: Iterable[str] = ()) -> Any:
    """``text`` without registered or given secrets (any case), URL user info, or secret query values."""
    if not isinstance(text, str):
        return text
    for secret in list(secrets) + registered_secrets():
        if isinstance(secret, str) and len(secret) >= MIN_SECRET_LENGTH:
            text = _mask_any_case(text, secret)
    if "@" in text and "://" in text:  # substring tests (memchr speed) spare the patterns most texts
        text = _URL_USERINFO.sub("://" + MASK + "@", text)
    return _redact_pairs(text)


def redact_prefix(text: Any, limit: int, secrets: Iterable[str] = ()) -> Any:
    """The first ``limit`` characters of ``text``, redacted: the cost of a shown error body is bounded by
    what is shown, and a secret that the cut would halve is redacted first (the prefix redacted is
    longer than the longest secret)."""
    if not isinstance(text, str):
        return text
    secrets = list(secrets)
    margin = max([_PREFIX_MARGIN] + [len(s) for s in secrets + registered_secrets() if isinstance(s, str)])
    return redact_text(text[:limit + margin], secrets)[:limit]


def _mask_any_case(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret``, in any letter case, replaced by :data:`MASK`.

    As ``re.sub(..., flags=re.IGNORECASE)`` would, but by substring search in a lower-cased
    copy: linear, where the case-blind regex compares at every position.  A non-ASCII key
    (or a text whose lower-casing changes its length) takes the regex.
    """
    probe = text
    for special, ascii_letter in _FOLDS_TO_ASCII:
        if special in probe:
            probe = probe.replace(special, ascii_letter)
    probe = probe.lower()
    if not secret.isascii() or len(probe) != len(text):
        return re.sub(re.escape(secret), MASK, text, flags=re.IGNORECASE)
    needle = secret.lower()
    pieces: List[str] = []
    start = 0
    found = probe.find(needle)
    while found >= 0:
        pieces += [text[start:found], MASK]
        start = found + len(needle)
        found = probe.find(needle, start)
    return "".join(pieces) + text[start:] if pieces else text


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


def redact_json(value: Any, by_name: bool = True) -> Any:
    """A JSON value (tables, lists, texts, numbers) as it may be recorded: every text through
    :func:`redact_text` (keys too), and with ``by_name`` a secret-named table entry's value replaced."""
    if isinstance(value, dict):
        return {redact_text(str(name)): REDACTED if by_name and is_secret_name(str(name))
                else redact_json(item, by_name) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(item, by_name) for item in value]
    return redact_text(value)


def redact_command(argv: Iterable[Any]) -> List[Any]:
    """A command line as it may be recorded or printed: each argument through :func:`redact_text`."""
    return [redact_text(argument) for argument in argv]


def _redact_pairs(text: str, always: bool = False) -> str:
    """Secret-named ``name=value`` pairs with the value masked: always in a query string, a fragment or a
    path parameter (after ``?``, ``&``, ``#`` or ``;``, or anywhere with ``always``), elsewhere only when the
    value is long enough to be a key (so that a message such as "expected key=value" stays readable).

    A secret name holds a secret word: where the words are rare (most texts) the pattern is tried only at
    the start of each name run that holds one, and the text between is skipped at C speed; where they
    are frequent, one substitution over the whole text costs less.  Both find the same pairs.
    """
    if "=" not in text:
        return text
    pattern = _SECRET_PAIR_IN_URL if always else _SECRET_PAIR
    probe = _folded_lower(text)
    stems = sum(probe.count(stem) for stem in _STEMS)
    if not stems:
        return text
    if stems * _DENSE_STEMS > len(text) or len(probe) != len(text):
        return pattern.sub(r"\g<head>" + MASK, text)
    pieces: List[str] = []
    last, reverse, size = 0, text[::-1], len(text)
    for stem in re.finditer("|".join(_STEMS), probe):
        start = stem.start() - _NAME_RUN.match(reverse, size - stem.start()).end() + size - stem.start()
        if start < last:
            continue
        match = pattern.match(text, start)
        if match is not None:
            pieces += [text[last:match.end("head")], MASK]
            last = match.end()
    return "".join(pieces) + text[last:] if pieces else text


def _folded_lower(text: str) -> str:
    """``text`` lower-cased with the few non-ASCII letters that match an ASCII one case-blind folded to it."""
    for special, ascii_letter in _FOLDS_TO_ASCII:
        if special in text:
            text = text.replace(special, ascii_letter)
    return text.lower()
