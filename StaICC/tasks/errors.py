"""The error every task check raises: the task file, the key (and the data row), then what was expected.

One class so that the command line can turn any of them into one line and exit status 2
before a model loads, and so that tests can read ``.path``, ``.key`` and ``.row``.
"""
import difflib
from typing import Iterable, Optional
from ..errors import StaICCError


class TaskError(StaICCError, ValueError):
    """A task file is wrong.  ``path``: the task file (or ``<name>`` for one given in Python);
    ``key``: the dotted key (``template.label_prefix``); ``row``: where in the data, as the
    data's own error names it (``file 'x.csv', line 7, column 'text'``)."""

    def __init__(self, message: str, *, path: str, key: Optional[str] = None, row: Optional[str] = None) -> None:
        self.path, self.key, self.row, self.reason = path, key, row, message
        where = [f"task file {path!r}"]
        if key is not None:
            where.append(f"key {key!r}")
        if row is not None:
            where.append(row)
        super().__init__(", ".join(where) + ": " + message)


def nearest(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest valid name (another case or spelling first, as
    :func:`StaICC.validation.closest_name` finds it), or ``"; valid keys: ..."`` when none is close."""
    from ..validation import closest_name
    choices = sorted(choices)
    close = [closest_name(word, choices)] if closest_name(word, choices) is not None else \
        difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; valid keys: {', '.join(choices)}"
