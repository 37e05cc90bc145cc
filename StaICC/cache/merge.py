"""Merging prediction caches: the shard caches of a split run into one file, in SQL.

Each input is opened first as a cache (a foreign, newer or damaged file is refused as a run
would refuse it), and :func:`check_mergeable` compares what each input records about itself
with what the output records, before anything is copied.  Then the inputs are attached to the
output's connection and copied with one ``INSERT ... SELECT`` each, all inside one write
transaction on the output: a merge that fails, is interrupted or is killed leaves the output as
it was.

The checks ride along in that statement.  Every entry read is checked against its CRC (an
SQL function over the entry's fields and its model's fingerprint, as a lookup checks it), and
a temporary trigger refuses an entry whose (model, key) the output already holds — from
before the merge or from an earlier input — with a different stored answer (value bits,
text, parsed flag, check digest): a :class:`CacheError` naming the key and both files, never
a silent choice, because the results would then depend on the order of the inputs.

SQLite attaches at most 10 databases to a connection, the output included.  More than
:data:`MAX_ATTACHED` inputs are merged in groups into temporary caches beside the output,
which are then merged into it the same way, still in one transaction on the output.

The settings each input's answers were computed under (its numerics notes) are compared before
anything is written (:func:`StaICC.backends.numerics.merged_settings`): answers that can differ
beyond their last bits (another device, dtype or library version) are not mixed unless
``allow_mixed_numerics``; differences in the shape of the work only warn.  The merged notes are
written in the copy's transaction.
"""
import os
import sqlite3
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidValueError
from ..backends.numerics import merged_settings
from .codec import _crc_prefix, _entry_crc
from .schema import _COLLISION, CacheError
from .store import PredictionCache, numerics_row

PathLike = Union[str, "os.PathLike[str]"]
Notes = Dict[str, List[Dict[str, Any]]]  # model fingerprint -> the settings its answers were computed under

#: inputs attached at once: SQLite's limit of 10 attached databases, less the output itself
MAX_ATTACHED = 9

_CONFLICT = "staicc-cache: merge conflict"
_CONFLICT_TRIGGER = f"""
CREATE TEMP TRIGGER staicc_merge_conflict BEFORE INSERT ON main.predictions
WHEN EXISTS (SELECT 1 FROM main.predictions
             WHERE model = NEW.model AND content_key = NEW.content_key
               AND (check_key IS NOT NEW.check_key OR value IS NOT NEW.value OR text IS NOT NEW.text
                    OR parsed IS NOT NEW.parsed))
BEGIN SELECT RAISE(ABORT, '{_CONFLICT}'); END
"""
#: every entry of an attached input, under the output's id of its model, if its CRC holds
_COPY = """
INSERT OR IGNORE INTO main.predictions (model, content_key, check_key, value, text, parsed, crc)
SELECT mm.id, p.content_key, p.check_key, p.value, p.text, p.parsed, p.crc
FROM {source}.predictions p JOIN {source}.models sm ON sm.id = p.model
JOIN main.models mm ON mm.fingerprint = sm.fingerprint
WHERE staicc_entry_crc_holds(sm.fingerprint, p.content_key, p.check_key, p.value, p.text, p.parsed, p.crc)
"""
_ENTRY = ("SELECT p.check_key, p.value, p.text, p.parsed FROM predictions p JOIN models m ON m.id = p.model "
          "WHERE m.fingerprint = ? AND p.content_key = ?")


@dataclass(frozen=True)
class CacheFacts:
    """What a cache file records about itself: its ``meta`` table, its models (fingerprint -> identity) and
    the settings each model's answers were computed under (see :meth:`PredictionCache.numerics_notes`)."""

    path: str
    meta: Dict[str, str]
    models: Dict[str, Optional[str]]
    numerics: Notes = field(default_factory=dict)


def check_mergeable(target: CacheFacts, source: CacheFacts) -> None:
    """Refuse to copy ``source``'s answers into ``target`` when the files say they must not mix.

    Called for every input before any entry is copied.  Both files were opened as caches of
    this StaICC's format; their format markers must also agree with each other.
    """
    for name in ("format", "schema"):
        if source.meta.get(name) != target.meta.get(name):
            raise CacheError(f"cache merge: {source.path} has {name} {source.meta.get(name)!r} and {target.path} "
                             f"has {target.meta.get(name)!r}; merge nothing")


