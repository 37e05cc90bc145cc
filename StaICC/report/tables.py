"""Results and their presentation: a dict that carries how it was made, text tables, JSON."""
import math
from typing import Any, Dict, List, Optional

from ..results import ResultDict, _jsonable, flatten  # noqa: F401  (re-exported)
from .cells import Cell, Table, _cell_text, format_number, format_p, part_slopes, slope_display  # noqa: F401
from .escaping import ESCAPES, csv_text, latex_escape, markdown_escape, no_escape, terminal_escape  # noqa: F401
from .latex import render_latex  # noqa: F401  (re-exported)
from .names import Name, metric_label  # noqa: F401  (re-exported)
from .notices import infinity_notes, notices
from .render import FORMATS, render, render_csv, render_markdown, render_text  # noqa: F401  (re-exported)


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _with_stderr(text: str, errors: Dict[str, Dict[str, float]], metric: str, row: str) -> str:
    error = errors.get(metric, {}).get(row)
    return text if error is None or not text else f"{text} ± {error:.4f}"


def format_table(result: Dict[str, Any], title: Optional[str] = None,
                 stderr: Optional[Dict[str, Dict[str, float]]] = None) -> str:
    """A plain-text table: one row per dataset, then the average; ``stderr`` ({metric: {dataset or
    "Averaged": standard error}}) adds ``± error`` to those cells."""
    errors = stderr or {}
    divided = result.get("Divided results", {})
    metadata = getattr(result, "metadata", None) or {}
    benchmark = str(metadata.get("benchmark", ""))
    shown = slope_display(benchmark, divided, metadata)
    rows: List[List[str]] = []
    columns: List[str] = []
    for name, value in divided.items():
        flat = flatten(value)
        for c in flat:
            if c not in columns:
                columns.append(c)
        rows.append([name] + [_with_stderr(_format_value(shown(c, flat.get(c, ""))), errors, c, name)
                              for c in columns])
    averaged = result.get("Averaged results", {})
    for c in averaged:
        if c not in columns:
            columns.append(c)
    rows = [r + [""] * (len(columns) + 1 - len(r)) for r in rows]
    rows.append(["Averaged"] + [_with_stderr(_format_value(shown(c, averaged.get(c, ""))), errors, c, "Averaged")
                                for c in columns])
    header = [terminal_escape(h) for h in ["dataset"] + [metric_label(benchmark, c) for c in columns]]
    rows = [[terminal_escape(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    lines = [terminal_escape(title)] if title else []
    lines.extend(f"!! {terminal_escape(line)}" for line in notices([getattr(result, "metadata", None) or {}]))
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        if r[0] == "Averaged":
            lines.append("  ".join("-" * w for w in widths))
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    values = [(name, flatten(value)) for name, value in divided.items()] + [("Averaged", averaged)]
    lines.extend(terminal_escape(line) for line in infinity_notes(benchmark, values))
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# tables of runs and comparisons (rendered by .render, .latex and .html)
# ----------------------------------------------------------------------------
def run_tables(run, estimates=None) -> List[Table]:
    """One table per sub-benchmark of a run: datasets x metrics, with intervals when estimated (a lite run:
    the estimates of the full run it recorded, :mod:`.lite_tables`)."""
    lite = run.provenance.get("lite") if isinstance(run.provenance, dict) else None
    if isinstance(lite, dict):
        from .lite_tables import lite_tables
        return lite_tables(lite, [(name, part) for name, part in run.parts.items()], run.model_name(), run.label)
    tables = []
    for name, part in run.parts.items():
        est = estimates.parts.get(name) if estimates is not None else None
        columns: List[str] = []
        for result in list(part.divided.values()) + [part.averaged]:
            for metric in flatten(result):
                if metric not in columns:
                    columns.append(metric)
        columns += [m for m in (est.metrics if est is not None else []) if m not in columns]  # --calibration's
        rows = []
        unbounded: List[str] = []
        shown = part_slopes(name, part)
        for dataset, result in list(part.divided.items()) + [("Averaged", part.averaged)]:
            flat = flatten(result)
            found = (est.averaged if dataset == "Averaged" else est.datasets.get(dataset, {})) if est else {}
            row: List[Any] = [dataset]
            for metric in columns:
                if dataset == "Averaged" and isinstance(flat.get(metric), (int, float)) and metric not in found \
                        and any(isinstance(flatten(r).get(metric), list) for r in part.divided.values()):
                    row.append("")  # the standard's 0.0 average of a vector metric says nothing
                elif metric in found:
                    e = found[metric]
                    row.append(Cell(shown(metric, e.value), shown(metric, e.low), shown(metric, e.high),
                                    suffix=UNBOUNDED_SIGN if e.unbounded else ""))
                    if e.unbounded:
                        unbounded.append(f"{dataset}: {e.unbounded}")
                else:
                    row.append(Cell(shown(metric, flat.get(metric))) if metric in flat else "")
            rows.append(row)
        notes = []
        if est is not None:
            notes.append(f"{estimates.level:.0%} bootstrap intervals over test items "
                         f"({estimates.resamples} resamples, seed {estimates.seed})")
        if unbounded:
            notes.append(UNBOUNDED_NOTE + "; infinite in " + ", ".join(unbounded) + f" of {estimates.resamples}")
        notes += infinity_notes(name, [(d, flatten(r)) for d, r in part.divided.items()] + [("Averaged", part.averaged)])
        tables.append(Table(f"{name}: {run.label} (model {run.model_name()})",
                            ["dataset"] + [metric_label(name, c) for c in columns], rows, notes,
                            banner=notices([part.metadata])))
    return tables


#: the footnote of an interval that left out non-finite resamples
UNBOUNDED_SIGN = "†"
UNBOUNDED_NOTE = ("† the KL divergence is infinite in resamples that draw no test item of a label the model gives "
                  "probability to; the interval is over the finite resamples")


def _direction(benchmark: str, metric: str, delta: Any) -> Optional[str]:
    """"better" or "worse" for the second run, from the metric registry's direction (None: no direction)."""
    from ..stats import higher_is_better
    from ..stats.items import is_slope
    if is_slope(benchmark):  # a steeper slope is neither better nor worse in itself
        return None
    try:
        from ..metrics.registry import higher_is_better as registry
        higher = registry(metric, benchmark)
    except (KeyError, ValueError):
        higher = higher_is_better(metric)
    if higher is None or not isinstance(delta, (int, float)) or delta == 0:
        return None
    return "better" if (delta > 0) == higher else "worse"


def result_tables(result: Dict[str, Any], title: Optional[str] = None) -> List[Table]:
    """A result dict (one sub-benchmark, or Triplet_bias's three) as tables with their notices."""
    metadata = getattr(result, "metadata", None) or {}
    if "Averaged results" not in result:  # Triplet_bias: one result per part
        return [t for name, part in result.items() if isinstance(part, dict)
                for t in result_tables(part, f"{title or 'Triplet_bias'}/{name}")]
    benchmark = str(metadata.get("benchmark", ""))
    columns: List[str] = []
    for value in list(result.get("Divided results", {}).values()) + [result["Averaged results"]]:
        columns.extend(c for c in flatten(value) if c not in columns)
    rows = [[dataset] + [Cell(flatten(value).get(c)) if c in flatten(value) else "" for c in columns]
            for dataset, value in list(result.get("Divided results", {}).items())
            + [("Averaged", result["Averaged results"])]]
    infinite = infinity_notes(benchmark, [(d, flatten(v)) for d, v in result.get("Divided results", {}).items()]
                              + [("Averaged", result["Averaged results"])])
    return [Table(title or benchmark or "result", ["dataset"] + [metric_label(benchmark, c) for c in columns], rows,
                  infinite, banner=notices([metadata]))]


class _Label:
    """A run known only by its label (a comparison shown on its own, without the loaded runs)."""

    def __init__(self, label: str) -> None:
        self.label, self.parts = label, {}

    def model_name(self) -> str:
        return self.label


def comparison_markdown(comparison: Any) -> str:
    """A comparison as Markdown tables (notebooks show it through ``Comparison._repr_markdown_``)."""
    return render(comparison_tables([_Label(comparison.a), _Label(comparison.b)], [comparison]), "md")


def comparison_tables(runs: List[Any], comparisons: List[Any]) -> List[Table]:
    """One long table per sub-benchmark: (metric, dataset) rows; each run's value; B - A with CI and p."""
    from .lite_tables import lite_comparison_note
    tables = []
    base = comparisons[0]
    for name, first in base.parts.items():
        present = [c for c in comparisons if name in c.parts]
        columns = ["metric", "dataset", base.a] + [c.b for c in present]
        for c in present:
            columns += [Name(f"{c.b} - {c.a}", f"{c.b} − {c.a}"), "p", "p (Holm)", "test"]
        rows = []
        any_unbounded = False
        shown = part_slopes(name, getattr(runs[0], "parts", {}).get(name))
        for metric in first.metrics:
            for dataset in list(first.datasets) + ["Averaged"]:
                ref = first.averaged if dataset == "Averaged" else first.datasets.get(dataset, {})
                if metric not in ref:
                    continue
                row: List[Any] = [metric_label(name, metric), dataset, Cell(shown(metric, ref[metric].a))]
                diffs = []
                for c in present:
                    part = c.parts[name]
                    d = (part.averaged if dataset == "Averaged" else part.datasets.get(dataset, {})).get(metric)
                    row.append(Cell(shown(metric, d.b)) if d else "")
                    diffs.append(d)
                for d in diffs:
                    if d is None:
                        row += ["", "", "", ""]
                    else:
                        row += [Cell(shown(metric, d.delta), shown(metric, d.low), shown(metric, d.high),
                                     mark=d.significant,
                                     suffix=UNBOUNDED_SIGN if d.unbounded else "",
                                     direction=_direction(name, metric, d.delta) if d.significant else None),
                                Cell(d.p_value, kind="p"),
                                Cell(d.p_adjusted if dataset != "Averaged" else None, kind="p"), d.test]
                        any_unbounded = any_unbounded or bool(d.unbounded)
                rows.append(row)
        notes = [f"Differences with {base.level:.0%} {'paired ' if base.paired else ''}bootstrap intervals over test "
                 f"items ({base.resamples} resamples, seed {base.seed}); p: "
                 + ("McNemar's exact test for accuracy, paired bootstrap otherwise" if base.paired else "bootstrap")
                 + f"; Holm-corrected across datasets; * significant at {base.alpha} "
                   "(the averaged row: uncorrected)."]
        if not base.paired:
            notes.append("Unpaired comparison: the runs' prompts differ; items resampled independently.")
        notes += lite_comparison_note(runs)
        if any_unbounded:
            notes.append(UNBOUNDED_NOTE + " (their count: the JSON output's 'unbounded')")
        banner = [f"{run.label}: {line}" for run in runs if name in run.parts
                  for line in notices([run.parts[name].metadata])]
        tables.append(Table(f"{name}: " + ", ".join(f"{r.label} (model {r.model_name()})" for r in runs), columns,
                            rows, notes, banner=banner, keys=[1], group_column=0, units=_comparison_units(len(present)),
                            stated_once=[6 + len(present) + 4 * i for i in range(len(present))]))
    return tables


def _comparison_units(count: int) -> List[List[int]]:
    """The column groups a split comparison keeps together: the first run's value, the second's and their
    difference with its p-values and test; then each further run with its difference (columns: metric,
    dataset, the runs, then four per comparison)."""
    blocks = [list(range(3 + count + 4 * i, 7 + count + 4 * i)) for i in range(count)]
    return [[2, 3] + blocks[0]] + [[3 + i] + blocks[i] for i in range(1, count)]
