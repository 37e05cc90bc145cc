"""What ``staicc report`` and ``staicc compare`` are doing, on stderr, so a slow machine never looks hung.

Reading a full-suite run, its statistics and its figures take seconds, a minute on a loaded
machine; each step says so: on a terminal as one line rewritten in place as it starts (cleared
at the end); elsewhere (output piped into a log) as one line per step, every step with
``--progress``, and otherwise only a step still running :data:`SLOW_STEP_S` seconds after it
began, so a quick command writes nothing and a slow one never looks hung.  The time since the
command started is on every line.
"""
import shutil
import sys
import threading
import time
from typing import IO, Optional

from .escaping import terminal_escape

#: off a terminal and without --progress, a step is announced once it has run this many seconds
SLOW_STEP_S = 2.0


class StatusLine:
    """``status("reading run 1 of 2: A")`` writes the step; ``done()`` clears a terminal line.

    ``enabled=None`` writes every step on a terminal and, elsewhere, each step that runs longer than
    :data:`SLOW_STEP_S` (a timer writes it then); True writes every step, False never.  The object is
    the ``progress`` callback the statistics take (``bootstrap_run``, ``compare_runs``).
    """

    def __init__(self, command: str, enabled: Optional[bool] = None, stream: Optional[IO[str]] = None) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.live if enabled is None else enabled
        self.slow_only = enabled is None and not self.live
        self.started = time.monotonic()
        self.shown = False
        self._timer: Optional[threading.Timer] = None
        self._pending: Optional[str] = None  # the step a timer may still announce
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        self._cancel()
        if self.slow_only:  # announced only if it is still the current step SLOW_STEP_S from now
            with self._lock:
                self._pending = message
                self._timer = threading.Timer(SLOW_STEP_S, self._write, (message, True))
                self._timer.daemon = True
                self._timer.start()
        elif self.enabled:
            self._write(message)

    def _write(self, message: str, timed: bool = False) -> None:
        with self._lock:
            if timed and self._pending is not message:  # the step ended while its timer was firing
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

    def _cancel(self) -> None:
        with self._lock:  # a step announced by its timer is written whole before the next one starts
            self._pending = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def done(self) -> None:
        """Stop a pending announcement and clear the terminal line (lines written to a log stay)."""
        self._cancel()
        if self.live and self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> "StatusLine":
        return self

    def __exit__(self, *exc_info) -> None:
        self.done()
