"""Opening a cache file: the SQLite schema, the format checks and the refusals.

:class:`_CacheFile` is the part of :class:`~StaICC.cache.PredictionCache` that turns a
path into a verified connection: it creates the schema of a new cache (once, even when
several processes race), refuses a foreign, newer or damaged file without writing to
it, and turns SQLite's errors into :class:`CacheError` messages naming the file.  It is
kept apart from the lookups and stores so that the file-format rules read in one place.
"""
import datetime
import os
import sqlite3
import time
from typing import Any, Callable, Iterable, TypeVar
from ..errors import StaICCError

_T = TypeVar("_T")


def in_transaction(connection: sqlite3.Connection, work: Callable[[sqlite3.Connection], _T]) -> _T:
    """``work(connection)`` as one write transaction: taken with the write lock (``BEGIN IMMEDIATE``, so a
    busy file fails before any change), committed when it returns, rolled back when anything is raised."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = work(connection)
        connection.execute("COMMIT")
        return result
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise

#: ``PRAGMA application_id`` of every StaICC cache: the bytes "SICC".
APPLICATION_ID = 0x53494343
#: The schema this code writes and reads; a file with another ``user_version`` is refused.
#: Schema 2: an entry's CRC-32 covers the fingerprint of its model (schema 1's did not).
SCHEMA_VERSION = 2
#: The format name stored in the ``meta`` table.
FORMAT_NAME = "staicc-prediction-cache"
#: Seconds a process waits for another process's write lock before giving up.
DEFAULT_TIMEOUT = 60.0

#: the page cache of each connection, in KiB (SQLite's default is 2000)
_PAGE_CACHE_KIB = 32768

_SQLITE_MAGIC = b"SQLite format 3\x00"
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


class CacheError(StaICCError, ValueError):
    """The cache file cannot be used: foreign, newer, damaged, locked, unwritable, or a collision."""


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


class _CacheFile:
    """Opening and verifying the SQLite file of a cache; the subclass sets ``path`` and ``timeout``."""

    path: str
    timeout: float

    def _fail(self, what: str) -> CacheError:
        return CacheError(f"prediction cache {self.path!r}: {what}")

    def _open(self) -> sqlite3.Connection:
        path = self.path
        self._refuse_links(path)
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

    def _refuse_links(self, path: str) -> None:
        """A cache is opened at its own path only: SQLite would write through a symbolic link planted at the file's
        name or at one of its side files (journal, WAL), in a shared folder, into whatever the link points to, and
        through a hard link planted at a side file's name (a side file is SQLite's own, never linked elsewhere)."""
        for name in (path, path + "-journal", path + "-wal", path + "-shm"):
            if os.path.islink(name):
                raise self._fail(f"{os.path.basename(name)!r} is a symbolic link (to {os.readlink(name)!r}); a cache "
                                 "is never opened through a link: give the path of the file itself")
        for name in (path + "-journal", path + "-wal", path + "-shm"):
            try:
                links = os.lstat(name).st_nlink
            except OSError:
                continue
            if links > 1:
                raise self._fail(f"{os.path.basename(name)!r} is a hard link ({links} names for one file); SQLite "
                                 "would write the cache's journal into that other file: remove it, or give another "
                                 "cache path")

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
        # Tables first, then the id: another process creates both in one transaction, so once its
        # tables are visible its application_id is too.  Read the other way round, a commit landing
        # between the two reads showed "id 0 with tables" and refused a new cache as foreign.
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
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
        # Keys are hashes, so a run's lookups and stores touch pages all over the file; SQLite's
        # default page cache (2 MB) rereads them from the OS once the file outgrows it.  Pages are
        # allocated as they are read: a small file costs no more memory.
        connection.execute(f"PRAGMA cache_size = -{_PAGE_CACHE_KIB}")

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
            from ..version import __version__
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
        if 1 <= version < SCHEMA_VERSION:
            raise self._fail(f"was written by an older StaICC (cache schema {version}), whose entry checks do not "
                             "cover the model an answer belongs to, so a changed byte could serve one model's "
                             "answers to another; it is not read: move it away or delete it (the run then "
                             "recomputes its answers); the file was left unchanged")
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise self._fail(f"is damaged: the StaICC cache lacks its table(s) {', '.join(missing)}")
        meta = dict(connection.execute("SELECT name, value FROM meta"))
        if meta.get("format") != FORMAT_NAME or meta.get("schema") != str(version) or version < 1:
            raise self._fail(f"is damaged: its format marker reads format={meta.get('format')!r}, "
                             f"schema={meta.get('schema')!r}, user_version={version}")

    def _current_file_id(self) -> tuple:
        """(device, inode) of the path now: which file the name points to."""
        stat = os.stat(self.path)
        return stat.st_dev, stat.st_ino

    def _check_same_file(self) -> None:
        """The path still names the file that was opened: SQLite keeps writing to a deleted or
        replaced file through its open handle, and every answer stored after that would be lost."""
        try:
            now = self._current_file_id()
        except FileNotFoundError:
            raise self._fail("was deleted while in use; the answers stored since it was opened are lost with it "
                             "(StaICC does not recreate it silently): rerun to recompute them") from None
        except OSError as exc:
            raise self._fail(f"cannot be checked any more ({exc.strerror or exc})") from None
        if now != getattr(self, "_file_id", now):
            raise self._fail("was replaced by another file while in use; the answers stored in the file that was "
                             "opened are lost with it: rerun to use the new file")

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
