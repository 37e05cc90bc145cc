"""The prediction cache: one SQLite file that remembers every answer a model gave.

A run looks each request up before calling the model and stores the answers of every
model call at once, so a crashed or interrupted run loses at most the call in flight,
and a rerun (of the same or of another sub-benchmark that asks the same prompts)
reuses what was computed.  Several processes may share one file (one per GPU, several
workers against one server).

**Keys.**  An entry is keyed by the model's fingerprint and the request's content key
(:meth:`StaICC.requests.Request.key`: SHA-256 of the prompt(s) and the label space).
Everything that changes a model's outputs (weights, dtype, scoring mode, chat template)
is part of the backend's ``identity()`` and so of its fingerprint: an entry written for
one model is never returned for another.  Plain inference functions get their
fingerprint from :class:`StaICC.backends.base.FunctionBackend`: its ``model_id=`` when
given, else the function's qualified name and a hash of its code, which does *not*
change when a closure's captured model changes.  Pass ``model_id=`` whenever one function
body serves several models, or the cache will answer one model with another's outputs.

**Checks.**  Each entry also stores a BLAKE2b digest of the same canonical content: a
different BLAKE2b under an equal SHA-256 is a hash collision and raises
:class:`CacheError` (on lookup and on store).  A CRC-32 over the stored entry detects
bytes changed on disk, which SQLite itself does not checksum.

**Values.**  The validated prediction (an int label index, or little-endian IEEE-754
doubles, bit-exact, never pickled), the generated text and the parsed flag.

**Durability.**  WAL journal, ``synchronous=NORMAL``, one transaction per
:meth:`PredictionCache.store`.  A killed process (``kill -9``) loses at most the
transaction in flight and never corrupts the file.  On power loss or an OS crash the
last transactions committed before the crash may be rolled back (they were not yet
fsynced); the file still opens consistent.

**Refusals.**  A path that holds anything other than a StaICC cache (a JSON results file,
an old ``staicc-checkpoint-v1`` JSON checkpoint, another application's SQLite database,
random bytes, a whitespace-only file), a cache written by a newer StaICC, or a damaged
cache is refused with a :class:`CacheError` naming the file, and left untouched.  A
missing path or a zero-byte file (and an SQLite database with no tables) becomes a new
cache.  Opening checks the header, the format marker and the schema; damage deeper in
the file (SQLite's ``PRAGMA integrity_check`` is O(file size)) is reported when a lookup
or store reaches it, or by :meth:`PredictionCache.check`.
"""
import binascii
import datetime
import json
import os
import sqlite3
import struct
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .requests import Answer, Request

#: ``PRAGMA application_id`` of every StaICC cache: the bytes "SICC".
APPLICATION_ID = 0x53494343
#: The schema this code writes and reads; a file with a larger ``user_version`` is refused.
SCHEMA_VERSION = 1
#: The format name stored in the ``meta`` table.
FORMAT_NAME = "staicc-prediction-cache"
#: Seconds a process waits for another process's write lock before giving up.
DEFAULT_TIMEOUT = 60.0

_SQLITE_MAGIC = b"SQLite format 3\x00"
_CHUNK = 500  # keys per ``IN (...)`` query: far below SQLite's variable limit, large enough to amortise
_COLLISION = "staicc-cache: content key collision"

_SCHEMA = f"""
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE models (
    id          INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    identity    TEXT,               -- canonical JSON of the backend's identity(), when registered
    created     TEXT NOT NULL
);
CREATE TABLE predictions (
    model       INTEGER NOT NULL,   -- models.id
    content_key BLOB NOT NULL,      -- SHA-256 of the canonical prompt + label space (Request.key())
    check_key   BLOB NOT NULL,      -- BLAKE2b-64 of the same content: differs only on a SHA-256 collision
    value       ANY NOT NULL,       -- INTEGER label index, or BLOB of little-endian float64
    text        TEXT,               -- generated text (generative backends), else NULL
    parsed      INTEGER NOT NULL,   -- 1: the text named a label (always 1 for scoring backends)
    crc         INTEGER NOT NULL,   -- CRC-32 of the entry: detects bytes changed on disk
    PRIMARY KEY (model, content_key)
) WITHOUT ROWID;
CREATE TRIGGER predictions_collision BEFORE INSERT ON predictions
WHEN EXISTS (SELECT 1 FROM predictions
             WHERE model = NEW.model AND content_key = NEW.content_key AND check_key != NEW.check_key)
BEGIN SELECT RAISE(ABORT, '{_COLLISION}'); END;
"""
_TABLES = ("meta", "models", "predictions")


