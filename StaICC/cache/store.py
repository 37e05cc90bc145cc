"""The :class:`PredictionCache` itself: lookup, store, model registry, statistics, closing.

Opening and verifying the file is inherited from :class:`~StaICC.cache.schema._CacheFile`;
the encoding of values and the digests come from :mod:`StaICC.cache.codec`.  This module
holds what a run does with an open cache.
"""
import contextlib
import datetime
import json
import os
import sqlite3
import threading
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..requests import Answer, Request
from ..validation import check, Real
from .batches import BatchRows, _check_fingerprint, _check_requests
from .codec import Digests, EntryProblem, _crc_prefix, _encode, _entry_crc, _stored_answers
from .schema import _COLLISION, DEFAULT_TIMEOUT, CacheError, _CacheFile, in_transaction

#: the ``meta`` rows that keep the settings a model's answers were computed under: this prefix + fingerprint
NUMERICS_PREFIX = "numerics "
_CHUNK = 500  # keys per ``IN (...)`` query: far below SQLite's variable limit, large enough to amortise


def numerics_row(fingerprint: str, records: List[Dict[str, Any]]) -> Tuple[str, str]:
    """The ``meta`` row (name, JSON) that keeps every setting ``records`` a model's answers were computed under."""
    return NUMERICS_PREFIX + fingerprint, json.dumps(records, sort_keys=True, default=str)


def _bound(model: int, rows: List[tuple]) -> List[Tuple[str, List[tuple]]]:
    """The INSERTs of ``rows`` (key, check, value, text, parsed, crc) under ``model``, with their parameters.

    sqlite3 looks for an adapter (three failed attribute lookups, a formatted error each) for
    every parameter that is not an exact int, float, str or bytearray: for ``bytes`` and for
    None, which made it a third of a store's cost.  Rows hold their bytes as bytearrays
    (stored as the same BLOBs: see :meth:`PredictionCache.store`), and entries without
    generated text (every scoring backend's) are written by a statement that holds their
    NULL.  A batch that repeats a key keeps its order (the first of a key is the one kept).
    """
    plain = [(model, key, check, value, parsed, crc) for key, check, value, text, parsed, crc in rows if text is None]
    if len(plain) == len(rows):
        return [(_INSERT_NO_TEXT, plain)]
    if plain and len({bytes(row[0]) for row in rows}) < len(rows):
        return [(_INSERT, [(model, *row) for row in rows])]
    texts = [(model, *row) for row in rows if row[3] is not None]
    return [(statement, chosen) for statement, chosen in ((_INSERT_NO_TEXT, plain), (_INSERT, texts)) if chosen]


_INSERT = ("INSERT OR IGNORE INTO predictions (model, content_key, check_key, value, text, parsed, crc) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)")
_INSERT_NO_TEXT = ("INSERT OR IGNORE INTO predictions (model, content_key, check_key, value, text, parsed, crc) "
                   "VALUES (?, ?, ?, ?, NULL, ?, ?)")


