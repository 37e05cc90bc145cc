"""Argument checks shared by every module: one vocabulary, one message form.

A check is data: a constraint (:class:`Integer`, :class:`Real`, :class:`Options`, :class:`Boolean`) says what
is expected, a :class:`Location` says where the value sits, and :func:`check` raises one message form::

    {name} must be {expected}{at}, got {given}

``k must be an int in BM25Retriever.build_sampler, got str '3'``: the name of the argument, field or option,
what was expected, where (``at``: `` in Owner``, :func:`StaICC.errors.where`'s `` at dataset 'x', query 3``,
:func:`in_file`'s `` in runs/a.jsonl, row 4``) and what was given (a refused type: its type and value).  A
refused type raises :class:`~StaICC.errors.InvalidParameterError` (a ``TypeError`` and a ``ValueError``), a
refused value :class:`~StaICC.errors.InvalidValueError`; :func:`argument_type` gives argparse the same check
as a ``type=`` function.  The ``check_*`` helpers below are thin uses of it.  ``bool`` is never accepted where
an int or a real number is expected: ``True`` is not a k.  tests/test_validation_vocabulary.py keeps inline
type-and-range checks out of the rest of the package.
"""
import argparse
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from .errors import InvalidParameterError, InvalidTypeError, InvalidValueError


@dataclass(frozen=True)
class Location:
    """Where a checked value sits: ``name`` (``k``, ``--resamples``, ``field 'score'``) and ``at``, the place
    after the expectation (`` in Owner``, `` at dataset 'x', query 3``, `` in a.jsonl, row 4``; may be empty)."""
    name: str
    at: str = ""


def in_file(path: Any, row: Optional[int] = None) -> str:
    """The ``at`` of a value read from a file: `` in PATH`` or `` in PATH, row N`` (rows count from 1)."""
    return f" in {path}" + (f", row {row}" if row is not None else "")


@dataclass(frozen=True)
class Refusal:
    """Why a constraint refuses a value: the error class, what was expected and what was given, in words."""
    error: type
    expected: str
    given: str


def _wrong_type(value: Any, expected: str, worded: bool) -> Refusal:
    """A refused type shows its type and value (``got str '3'``); where one ``text`` words every refusal of a
    constraint (``worded``: no ``kind`` of its own) the value alone, as those messages always read (``must be a
    positive integer, got '3'``)."""
    return Refusal(InvalidParameterError, expected, repr(value) if worded else f"{type(value).__name__} {value!r}")


#: which ends of ``[low, high]`` a :class:`Real` includes
CLOSED = ("both", "left", "right", "neither")


def _shown(given: Any, converted: Any) -> str:
    """A refused value as the message shows it: as given when it is a plain int or float (``-1``, not the
    ``-1.0`` it was converted to), else converted (``5``, not ``np.int64(5)``)."""
    return repr(given if type(given) in (int, float) else converted)


def _range_refusal(given: Any, value: Any, low: Any, high: Any, closed: str, text: str) -> Optional[Refusal]:
    left, right = closed in ("both", "left"), closed in ("both", "right")
    if low is not None and (value < low if left else value <= low):
        return Refusal(InvalidValueError, text or f"{'>=' if left else '>'} {low}", _shown(given, value))
    if high is not None and (value > high if right else value >= high):
        return Refusal(InvalidValueError, text or f"{'<=' if right else '<'} {high}", _shown(given, value))
    return None


@dataclass(frozen=True)
class Integer:
    """An int (or NumPy integer, converted; never a bool) in ``[low, high]`` (``None``: unbounded).  ``text``
    names the expectation in every refusal ("a positive integer"); ``kind``, when given, in a refused type
    only.  By default a wrong type reads "an int" and a value out of range ">= low" or "<= high"."""
    low: Optional[int] = None
    high: Optional[int] = None
    text: str = ""
    kind: str = ""
    parse: Callable[[str], Any] = int

    @property
    def type_words(self) -> str:
        return self.kind or self.text or "an int"

    def judge(self, value: Any) -> Tuple[Optional[Refusal], Any]:
        if not is_int(value):
            return _wrong_type(value, self.type_words, bool(self.text) and not self.kind), value
        number = int(value)
        return _range_refusal(value, number, self.low, self.high, "both", self.text), number


@dataclass(frozen=True)
class Real:
    """A real number (int, float, Fraction, NumPy scalar; never a bool), converted to float: finite unless
    ``finite=False`` (NaN is always refused), between ``low`` and ``high``, which ``closed`` includes ("both",
    "left", "right", "neither").  ``text`` names the expectation in every refusal; ``kind`` in a refused type
    only (by default ``text``, else "a real number")."""
    low: Optional[float] = None
    high: Optional[float] = None
    closed: str = "both"
    finite: bool = True
    text: str = ""
    kind: str = ""
    parse: Callable[[str], Any] = float

    def __post_init__(self) -> None:
        check(self.closed, Options(CLOSED), "closed")

    @property
    def type_words(self) -> str:
        return self.kind or self.text or "a real number"

    def judge(self, value: Any) -> Tuple[Optional[Refusal], Any]:
        if not is_real(value):
            return _wrong_type(value, self.type_words, bool(self.text) and not self.kind), value
        try:
            number = float(value)
        except OverflowError:  # a huge int
            return Refusal(InvalidValueError, self.text or "a number a float can hold",
                           f"an int of {len(str(abs(int(value))))} digits"), value
        if math.isnan(number) or (self.finite and math.isinf(number)):
            return Refusal(InvalidValueError, self.text or "a finite number", _shown(value, number)), number
        return _range_refusal(value, number, self.low, self.high, self.closed, self.text), number


