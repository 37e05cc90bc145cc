"""Progress reporting on stderr: tqdm when installed, a small built-in bar otherwise."""
import sys
import time
from typing import Optional


class _Bar:
    """Minimal progress bar; redraws at most 5 times a second."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.count = total, desc, 0
        self.start = self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last >= 0.2 or self.count >= self.total:
            self._last = now
            rate = self.count / max(now - self.start, 1e-9)
            sys.stderr.write(f"\r{self.desc}: {self.count}/{self.total} ({rate:.0f}/s)")
            sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, enabled: Optional[bool] = None):
    """A bar for ``total`` steps; ``enabled=None`` shows it only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled or total <= 0:
        return _NoBar()
    try:
        from tqdm import tqdm  # optional
    except ImportError:
        return _Bar(total, desc)
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False)
