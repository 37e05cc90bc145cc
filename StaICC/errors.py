"""Exceptions and warnings raised by StaICC.

Errors always say what was expected and where (dataset, query index).
Warnings of the standard's "tampering" kind go through :mod:`warnings`; the
cause is part of the message, so Python's default filter shows each cause once
per call site instead of once per query.
"""
import warnings
from typing import Any, Dict, List, Optional

from .standard import TAMPERING_WARNING


class StaICCError(Exception):
    """Base class of every error StaICC raises on purpose.

    Each concrete error also subclasses the built-in type code written before this base
    existed catches (``ValueError``, ``RuntimeError`` ...), so ``except ValueError`` keeps
    working while ``except StaICCError`` catches every refusal of this package.
    """


class StaICCWarning(UserWarning):
    """Base class of every warning StaICC emits."""


class TamperingWarning(StaICCWarning):
    """A standard setting was changed: results are not comparable baselines."""


class InferenceError(StaICCError, RuntimeError):
    """The user's inference function raised; carries where it happened and the work done so far.

    ``partial_predictions`` holds the predictions of the queries that succeeded
    before the failure, ``completed_results`` the results of datasets that
    finished earlier in a benchmark run: nothing is lost.
    """

    def __init__(self, message: str, dataset: Optional[str] = None, query_index: Optional[int] = None,
                 partial_predictions: Optional[List[Any]] = None) -> None:
        super().__init__(message)
        self.dataset = dataset
        self.query_index = query_index
        self.partial_predictions = partial_predictions if partial_predictions is not None else []
        self.completed_results: Dict[str, Any] = {}


class RunFormatError(StaICCError, ValueError):
    """A results file or records file that does not follow the documented format."""


class InvalidValueError(StaICCError, ValueError):
    """An argument, setting or name the package refuses: what was expected, what was given and where."""


class InvalidTypeError(StaICCError, TypeError):
    """An argument of the wrong type: what was expected, what was given and where."""


class InvalidParameterError(InvalidValueError, InvalidTypeError):
    """A value of the wrong type for its parameter (a string where a number belongs): both a ``TypeError`` and a
    ``ValueError``, as scikit-learn's ``InvalidParameterError`` is, so a caller written for either kind catches
    it.  :func:`StaICC.validation.check` raises it for every refused type."""


class UnknownNameError(StaICCError, KeyError):
    """A name looked up in a table that does not hold it (a metric, a template key)."""


class OutOfRangeError(StaICCError, IndexError):
    """An index outside the rows, records or items it points into."""


class OperationError(StaICCError, RuntimeError):
    """A step that cannot go on: a model or engine answered outside its contract, a method was used
    before it was fitted, a worker failed."""


class MissingExtraError(StaICCError, ImportError):
    """A feature needs an optional package that is not installed; the message names the ``pip install``."""


class MissingFileError(StaICCError, FileNotFoundError):
    """A file or run directory that a path names does not exist."""


class NotAFolderError(StaICCError, NotADirectoryError):
    """A path that must be a folder is a file."""


class IsAFolderError(StaICCError, IsADirectoryError):
    """A path that must be a file is a folder."""


class PathRefusedError(StaICCError, OSError):
    """A path the package refuses to write through (a symbolic link)."""


#: the built-in each refusal class stands in for: ``raise ValueError(...)`` in the package is
#: ``raise InvalidValueError(...)`` (tools/refusals_codemod.py applies and checks this table)
STAND_INS: Dict[type, type] = {
    ValueError: InvalidValueError, TypeError: InvalidTypeError, KeyError: UnknownNameError,
    IndexError: OutOfRangeError, RuntimeError: OperationError, ImportError: MissingExtraError,
    FileNotFoundError: MissingFileError, NotADirectoryError: NotAFolderError, IsADirectoryError: IsAFolderError,
    OSError: PathRefusedError,
}
_BUILTIN_NAMES = {stand_in: builtin.__name__ for builtin, stand_in in STAND_INS.items()}
_BUILTIN_NAMES[InvalidParameterError] = "TypeError"  # a refused type: the name it had before


def error_name(exc: BaseException) -> str:
    """The class name a message shows for ``exc``: a stand-in of :data:`STAND_INS` shows its built-in's
    name (``InvalidValueError`` reads ``ValueError``), so a message that names a caught error reads the
    same whichever of the two the package raised; every other class shows its own name."""
    return _BUILTIN_NAMES.get(type(exc), type(exc).__name__)


def warn(message: str, category: type = StaICCWarning, stacklevel: int = 3) -> None:
    warnings.warn(message, category, stacklevel=stacklevel)


def warn_tampering(cause: str, stacklevel: int = 3) -> None:
    """Emit the standard's tampering warning, naming what was changed."""
    warnings.warn(f"{TAMPERING_WARNING} ({cause})", TamperingWarning, stacklevel=stacklevel)


def where(dataset: Optional[str], query_index: Optional[int] = None) -> str:
    """Human-readable location used in every error message."""
    parts = []
    if dataset is not None:
        parts.append(f"dataset {dataset!r}")
    if query_index is not None:
        parts.append(f"query {query_index}")
    return " at " + ", ".join(parts) if parts else ""
