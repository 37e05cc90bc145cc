"""Label values to label words and ids: the one place that decides what a label means.

Raw labels are ints or stripped strings; :func:`_resolve_labels` maps them to label
words and to ids 0..n-1 in label-word order, from a list, a dict or (by default) the
distinct values.  Kept apart from the builder because these rules are the subtle part
of reading custom data (integer strings from CSV files, mixed kinds, missing keys).
"""
import re
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

from ..errors import InvalidTypeError, InvalidValueError
from .errors import _Locator

LabelWords = Union[None, Sequence[str], Mapping[Any, str]]
_INTEGER = re.compile(r"[+-]?\d+\Z")
#: longer integer strings are refused as labels (Python refuses to convert > 4,300 digits anyway)
MAX_INTEGER_DIGITS = 1000


def _raw_label(value: Any, row: int, column: str, locator: _Locator) -> Union[int, str]:
    """An int, or a stripped non-empty string; anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        kind = "missing (null)" if value is None else f"a {type(value).__name__} ({value!r})"
        raise locator.error(f"the label is {kind}; labels must be ints or strings", row, column)
    if isinstance(value, str):
        value = value.strip()
        if not value:
            raise locator.error("the label is empty", row, column)
        if len(value) > MAX_INTEGER_DIGITS and _INTEGER.match(value):
            raise locator.error(f"the label is an integer of {len(value)} digits; a label id or value has at most "
                                f"{MAX_INTEGER_DIGITS}", row, column)
    return value


def _check_words(words: Sequence[Any], what: str) -> List[str]:
    words = list(words)
    for word in words:
        if not isinstance(word, str) or not word.strip():
            raise InvalidValueError(f"{what}: every label word must be a non-empty string, got {word!r}")
    duplicated = sorted({w for w in words if words.count(w) > 1})
    if duplicated:
        raise InvalidValueError(f"{what}: duplicate label words {duplicated}; each label needs its own word "
                                "(to merge classes, map their values in your records first)")
    if len(words) < 2:
        raise InvalidValueError(f"{what}: a classification task needs at least 2 label words, got {words!r}")
    return words


def _resolve_labels(raw: List[Tuple[int, Union[int, str]]], label_words: LabelWords, column: str,
                    locator: _Locator) -> Tuple[List[str], List[int]]:
    """(label words, label id per row) with ids 0..n-1 in label-word order."""
    if label_words is None:
        ints = [(row, v) for row, v in raw if isinstance(v, int)]
        texts = [(row, v) for row, v in raw if isinstance(v, str)]
        numeric_texts = all(_INTEGER.match(v) for _row, v in texts)
        if ints and texts and not numeric_texts:
            (int_row, int_value), (text_row, text_value) = ints[0], next((r, v) for r, v in texts
                                                                        if not _INTEGER.match(v))
            raise locator.error(f"labels mix ints ({locator.row_kind} {int_row}: {int_value!r}) and strings "
                                f"({locator.row_kind} {text_row}: {text_value!r}); give label_words",
                                text_row, column)
        if numeric_texts:  # ints, or integer strings as CSV files give them
            values = sorted({int(v) for _row, v in raw})
            words = _check_words([str(v) for v in values], "default label words (distinct label values)")
            position = {v: i for i, v in enumerate(values)}
            return words, [position[int(v)] for _row, v in raw]
        words = _check_words(sorted({v for _row, v in texts}), "default label words (distinct label values)")
        position = {w: i for i, w in enumerate(words)}
        return words, [position[v] for _row, v in raw]

    if isinstance(label_words, Mapping):
        keys = list(label_words)
        words = _check_words([label_words[k] for k in keys], "label_words")
        lookup: Dict[Any, int] = {}
        for i, key in enumerate(keys):
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise InvalidTypeError(f"label_words keys must be raw label values (ints or strings), got {key!r}")
            lookup[key.strip() if isinstance(key, str) else key] = i
        ids = []
        for row, value in raw:
            if value in lookup:
                ids.append(lookup[value])
            elif isinstance(value, str) and _INTEGER.match(value) and int(value) in lookup:
                ids.append(lookup[int(value)])
            elif isinstance(value, int) and str(value) in lookup:
                ids.append(lookup[str(value)])
            else:
                raise locator.error(f"label {value!r} is not a key of label_words {keys!r}", row, column)
        return words, ids

    if isinstance(label_words, (str, bytes)) or not isinstance(label_words, Sequence):
        raise InvalidTypeError(f"label_words must be a list (index = raw label id), a dict {{raw value: word}} or None, "
                               f"got {type(label_words).__name__}")
    words = _check_words(label_words, "label_words")
    position = {w: i for i, w in enumerate(words)}
    ids = []
    for row, value in raw:
        if isinstance(value, str) and value in position:
            ids.append(position[value])
            continue
        index = int(value) if isinstance(value, int) or _INTEGER.match(value) else None
        if index is None or not 0 <= index < len(words):
            expected = f"a label id 0..{len(words) - 1} or one of the words {words!r}"
            raise locator.error(f"label {value!r} is outside the label words: expected {expected}", row, column)
        ids.append(index)
    return words, ids