def facts_of(cache: PredictionCache) -> CacheFacts:
    """The facts :func:`check_mergeable` compares, read from an open cache."""
    meta = dict(cache._read("SELECT name, value FROM meta", "reading the format marker"))
    models = dict(cache._read("SELECT fingerprint, identity FROM models ORDER BY id", "reading the models"))
    return CacheFacts(cache.path, meta, models, cache.numerics_notes())


def merge_caches(output: PathLike, inputs: Sequence[PathLike], *, allow_mixed_numerics: bool = False,
                 warnings: Optional[List[str]] = None) -> Dict[str, int]:
    """Copy every entry of ``inputs`` into the cache ``output`` (created if missing).

    Returns counts: ``read`` (entries in the inputs), ``added`` (new in the output),
    ``equal`` (already in the output with the same answer), ``models``.  ``warnings`` (a list) receives
    one line per difference in the inputs' settings that moves last bits only.
    """
    if not inputs:
        raise InvalidValueError("cache merge needs at least one input cache")
    out_path = os.path.abspath(os.fspath(output))
    for path in inputs:
        if os.path.abspath(os.fspath(path)) == out_path:
            raise InvalidValueError(f"cache merge: the output {os.fspath(output)!r} is also an input")
        if not os.path.exists(path):
            raise InvalidValueError(f"cache merge: the input cache {os.fspath(path)!r} does not exist")
    sources = []
    for path in inputs:
        with PredictionCache(path) as cache:  # refuses a foreign, newer or damaged file
            sources.append(facts_of(cache))
    numerics = merged_settings([_output_notes(out_path), *(s.numerics for s in sources)],
                               allow_mixed=allow_mixed_numerics)
    if numerics["refused"]:
        raise CacheError("cache merge: the inputs' answers were computed under settings that can make them differ "
                         f"beyond the last bits ({'; '.join(numerics['refused'])}); nothing was merged: rerun the "
                         "shards alike, or merge anyway with --allow-mixed-numerics (recorded in the merged cache)")
    notes = [numerics_row(fingerprint, records) for fingerprint, records in numerics["settings"].items() if records]
    with PredictionCache(output) as out:
        target = facts_of(out)
        for source in sources:
            check_mergeable(target, source)
        read, added, equal = _merge_into(out, [s.path for s in sources], [target.path, *(s.path for s in sources)],
                                         notes)
    if warnings is not None:
        warnings.extend(numerics["warnings"])
    models = {fingerprint for source in sources for fingerprint in source.models}
    return {"read": read, "added": added, "equal": equal, "models": len(models)}


def _output_notes(path: str) -> Notes:
    """The numerics notes an existing output cache already holds (its answers are merged with the inputs')."""
    if not os.path.exists(path):
        return {}
    with PredictionCache(path) as cache:
        return cache.numerics_notes()


def _merge_into(out: PredictionCache, paths: List[str], everyone: List[str],
                notes: Sequence[Tuple[str, str]] = ()) -> Tuple[int, int, int]:
    """(entries read, added, equal): ``paths`` copied into ``out`` in one transaction.

    ``everyone`` (the output and the original inputs) is searched for the two files of a conflict;
    ``notes`` (``meta`` rows: the merged numerics notes) are written in the same transaction.
    """
    if len(paths) <= MAX_ATTACHED:
        return _copy(out, paths, everyone, notes)
    directory = os.path.dirname(os.path.abspath(out.path))
    with tempfile.TemporaryDirectory(prefix=".staicc-merge-", dir=directory) as scratch:
        parts, read = [], 0
        for number, start in enumerate(range(0, len(paths), MAX_ATTACHED)):
            parts.append(os.path.join(scratch, f"part-{number}.sqlite"))
            with PredictionCache(parts[-1]) as part:
                read += _copy(part, paths[start:start + MAX_ATTACHED], everyone)[0]
        _read, added, equal = _merge_into(out, parts, everyone, notes)
    return read, added, equal


