"""A methods run's directories: vanilla's run in ``D``, each other method's in ``D/methods/NAME``.

``D/results.json`` is vanilla's run (the standard), with every method listed in its
provenance; ``D/methods/NAME/`` is each other method's run directory (its results marked
non-standard, its provenance naming the method and, for a method file, its SHA-256), so that
``staicc compare D D/methods/NAME`` and ``staicc report`` read them as they read any run.
"""
import os
from typing import Any, Dict, List

from ..methods.protocol import VANILLA
from ..errors import InvalidValueError

METHODS_FOLDER = "methods"


def method_directory(output_dir: str, name: str) -> str:
    return output_dir if name == VANILLA else os.path.join(output_dir, METHODS_FOLDER, name)


def earlier_method_runs(output_dir: str) -> List[str]:
    """The method run directories an earlier methods run left in ``output_dir`` (``methods/NAME``)."""
    from ..results.rundir import existing_run_files
    folder = os.path.join(output_dir, METHODS_FOLDER)
    if not os.path.isdir(folder) or os.path.islink(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if os.path.isdir(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name))
                  and existing_run_files(os.path.join(folder, name)))


def check_methods_output(output_dir: str, overwrite: bool) -> None:
    """Before any inference: an earlier methods run in ``output_dir`` is replaced only with ``--overwrite``."""
    found = earlier_method_runs(output_dir)
    if found and not overwrite:
        raise InvalidValueError(f"the output directory {output_dir!r} already holds method runs "
                                f"({', '.join(os.path.basename(f) for f in found)}); choose another directory, or pass "
                                "--overwrite to replace them (their files are removed)")


def _remove_earlier(output_dir: str, kept: List[str]) -> None:
    """The run files of an earlier methods run's method directories this run does not write."""
    from ..results.rundir import existing_run_files
    for directory in earlier_method_runs(output_dir):
        if directory in kept:
            continue
        for name in existing_run_files(directory):
            os.remove(os.path.join(directory, name))
        if not os.listdir(directory):
            os.rmdir(directory)


def write_methods_dirs(config: Any, result: Any, comparisons: Dict[str, Any], provenance: Dict[str, Any]) -> None:
    """Vanilla's run directory, each other method's beside it, and the methods' index in vanilla's provenance
    (``config.output_dir``: where; ``config.log_samples``: with the records)."""
    from ..results.rundir import write_run_dir
    index = []
    for name, method in result.methods.items():
        directory = method_directory(config.output_dir, name)
        entry = dict(method.describe(), results=os.path.relpath(os.path.join(directory, "results.json"),
                                                                config.output_dir),
                     standard=bool(result[name].metadata.get("standard")))
        if name in comparisons:
            entry["compared_with_vanilla"] = comparisons[name].to_dict()
        index.append(entry)
    for name, method in result.methods.items():
        own = dict(provenance, suite=result[name].metadata, method=method.describe(),
                   methods=index if name == VANILLA else [e["name"] for e in index])
        write_run_dir(method_directory(config.output_dir, name), dict(result[name]), own, bool(config.log_samples),
                      prompts=config.log_samples == "full")
    _remove_earlier(config.output_dir, [method_directory(config.output_dir, name) for name in result.methods])
