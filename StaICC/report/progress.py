"""What ``staicc report`` and ``staicc compare`` are doing, on stderr, so a slow machine never looks hung.

Reading a full-suite run, its statistics and its figures take a minute or more on a loaded
machine; each step says so as it starts: on a terminal as one line rewritten in place
(cleared at the end), elsewhere (``--progress`` into a log) as one line per step.  The
time since the command started is on every line.
"""
import shutil
import sys
import time
from typing import IO, Optional

from .escaping import terminal_escape


class StatusLine:
    """``status("reading run 1 of 2: A")`` writes the step; ``done()`` clears a terminal line.

    ``enabled=None`` writes only when ``stream`` (stderr by default) is a terminal, as
    ``staicc run``'s progress bars do; True writes anyway, False never.  The object is the
    ``progress`` callback the statistics take (``bootstrap_run``, ``compare_runs``).
    """

    def __init__(self, command: str, enabled: Optional[bool] = None, stream: Optional[IO[str]] = None) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.live if enabled is None else enabled
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, message: str) -> None:
        if not self.enabled:
            return
        text = f"{self.command}: {terminal_escape(message)} ({time.monotonic() - self.started:.0f} s)"
        if self.live:  # one line rewritten in place: never wider than the terminal, or it would wrap
            width = shutil.get_terminal_size((100, 24)).columns - 1
            text = text if len(text) <= width else text[:max(width - 1, 0)] + "…"
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """Clear the terminal line (lines written to a log stay)."""
        if self.live and self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> "StatusLine":
        return self

    def __exit__(self, *exc_info) -> None:
        self.done()