class PredictionCache(BatchRows, _CacheFile):
    """An SQLite file of model answers, shared safely by threads and processes.

    ``PredictionCache(path)`` creates the file or opens an existing StaICC cache; any
    other file is refused (see :mod:`StaICC.cache`).  ``timeout``: seconds to wait for
    another process's write lock before :class:`CacheError`.  Use it as a context
    manager or call :meth:`close`.  A cache object belongs to the process that opened
    it: open one per process (after a fork, open again in the child).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
            raise InvalidTypeError(f"the cache path must be a string or a path, got {type(path).__name__}")
        timeout = check(timeout, Real(0, closed="neither", finite=False, text="a positive number of seconds"), "timeout")
        self.path = os.fspath(path)
        if not self.path:
            raise InvalidValueError("the cache path is empty")
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._model_ids: Dict[str, int] = {}
        self._registered: Set[str] = set()  # fingerprints whose identity this object has committed
        self._connection: Optional[sqlite3.Connection] = None
        self._connection = self._open()
        self._file_id = self._current_file_id()

    # ------------------------------------------------------------------ use
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            raise self._fail("is closed")
        if os.getpid() != self._pid:
            raise self._fail("was opened in another process; open the cache again in each worker process")
        self._check_same_file()
        return self._connection

    def _model_id(self, connection: sqlite3.Connection, fingerprint: str) -> Optional[int]:
        model = self._model_ids.get(fingerprint)
        if model is None:
            row = connection.execute("SELECT id FROM models WHERE fingerprint = ?", (fingerprint,)).fetchone()
            if row is not None:
                model = self._model_ids[fingerprint] = row[0]
        return model

    def lookup(self, fingerprint: str, requests: Sequence[Request]) -> List[Optional[Answer]]:
        """The stored answer of each request for this model, or None where there is none.

        One read transaction and one ``IN (...)`` query per 500 distinct keys; every entry
        found is checked (its CRC, its BLAKE2b against the request's) before it is answered.
        """
        fingerprint = _check_fingerprint(fingerprint)
        requests = _check_requests(requests)
        if not requests:
            return []
        digests = [request.digests for request in requests]  # request_digests, without a call per request
        with self._lock:
            connection = self._db()
            try:
                rows = self._retry(lambda: self._select(connection, fingerprint, digests))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "looking answers up") from None
        if not rows:
            return [None] * len(requests)
        return self._answers(fingerprint, requests, digests, rows)

    def _select(self, connection: sqlite3.Connection, fingerprint: str,
                digests: List[Digests]) -> Dict[bytes, tuple]:
        """content key -> its stored row (content_key, check_key, value, text, parsed, crc), for this model."""
        rows: Dict[bytes, tuple] = {}
        connection.execute("BEGIN")  # one read snapshot for every chunk
        try:
            model = self._model_id(connection, fingerprint)
            if model is None:
                return rows
            keys = sorted({key for key, _check in digests})
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                query = ("SELECT content_key, check_key, value, text, parsed, crc FROM predictions "
                         f"WHERE model = ? AND content_key IN ({','.join('?' * len(chunk))})")
                for row in connection.execute(query, [model, *map(bytearray, chunk)]):  # bytearrays: see _bound
                    rows[row[0]] = row
        finally:
            connection.execute("COMMIT")
        return rows

    def _answers(self, fingerprint: str, requests: Sequence[Request], digests: List[Digests],
                 rows: Dict[bytes, tuple]) -> List[Optional[Answer]]:
        """Each request's answer from the rows found, every entry's CRC and BLAKE2b checked."""
        try:
            return _stored_answers(_crc_prefix(fingerprint), requests, digests, rows)
        except EntryProblem as problem:
            key, position = problem.key, problem.position
            if problem.kind == "collision":
                raise self._collision(key, position) from None
            if problem.kind == "crc":
                raise self._fail(f"is damaged: the entry of requests[{position}] (key {key.hex()}) fails its "
                                 "CRC check (which covers the model, the request and the answer: the file was "
                                 "edited or damaged); move the file away and rerun") from None
            if problem.kind == "vector":
                raise self._fail(f"is damaged: the entry with key {key.hex()} is not a vector of float32 "
                                 "values") from None
            raise self._fail(f"is damaged: the entry with key {key.hex()} does not fit its label space of "
                             f"{len(requests[position].label_space)}") from None

    def _collision(self, key: bytes, position: Optional[int] = None) -> CacheError:
        where = f"requests[{position}] " if position is not None else ""
        return self._fail(f"SHA-256 collision: {where}has content key {key.hex()}, as a stored entry for "
                          "different content (their BLAKE2b digests differ). This is astronomically unlikely "
                          "by chance: the file was probably edited; move it away")

    def store(self, fingerprint: str, requests: Sequence[Request], answers: Sequence[Answer]) -> int:
        """Store one answer per request for this model, in one transaction; the number of new entries.

        An entry already stored for the same model and content is kept (the first writer
        wins; concurrent writers of the same keys never fail).
        """
        fingerprint = _check_fingerprint(fingerprint)
        requests = _check_requests(requests)
        if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
            raise InvalidTypeError(f"answers must be a sequence of Answer, got {type(answers).__name__}")
        if len(answers) != len(requests):
            raise InvalidValueError(f"store got {len(answers)} answers for {len(requests)} requests; give one per request")
        if not requests:
            return 0
        rows = []
        append, prefix = rows.append, _crc_prefix(fingerprint)
        for position, (request, answer) in enumerate(zip(requests, answers)):
            value, text, parsed = _encode(request, answer, position)
            key, check = request.digests
            crc = _entry_crc(prefix, key, check, value, text, parsed)
            append((bytearray(key), bytearray(check), bytearray(value) if type(value) is bytes else value, text,
                    parsed, crc))  # bytearrays: see _bound
        with self._lock:
            connection = self._db()
            try:
                return self._retry(lambda: self._insert(connection, fingerprint, rows))
            except sqlite3.IntegrityError as exc:
                if _COLLISION in str(exc):
                    raise self._collision_in(connection, fingerprint, rows) from None
                raise self._database_error(exc, "storing answers") from None
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "storing answers") from None

    def _insert(self, connection: sqlite3.Connection, fingerprint: str, rows: List[tuple]) -> int:
        def insert(connection: sqlite3.Connection) -> int:
            model = self._ensure_model(connection, fingerprint)
            return sum(connection.executemany(statement, parameters).rowcount
                       for statement, parameters in _bound(model, rows))
        return in_transaction(connection, insert)

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
        """Record the identity a fingerprint stands for (provenance; the first identity stays).

        A run registers its model before every call that asks something; once this cache has
        recorded a fingerprint's identity, registering it again writes nothing.
        """
        fingerprint = _check_fingerprint(fingerprint)
        if not isinstance(identity, dict):
            raise InvalidTypeError(f"identity must be a dict (Backend.identity()), got {type(identity).__name__}")
        if fingerprint in self._registered:
            with self._lock:
                self._db()  # a closed, moved or deleted file still fails here
            return
        body = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

        def register(connection: sqlite3.Connection) -> None:
            self._ensure_model(connection, fingerprint, body)
            connection.execute("UPDATE models SET identity = ? WHERE fingerprint = ? AND identity IS NULL",
                               (body, fingerprint))

        with self._lock:
            connection = self._db()
            try:
                self._retry(lambda: in_transaction(connection, register))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "registering a model") from None
            self._registered.add(fingerprint)

    def models(self) -> List[Dict[str, Any]]:
        """Every model with entries or a registration: fingerprint, identity (or None), entries, created."""
        query = ("SELECT m.fingerprint, m.identity, m.created, "
                 "(SELECT COUNT(*) FROM predictions p WHERE p.model = m.id) FROM models m ORDER BY m.id")
        rows = self._read(query, "listing models")
        return [{"fingerprint": f, "identity": json.loads(i) if i is not None else None, "entries": n,
                 "created": c} for f, i, c, n in rows]

    def note_numerics(self, fingerprint: str, settings: Dict[str, Any]) -> None:
        """Keep, beside a model's answers, the settings they were computed under (each distinct one once,
        as JSON in the ``meta`` table): ``cache merge`` compares them (:mod:`StaICC.backends.numerics`)."""
        fingerprint = _check_fingerprint(fingerprint)
        name = NUMERICS_PREFIX + fingerprint

        def note(connection: sqlite3.Connection) -> None:
            row = connection.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
            known = json.loads(row[0]) if row is not None else []
            if settings not in known:
                known.append(settings)
                connection.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                                   numerics_row(fingerprint, known))

        with self._lock:
            connection = self._db()
            try:
                self._retry(lambda: in_transaction(connection, note))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "noting the numerics of answers") from None

    def numerics_notes(self) -> Dict[str, List[Dict[str, Any]]]:
        """Per model fingerprint, every setting its answers were computed under (see :meth:`note_numerics`)."""
        rows = self._read(f"SELECT name, value FROM meta WHERE name LIKE '{NUMERICS_PREFIX}%'", "reading numerics notes")
        notes = {}
        for name, value in rows:
            try:
                found = json.loads(value)
            except ValueError:
                raise self._fail(f"is damaged: its numerics note {name!r} is not JSON") from None
            notes[name[len(NUMERICS_PREFIX):]] = found if isinstance(found, list) else []
        return notes

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
        with contextlib.suppress(Exception):
            self.close()

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
    raise InvalidTypeError(f"cache must be a file path or a PredictionCache, got {type(cache).__name__}")

