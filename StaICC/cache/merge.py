"""Merging prediction caches: the shard caches of a split run into one file.

Every entry of every input is checked (its CRC, as a lookup would) and copied under its
model's fingerprint.  Two answers for one (model, key) must be equal in every stored
field (value bits, text, parsed flag); a difference is a :class:`CacheError` naming the
key and both files, never a silent choice, because the results would then depend on
the order of the inputs.  Nothing is written when a conflict is found.  The settings each
input's answers were computed under are compared too (:func:`StaICC.backends.numerics.merged_settings`):
answers that can differ beyond their last bits (another device, dtype or library version)
are not mixed unless ``allow_mixed_numerics``; differences in the shape of the work only warn.
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..backends.numerics import merged_settings

from .codec import _crc
from .schema import CacheError
from .store import _CHUNK, PredictionCache

Row = Tuple[bytes, bytes, object, object, int, int]  # content key, check key, value, text, parsed, crc
PathLike = Union[str, "os.PathLike[str]"]


def _entries(cache: PredictionCache) -> Dict[str, Tuple[object, List[Row]]]:
    """fingerprint -> (identity JSON or None, every entry), CRC-checked."""
    rows = cache._read("SELECT m.fingerprint, m.identity, p.content_key, p.check_key, p.value, p.text, p.parsed, "
                       "p.crc FROM models m LEFT JOIN predictions p ON p.model = m.id ORDER BY m.id, p.content_key",
                       "reading entries to merge")
    found: Dict[str, Tuple[object, List[Row]]] = {}
    for fingerprint, identity, key, check, value, text, parsed, crc in rows:
        identity_, entries = found.setdefault(fingerprint, (identity, []))
        if key is None:
            continue
        if _crc(fingerprint, key, check, value, text, parsed) != crc:
            raise cache._fail(f"is damaged: the entry with key {key.hex()} fails its CRC check; it cannot be merged")
        entries.append((key, check, value, text, parsed, crc))
    return found


def merge_caches(output: PathLike, inputs: Sequence[PathLike], *, allow_mixed_numerics: bool = False,
                 warnings: Optional[List[str]] = None) -> Dict[str, int]:
    """Copy every entry of ``inputs`` into the cache ``output`` (created if missing).

    Returns counts: ``read`` (entries in the inputs), ``added`` (new in the output),
    ``equal`` (already there with the same answer), ``models``.  ``warnings`` (a list) receives
    one line per difference in the inputs' settings that moves last bits only.
    """
    if not inputs:
        raise ValueError("cache merge needs at least one input cache")
    out_path = os.path.abspath(os.fspath(output))
    for path in inputs:
        if os.path.abspath(os.fspath(path)) == out_path:
            raise ValueError(f"cache merge: the output {os.fspath(output)!r} is also an input")
        if not os.path.exists(path):
            raise ValueError(f"cache merge: the input cache {os.fspath(path)!r} does not exist")
    collected: Dict[str, Tuple[object, Dict[bytes, Tuple[Row, str]]]] = {}
    read = 0
    notes = [_output_notes(out_path)]
    for path in inputs:
        with PredictionCache(path) as cache:
            notes.append(cache.numerics_notes())
            for fingerprint, (identity, entries) in _entries(cache).items():
                known_identity, by_key = collected.setdefault(fingerprint, (identity, {}))
                if known_identity is None and identity is not None:
                    collected[fingerprint] = (identity, by_key)
                for row in entries:
                    read += 1
                    earlier = by_key.get(row[0])
                    if earlier is None:
                        by_key[row[0]] = (row, os.fspath(path))
                    elif earlier[0][1:5] != row[1:5]:
                        raise _conflict(row[0], fingerprint, earlier[1], os.fspath(path))
    numerics = merged_settings(notes, allow_mixed=allow_mixed_numerics)
    if numerics["refused"]:
        raise CacheError("cache merge: the inputs' answers were computed under settings that can make them differ "
                         f"beyond the last bits ({'; '.join(numerics['refused'])}); nothing was merged: rerun the "
                         "shards alike, or merge anyway with --allow-mixed-numerics (recorded in the merged cache)")
    with PredictionCache(output) as out:
        added, equal = _write(out, collected)
        for fingerprint, settings in numerics["settings"].items():
            for record in settings:
                out.note_numerics(fingerprint, record)
    if warnings is not None:
        warnings.extend(numerics["warnings"])
    return {"read": read, "added": added, "equal": equal, "models": len(collected)}


def _output_notes(path: str) -> Dict[str, List[Dict[str, Any]]]:
    """The numerics notes an existing output cache already holds (its answers are merged with the inputs')."""
    if not os.path.exists(path):
        return {}
    with PredictionCache(path) as cache:
        return cache.numerics_notes()


def _conflict(key: bytes, fingerprint: str, first: str, second: str) -> CacheError:
    return CacheError(f"cache merge: conflicting answers for key {key.hex()} (model {fingerprint[:12]}) in "
                      f"{first} and {second}; the shards did not compute the same answer (a different model, "
                      "dtype or batch setting?); merge nothing and check the runs")


def _write(out: PredictionCache, collected: Dict[str, Tuple[object, Dict[bytes, Tuple[Row, str]]]]) -> Tuple[int, int]:
    """Check every entry against the output's, then insert the new ones, in one transaction."""
    with out._lock:
        connection = out._db()
        connection.execute("BEGIN IMMEDIATE")
        try:
            added = equal = 0
            for fingerprint, (identity, by_key) in collected.items():
                model = out._ensure_model(connection, fingerprint, identity)  # type: ignore[arg-type]
                if identity is not None:
                    connection.execute("UPDATE models SET identity = ? WHERE id = ? AND identity IS NULL",
                                       (identity, model))
                keys = sorted(by_key)
                for start in range(0, len(keys), _CHUNK):
                    chunk = keys[start:start + _CHUNK]
                    query = ("SELECT content_key, check_key, value, text, parsed FROM predictions "
                             f"WHERE model = ? AND content_key IN ({','.join('?' * len(chunk))})")
                    existing = {row[0]: row[1:] for row in connection.execute(query, [model, *chunk])}
                    new = []
                    for key in chunk:
                        row, source = by_key[key]
                        stored = existing.get(key)
                        if stored is None:
                            new.append((model, *row))
                        elif tuple(stored) != tuple(row[1:5]):
                            raise _conflict(key, fingerprint, out.path, source)
                        else:
                            equal += 1
                    connection.executemany("INSERT INTO predictions (model, content_key, check_key, value, text, "
                                           "parsed, crc) VALUES (?, ?, ?, ?, ?, ?, ?)", new)
                    added += len(new)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    return added, equal