def _copy(out: PredictionCache, paths: List[str], everyone: List[str],
          notes: Sequence[Tuple[str, str]] = ()) -> Tuple[int, int, int]:
    """Attach ``paths`` (at most MAX_ATTACHED) to ``out``'s connection and copy them in one transaction."""
    names = [f"staicc_source_{number}" for number in range(len(paths))]
    damaged: List[bytes] = []
    interrupted: List[BaseException] = []
    with out._lock:
        connection = out._db()
        connection.create_function("staicc_entry_crc_holds", 7, _crc_check(damaged, interrupted), deterministic=True)
        attached: List[str] = []
        try:
            for name, path in zip(names, paths):
                connection.execute(f"ATTACH DATABASE ? AS {name}", (path,))
                attached.append(name)
            connection.execute(_CONFLICT_TRIGGER)
            try:
                return _copy_attached(out, connection, list(zip(names, paths)), damaged, everyone, notes)
            finally:
                connection.execute("DROP TRIGGER IF EXISTS temp.staicc_merge_conflict")
        except sqlite3.DatabaseError as exc:
            if interrupted:
                raise interrupted[0] from None
            if _is_damage(exc):
                damaged_path = _damaged_file(connection, list(zip(names, paths)), out.path)
                raise CacheError(f"prediction cache {damaged_path!r}: is damaged ({exc}) while merging caches; nothing "
                                 "was merged: move the damaged file away (a shard's cache: run the shard again)") from None
            if _is_full(exc):
                raise CacheError(f"cannot write the merged cache {out.path}: {exc}; nothing was merged (the inputs "
                                 "are unchanged): make room and run the same command again") from None
            raise out._database_error(exc, "merging caches") from None
        finally:
            for name in attached:
                connection.execute(f"DETACH DATABASE {name}")


def _crc_check(damaged: List[bytes], interrupted: List[BaseException]) -> Callable[..., int]:
    """The SQL function ``staicc_entry_crc_holds``: 1 when an entry's CRC holds, else 0 (its key noted).

    SQLite turns an exception raised inside it into a plain "user-defined function raised
    exception"; a Ctrl-C that lands there is noted in ``interrupted`` to be raised again.
    """
    prefixes: Dict[str, int] = {}

    def holds(fingerprint: str, key: bytes, check: bytes, value: object, text: object, parsed: object,
              crc: object) -> int:
        try:
            prefix = prefixes.get(fingerprint)
            if prefix is None:
                prefix = prefixes[fingerprint] = _crc_prefix(fingerprint)
            if _entry_crc(prefix, key, check, value, text, parsed) == crc:  # type: ignore[arg-type]
                return 1
        except (AttributeError, TypeError, UnicodeError):  # a field of a type no StaICC writes
            pass
        except BaseException as exc:
            interrupted.append(exc)
            raise
        damaged.append(key)
        return 0
    return holds


def _copy_attached(out: PredictionCache, connection: sqlite3.Connection, sources: List[Tuple[str, str]],
                   damaged: List[bytes], everyone: List[str], notes: Sequence[Tuple[str, str]]) -> Tuple[int, int, int]:
    out._retry(lambda: connection.execute("BEGIN IMMEDIATE"))
    try:
        for name, _path in sources:
            _register_models(out, connection, name)
        had_entries = connection.execute("SELECT 1 FROM main.predictions LIMIT 1").fetchone() is not None
        equal = _count_present(connection, [name for name, _path in sources]) if had_entries else 0
        read = added = 0
        for name, path in sources:
            read += connection.execute(f"SELECT count(*) FROM {name}.predictions p "
                                       f"JOIN {name}.models m ON m.id = p.model").fetchone()[0]
            try:
                added += connection.execute(_COPY.format(source=name)).rowcount
            except sqlite3.IntegrityError as exc:
                if _CONFLICT not in str(exc) and _COLLISION not in str(exc):
                    raise
                raise _conflict(connection, name, path, everyone) from None
            if damaged:
                raise CacheError(f"prediction cache {path!r}: is damaged: the entry with key {damaged[0].hex()} "
                                 "fails its CRC check; it cannot be merged")
        connection.executemany("INSERT OR REPLACE INTO main.meta (name, value) VALUES (?, ?)", notes)
        connection.execute("COMMIT")
        return read, added, equal
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    return not isinstance(exc, sqlite3.IntegrityError) and any(
        word in str(exc) for word in ("malformed", "not a database", "corrupt"))


