"""Batch rows: one extra row per lookup batch, so that a warm run reads a batch in one SELECT.

A run asks the cache for its requests in batches (a pass of a dataset), and a rerun asks for
the same batches again.  Per-entry content keys cost a canonical JSON, a SHA-256 and a
BLAKE2b per request before anything is read; a batch row is keyed instead by one digest over
the whole batch's content (the model's fingerprint, then each request's kind, prompt(s) and
label space, in order), hashed in one pass over the prompts, and holds every answer of the
batch in one value with its own CRC-32.

**Safety.**  A batch row is an accelerator, never the record: every entry is still stored
(and counted, merged, exported) one by one.  A row is written only when each of its answers
is what the batch's entries hold (the entries were read back, or every entry of the batch
was newly inserted by the run that writes the row), so answering from it answers what the
per-entry path answers, bit for bit.  A row that does not decode exactly (its CRC, its size,
its length, its form or a label index out of range) never answers: the batch falls back to
the per-entry lookup, every entry checked as before, and the row is rewritten.

**Two digests from one pass.**  Like an entry, a row has two digests of its content: the key and
``check_key``.  They are the first 32 and the last 8 bytes of one BLAKE2b with a 40-byte digest
(BLAKE2b-320; the digest size is part of BLAKE2b's parameters, so this is no truncation of another
BLAKE2b).  Two batches whose keys collide still differ in ``check_key`` unless all 320 bits collide,
so a row under a colliding key answers nothing: the batch's entries answer, each checked by its own
two digests (an entry collision is an error there).  An entry's digests are two functions (SHA-256
and BLAKE2b-64); a row's come from one pass because hashing is the whole cost of a warm row lookup:
the suite's 65 million characters of prompts took 0.17 s through SHA-256 and BLAKE2b-64, about 0.11 s
through one BLAKE2b-320, against some 0.65 s for the whole suite without a cache.  Against accidental
collisions the row is safer than before (320 bits); against a deliberate one it rests on BLAKE2b's
collision resistance (2^160 generic work) where it rested on SHA-256's and 64 bits of BLAKE2b, which
multicollisions let anyone who can collide SHA-256 meet with about 2^32 more BLAKE2b evaluations.

Rows keyed the earlier way (a SHA-256 key, a BLAKE2b-64 check) can never answer a batch now: both of
their digests would have to equal a BLAKE2b-320's.  They are dropped once, on the first batch lookup,
when the ``meta`` row :data:`KEYS_MARKER` does not name :data:`KEYS_SCHEME` (rows an older StaICC writes
afterwards stay and are never read).  Only batches whose answers are all label indices, or all
label-score vectors, get a row (generated text and representations keep the per-entry path).
``cache merge`` copies entries only: batch rows are dropped there and rebuilt by the first run that
reads the batch.
"""
import binascii
import hashlib
from math import isfinite
import struct
import sqlite3
import sys
from array import array
from operator import attrgetter, methodcaller
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError
from ..requests import ANSWER_SETTERS, LABELS, Answer, Request, label_answer
from .codec import _crc_prefix, _encode
from .schema import in_transaction

#: a batch row's key: the first KEY_SIZE bytes of the BLAKE2b of the batch's content
BatchKey = bytes
#: a batch's two digests of its content: (key, check), the two parts of one BLAKE2b (see :func:`batch_digests`)
BatchDigests = Tuple[bytes, bytes]
#: the BLAKE2b digest size of a batch, in bytes, and the part of it that is the key (the rest is the check)
DIGEST_SIZE, KEY_SIZE = 40, 32
#: the ``meta`` row that names how the batch rows of a file are keyed, and what this code writes there
KEYS_MARKER, KEYS_SCHEME = "batch_keys", "blake2b-320"
#: batches smaller than this keep the per-entry path only (a row would save nothing)
BATCH_MIN = 8

