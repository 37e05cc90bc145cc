"""How an answer is stored: value encoding, the CRC-32 of an entry, the request digests.

Pure functions, no SQLite: a prediction becomes an int label index or little-endian
IEEE-754 doubles (bit-exact, never pickled), every stored field is covered by a CRC-32
that detects bytes changed on disk — the fingerprint of the model the entry belongs to
included, so an edit that moves an entry to another model (a changed ``models`` row, a
changed ``model`` column) fails the check — and a request's (SHA-256, BLAKE2b-64) pair
keys and checks its entry.
"""
import binascii
import struct
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from ..requests import Answer, Request, label_answer

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


def _new_answer(prediction: Any, text: Optional[str], parsed: bool) -> Answer:
    """``Answer(prediction, text, parsed)`` without the frozen dataclass's per-field ``__init__``.

    A lookup builds one answer per stored vector (10^5 in a suite); the fields are written
    into the instance's dictionary in field order, as ``__init__`` would leave them.
    """
    answer = _new(Answer)
    fields = answer.__dict__
    fields["prediction"] = prediction
    fields["text"] = text
    fields["parsed"] = parsed
    return answer


def _stored_answer(value: Union[int, bytes], text: Optional[str], parsed: int, labels: int) -> Optional[Answer]:
    """The answer a stored entry holds, or None when its value does not fit a label space of ``labels``."""
    if type(value) is int:
        if text is None and parsed and 0 <= value < labels:
            return label_answer(value)  # the plain label index: one shared Answer per label
        return _new_answer(value, text, bool(parsed))
    if type(value) is bytes and len(value) == 8 * labels:
        return _new_answer(list(_doubles(labels).unpack(value)), text, bool(parsed))
    return None


def _encode(request: Request, answer: Any, position: int) -> Tuple[Union[int, bytes], Optional[str], int]:
    """An answer as (value, text, parsed), checked against the request's label space."""
    if type(answer) is not Answer and not isinstance(answer, Answer):
        raise TypeError(f"answers[{position}] must be an Answer, got {type(answer).__name__}")
    labels = len(request.label_space)
    prediction = answer.prediction
    kind = type(prediction)
    if kind is int or (isinstance(prediction, int) and kind is not bool):
        if not 0 <= prediction < labels:
            raise ValueError(f"answers[{position}] predicts label index {prediction}; "
                             f"the request has {labels} labels")
        value: Union[int, bytes] = int(prediction)
    elif kind is list or kind is tuple or isinstance(prediction, (list, tuple)):
        if len(prediction) != labels:
            raise ValueError(f"answers[{position}] has {len(prediction)} scores; the request has {labels} labels")
        if not _NUMBERS.issuperset(map(type, prediction)):
            _check_scores(prediction, position)
        value = _doubles(labels).pack(*prediction)
    else:
        raise TypeError(f"answers[{position}].prediction must be an int label index or a list of floats, "
                        f"got {type(prediction).__name__}; store validated predictions")
    text = answer.text
    if text is not None and type(text) is not str and not isinstance(text, str):
        raise TypeError(f"answers[{position}].text must be a string or None, got {type(text).__name__}")
    if type(answer.parsed) is not bool:
        raise TypeError(f"answers[{position}].parsed must be True or False, got {answer.parsed!r}")
    return value, text, int(answer.parsed)


#: score types packed without a closer look (bool, an int subclass, is not one of them)
_NUMBERS = frozenset((float, int))


def _check_scores(prediction: Sequence[Any], position: int) -> None:
    """Refuse a score that is not a real number (a bool included); numeric subclasses pass."""
    for score in prediction:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise TypeError(f"answers[{position}] holds a non-numeric score {score!r}; "
                            "store validated predictions (floats)")
