"""The lines ``staicc`` prints for answers a backend refused (:class:`~StaICC.backends.base.BadAnswersError`)."""
import sys

from .common import one_line

#: the refused answers printed one line each; the rest are counted
SHOWN_BAD_ANSWERS = 20


def print_refused(exc: BaseException) -> BaseException:
    """One ``staicc: bad answer:`` line per refused answer (the first :data:`SHOWN_BAD_ANSWERS`) on stderr; returns
    the error to report after them (how many there were, and that no result was computed), or ``exc`` itself when
    it refused no answer."""
    lines = getattr(exc, "lines", None)
    if not lines:
        return exc
    for line in lines[:SHOWN_BAD_ANSWERS]:
        print(f"staicc: bad answer: {one_line(line)}", file=sys.stderr)
    more = f" (the first {SHOWN_BAD_ANSWERS} shown)" if len(lines) > SHOWN_BAD_ANSWERS else ""
    return RuntimeError(f"{len(lines)} bad answer(s){more}; no result was computed from them")