class CacheError(ValueError):
    """The cache file cannot be used: foreign, newer, damaged, locked, unwritable, or a collision."""


Digests = Tuple[bytes, bytes]
#: A string as json.dumps(..., ensure_ascii=False) writes it (the C function json itself calls).


def request_digests(request: Request) -> Digests:
    """(SHA-256, BLAKE2b-64) of the request's canonical content; the first is ``request.key()``."""
    return request.digests


_STRUCTS: Dict[int, struct.Struct] = {}


def _doubles(count: int) -> struct.Struct:
    packer = _STRUCTS.get(count)
    if packer is None:
        packer = _STRUCTS[count] = struct.Struct(f"<{count}d")
    return packer


def _crc(key: bytes, check: bytes, value: Union[int, bytes], text: Optional[str], parsed: int) -> int:
    """CRC-32 over every stored field of an entry (the model id excepted: it is part of the key)."""
    body = value if isinstance(value, bytes) else str(value).encode("ascii")
    crc = binascii.crc32(key)
    crc = binascii.crc32(check, crc)
    crc = binascii.crc32(body, crc)
    crc = binascii.crc32(b"\x00" if text is None else b"\x01" + text.encode("utf-8", "surrogatepass"), crc)
    return binascii.crc32(b"\x01" if parsed else b"\x00", crc)


def _encode(request: Request, answer: Any, position: int) -> Tuple[Union[int, bytes], Optional[str], int]:
    """An answer as (value, text, parsed), checked against the request's label space."""
    if not isinstance(answer, Answer):
        raise TypeError(f"answers[{position}] must be an Answer, got {type(answer).__name__}")
    labels = len(request.label_space)
    prediction = answer.prediction
    if isinstance(prediction, int) and not isinstance(prediction, bool):
        if not 0 <= prediction < labels:
            raise ValueError(f"answers[{position}] predicts label index {prediction}; "
                             f"the request has {labels} labels")
        value: Union[int, bytes] = prediction
    elif isinstance(prediction, (list, tuple)):
        if len(prediction) != labels:
            raise ValueError(f"answers[{position}] has {len(prediction)} scores; the request has {labels} labels")
        for score in prediction:
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise TypeError(f"answers[{position}] holds a non-numeric score {score!r}; "
                                "store validated predictions (floats)")
        value = _doubles(labels).pack(*prediction)
    else:
        raise TypeError(f"answers[{position}].prediction must be an int label index or a list of floats, "
                        f"got {type(prediction).__name__}; store validated predictions")
    text = answer.text
    if text is not None and not isinstance(text, str):
        raise TypeError(f"answers[{position}].text must be a string or None, got {type(text).__name__}")
    if not isinstance(answer.parsed, bool):
        raise TypeError(f"answers[{position}].parsed must be True or False, got {answer.parsed!r}")
    return value, text, int(answer.parsed)


def _check_fingerprint(fingerprint: Any) -> str:
    if not isinstance(fingerprint, str) or not fingerprint:
        raise TypeError(f"fingerprint must be a non-empty string (Backend.fingerprint()), got {fingerprint!r}")
    return fingerprint


def _check_requests(requests: Any) -> Sequence[Request]:
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Sequence):
        raise TypeError(f"requests must be a sequence of Request, got {type(requests).__name__}")
    for i, request in enumerate(requests):
        if not isinstance(request, Request):
            raise TypeError(f"requests[{i}] must be a Request, got {type(request).__name__}")
    return requests


