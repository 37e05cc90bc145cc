"""``staicc run --methods ...``: every method on every requested sub-benchmark, one table per metric.

The run is planned whole before any inference (a method the backend cannot serve, a method
file that does not load, a sub-benchmark without the method's prompt mode: one line, exit
status 2), asked through the one runner, then printed as methods × datasets tables with each
method tested against vanilla (:func:`StaICC.methods.compare.compare_methods`: the statistics
of ``staicc compare``).  With ``--output-dir D``: ``D/results.json`` is vanilla's run (the
standard), with every method listed in its provenance; ``D/methods/NAME/`` is each other
method's run directory (its results marked non-standard, its provenance naming the method
and, for a method file, its SHA-256), so that ``staicc compare D D/methods/NAME`` and
``staicc report`` read them as they read any run.
"""
import os
import sys
from typing import Any, Dict, List

from ..methods.protocol import VANILLA
from ..runs.methods_dirs import (METHODS_FOLDER, check_methods_output, earlier_method_runs,  # noqa: F401
                                 method_directory, write_methods_dirs)
from ..results.run import Run
from .common import one_line
from .run_output import write_failed


def finish_methods(run: Run) -> int:
    """A methods run's tables and directories, once :mod:`StaICC.runs` has answered and recorded it (``staicc run
    --methods`` takes the steps of every run: :func:`StaICC.cli.run.run_once`)."""
    config = run.config
    if run.comparison_error is not None:  # the answers are kept: the tables are printed without tests
        print(f"staicc: warning: the methods were not tested against vanilla: {one_line(run.comparison_error)}",
              file=sys.stderr)
    print(methods_text(run.result, run.comparisons, config))
    meta = run.metadata
    print(f"{meta['prompts']} prompts, {meta['distinct_prompts']} distinct, {meta['asked']} asked, "
          f"{meta['from_cache']} from the cache, {meta['seconds']:.2f} s")
    if not config.output_dir:
        return 0
    from ..runs import write
    try:
        write(run, config.output_dir, overwrite=True)  # refused before any inference unless --overwrite
    except OSError as exc:
        return write_failed(config, exc)
    print(f"wrote {one_line(config.output_dir)}/results.json (vanilla) and "
          f"{one_line(os.path.join(config.output_dir, METHODS_FOLDER))}/<method>/results.json"
          + (", each with samples.jsonl" if config.log_samples else ""))
    return 0


def methods_text(result: Any, comparisons: Dict[str, Any], config: Any) -> str:
    """Every methods table, rendered for the terminal, with vanilla's notices once above them."""
    from ..report.notices import run_notices
    from ..report.render import render
    model = config.model + (f" ({one_line(config.model_args_text)})" if config.model_args_text else "")
    from ..report.escaping import terminal_escape
    lines = run_notices(Run.from_result(result[VANILLA], label=VANILLA))
    for line in lines:
        print(f"staicc: warning: {line}", file=sys.stderr)
    heading = [f"Methods against vanilla (k={config.k}, model={model}):"] + [f"!! {terminal_escape(line)}"
                                                                            for line in lines]
    tables = render(methods_tables(result, comparisons), "table", None)
    return "\n".join(heading + ["", tables, ""] + _notes(comparisons)) + "\n"


def methods_tables(result: Any, comparisons: Dict[str, Any]) -> List[Any]:
    """One table per sub-benchmark part and metric: a row per method, grouped by family (vanilla first), a column
    per dataset and the average; a method's cell marked ``*`` where it differs from vanilla (Holm-adjusted p below
    alpha) and :data:`BEST_SIGN` where it is the best of the column among those the test finds better."""
    from ..methods.builtin import family, table_order
    from ..report.cells import Table
    from ..report.names import metric_label
    tables = []
    names = table_order(list(result))
    runs = {name: Run.from_result(result[name], label=name) for name in names}
    for part_name, base in runs[VANILLA].parts.items():
        datasets = list(base.divided)
        metrics = [m for m in base.averaged if not isinstance(base.averaged[m], dict)]
        for metric in metrics:
            rows = [[family(name), name] + _method_cells(runs[name].parts[part_name], comparisons.get(name),
                                                         datasets, metric)
                    for name in names]
            _mark_best(rows)
            tables.append(Table(f"{part_name}: {metric_label(part_name, metric)}",
                                ["family", "method"] + datasets + ["Averaged"], rows, keys=[1], group_column=0))
    return tables


def _method_cells(part: Any, comparison: Any, datasets: List[str], metric: str) -> List[Any]:
    """One method's cells of one metric (``part``: its run's part): each dataset's value and the average, with
    the test against vanilla."""
    from ..report.cells import Cell
    from ..report.tables import _direction
    from ..results import flatten
    compared = comparison.parts.get(part.name) if comparison is not None else None
    cells: List[Any] = []
    for dataset in datasets + ["Averaged"]:
        value = (part.averaged if dataset == "Averaged" else flatten(part.divided[dataset])).get(metric)
        difference = None if compared is None else (
            compared.averaged if dataset == "Averaged" else compared.datasets.get(dataset, {})).get(metric)
        significant = bool(difference is not None and difference.significant)
        cells.append(Cell(value, mark=significant,
                          direction=_direction(part.benchmark, metric, difference.delta) if significant else None))
    return cells


#: the sign of the best cell of a column among the methods the paired test finds better than vanilla
BEST_SIGN = "‡"


def _mark_best(rows: List[List[Any]]) -> None:
    """In each column, the best value among the cells whose test says "better" gets :data:`BEST_SIGN`."""
    for column in range(2, len(rows[0]) if rows else 0):
        better = [row[column] for row in rows if getattr(row[column], "direction", None) == "better"
                  and isinstance(row[column].value, (int, float))]
        if not better:
            continue
        vanilla = next(row[column].value for row in rows if row[1] == VANILLA)
        higher = better[0].value > vanilla  # "better" cells all lie on the metric's better side of vanilla
        best = max(better, key=lambda cell: cell.value if higher else -cell.value)
        best.suffix = BEST_SIGN


def _notes(comparisons: Dict[str, Any]) -> List[str]:
    if not comparisons:
        return []
    first = next(iter(comparisons.values()))
    notes = [f"* differs from vanilla at {first.alpha} (per dataset: Holm-adjusted across datasets; McNemar's exact "
             "test for accuracy, a paired bootstrap of test items otherwise; Averaged: paired bootstrap, "
             f"uncorrected; {first.resamples} resamples, seed {first.seed}); {BEST_SIGN} the best of its column among "
             "the methods that test finds better than vanilla"]
    unpaired = [name for name, c in comparisons.items() if not c.paired]
    if unpaired:
        notes.append(f"{', '.join(unpaired)}: other prompts than vanilla's, so compared unpaired (items resampled "
                     "independently)")
    return notes