@dataclass(frozen=True)
class Options:
    """One of ``values``, compared with ``==`` but a bool only with a bool (``1`` is not ``True``, ``True``
    is not ``1``); ``text`` names the expectation instead of listing them."""
    values: Tuple[Any, ...]
    text: str = ""

    def judge(self, value: Any) -> Tuple[Optional[Refusal], Any]:
        if any(value == option and isinstance(value, bool) == isinstance(option, bool) for option in self.values):
            return None, value
        return Refusal(InvalidValueError, self.text or f"one of {', '.join(map(repr, self.values))}", repr(value)), value


@dataclass(frozen=True)
class Boolean:
    """``True`` or ``False``, nothing else (not 0 or 1)."""
    text: str = "True or False"

    def judge(self, value: Any) -> Tuple[Optional[Refusal], Any]:
        return (None if isinstance(value, bool) else _wrong_type(value, self.text, False)), value


Constraint = Union[Integer, Real, Options, Boolean]


def refusal_message(where: Location, refusal: Refusal) -> str:
    """The one message form: ``{name} must be {expected}{at}, got {given}``."""
    return f"{where.name} must be {refusal.expected}{where.at}, got {refusal.given}"


def check(value: Any, constraint: Constraint, where: Union[Location, str]) -> Any:
    """``value`` (converted: an int, a float) when ``constraint`` holds, else the refusal in the one message form:
    :class:`~StaICC.errors.InvalidParameterError` for a wrong type, :class:`~StaICC.errors.InvalidValueError`
    for a wrong value.  ``where``: a :class:`Location`, or the name alone."""
    return _refused_or(constraint.judge(value), where)


def judge_text(text: str, constraint: Union[Integer, Real]) -> Tuple[Optional[Refusal], Any]:
    """(the refusal or None, the value) of a value given as text: parsed by the constraint's ``parse``, then judged.
    Text that does not parse is refused as written (``got 'abc'``); a parsed value out of range shows as the
    number.  The one parse step of :func:`argument_type` and :func:`check_text`."""
    try:
        value = constraint.parse(text)
    except ValueError:
        return Refusal(InvalidValueError, constraint.type_words, repr(text)), text
    return constraint.judge(value)


def argument_type(constraint: Union[Integer, Real]) -> Callable[[str], Any]:
    """An argparse ``type=`` function checking ``constraint``: its refusal is argparse's one line
    (``argument --resamples: expected a positive integer, got 0``, exit status 2, before anything runs)."""
    def convert(text: str) -> Any:
        refusal, value = judge_text(text, constraint)
        if refusal is not None:
            raise argparse.ArgumentTypeError(f"expected {refusal.expected}, got {refusal.given}")
        return value
    return convert


def check_text(text: str, constraint: Union[Integer, Real], where: Union[Location, str]) -> Any:
    """A value given as text (a command-line option's), parsed and checked by :func:`judge_text`, every refusal in
    the one message form of :func:`check`."""
    return _refused_or(judge_text(text, constraint), where)


def _refused_or(judged: Tuple[Optional[Refusal], Any], where: Union[Location, str]) -> Any:
    """The judged value, or its refusal raised in the one message form at ``where``."""
    refusal, value = judged
    if refusal is not None:
        location = where if isinstance(where, Location) else Location(where)
        raise refusal.error(refusal_message(location, refusal))
    return value


def check_int(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None,
              at: str = "") -> int:
    """An int (not a bool) in ``[minimum, maximum]``; NumPy integers are accepted and converted."""
    return check(value, Integer(minimum, maximum), Location(name, at))


def check_real(value: Any, name: str, *, minimum: Optional[float] = None, maximum: Optional[float] = None,
               finite: bool = True, at: str = "") -> float:
    """A real number (not a bool), finite unless ``finite=False``, in ``[minimum, maximum]``."""
    return check(value, Real(minimum, maximum, finite=finite), Location(name, at))


def check_bool(value: Any, name: str, *, at: str = "") -> bool:
    return check(value, Boolean(), Location(name, at))


def check_k(k: Any, *, at: str = "") -> int:
    """Demonstrations per query: an int >= 0 (0 is zero-shot).  Checked in O(1).  A negative k is refused
    with the original's words and built-in ``ValueError``, as the original did."""
    k = check(k, Integer(), Location("k", at))
    if k < 0:
        raise ValueError(f"k should be a positive integer: got k = {k}{at} (0 means zero-shot)")
    return k


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
    return check(value, Options(tuple(choices)), Location(name, at))


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
    return check(value, Options(EXACT_SUM_RULES), name)


def check_prediction_kind(kind: Any, name: str = "prediction_kind") -> Optional[str]:
    """``kind`` when it is None or one of :data:`PREDICTION_KINDS`, else a ValueError saying the choices."""
    words = f"None (the standard's rule) or one of {', '.join(map(repr, PREDICTION_KINDS))}"
    return check(kind, Options((None,) + PREDICTION_KINDS, text=words), name)