BATCHES_TABLE = """CREATE TABLE IF NOT EXISTS batches (
    model     INTEGER NOT NULL,   -- models.id
    batch_key BLOB NOT NULL,      -- bytes 0-31 of a BLAKE2b-320 of the fingerprint and every request, in order
    size      INTEGER NOT NULL,   -- requests in the batch
    form      INTEGER NOT NULL,   -- 0: uint32 label indices; 1: little-endian float64 label scores
    value     BLOB NOT NULL,      -- every answer of the batch, in order
    crc       INTEGER NOT NULL,   -- CRC-32 of the fingerprint and every field above
    check_key BLOB NOT NULL,      -- bytes 32-39 of the same BLAKE2b-320: differs on a batch_key collision
    PRIMARY KEY (model, batch_key)
) WITHOUT ROWID"""

_INDEXES, _SCORES = 0, 1
_PROMPT, _SPACE, _KIND = attrgetter("prompt"), attrgetter("label_space"), attrgetter("kind")
_UTF8 = methodcaller("encode", "utf-8", "surrogatepass")
_SWAP = sys.byteorder != "little"
_new = object.__new__


def _check_fingerprint(fingerprint: Any) -> str:
    if not isinstance(fingerprint, str) or not fingerprint:
        raise InvalidTypeError(f"fingerprint must be a non-empty string (Backend.fingerprint()), got {fingerprint!r}")
    return fingerprint


def _check_requests(requests: Any) -> Sequence[Request]:
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Sequence):
        raise InvalidTypeError(f"requests must be a sequence of Request, got {type(requests).__name__}")
    if not {Request}.issuperset(map(type, requests)):  # one pass in C when every item is a Request
        for i, request in enumerate(requests):
            if not isinstance(request, Request):
                raise InvalidTypeError(f"requests[{i}] must be a Request, got {type(request).__name__}")
    return requests


def batch_key(fingerprint: str, requests: Sequence[Request]) -> BatchKey:
    """The key of the batch's row (the first of :func:`batch_digests`)."""
    return batch_digests(fingerprint, requests)[0]


def batch_digests(fingerprint: str, requests: Sequence[Request]) -> BatchDigests:
    """(key, check) of the batch's content, what every entry key of the batch covers and the model: the first
    :data:`KEY_SIZE` bytes and the rest of one BLAKE2b of :data:`DIGEST_SIZE` bytes.

    The common batch (one label space, one kind, text prompts) is listed as its head (fingerprint,
    kind, labels) and its prompts; any other batch as each request's prompt parts, labels and kind,
    with their counts.  The bytes hashed are a head that fixes how many texts there are, the texts'
    UTF-8 one after the other, then their UTF-8 lengths: the head tells where the lengths begin, the
    lengths where each text ends, so two different batches never give the same bytes.  The lengths
    come last so that each text is encoded and hashed at once, one at a time (nothing kept, no JSON).
    """
    prompts = list(map(_PROMPT, requests))
    try:
        spaces = set(map(_SPACE, requests))
    except TypeError:  # a label space given as a list: the general form
        spaces = set()
    kinds = set(map(_KIND, requests))
    if len(spaces) == 1 and len(kinds) == 1 and {str}.issuperset(map(type, prompts)):
        (labels,), (kind,) = spaces, kinds
        texts = [fingerprint, kind, *labels, *prompts]
        head = b"S" + struct.pack("<qq", len(labels), len(prompts))
    else:
        texts, shape = [fingerprint], []
        for request in requests:
            prompt = request.prompt
            if type(prompt) is str:
                texts.append(prompt)
                shape.append(-1)
            else:
                texts.extend(prompt)
                shape.append(len(prompt))
            texts.extend(request.label_space)
            texts.append(request.kind)
            shape.append(len(request.label_space))
        head = b"G" + _counted(shape)
    try:
        both = _blake2b(head, map(str.encode, texts))
    except UnicodeEncodeError:  # a lone surrogate: its bytes as "surrogatepass" writes them (the same elsewhere)
        both = _blake2b(head, map(_UTF8, texts))
    return both[:KEY_SIZE], both[KEY_SIZE:]


