"""A :class:`~StaICC.results.run.Run` written as a run directory, the one ``staicc run --output-dir`` writes."""
from dataclasses import replace
from typing import Optional

from .config import RunConfig
from ..results.run import Run
from ..errors import InvalidValueError


def write(run: Run, directory: Optional[str] = None, *, log_samples: Optional[str] = None,
          overwrite: bool = False) -> str:
    """Write ``run`` to ``directory`` (default: its configuration's ``output_dir``) and return the directory.

    ``log_samples``: ``"compact"`` (``samples.jsonl`` and its columns), ``"full"`` (with each prompt's
    text) or None (the configuration's choice); ``overwrite``: replace a run already there (its files
    are removed), as ``--overwrite`` does; without it such a directory is refused.  A methods run writes
    vanilla's run in ``directory`` and each other method's in ``directory/methods/NAME``.

        >>> import os, tempfile
        >>> from StaICC.runs import RunConfig, execute, write
        >>> from StaICC.engine.selection import QuerySubset
        >>> run = execute(RunConfig(datasets=("TREC",), test_items=QuerySubset.first(8), progress=False))
        >>> directory = write(run, os.path.join(tempfile.mkdtemp(), "run"), log_samples="compact")
        >>> sorted(os.listdir(directory))
        ['results.json', 'samples.columns.json', 'samples.jsonl']
    """
    config = run.config or RunConfig()
    directory = directory or config.output_dir
    if not directory:
        raise InvalidValueError("write(run): give the directory to write (the run's configuration names none)")
    if not run.summarised:
        if run.result:  # answers summarised, but no record: execute(..., recorded=False)
            raise InvalidValueError("this run was executed without its record (recorded=False): write "
                                    "Run.from_result(run.result, model), or execute it with recorded=True")
        raise InvalidValueError("a dry run or a shard has no results to write: its answers are in the cache")
    log = config.log_samples if log_samples is None else log_samples
    if log not in (None, "compact", "full"):
        raise InvalidValueError(f"log_samples must be 'compact', 'full' or None, got {log!r}")
    from ..results.rundir import check_output_dir, write_run_dir
    if not overwrite:
        check_output_dir(directory, overwrite=False)
    if run.is_methods_run:
        from .methods_dirs import check_methods_output, write_methods_dirs
        if not overwrite:
            check_methods_output(directory, False)
        write_methods_dirs(replace(config, output_dir=directory, log_samples=log), run.result, run.comparisons,
                           run.provenance)
    else:
        write_run_dir(directory, dict(run.result), run.provenance, bool(log), prompts=log == "full")
    return directory
