"""Run directories: ``results.json`` (results, metadata, provenance) and ``samples.jsonl`` (records).

The format is documented in ``docs/architecture.md``.  Files are written whole to a
unique temporary name and renamed (:mod:`.safe_files`), so a reader never sees half a
file, a full disk leaves the previous files as they were, and a link planted in a
shared output directory is replaced, never followed.
"""
import json
import os
from typing import Any, Dict, Optional

from .provenance import strict_json_value
from .records import write_records
from .safe_files import atomic_writer, check_directory

RESULTS_FORMAT = "staicc-results/1"
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"


def check_output_dir(directory: str) -> None:
    """Create ``directory`` if needed and make sure files can be written there — before any inference."""
    try:
        check_directory(directory)
    except OSError as exc:
        raise ValueError(f"cannot write to the output directory {directory!r}: {exc.strerror or exc}") from None


def results_document(results: Dict[str, Any], provenance: Dict[str, Any], samples: Optional[str]) -> Dict[str, Any]:
    """The strict-JSON body of ``results.json``; non-finite numbers become null and are listed."""
    non_finite: list = []
    benchmarks = {name: {"results": strict_json_value(dict(result), non_finite, f"{name}.results"),
                         "metadata": strict_json_value(result.metadata, non_finite, f"{name}.metadata")}
                  for name, result in results.items()}
    return {"format": RESULTS_FORMAT, "provenance": strict_json_value(provenance, non_finite, "provenance"),
            "benchmarks": benchmarks, "samples": samples, "non_finite": non_finite}


def write_run_dir(directory: str, results: Dict[str, Any], provenance: Dict[str, Any],
                  log_samples: bool = False) -> Dict[str, Any]:
    """Write ``results.json`` (and ``samples.jsonl`` with ``log_samples``); returns the document."""
    os.makedirs(directory, exist_ok=True)
    samples = None
    if log_samples:
        samples = SAMPLES_FILE
        with atomic_writer(os.path.join(directory, SAMPLES_FILE)) as fh:
            write_records(_all_records(results), fh)
    document = results_document(results, provenance, samples)
    with atomic_writer(os.path.join(directory, RESULTS_FILE)) as fh:
        json.dump(document, fh, indent=1, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
    return document


def _all_records(results: Dict[str, Any]):
    for result in results.values():
        yield from getattr(result, "records", ())
