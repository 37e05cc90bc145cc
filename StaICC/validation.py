"""Argument checks shared by every module: one rule, one message shape.

Each check returns the validated value (converted where that is safe) or raises an
``InvalidTypeError``/``InvalidValueError`` (a ``TypeError``/``ValueError``, see :mod:`StaICC.errors`)
whose message names the argument, says what was expected and, through ``at`` (see
:func:`StaICC.errors.where`), where it happened.  ``bool`` is
never accepted where an int or a real number is expected: ``True`` is not a k.
"""
import math
import numbers
from typing import Any, List, Optional, Sequence

from .errors import InvalidTypeError, InvalidValueError


def check_int(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None,
              at: str = "") -> int:
    """An int (not a bool) in ``[minimum, maximum]``; NumPy integers are accepted and converted."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(f"{name} must be an int{at}, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidValueError(f"{name} must be >= {minimum}{at}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidValueError(f"{name} must be <= {maximum}{at}, got {value}")
    return value


def check_real(value: Any, name: str, *, minimum: Optional[float] = None, maximum: Optional[float] = None,
               finite: bool = True, at: str = "") -> float:
    """A real number (not a bool), finite unless ``finite=False``, in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(f"{name} must be a real number{at}, got {type(value).__name__} {value!r}")
    try:
        value = float(value)
    except OverflowError as exc:  # a huge int
        raise InvalidValueError(f"{name} is too large for a float{at}") from exc
    if math.isnan(value) or (finite and math.isinf(value)):
        raise InvalidValueError(f"{name} must be a finite number{at}, got {value}")
    if minimum is not None and value < minimum:
        raise InvalidValueError(f"{name} must be >= {minimum}{at}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidValueError(f"{name} must be <= {maximum}{at}, got {value}")
    return value


def check_bool(value: Any, name: str, *, at: str = "") -> bool:
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be True or False{at}, got {type(value).__name__} {value!r}")
    return value


def check_k(k: Any, *, at: str = "") -> int:
    """Demonstrations per query: an int >= 0 (0 is zero-shot).  Checked in O(1)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidTypeError(f"k must be an int{at}, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k should be a positive integer: got k = {k}{at} (0 means zero-shot)")
    return int(k)


def check_label_space(label_space: Any, *, at: str = "", name: str = "label space") -> List[str]:
    """A non-empty list of distinct strings: duplicate label words make every prediction ambiguous."""
    if isinstance(label_space, (str, bytes)) or not isinstance(label_space, Sequence):
        raise InvalidTypeError(f"the {name} must be a list of strings{at}, got {type(label_space).__name__}")
    labels = list(label_space)
    if not labels:
        raise InvalidValueError(f"the {name} is empty{at}; give one word per label")
    for label in labels:
        if not isinstance(label, str):
            raise InvalidTypeError(f"the {name} must hold strings{at}, got {type(label).__name__} {label!r}")
    seen = set()
    for label in labels:
        if label in seen:
            raise InvalidValueError(f"the {name} names {label!r} twice{at}; label words must be distinct")
        seen.add(label)
    return labels


def check_choice(value: Any, name: str, choices: Sequence[Any], *, at: str = "") -> Any:
    if value not in choices:
        raise InvalidValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}{at}, got {value!r}")
    return value


def is_int(value: Any) -> bool:
    """An int or NumPy integer, never a bool: the test behind :func:`check_int`, for callers with their own message."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number (int, float, Fraction, NumPy scalar), never a bool: the test behind :func:`check_real`."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_str(value: Any, name: str, *, at: str = "") -> str:
    """A string (template pieces: instruction, prefixes, affixes)."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a string{at}, got {type(value).__name__} {value!r}")
    return value


def check_str_list(value: Any, name: str, *, at: str = "") -> List[str]:
    """A list of strings (one template piece per input element), copied."""
    if not isinstance(value, list):
        raise InvalidTypeError(f"{name} must be a list of strings{at}, got {type(value).__name__} {value!r}")
    for item in value:
        if not isinstance(item, str):
            raise InvalidTypeError(f"{name} must hold strings{at}, got {type(item).__name__} {item!r}")
    return list(value)


def closest_name(word: Any, names: Sequence[str], cutoff: float = 0.75) -> Optional[str]:
    """The name ``word`` most likely meant, for a "did you mean" hint; None when nothing is close.

    First the same letters and digits in another case or spelling (``normal`` -> ``Normal``,
    ``ag_news`` -> ``AGNews``), then the one name that ends or starts with them (``sst2`` ->
    ``GLUE-SST2``, as lm-evaluation-harness names it), then a close spelling (``cutoff``: difflib's
    similarity ratio, 0.75 by default; a short word such as a command needs a lower one).
    """
    import difflib
    if not isinstance(word, str) or not word.strip():
        return None

    def letters(text: str) -> str:
        return "".join(c for c in text.lower() if c.isalnum())
    wanted, by_letters = letters(word), {letters(name): name for name in names}
    if wanted in by_letters:
        return by_letters[wanted]
    around = [name for key, name in by_letters.items() if len(wanted) >= 3 and (key.endswith(wanted)
                                                                               or key.startswith(wanted))]
    if len(around) == 1:
        return around[0]
    close = difflib.get_close_matches(wanted, list(by_letters), n=1, cutoff=cutoff)
    return by_letters[close[0]] if close else None


def did_you_mean(word: Any, names: Sequence[str]) -> str:
    """``"; did you mean 'X'?"`` for :func:`closest_name`, or an empty string."""
    name = closest_name(word, names)
    return f"; did you mean {name!r}?" if name is not None and name != word else ""


#: what a function's or preentered vectors may be declared to be (None: the standard's exact-sum rule decides);
#: see :mod:`StaICC.metrics.exact_sum`
PREDICTION_KINDS = ("probabilities", "loglikelihoods", "logits")
#: the exact-sum rule a model backend's rows take: "standard" (the softmax branch always, route-independent)
#: or "original" (the original's check, as its kernel met it: route-dependent, to replicate a published run)
EXACT_SUM_RULES = ("standard", "original")


def check_exact_sum(value: Any, name: str = "exact_sum") -> str:
    """``value`` when it is one of :data:`EXACT_SUM_RULES`, else a ValueError saying the choices."""
    if isinstance(value, str) and value in EXACT_SUM_RULES:
        return value
    raise InvalidValueError(f"{name} must be one of {', '.join(map(repr, EXACT_SUM_RULES))}, got {value!r}")


def check_prediction_kind(kind: Any, name: str = "prediction_kind") -> Optional[str]:
    """``kind`` when it is None or one of :data:`PREDICTION_KINDS`, else a ValueError saying the choices."""
    if kind is None or (isinstance(kind, str) and kind in PREDICTION_KINDS):
        return kind
    raise InvalidValueError(f"{name} must be None (the standard's rule) or one of {', '.join(map(repr, PREDICTION_KINDS))}, "
                            f"got {kind!r}")