def _blake2b(head: bytes, encoded: Iterator[bytes]) -> bytes:
    """The BLAKE2b of ``head``, the ``encoded`` texts one after the other, and their lengths (:func:`_counted`)."""
    digest = hashlib.blake2b(head, digest_size=DIGEST_SIZE)
    update, lengths = digest.update, []
    length = lengths.append
    for data in encoded:
        update(data)
        length(len(data))
    update(_counted(lengths))
    return digest.digest()


def _counted(numbers: List[int]) -> bytes:
    """How many numbers, then the numbers, as little-endian int64."""
    packed = array("q", numbers)
    if _SWAP:
        packed.byteswap()
    return struct.pack("<q", len(numbers)) + packed.tobytes()


def batch_crc(fingerprint: str, key: BatchKey, size: int, form: int, value: bytes) -> int:
    """CRC-32 over the model's fingerprint and every stored field of a batch row."""
    return binascii.crc32(b"".join((key, struct.pack("<qq", size, form), value)),
                          _crc_prefix(fingerprint))


def encode_batch(requests: Sequence[Request], answers: Sequence[Answer]) -> Optional[Tuple[int, bytes]]:
    """(form, value) of a batch's answers, from the entries' own encoding; None for a batch that gets no row."""
    if {LABELS} != set(map(_KIND, requests)):
        return None
    encoded = [_encode(request, answer, i) for i, (request, answer) in enumerate(zip(requests, answers))]
    if any(text is not None or not parsed for _value, text, parsed in encoded):
        return None
    values = [value for value, _text, _parsed in encoded]
    kinds = set(map(type, values))
    if kinds == {int}:
        indexes = array("I", values)
        if _SWAP:
            indexes.byteswap()
        return _INDEXES, indexes.tobytes()
    if kinds == {bytes}:
        return _SCORES, b"".join(values)
    return None


def decode_batch(fingerprint: str, digests: BatchDigests, requests: Sequence[Request],
                 row: Optional[tuple]) -> Optional[List[Answer]]:
    """The batch's answers from its row (size, form, value, crc, check_key), or None: no row, one whose
    check is not the batch's, or one that does not decode exactly (then the batch takes the per-entry path)."""
    if row is None:
        return None
    key, check = digests
    size, form, value, crc, stored_check = row
    if (stored_check != check or type(value) is not bytes or type(size) is not int or type(form) is not int
            or size != len(requests) or batch_crc(fingerprint, key, size, form, value) != crc):
        return None
    counts = list(map(len, map(_SPACE, requests)))
    if form == _INDEXES and len(value) == 4 * size:
        indexes = array("I")
        indexes.frombytes(value)
        if _SWAP:
            indexes.byteswap()
        if max(indexes) >= min(counts) and not all(map(int.__lt__, indexes, counts)):  # (the first: in C)
            return None
        shared = [label_answer(index) for index in range(max(counts))]  # one Answer per label index
        return list(map(shared.__getitem__, indexes))
    if form == _SCORES and len(value) == 8 * sum(counts):
        return _score_answers(value, counts)
    return None  # (a row of NaN or infinite scores is refused by _score_answers: the engine refuses them too)


def _score_answers(value: bytes, counts: List[int]) -> Optional[List[Answer]]:
    """Answers of label scores, as the entries decode them (a list of floats, no text, parsed); None when a score
    is not finite (no row holds one: the engine refuses such answers before they are stored)."""
    scores = array("d")
    scores.frombytes(value)
    if _SWAP:
        scores.byteswap()
    flat = scores.tolist()
    if not all(map(isfinite, flat)):
        return None
    answers: List[Any] = []
    append, new, start = answers.append, _new, 0
    set_prediction, set_text, set_parsed, set_thinking = ANSWER_SETTERS
    for count in counts:
        answer = new(Answer)
        set_prediction(answer, flat[start:start + count])
        set_text(answer, None)
        set_parsed(answer, True)
        set_thinking(answer, None)
        append(answer)
        start += count
    return answers


