"""How an answer is stored: value encoding, the CRC-32 of an entry, the request digests.

Pure functions, no SQLite: a prediction becomes an int label index or little-endian
IEEE-754 doubles (bit-exact, never pickled), a representation (a request of another kind
than the label scores: full-vocabulary logits, a hidden state) little-endian float32;
every stored field is covered by a CRC-32 that detects bytes changed on disk — the fingerprint of the model the entry belongs to
included, so an edit that moves an entry to another model (a changed ``models`` row, a
changed ``model`` column) fails the check — and a request's (SHA-256, BLAKE2b-64) pair
keys and checks its entry.
"""
import binascii
import struct
import sys
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from ..requests import ANSWER_SETTERS, LABELS, Answer, Request, label_answer

Digests = Tuple[bytes, bytes]


def request_digests(request: Request) -> Digests:
    """(SHA-256, BLAKE2b-64) of the request's canonical content; the first is ``request.key()``."""
    return request.digests


_STRUCTS: Dict[int, struct.Struct] = {}


def _doubles(count: int) -> struct.Struct:
    packer = _STRUCTS.get(count)
    if packer is None:
        packer = _STRUCTS[count] = struct.Struct(f"<{count}d")
    return packer


def _crc(fingerprint: str, key: bytes, check: bytes, value: Union[int, bytes], text: Optional[str],
         parsed: int) -> int:
    """CRC-32 over the model's fingerprint and every stored field of an entry.

    The fingerprint is not stored in the entry (it sits once in the ``models`` table); it
    is covered so that the check fails when an entry is read for any other model.
    """
    return _entry_crc(_crc_prefix(fingerprint), key, check, value, text, parsed)


def _crc_prefix(fingerprint: str) -> int:
    """The CRC-32 of the fingerprint part of every entry of one model (CRC-32 continues from it)."""
    return binascii.crc32(fingerprint.encode("utf-8", "surrogatepass") + b"\x00")


def _entry_crc(prefix: int, key: bytes, check: bytes, value: Union[int, bytes], text: Optional[str],
               parsed: int) -> int:
    """:func:`_crc` continued from its model's :func:`_crc_prefix`: key, check, value, text, parsed flag."""
    body = value if type(value) is bytes else str(value).encode("utf-8", "surrogatepass")  # an int: its digits
    if text is None:
        tail = b"\x00\x01" if parsed else b"\x00\x00"
    else:
        tail = b"".join((b"\x01", text.encode("utf-8", "surrogatepass"), b"\x01" if parsed else b"\x00"))
    return binascii.crc32(b"".join((key, check, body, tail)), prefix)


_new = object.__new__


class EntryProblem(Exception):
    """A stored entry that cannot be answered: ``kind`` 'crc', 'collision', 'shape' or 'vector' (the cache names
    the file)."""

    def __init__(self, kind: str, position: int, key: bytes) -> None:
        super().__init__(kind)
        self.kind, self.position, self.key = kind, position, key


#: the CRC-32 tail of an entry without text: the NUL text marker, then the parsed flag
_TAILS = (b"\x00\x00", b"\x00\x01")


def _stored_answers(prefix: int, requests: Sequence[Request], digests: Sequence[Digests],
                    rows: Dict[bytes, tuple]) -> List[Optional[Answer]]:
    """Each request's stored answer (None where ``rows`` has no entry for its key), every entry checked.

    ``rows``: content key -> (content_key, check_key, value, text, parsed, crc) of one model, whose
    CRC :func:`_crc_prefix` is ``prefix``.  An entry whose CRC fails, whose BLAKE2b differs from the
    request's, or whose value does not fit the request (its label space, or float32 values for a
    representation) raises :class:`EntryProblem`.
    This loop runs once per entry a run reads (10^5 in a suite), so :func:`_entry_crc`'s rule is
    written out here for an entry without text, and an answer is built without the frozen
    dataclass's per-field ``__init__``: every field is written through :data:`~StaICC.requests.ANSWER_SETTERS`,
    as ``__init__`` leaves them.
    """
    answers: List[Optional[Answer]] = []
    append, found, crc32, tails, new = answers.append, rows.get, binascii.crc32, _TAILS, _new
    set_prediction, set_text, set_parsed, set_thinking = ANSWER_SETTERS
    for position, (request, (key, check)) in enumerate(zip(requests, digests)):
        row = found(key)
        if row is None:
            append(None)
            continue
        _key, stored_check, value, text, parsed, crc = row
        kind = type(value)
        if text is None and (kind is bytes or kind is int):
            body = value if kind is bytes else str(value).encode("ascii")
            holds = crc32(b"".join((key, stored_check, body, tails[1 if parsed else 0])), prefix) == crc
        else:
            holds = _entry_crc(prefix, key, stored_check, value, text, parsed) == crc
        if not holds:
            raise EntryProblem("crc", position, key)
        if stored_check != check:
            raise EntryProblem("collision", position, key)
        if request.kind != LABELS:  # a representation: float32 values, any length
            if kind is not bytes or not value or len(value) % 4:
                raise EntryProblem("vector", position, key)
            append(Answer(state_from_bytes(value), text, bool(parsed)))
            continue
        labels = len(request.label_space)
        if kind is int and text is None and parsed and 0 <= value < labels:
            append(label_answer(value))  # the plain label index: one shared Answer per label
            continue
        if kind is bytes and len(value) == 8 * labels:
            prediction: Any = list(_doubles(labels).unpack(value))
        elif kind is int:
            prediction = value
        else:
            raise EntryProblem("shape", position, key)
        answer = new(Answer)
        set_prediction(answer, prediction)
        set_text(answer, text)
        set_parsed(answer, bool(parsed))
        set_thinking(answer, None)
        append(answer)
    return answers