def _describe_foreign(head: bytes) -> str:
    """What a file that does not start like an SQLite database looks like, for the refusal message."""
    stripped = head.lstrip()
    if not stripped:
        return "it holds only whitespace, not a database"
    if stripped[:1] in (b"{", b"["):
        if b"staicc-checkpoint-v1" in head:
            return ("it is an old StaICC JSON checkpoint (format staicc-checkpoint-v1). checkpoint= now "
                    "names an SQLite prediction cache: give a new path; the old file's predictions are "
                    "not imported")
        if b"staicc-results" in head:
            return "it is a StaICC results file (JSON), not a prediction cache"
        return "it is a JSON file, not a prediction cache"
    return f"it is not an SQLite database (it starts with {head[:16]!r})"


class PredictionCache:
    """An SQLite file of model answers, shared safely by threads and processes.

    ``PredictionCache(path)`` creates the file or opens an existing StaICC cache; any
    other file is refused (see the module docs).  ``timeout``: seconds to wait for
    another process's write lock before :class:`CacheError`.  Use it as a context
    manager or call :meth:`close`.  A cache object belongs to the process that opened
    it: open one per process (after a fork, open again in the child).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"the cache path must be a string or a path, got {type(path).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.path = os.fspath(path)
        if not self.path:
            raise ValueError("the cache path is empty")
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._model_ids: Dict[str, int] = {}
        # id(request) -> (request, digests) of the last lookup's misses: the store that usually
        # follows reuses them instead of hashing each prompt again (the request is held, so its id
        # cannot be reused by another object meanwhile)
        self._missed: Dict[int, Tuple[Request, Digests]] = {}
        self._connection: Optional[sqlite3.Connection] = None
        self._connection = self._open()

    # ------------------------------------------------------------------ opening
    def _fail(self, what: str) -> CacheError:
        return CacheError(f"prediction cache {self.path!r}: {what}")

    def _open(self) -> sqlite3.Connection:
        path = self.path
        if os.path.isdir(path):
            raise self._fail("is a directory; give a file path such as 'predictions.sqlite'")
        if os.path.exists(path):
            try:
                with open(path, "rb") as handle:
                    head = handle.read(4096)
            except OSError as exc:
                raise self._fail(f"cannot be read ({exc.strerror or exc})") from None
            if head and not head.startswith(_SQLITE_MAGIC):
                raise self._fail(_describe_foreign(head) + "; the file was left unchanged")
        else:
            directory = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(directory):
                raise self._fail(f"its directory {directory!r} does not exist")
        if not os.access(path if os.path.exists(path) else os.path.dirname(os.path.abspath(path)), os.W_OK):
            raise self._fail("is not writable (the cache needs write access to the file and its directory)")
        try:
            connection = sqlite3.connect(path, timeout=self.timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot be opened or created ({exc}); is the directory writable?") from None
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """Verify (or create) the schema; a foreign or newer file is never written to."""
        try:
            state = self._inspect(connection)
            if state == "empty":
                self._create(connection)
            else:
                self._verify(connection)
                self._settings(connection)
                if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # someone switched it off
                    self._retry(lambda: connection.execute("PRAGMA journal_mode = WAL"))
                connection.execute("BEGIN IMMEDIATE")  # proves the file is writable and lockable now,
                connection.execute("ROLLBACK")         # before any inference runs
        except sqlite3.DatabaseError as exc:
            raise self._database_error(exc, "opening") from None

    def _inspect(self, connection: sqlite3.Connection) -> str:
        """'ours' or 'empty'; anything else raises.  Reads only."""
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        if application_id == APPLICATION_ID:
            return "ours"
        if application_id == 0 and not tables:
            return "empty"
        if application_id == 0:
            raise self._fail(f"is an SQLite database of another application (tables: {', '.join(sorted(tables)[:8])})"
                             "; the file was left unchanged")
        raise self._fail(f"is an SQLite database of another application (application_id {application_id:#010x})"
                         "; the file was left unchanged")

    def _settings(self, connection: sqlite3.Connection) -> None:
        connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        connection.execute("PRAGMA synchronous = NORMAL")  # under WAL: durable against a killed process

    def _create(self, connection: sqlite3.Connection) -> None:
        """The schema of a new cache, written once even when several processes create it at once."""
        self._settings(connection)
        mode = self._retry(lambda: connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        if str(mode).lower() != "wal":
            raise self._fail(f"cannot use WAL journaling here (got {mode!r}); is it on a network file system?")
        self._retry(lambda: connection.execute("BEGIN IMMEDIATE"))
        try:
            if self._inspect(connection) == "ours":  # another process created it while we waited
                connection.execute("ROLLBACK")
                self._verify(connection)
                return
            from . import __version__
            for statement in _split_statements(_SCHEMA):
                connection.execute(statement)
            now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            connection.executemany("INSERT INTO meta (name, value) VALUES (?, ?)",
                                   [("format", FORMAT_NAME), ("schema", str(SCHEMA_VERSION)),
                                    ("created", now), ("staicc_version", __version__)])
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _verify(self, connection: sqlite3.Connection) -> None:
        """The format marker and schema of an existing StaICC cache."""
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise self._fail(f"was written by a newer StaICC (cache schema {version}); this StaICC reads schema "
                             f"{SCHEMA_VERSION}: upgrade StaICC; the file was left unchanged")
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise self._fail(f"is damaged: the StaICC cache lacks its table(s) {', '.join(missing)}")
        meta = dict(connection.execute("SELECT name, value FROM meta"))
        if meta.get("format") != FORMAT_NAME or meta.get("schema") != str(version) or version < 1:
            raise self._fail(f"is damaged: its format marker reads format={meta.get('format')!r}, "
                             f"schema={meta.get('schema')!r}, user_version={version}")

    def _retry(self, action: Any) -> Any:
        """Run ``action``, retrying while SQLite reports the file busy, up to ``timeout`` seconds."""
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def _database_error(self, exc: sqlite3.DatabaseError, doing: str) -> CacheError:
        message = str(exc)
        if _is_busy(exc):
            return self._fail(f"stayed locked by another process for more than {self.timeout:g} s while "
                              f"{doing}; is another run holding a long transaction?")
        if "malformed" in message or "not a database" in message or "corrupt" in message:
            return self._fail(f"is damaged ({message}) while {doing}; move the file away and rerun "
                              "(the run then recomputes its predictions)")
        if "readonly" in message or "read-only" in message:
            return self._fail(f"is not writable ({message}) while {doing}")
        return self._fail(f"SQLite error while {doing}: {message}")

    # ------------------------------------------------------------------ use
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            raise self._fail("is closed")
        if os.getpid() != self._pid:
            raise self._fail("was opened in another process; open the cache again in each worker process")
        return self._connection

    def _model_id(self, connection: sqlite3.Connection, fingerprint: str) -> Optional[int]:
        model = self._model_ids.get(fingerprint)
        if model is None:
            row = connection.execute("SELECT id FROM models WHERE fingerprint = ?", (fingerprint,)).fetchone()
            if row is not None:
                model = self._model_ids[fingerprint] = row[0]
        return model

    def lookup(self, fingerprint: str, requests: Sequence[Request]) -> List[Optional[Answer]]:
        """The stored answer of each request for this model, or None where there is none."""
        fingerprint = _check_fingerprint(fingerprint)
        requests = _check_requests(requests)
        if not requests:
            return []
        digests = [request_digests(r) for r in requests]
        with self._lock:
            connection = self._db()
            try:
                rows = self._retry(lambda: self._select(connection, fingerprint, digests))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "looking answers up") from None
        answers: List[Optional[Answer]] = []
        missed: Dict[int, Tuple[Request, Digests]] = {}
        for position, (request, (key, check)) in enumerate(zip(requests, digests)):
            row = rows.get(key)
            if row is None:
                answers.append(None)
                missed[id(request)] = (request, (key, check))
                continue
            stored_check, value, text, parsed, crc = row
            if _crc(key, stored_check, value, text, parsed) != crc:
                raise self._fail(f"is damaged: the entry of requests[{position}] (key {key.hex()}) fails its "
                                 "CRC check; move the file away and rerun")
            if stored_check != check:
                raise self._collision(key, position)
            answers.append(self._decode(value, text, parsed, len(request.label_space), key))
        self._missed = missed
        return answers

    def _select(self, connection: sqlite3.Connection, fingerprint: str,
                digests: List[Digests]) -> Dict[bytes, tuple]:
        rows: Dict[bytes, tuple] = {}
        connection.execute("BEGIN")  # one read snapshot for every chunk
        try:
            model = self._model_id(connection, fingerprint)
            if model is None:
                return rows
            keys = list(dict.fromkeys(key for key, _check in digests))
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                query = ("SELECT content_key, check_key, value, text, parsed, crc FROM predictions "
                         f"WHERE model = ? AND content_key IN ({','.join('?' * len(chunk))})")
                for key, *rest in connection.execute(query, [model, *chunk]):
                    rows[key] = tuple(rest)
        finally:
            connection.execute("COMMIT")
        return rows

    def _decode(self, value: Any, text: Optional[str], parsed: int, labels: int, key: bytes) -> Answer:
        if isinstance(value, int):
            prediction: Any = value
        elif isinstance(value, bytes) and len(value) == 8 * labels:
            prediction = list(_doubles(labels).unpack(value))
        else:
            raise self._fail(f"is damaged: the entry with key {key.hex()} does not fit its label space of {labels}")
        return Answer(prediction, text, bool(parsed))

    def _collision(self, key: bytes, position: Optional[int] = None) -> CacheError:
        where = f"requests[{position}] " if position is not None else ""
        return self._fail(f"SHA-256 collision: {where}has content key {key.hex()}, as a stored entry for "
                          "different content (their BLAKE2b digests differ). This is astronomically unlikely "
                          "by chance: the file was probably edited; move it away")

    def store(self, fingerprint: str, requests: Sequence[Request], answers: Sequence[Answer]) -> None:
        """Store one answer per request for this model, in one transaction.

        An entry already stored for the same model and content is kept (the first writer
        wins; concurrent writers of the same keys never fail).
        """
        fingerprint = _check_fingerprint(fingerprint)
        requests = _check_requests(requests)
        if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
            raise TypeError(f"answers must be a sequence of Answer, got {type(answers).__name__}")
        if len(answers) != len(requests):
            raise ValueError(f"store got {len(answers)} answers for {len(requests)} requests; give one per request")
        if not requests:
            return
        rows = []
        missed = self._missed
        for position, (request, answer) in enumerate(zip(requests, answers)):
            value, text, parsed = _encode(request, answer, position)
            known = missed.get(id(request))
            key, check = known[1] if known is not None and known[0] is request else request_digests(request)
            rows.append((key, check, value, text, parsed, _crc(key, check, value, text, parsed)))
        with self._lock:
            connection = self._db()
            try:
                self._retry(lambda: self._insert(connection, fingerprint, rows))
            except sqlite3.IntegrityError as exc:
                if _COLLISION in str(exc):
                    raise self._collision_in(connection, fingerprint, rows) from None
                raise self._database_error(exc, "storing answers") from None
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "storing answers") from None

    def _insert(self, connection: sqlite3.Connection, fingerprint: str, rows: List[tuple]) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            model = self._ensure_model(connection, fingerprint)
            connection.executemany(
                "INSERT OR IGNORE INTO predictions (model, content_key, check_key, value, text, parsed, crc) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", [(model, *row) for row in rows])
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _ensure_model(self, connection: sqlite3.Connection, fingerprint: str,
                      identity: Optional[str] = None) -> int:
        model = self._model_id(connection, fingerprint)
        if model is None:
            now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            connection.execute("INSERT OR IGNORE INTO models (fingerprint, identity, created) VALUES (?, ?, ?)",
                               (fingerprint, identity, now))
            model = connection.execute("SELECT id FROM models WHERE fingerprint = ?", (fingerprint,)).fetchone()[0]
            # remembered only once committed: a rolled-back id may be reused by another process
        return model

    def _collision_in(self, connection: sqlite3.Connection, fingerprint: str, rows: List[tuple]) -> CacheError:
        """The collision error, naming the first stored entry whose BLAKE2b differs from the batch's."""
        model = self._model_id(connection, fingerprint)
        for position, row in enumerate(rows):
            stored = connection.execute("SELECT check_key FROM predictions WHERE model = ? AND content_key = ?",
                                        (model, row[0])).fetchone()
            if stored is not None and stored[0] != row[1]:
                return self._collision(row[0], position)
        return self._fail("SHA-256 collision while storing answers")

    # ------------------------------------------------------------------ inspection
    def register_model(self, fingerprint: str, identity: Dict[str, Any]) -> None:
        """Record the identity a fingerprint stands for (provenance; the first identity stays)."""
        fingerprint = _check_fingerprint(fingerprint)
        if not isinstance(identity, dict):
            raise TypeError(f"identity must be a dict (Backend.identity()), got {type(identity).__name__}")
        body = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

        def register(connection: sqlite3.Connection) -> None:
            connection.execute("BEGIN IMMEDIATE")
            try:
                self._ensure_model(connection, fingerprint, body)
                connection.execute("UPDATE models SET identity = ? WHERE fingerprint = ? AND identity IS NULL",
                                   (body, fingerprint))
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise

        with self._lock:
            connection = self._db()
            try:
                self._retry(lambda: register(connection))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "registering a model") from None

    def models(self) -> List[Dict[str, Any]]:
        """Every model with entries or a registration: fingerprint, identity (or None), entries, created."""
        query = ("SELECT m.fingerprint, m.identity, m.created, "
                 "(SELECT COUNT(*) FROM predictions p WHERE p.model = m.id) FROM models m ORDER BY m.id")
        rows = self._read(query, "listing models")
        return [{"fingerprint": f, "identity": json.loads(i) if i is not None else None, "entries": n,
                 "created": c} for f, i, c, n in rows]

    def stats(self) -> Dict[str, Any]:
        """Entries, models and file size (bytes, WAL included)."""
        entries = self._read("SELECT COUNT(*) FROM predictions", "counting entries")[0][0]
        models = self._read("SELECT COUNT(*) FROM models", "counting models")[0][0]
        size = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return {"path": self.path, "entries": entries, "models": models, "bytes": size}

    def check(self) -> List[str]:
        """SQLite's full ``integrity_check`` (reads the whole file): [] when the file is sound."""
        rows = self._read("PRAGMA integrity_check", "checking integrity")
        return [] if [r[0] for r in rows] == ["ok"] else [str(r[0]) for r in rows]

    def _read(self, query: str, doing: str) -> List[tuple]:
        with self._lock:
            connection = self._db()
            try:
                return self._retry(lambda: connection.execute(query).fetchall())
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, doing) from None

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Close the file (idempotent).  The last process to close folds the WAL into the file."""
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None and os.getpid() == self._pid:
                connection.close()

    def __enter__(self) -> "PredictionCache":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._connection is None else "open"
        return f"PredictionCache({self.path!r}, {state})"


def open_cache(cache: Union[None, str, "os.PathLike[str]", PredictionCache]) -> Optional[PredictionCache]:
    """A cache from a path, a cache as it is, or None for no cache.

    The caller closes what this opened: close the result when it ``is not`` the argument.
    """
    if cache is None or isinstance(cache, PredictionCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return PredictionCache(cache)
    raise TypeError(f"cache must be a file path or a PredictionCache, got {type(cache).__name__}")


def _is_busy(exc: BaseException) -> bool:
    message = str(exc)
    return "locked" in message or "busy" in message


def _split_statements(script: str) -> Iterable[str]:
    """The schema's statements (a trigger body holds ';' — it ends at 'END;')."""
    statement = ""
    for line in script.strip().splitlines():
        statement += line + "\n"
        if sqlite3.complete_statement(statement):
            yield statement.strip()
            statement = ""