def _is_full(exc: sqlite3.DatabaseError) -> bool:
    """A write the disk refused (full, or over a file-size limit: SQLite reports the latter as an I/O error)."""
    return any(word in str(exc) for word in ("disk is full", "disk I/O error", "too big"))


def _damaged_file(connection: sqlite3.Connection, attached: List[Tuple[str, str]], output: str) -> str:
    """Which file SQLite's "malformed" came from: the first whose ``quick_check`` fails (the output last)."""
    for name, path in [*attached, ("main", output)]:
        try:
            if connection.execute(f"PRAGMA {name}.quick_check").fetchall() != [("ok",)]:
                return path
        except sqlite3.DatabaseError:
            return path
    return output


def _register_models(out: PredictionCache, connection: sqlite3.Connection, source: str) -> None:
    """Every model of ``source`` in the output (a new one with its identity; a known one's missing identity filled)."""
    for fingerprint, identity in connection.execute(f"SELECT fingerprint, identity FROM {source}.models ORDER BY id"):
        model = out._ensure_model(connection, fingerprint, identity)
        if identity is not None:
            connection.execute("UPDATE main.models SET identity = ? WHERE id = ? AND identity IS NULL",
                               (identity, model))


def _count_present(connection: sqlite3.Connection, names: List[str]) -> int:
    """Distinct (model, key) of the attached inputs that the output holds before any is copied."""
    total = 0
    for number, name in enumerate(names):
        unseen = "".join(f" AND NOT EXISTS (SELECT 1 FROM {e}.predictions ep JOIN {e}.models em ON em.id = ep.model"
                         " WHERE em.fingerprint = sm.fingerprint AND ep.content_key = p.content_key)"
                         for e in names[:number])
        total += connection.execute(
            f"SELECT count(*) FROM {name}.predictions p JOIN {name}.models sm ON sm.id = p.model "
            "JOIN main.models mm ON mm.fingerprint = sm.fingerprint WHERE EXISTS (SELECT 1 FROM main.predictions q "
            f"WHERE q.model = mm.id AND q.content_key = p.content_key){unseen}").fetchone()[0]
    return total


def _conflict(connection: sqlite3.Connection, name: str, path: str, everyone: List[str]) -> CacheError:
    """The conflict error: the first entry of ``name`` that differs from the output's, and the two files."""
    row = connection.execute(
        f"SELECT sm.fingerprint, p.content_key FROM {name}.predictions p JOIN {name}.models sm ON sm.id = p.model "
        "JOIN main.models mm ON mm.fingerprint = sm.fingerprint "
        "JOIN main.predictions q ON q.model = mm.id AND q.content_key = p.content_key "
        "WHERE q.check_key IS NOT p.check_key OR q.value IS NOT p.value OR q.text IS NOT p.text "
        "OR q.parsed IS NOT p.parsed ORDER BY sm.id, p.content_key LIMIT 1").fetchone()
    fingerprint, key = row if row is not None else ("?", b"")
    first, second = _differing_files(fingerprint, key, everyone) or (everyone[0], path)
    return CacheError(f"cache merge: conflicting answers for key {key.hex()} (model {fingerprint[:12]}) in "
                      f"{first} and {second}; the shards did not compute the same answer (a different model, "
                      "dtype or batch setting?); merge nothing and check the runs")


def _differing_files(fingerprint: str, key: bytes, everyone: List[str]) -> Optional[Tuple[str, str]]:
    """The first file holding this entry and the first after it holding a different answer (read as committed)."""
    held = []
    for path in everyone:
        connection = sqlite3.connect(path, timeout=1.0)
        try:
            row = connection.execute(_ENTRY, (fingerprint, key)).fetchone()
        except sqlite3.DatabaseError:
            row = None
        finally:
            connection.close()
        if row is not None:
            held.append((path, row))
    for path, row in held[1:]:
        if row != held[0][1]:
            return held[0][0], path
    return None