def _encode(request: Request, answer: Any, position: int) -> Tuple[Union[int, bytes], Optional[str], int]:
    """An answer as (value, text, parsed), checked against the request's label space."""
    if type(answer) is not Answer and not isinstance(answer, Answer):
        raise InvalidTypeError(f"answers[{position}] must be an Answer, got {type(answer).__name__}")
    labels = len(request.label_space)
    prediction = answer.prediction
    kind = type(prediction)
    if request.kind != LABELS:
        value: Union[int, bytes] = _state_bytes(prediction, position)
    elif kind is int or (isinstance(prediction, int) and kind is not bool):
        if not 0 <= prediction < labels:
            raise InvalidValueError(f"answers[{position}] predicts label index {prediction}; "
                                    f"the request has {labels} labels")
        value = int(prediction)
    elif kind is list or kind is tuple or isinstance(prediction, (list, tuple)):
        if len(prediction) != labels:
            raise InvalidValueError(f"answers[{position}] has {len(prediction)} scores; the request has {labels} labels")
        if not _NUMBERS.issuperset(map(type, prediction)):
            _check_scores(prediction, position)
        value = _doubles(labels).pack(*prediction)
    else:
        raise InvalidTypeError(f"answers[{position}].prediction must be an int label index or a list of floats, "
                               f"got {type(prediction).__name__}; store validated predictions")
    text = answer.text
    if text is not None:
        if type(text) is not str and not isinstance(text, str):
            raise InvalidTypeError(f"answers[{position}].text must be a string or None, got {type(text).__name__}")
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:  # SQLite stores text as UTF-8, which has no lone surrogates
                raise InvalidValueError(f"answers[{position}].text holds a lone surrogate ({exc.object[exc.start]!r} at "
                                        f"character {exc.start}); the cache stores generated text as UTF-8") from None
    if type(answer.parsed) is not bool:
        raise InvalidTypeError(f"answers[{position}].parsed must be True or False, got {answer.parsed!r}")
    return value, text, int(answer.parsed)


#: score types packed without a closer look (bool, an int subclass, is not one of them)
_NUMBERS = frozenset((float, int))


def _check_scores(prediction: Sequence[Any], position: int) -> None:
    """Refuse a score that is not a real number (a bool included); numeric subclasses pass."""
    for score in prediction:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise InvalidTypeError(f"answers[{position}] holds a non-numeric score {score!r}; "
                                   "store validated predictions (floats)")


def _state_bytes(prediction: Any, position: int) -> bytes:
    """A representation answer (``array('f')``, see :func:`StaICC.requests.state_vector`) as little-endian
    float32 bytes: bit-exact, four bytes per value."""
    if not isinstance(prediction, array) or prediction.typecode != "f" or not len(prediction):
        raise InvalidTypeError(f"answers[{position}] asks for a representation: its prediction must be a non-empty "
                               f"array('f') (StaICC.requests.state_vector), got {type(prediction).__name__}")
    if sys.byteorder == "little":
        return prediction.tobytes()
    swapped = array("f", prediction)
    swapped.byteswap()
    return swapped.tobytes()


def state_from_bytes(value: bytes) -> array:
    """The ``array('f')`` stored by :func:`_state_bytes` (None-free; the caller checked the length)."""
    vector = array("f")
    vector.frombytes(value)
    if sys.byteorder != "little":
        vector.byteswap()
    return vector
