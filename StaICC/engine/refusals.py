"""Answers a backend refused (:class:`~StaICC.backends.base.BadAnswersError`: a hostile or broken server).

A call that refuses some answers keeps its good ones (the caller stores them) and the run asks
on; every refusal of the run is raised together at its end (one line per refused answer), so no
number is computed from a refused answer and the user sees every bad answer at once.
"""
from typing import Any, List, Sequence

from ..backends.base import BadAnswersError


def kept_answers(error: BadAnswersError, size: int, refused: List[BadAnswersError]) -> List[Any]:
    """The good answers of a call of ``size`` requests that raised ``error`` (None where refused); the
    refusal is appended to ``refused``."""
    if len(error.answered) != size:
        raise error
    refused.append(error)
    return error.answered


def raise_refused(refused: Sequence[BadAnswersError], **attributes: Any) -> None:
    """Raise every refusal as one error (``attributes`` set on it), if there is any."""
    if refused:
        error = BadAnswersError.merged(refused)
        for name, value in attributes.items():
            setattr(error, name, value)
        raise error
