"""Reading run directories: :func:`load_run` is :meth:`StaICC.results.run.Run.load` under the name the
report's documentation teaches (``StaICC.report.load_run``), and :func:`run_labels` names runs for tables.

The reading itself, with every limit and refusal, is :mod:`StaICC.results.run_files`.
"""
import os
from typing import Any, List, Optional

from ..errors import RunFormatError  # noqa: F401  (defined with the other errors; importable here)
from ..results.run import Run
from ..results.run_files import MAX_SAMPLES_BYTES, RESULTS_FILE  # noqa: F401


def load_run(path: Any, label: Optional[str] = None, *, records: bool = True,
             max_samples_bytes: Optional[int] = None) -> Run:
    """Load a run directory (or its ``results.json``, or an Every Eval Ever export of a run) and, unless
    ``records=False``, its records: :meth:`Run.load`."""
    return Run.load(path, label, records=records, max_samples_bytes=max_samples_bytes)


def run_labels(paths: List[str]) -> List[str]:
    """Short distinct run names: the directory names, made unique with their position when needed."""
    names = []
    for path in paths:
        path = os.path.abspath(os.fspath(path))
        if os.path.basename(path) == RESULTS_FILE:
            path = os.path.dirname(path)
        names.append(os.path.basename(path.rstrip(os.sep)) or path)
    if len(set(names)) < len(names):
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    return names
