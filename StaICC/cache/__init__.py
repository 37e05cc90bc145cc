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
:meth:`PredictionCache.store` (and one per merge).  A killed process (``kill -9``) loses at most the
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

**Layout.**  :mod:`.schema` opens a file and refuses what is not a usable StaICC cache;
:mod:`.codec` turns answers into stored values and back (with the CRC-32 and digests);
:mod:`.batches` keeps one row per lookup batch beside the entries (a warm batch read in one row, the
entries still the record); :mod:`.store` holds :class:`PredictionCache` itself (lookup, store, models, stats);
:mod:`.merge` copies caches into one in SQL (``staicc cache merge``), with the same checks.
The public names are importable from ``StaICC.cache``; private helpers from their module.
"""
from .codec import Digests, request_digests
from .schema import APPLICATION_ID, DEFAULT_TIMEOUT, FORMAT_NAME, SCHEMA_VERSION, CacheError
from .store import PredictionCache, open_cache

__all__ = ["Digests", "request_digests", "APPLICATION_ID", "DEFAULT_TIMEOUT", "FORMAT_NAME", "SCHEMA_VERSION",
           "CacheError", "PredictionCache", "open_cache"]
