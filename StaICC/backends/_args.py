"""Backend factory arguments: strings from ``--model-args`` or Python values, checked before any loading.

Every converter takes the argument's name so that its error says which ``key=value``
was wrong, and converts a CLI string ("8", "true", "0.5", "none") to the Python value.
"""
from typing import Any, Callable, Dict, Optional, Sequence

from ..errors import InvalidValueError
from ..validation import check_choice, check_int, check_real

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def model_arg(name: str) -> str:
    return f"model argument {name}"


def is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null"))


def _from_text(value: Any, name: str, parse: Callable[[str], Any], expected: str) -> Any:
    """A command-line value (text) parsed by ``parse``; any other value unchanged, for the checker."""
    if not isinstance(value, str):
        return value
    try:
        return parse(value.strip())
    except ValueError:
        raise InvalidValueError(f"{model_arg(name)} must be {expected}, got {value!r}") from None


def as_int(value: Any, name: str, *, minimum: Optional[int] = None, optional: bool = False) -> Optional[int]:
    if optional and is_none(value):
        return None
    return check_int(_from_text(value, name, int, "an integer"), model_arg(name), minimum=minimum)


def as_float(value: Any, name: str, *, minimum: Optional[float] = None, maximum: Optional[float] = None,
             optional: bool = False) -> Optional[float]:
    if optional and is_none(value):
        return None
    return check_real(_from_text(value, name, float, "a number"), model_arg(name), minimum=minimum, maximum=maximum)


def as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise InvalidValueError(f"{model_arg(name)} must be true or false, got {value!r}")


def as_str(value: Any, name: str, *, optional: bool = False) -> Optional[str]:
    if optional and is_none(value):
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidValueError(f"{model_arg(name)} must be a non-empty string, got {value!r}")
    return value.strip()


def as_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if isinstance(value, str):
        value = value.strip()
    return check_choice(value, model_arg(name), choices)


def no_unknown(backend: str, arguments: Dict[str, Any], known: Sequence[str] = ()) -> None:
    """Refuse arguments a factory does not know (a typo must not be silently ignored)."""
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise InvalidValueError(f"the {backend} backend does not take model argument(s) {', '.join(unknown)}"
                                + (f"; it takes {', '.join(sorted(known))}" if known else ""))
