"""Run directories: ``results.json`` (results, metadata, provenance), ``samples.jsonl`` (records) and
``samples.columns.json`` (the same records, compact, for statistics).

The format is documented in ``docs/architecture.md``.  Files are written whole to a
unique temporary name and renamed (:mod:`.safe_files`), so a reader never sees half a
file, a full disk leaves the previous files as they were, and a link planted in a
shared output directory is replaced, never followed.
"""
import json
import os
from typing import Any, Dict, Optional

from ..errors import InvalidValueError
from .columns import COLUMNS_FILE, ColumnsWriter, file_sha256
from .provenance import strict_json_value
from .records import write_records
from .safe_files import atomic_writer, check_directory

RESULTS_FORMAT = "staicc-results/1"
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"


#: every file a run directory may hold: what ``--overwrite`` removes, what marks a directory as a run's
RUN_FILES = (RESULTS_FILE, SAMPLES_FILE, COLUMNS_FILE, RESULTS_FILE + ".tmp", SAMPLES_FILE + ".tmp",
             COLUMNS_FILE + ".tmp")


def existing_run_files(directory: str) -> list:
    """The run files already in ``directory`` (empty: no run there)."""
    return [name for name in RUN_FILES if os.path.isfile(os.path.join(directory, name))]


def check_output_dir(directory: str, *, overwrite: Optional[bool] = None) -> None:
    """Make sure ``directory`` can be written (it is created when the run writes) — before any inference.

    ``overwrite=False`` refuses a directory that already holds a run (its results would be
    replaced and another model's samples left beside them); ``True`` allows it, and the
    writer then removes every file of the old run.  ``None`` (the default) does not look.
    """
    if overwrite is False and os.path.isdir(directory):
        found = existing_run_files(directory)
        if found:
            raise InvalidValueError(f"the output directory {directory!r} already holds a run ({', '.join(found)}); "
                                    "choose another directory, or pass --overwrite to replace that run (its files are "
                                    "removed)")
    try:
        check_directory(directory)
    except OSError as exc:
        raise InvalidValueError(f"cannot write to the output directory {directory!r}: {exc.strerror or exc}") from None


def results_document(results: Dict[str, Any], provenance: Dict[str, Any], samples: Optional[str]) -> Dict[str, Any]:
    """The strict-JSON body of ``results.json``; non-finite numbers become null and are listed."""
    non_finite: list = []
    benchmarks = {name: {"results": strict_json_value(dict(result), non_finite, f"{name}.results"),
                         "metadata": strict_json_value(result.metadata, non_finite, f"{name}.metadata")}
                  for name, result in results.items()}
    return {"format": RESULTS_FORMAT, "provenance": strict_json_value(provenance, non_finite, "provenance"),
            "benchmarks": benchmarks, "samples": samples, "non_finite": non_finite}


def write_run_dir(directory: str, results: Dict[str, Any], provenance: Dict[str, Any],
                  log_samples: bool = False, prompts: bool = False) -> Dict[str, Any]:
    """Write ``results.json`` (and ``samples.jsonl`` with ``log_samples``); returns the document."""
    os.makedirs(directory, exist_ok=True)
    stale = existing_run_files(directory)
    samples = None
    written = [RESULTS_FILE]
    if log_samples:
        samples = SAMPLES_FILE
        columns = ColumnsWriter()
        with atomic_writer(os.path.join(directory, SAMPLES_FILE)) as fh:
            write_records((columns.add(r) for r in _all_records(results, prompts)), fh)
        with atomic_writer(os.path.join(directory, COLUMNS_FILE)) as fh:
            columns.write_to(fh, file_sha256(os.path.join(directory, SAMPLES_FILE)))
        written += [SAMPLES_FILE, COLUMNS_FILE]
    document = results_document(results, provenance, samples)
    if log_samples:
        document["samples_columns"] = COLUMNS_FILE
    with atomic_writer(os.path.join(directory, RESULTS_FILE)) as fh:
        json.dump(document, fh, indent=1, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
    for name in stale:  # the old run's other files: none may be left beside the new ones
        if name not in written and os.path.isfile(os.path.join(directory, name)):
            os.remove(os.path.join(directory, name))
    return document


def _all_records(results: Dict[str, Any], prompts: bool = False):
    """Every record of the results; with ``prompts`` each carries its prompt's text (``--log-samples=full``)."""
    for result in results.values():
        records = getattr(result, "records", ())
        if not prompts:
            yield from records
            continue
        for part in _leaves(records):
            work = getattr(part, "_work", None)  # the records keep no prompt: written again, once per plan
            requests = work.requests() if work is not None else None
            for i, record in enumerate(part):
                if requests is not None:
                    record["prompt"] = requests[i].prompt
                yield record


def _leaves(records):
    """The plan records inside (possibly nested) :class:`~StaICC.results.records.Records`."""
    parts = getattr(records, "_parts", None)
    if parts is None:
        yield records
        return
    for part in parts:
        yield from _leaves(part)
