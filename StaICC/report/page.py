"""The HTML report as a value: the statistics a report shows, and :func:`html_report`, which a notebook
displays inline and a script saves.

``staicc report --html`` and :func:`html_report` run the same steps: each run's bootstrap
intervals, the paired (or unpaired) comparison of every run with the first, then the page.

    from StaICC.report import html_report
    html_report("runs/A", "runs/B")            # in Jupyter: the report, inline
    html_report("runs/A", "runs/B").save("report.html")
"""
import os
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ..errors import InvalidValueError
from ..stats import DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from .html import HTMLReport, build_report

Progress = Optional[Callable[[str], None]]


def comparisons_with_first(runs: Sequence[Any], *, paired: bool = True, resamples: int = DEFAULT_RESAMPLES,
                           seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA,
                           extra_metrics: Sequence[str] = (), progress: Progress = None) -> List[Any]:
    """Every run after the first compared with the first (``StaICC.stats.compare_runs``)."""
    from ..stats import compare_runs
    return [compare_runs(runs[0], other, paired=paired, resamples=resamples, seed=seed, progress=progress,
                         level=level, alpha=alpha, extra_metrics=tuple(extra_metrics)) for other in runs[1:]]


def report_statistics(runs: Sequence[Any], *, paired: bool = True, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA,
                      extra_metrics: Sequence[str] = (), progress: Progress = None) -> Tuple[List[Any], List[Any]]:
    """(each run's interval estimates or None, the comparisons with the first run).

    A paired comparison resamples each run with the items it resamples the other with: those
    estimates are each run's own and are reused; a run is bootstrapped again only when they do
    not cover every sub-benchmark it has records of.
    """
    from ..stats import bootstrap_run
    options = {"resamples": resamples, "seed": seed, "level": level, "extra_metrics": tuple(extra_metrics),
               "progress": progress}
    comparisons = comparisons_with_first(runs, paired=paired, alpha=alpha, **options) if len(runs) > 1 else []
    estimates: List[Any] = [None] * len(runs)
    if comparisons and paired:
        estimates = [comparisons[0].estimates_a] + [c.estimates_b for c in comparisons]
    for i, run in enumerate(runs):
        with_records = [name for name, part in run.parts.items() if part.records]
        if with_records and (estimates[i] is None or set(estimates[i].parts) != set(with_records)):
            estimates[i] = bootstrap_run(run, **options)
    return estimates, comparisons


def html_report(*runs: Union[str, Any], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                level: float = DEFAULT_LEVEL, alpha: float = DEFAULT_ALPHA, paired: bool = True,
                calibration: bool = False, agreement: bool = False, title: str = "StaICC report",
                progress: Progress = None) -> HTMLReport:
    """The HTML report of one or more runs (run directories, ``results.json`` paths or loaded runs), with
    bootstrap intervals, the differences from the first run and every figure their records allow, as
    ``staicc report --html`` makes it.  Needs matplotlib (``pip install "StaICC[plot]"``)."""
    from ..metrics import CALIBRATION_METRICS
    from .plots import pyplot
    from .runs import load_run, run_labels
    pyplot()  # names the extra to install before any work
    if not runs:
        raise InvalidValueError("html_report needs at least one run (a run directory, a results.json or a loaded run)")
    labels = iter(run_labels([r for r in runs if isinstance(r, (str, os.PathLike))]))
    loaded = [load_run(r, next(labels)) if isinstance(r, (str, os.PathLike)) else r for r in runs]
    extra = (CALIBRATION_METRICS if calibration else ()) + (("cohen_kappa", "fleiss_kappa") if agreement else ())
    estimates, comparisons = report_statistics(loaded, paired=paired, resamples=resamples, seed=seed, level=level,
                                               alpha=alpha, extra_metrics=extra, progress=progress)
    return build_report(loaded, estimates, comparisons, title=title, progress=progress)
