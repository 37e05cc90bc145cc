"""Progress on stderr: one bar per dataset and pass, with throughput and time left.

tqdm draws it when installed; otherwise a small built-in bar redraws at most five times
a second.  ``enabled=None`` shows bars only when stderr is a terminal.
"""
import sys
import time
from typing import Optional


class _Bar:
    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.count = total, desc, 0
        self.start = self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last >= 0.2 or self.count >= self.total:
            self._last = now
            elapsed = max(now - self.start, 1e-9)
            rate = self.count / elapsed
            left = (self.total - self.count) / rate if rate > 0 else 0.0
            sys.stderr.write(f"\r{self.desc}: {self.count}/{self.total} [{rate:.1f} prompt/s, "
                             f"{_clock(elapsed)} elapsed, {_clock(left)} left]")
            sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60:02d}:{seconds % 60:02d}"


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def in_notebook() -> bool:
    """True inside a Jupyter kernel (its stderr is no terminal, but a bar there is wanted and drawn)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None) if shell is not None else None
    instance = get() if callable(get) else None
    return instance is not None and "IPKernelApp" in getattr(instance, "config", {})


def progress_bar(total: int, desc: str, enabled: Optional[bool] = None):
    """A bar for ``total`` prompts; nothing when disabled, not a terminal nor a notebook, or nothing to do.

    In a notebook tqdm's notebook bar is used when tqdm (and its widgets) are installed,
    tqdm's plain bar or the built-in one otherwise.
    """
    notebook = in_notebook()
    if enabled is None:
        enabled = sys.stderr.isatty() or notebook
    if not enabled or total <= 0:
        return _NoBar()
    try:
        if notebook:
            from tqdm.auto import tqdm  # optional: the notebook bar when ipywidgets is there
        else:
            from tqdm import tqdm  # optional
    except ImportError:
        return _Bar(total, desc)
    return tqdm(total=total, desc=desc, unit="prompt", file=sys.stderr, leave=False)
