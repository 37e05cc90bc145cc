"""How an answer is stored: value encoding, the CRC-32 of an entry, the request digests.

Pure functions, no SQLite: a prediction becomes an int label index or little-endian
IEEE-754 doubles (bit-exact, never pickled), a representation (a request of another kind
than the label scores: full-vocabulary logits, a hidden state) little-endian float32, every stored field is covered by a CRC-32
that detects bytes changed on disk — the fingerprint of the model the entry belongs to
included, so an edit that moves an entry to another model (a changed ``models`` row, a
changed ``model`` column) fails the check — and a request's (SHA-256, BLAKE2b-64) pair
keys and checks its entry.
"""
import binascii
import struct
import sys
from array import array
from typing import Any, Dict, Optional, Tuple, Union

from ..requests import LABELS, Answer, Request

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
    body = value if isinstance(value, bytes) else str(value).encode("ascii")
    tail = b"\x00" if text is None else b"\x01" + text.encode("utf-8", "surrogatepass")
    return binascii.crc32(b"".join((key, check, body, tail, b"\x01" if parsed else b"\x00")), prefix)


def _encode(request: Request, answer: Any, position: int) -> Tuple[Union[int, bytes], Optional[str], int]:
    """An answer as (value, text, parsed), checked against the request's label space."""
    if not isinstance(answer, Answer):
        raise TypeError(f"answers[{position}] must be an Answer, got {type(answer).__name__}")
    labels = len(request.label_space)
    prediction = answer.prediction
    if request.kind != LABELS:
        value: Union[int, bytes] = _state_bytes(prediction, position)
    elif isinstance(prediction, int) and not isinstance(prediction, bool):
        if not 0 <= prediction < labels:
            raise ValueError(f"answers[{position}] predicts label index {prediction}; "
                             f"the request has {labels} labels")
        value = prediction
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



def _state_bytes(prediction: Any, position: int) -> bytes:
    """A representation answer (``array('f')``, see :func:`StaICC.requests.state_vector`) as little-endian
    float32 bytes: bit-exact, four bytes per value."""
    if not isinstance(prediction, array) or prediction.typecode != "f" or not len(prediction):
        raise TypeError(f"answers[{position}] asks for a representation: its prediction must be a non-empty "
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
