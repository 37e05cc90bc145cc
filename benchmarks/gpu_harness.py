"""The harness of a one-shot device run: one deadline, guarded stages, results written the moment a stage ends.

A lent GPU is held for minutes and a run is not repeated, so the run must end on time and
keep what it measured whatever breaks.  :class:`Harness` runs stages in priority order:

* a stage starts only when the run has at least its ``needs_s`` seconds left (otherwise it
  is recorded as skipped, with the reason), and gets ``min(budget_s, time left)`` as its own
  deadline, which it checks between its steps;
* an exception in a stage is recorded with its traceback (also printed to the log) and the
  next stage runs;
* after every stage the whole record is rewritten, atomically, as ``gpu_results.json`` and a
  human-readable ``gpu_table.md``; a watchdog thread ends the process at the deadline
  (plus ``grace_s``), so a hung step costs the stage in progress and nothing else.

Standard library only; ``tests/tools/test_gpu_harness.py`` checks the guard, the skips and the files.
"""
import json
import os
import platform
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

RESULTS_FILE = "gpu_results.json"
TABLE_FILE = "gpu_table.md"


class StageSkipped(Exception):
    """Raised by a stage that decides, before measuring anything, that it cannot run (the message says why)."""


@dataclass
class Stage:
    """One step of the run: ``run(until)`` returns its result dict; ``until`` is its deadline (perf_counter)."""

    name: str
    title: str
    run: Callable[[float], Dict[str, Any]]
    budget_s: float
    needs_s: float


@dataclass
class Harness:
    """The run's clock, record and files (see the module docstring)."""

    out: str
    total_s: float
    started: float = field(default_factory=time.perf_counter)  # perf_counter at the run's start
    inject: set = field(default_factory=set)  # stage or step names that raise once (to test the guards)
    grace_s: float = 3.0
    record: Dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        os.makedirs(self.out, exist_ok=True)
        self.record.setdefault("stages", [])
        self.record.setdefault("python", platform.python_version())
        self.record["deadline_s"] = self.total_s
        self.current: Optional[str] = None

    # ------------------------------------------------------------ the clock
    @property
    def deadline(self) -> float:
        return self.started + self.total_s

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def start_watchdog(self) -> threading.Thread:
        """End the process ``grace_s`` after the deadline, whatever the main thread is doing."""
        def watch() -> None:
            while time.perf_counter() < self.deadline + self.grace_s:
                time.sleep(0.5)
            print(f"\n[harness] watchdog: deadline of {self.total_s:.0f} s passed during stage {self.current!r}; "
                  f"the files hold every stage that ended and the last progress of this one; exiting now", flush=True)
            if self._lock.acquire(timeout=2.0):  # a write in progress finishes first; never wait longer
                self.record["watchdog"] = f"fired at {self.elapsed():.1f} s during stage {self.current!r}"
                self.write()
            sys.stderr.flush()
            os._exit(124)
        thread = threading.Thread(target=watch, name="deadline-watchdog", daemon=True)
        thread.start()
        return thread

    def maybe_fail(self, name: str) -> None:
        """Raise once for a stage or step named in ``inject`` (``--inject-failure``): the guards' test."""
        if name in self.inject:
            self.inject.discard(name)
            raise RuntimeError(f"failure injected into {name!r} (--inject-failure)")

    # ------------------------------------------------------------ the stages
    def run_stage(self, stage: Stage) -> Dict[str, Any]:
        """Run one stage under the guard; its entry (status ok / error / skipped) is recorded and written."""
        left = self.left()
        entry: Dict[str, Any] = {"name": stage.name, "title": stage.title, "budget_s": stage.budget_s,
                                 "started_at_s": round(self.elapsed(), 1)}
        print(f"\n[harness] === {stage.name}: {stage.title} (at {self.elapsed():.1f} s, {left:.0f} s left, "
              f"budget {stage.budget_s:.0f} s) ===", flush=True)
        if left < stage.needs_s:
            entry.update(status="skipped", reason=f"needs {stage.needs_s:.0f} s, {max(0.0, left):.0f} s left")
            return self._finish(entry, 0.0)
        self.current = stage.name
        begin = time.perf_counter()
        until = begin + min(stage.budget_s, left)
        try:
            self.maybe_fail(stage.name)
            entry.update(status="ok", result=stage.run(until))
        except StageSkipped as reason:
            entry.update(status="skipped", reason=str(reason))
        except BaseException as error:  # a stage's failure never stops the run; KeyboardInterrupt ends it below
            entry.update(status="error", error=f"{type(error).__name__}: {error}"[:2000],
                         traceback=traceback.format_exc()[-8000:])
            print(f"[harness] stage {stage.name} FAILED:\n{entry['traceback']}", flush=True)
            if isinstance(error, KeyboardInterrupt):
                self._finish(entry, time.perf_counter() - begin)
                raise
        finally:
            self.current = None
        return self._finish(entry, time.perf_counter() - begin)

    def progress(self, stage: str, result: Dict[str, Any]) -> None:
        """Write what a stage has measured so far: a watchdog exit in its next step keeps it."""
        with self._lock:
            self.record["in_progress"] = {"name": stage, "at_s": round(self.elapsed(), 1), "result": result}
            self.write()

    def _finish(self, entry: Dict[str, Any], seconds: float) -> Dict[str, Any]:
        entry["seconds"] = round(seconds, 2)
        with self._lock:
            self.record.pop("in_progress", None)
            self.record["stages"].append(entry)
            self.record["elapsed_s"] = round(self.elapsed(), 1)
            self.write()
        status = entry["status"] + (f" ({entry.get('reason') or entry.get('error', '')})"
                                    if entry["status"] != "ok" else "")
        print(f"[harness] {entry['name']}: {status} in {seconds:.1f} s; {self.left():.0f} s left", flush=True)
        return entry

    # ------------------------------------------------------------ the files
    def write(self) -> None:
        """Both files, each written whole to a temporary name and renamed over the old one."""
        _replace(os.path.join(self.out, RESULTS_FILE), json.dumps(self.record, indent=1, default=_plain) + "\n")
        _replace(os.path.join(self.out, TABLE_FILE), render_markdown(self.record))