_SELECT = "SELECT size, form, value, crc, check_key FROM batches WHERE model = ? AND batch_key = ?"
_WRITE = ("INSERT OR REPLACE INTO batches (model, batch_key, size, form, value, crc, check_key) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)")


def ensure_table(connection: Any) -> None:
    """Make the batch table of this code's keys: in a cache written before batch rows existed, before they had
    their second digest, or before they were keyed by :data:`KEYS_SCHEME`, the table is made anew (its rows,
    which could never answer, are dropped: rows are rebuilt from the entries; entries and their counts are
    untouched) and the ``meta`` row :data:`KEYS_MARKER` names the scheme."""
    if _current(connection):
        return

    def create(connection: Any) -> None:
        if not _current(connection):  # (another process may have made it since)
            connection.execute("DROP TABLE IF EXISTS batches")
            connection.execute(BATCHES_TABLE)
            connection.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (KEYS_MARKER, KEYS_SCHEME))
    in_transaction(connection, create)


def _current(connection: Any) -> bool:
    """Whether the file's batch table has this code's columns and its ``meta`` row names this code's keys."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(batches)")}
    marker = connection.execute("SELECT value FROM meta WHERE name = ?", (KEYS_MARKER,)).fetchone()
    return "check_key" in columns and marker is not None and marker[0] == KEYS_SCHEME


def select_row(connection: Any, model: int, key: BatchKey) -> Optional[tuple]:
    """The stored row of a batch (size, form, value, crc, check_key), or None."""
    return connection.execute(_SELECT, (model, bytearray(key))).fetchone()


def row_parameters(model: int, fingerprint: str, digests: BatchDigests, size: int, form: int, value: bytes) -> tuple:
    """The parameters of :data:`_WRITE` for one batch row (bytearrays: see :func:`StaICC.cache.store._bound`)."""
    key, check = digests
    return (model, bytearray(key), size, form, bytearray(value),
            batch_crc(fingerprint, key, size, form, value), bytearray(check))


class BatchRows:
    """The batch-row part of :class:`~StaICC.cache.PredictionCache` (which supplies the connection and its lock)."""

    _batch_table = False  # the batch table made sure of, on this object's first batch lookup or write
    _lock: Any

    def lookup_batch(self, fingerprint: str, requests: Sequence[Request]) -> Tuple[Optional[List[Answer]], Any]:
        """(answers, None) from the batch's row (:mod:`.batches`); else (None, the key to remember it under), or
        (None, None) for a batch too small for a row.  A row that does not decode exactly answers nothing."""
        requests = _check_requests(requests)
        if len(requests) < BATCH_MIN:
            return None, None
        digests = batch_digests(_check_fingerprint(fingerprint), requests)
        with self._lock:
            connection = self._batches_db()
            try:
                model = self._model_id(connection, fingerprint)
                row = None if model is None else self._retry(lambda: select_row(connection, model, digests[0]))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "looking a batch up") from None
        answers = decode_batch(fingerprint, digests, requests, row)
        return (answers, None) if answers is not None else (None, digests)

    def remember_batch(self, fingerprint: str, key: Any, requests: Sequence[Request], answers: Sequence[Answer]) -> None:
        """Write (or rewrite) the batch row of ``requests``, whose ``answers`` are what their entries hold
        (``key``: the batch's digests, as :meth:`lookup_batch` returned them)."""
        encoded = encode_batch(requests, answers)
        if encoded is None:
            return

        def write(connection: sqlite3.Connection) -> None:
            model = self._ensure_model(connection, fingerprint)
            connection.execute(_WRITE, row_parameters(model, fingerprint, key, len(requests), *encoded))

        with self._lock:
            connection = self._batches_db()
            try:
                self._retry(lambda: in_transaction(connection, write))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "storing a batch row") from None

    def _batches_db(self) -> sqlite3.Connection:
        connection = self._db()
        if not self._batch_table:
            try:
                self._retry(lambda: ensure_table(connection))
            except sqlite3.DatabaseError as exc:
                raise self._database_error(exc, "adding the batch table") from None
            self._batch_table = True
        return connection
