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