def _replace(path: str, text: str) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _plain(value: Any) -> Any:
    """JSON for what ``json`` cannot write itself (numpy numbers, tuples of odd types): its float, int or text."""
    for kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            continue
    return str(value)


# ------------------------------------------------------------------ markdown
def render_markdown(record: Dict[str, Any]) -> str:
    """The record as Markdown: the header facts, then per stage its status, notes and tables."""
    lines = [f"# {record.get('title', 'GPU run')}", ""]
    for key, value in record.get("header", {}).items():
        lines.append(f"- {key}: {value}")
    lines.append(f"- run: {record.get('elapsed_s', 0)} s of a {record.get('deadline_s')} s deadline")
    summary = record.get("summary") or {}
    if summary:
        lines += ["", "## Summary", ""] + [f"- {note}" for note in summary.get("notes", [])]
        for table in summary.get("tables", []):
            lines += [""] + markdown_table(table["columns"], table["rows"])
    stages = list(record.get("stages", []))
    if record.get("in_progress"):
        progress = record["in_progress"]
        stages.append({"name": progress["name"], "title": "UNFINISHED (what it measured before the run ended)",
                       "status": "unfinished", "budget_s": 0, "seconds": progress["at_s"],
                       "started_at_s": "?", "result": progress["result"]})
    if record.get("watchdog"):
        lines.append(f"- watchdog: {record['watchdog']}")
    for entry in stages:
        lines += ["", f"## {entry['name']}: {entry['title']}", "",
                  f"status: **{entry['status']}**, {entry.get('seconds', 0)} s (budget {entry['budget_s']:.0f} s, "
                  f"started at {entry.get('started_at_s')} s)"]
        if entry["status"] == "skipped":
            lines.append(f"reason: {entry['reason']}")
        if entry["status"] == "error":
            lines += ["", "```", entry["error"], *entry["traceback"].strip().splitlines()[-6:], "```"]
        result = entry.get("result") or {}
        for note in result.get("notes", []):
            lines.append(f"- {note}")
        for table in result.get("tables", []):
            lines += [""] + markdown_table(table["columns"], table["rows"])
    return "\n".join(lines) + "\n"


def markdown_table(columns: List[str], rows: List[List[Any]]) -> List[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        out.append("| " + " | ".join("" if cell is None else str(cell) for cell in row) + " |")
    return out
