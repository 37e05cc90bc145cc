"""A lite run's tables: every standard number as an estimate of the full run's, with its interval.

A lite run's own results are those of a subset of the test items; what a reader wants is
the full run's value.  These tables show only the estimates (:mod:`StaICC.stats.lite`):
``estimate [low, high]`` per dataset and averaged, "not estimable" where the coverage study
does not vouch for an interval at the run's share of the items, and a title, a banner and
notes that say so, so that no one takes them for a full run's numbers.  Used by
``staicc run --lite`` and, for a run whose ``results.json`` records a lite section, by
``staicc report`` in every format (one table per sub-benchmark, as :func:`~.tables.run_tables`).
"""
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..results import flatten
from .cells import Cell, Table, format_number, part_slopes, slope_display
from .names import metric_label

NOT_ESTIMABLE = "not estimable"
#: where the coverage study that decides what is estimable is written
COVERAGE_STUDY = "docs/lite.md; its raw tables: benchmarks/results/lite_coverage*.txt in the repository"


def lite_section(run: Any) -> Optional[Dict[str, Any]]:
    """A loaded run's ``provenance["lite"]`` (None: a full run, or a label standing for a run, as a notebook's
    comparison passes)."""
    provenance = getattr(run, "provenance", None)
    section = provenance.get("lite") if isinstance(provenance, dict) else None
    return section if isinstance(section, dict) else None


def share_text(section: Dict[str, Any]) -> str:
    """How much of the test items a lite run asked: "12.5 % of the test items" or "64 test items each"."""
    from ..sampling.lite import percent
    if section.get("fraction") is not None:
        return f"{percent(section['fraction'])} of the test items"
    return f"{section.get('items')} test items of each sub-benchmark and dataset"


def every_item_asked(section: Dict[str, Any]) -> bool:
    """Whether a lite run asked every test item of every part (``--lite 1.0``, or ``--lite-items N`` with N at least
    each dataset's items): its estimates' share, the least over its parts, is then 1, and each number is the full
    run's own (``StaICC.stats.lite.census_values``)."""
    estimates = section.get("estimates", {})
    share = estimates.get("fraction") if isinstance(estimates, dict) else None
    return (section.get("fraction") if share is None else share) == 1


def lite_banner(section: Dict[str, Any]) -> str:
    estimates = section.get("estimates", {})
    if every_item_asked(section):  # the estimates are the full run's own numbers
        return (f"LITE RUN ({share_text(section)}): every item was asked, so every number is the full run's own, with "
                "an interval of width zero; the run is recorded as a lite run, not a standard one")
    return (f"LITE RUN ({share_text(section)}): every number is an estimate of the FULL run's value with its "
            f"{estimates.get('level', 0.95):.0%} interval, not a full run's number")


def lite_tables(section: Dict[str, Any], parts: Sequence[Tuple[str, Any]], model: str, run: str = "") -> List[Table]:
    """One table per part: ``parts`` holds (table label, the run's :class:`~StaICC.results.parts.Part`); ``run``: the
    run's label, in the title where a report shows several runs' tables (``staicc run`` has none)."""
    estimates = section.get("estimates", {})
    by_part = estimates.get("benchmarks", {})
    whose = f"{run}, model {model}" if run else f"model {model}"
    return [_part_table(section, part.name, label, part, by_part.get(part.name, {}), whose) for label, part in parts]


def _part_table(section: Dict[str, Any], name: str, label: str, part: Any, found: Dict[str, Dict[str, Any]],
                whose: str) -> Table:
    result = part.results
    divided = result.get("Divided results", {}) if isinstance(result, dict) else {}
    shown = slope_display(name, divided, part.metadata)  # a slope of float noise reads 0.0000, as a full run's
    columns: List[str] = []
    for row in list(found.values()):
        columns.extend(m for m in row if m not in columns)
    unstudied = [m for value in list(divided.values()) + [result.get("Averaged results", {})]
                 for m in flatten(value) if m not in columns]
    unstudied = list(dict.fromkeys(unstudied))
    rows: List[List[Any]] = []
    missing: Dict[str, List[str]] = {}
    for dataset in list(divided) + ["Averaged"]:
        row_estimates = found.get(dataset, {})
        row: List[Any] = [dataset]
        for metric in columns:
            entry = row_estimates.get(metric)
            row.append(_cell(entry, partial(shown, metric)))
            if entry is not None and not entry.get("estimable", True):
                missing.setdefault(metric, []).append(dataset)
        rows.append(row)
    title = f"{label}: lite run ({share_text(section)}): estimates of the full run ({whose})"
    notes = _notes(section, name, columns, missing, unstudied, len(divided)) + proxy_notes(section, found, name)
    return Table(title, ["dataset"] + [metric_label(name, c) for c in columns], rows, notes,
                 banner=[lite_banner(section)])


def lite_json(run: Any) -> Any:
    """``staicc report --format json``'s entry for a lite run: the estimates of the full run it recorded (each
    cell's value, interval, whether it is estimable and why not, the proxy's weight), marked ``standard: false``
    with the share asked; None for a full run.  The bootstrap over the subset's own records is left out: it
    answers another question (the subset's value), and its numbers would pass for the run's results."""
    section = lite_section(run)
    if section is None:
        return None
    estimates = section.get("estimates", {})
    head = {key: estimates.get(key) for key in ("level", "resamples", "seed", "method", "proxy") if key in estimates}
    parts = {name: {"datasets": {row: cells for row, cells in rows.items() if row != "Averaged"},
                    "averaged": rows.get("Averaged", {})}
             for name, rows in estimates.get("benchmarks", {}).items()}
    return {"run": run.label, "standard": False, "lite": lite_banner(section), **head, "benchmarks": parts}


def lite_averaged_text(run: Any, name: str, metric: str) -> Any:
    """A lite run's averaged estimate of ``metric`` as the HTML page's closed section shows it ("0.3946 [0.2899,
    0.4696] (estimate)", "not estimable"); None for a full run, whose own averaged number is shown."""
    section = lite_section(run)
    if section is None:
        return None
    cell = section.get("estimates", {}).get("benchmarks", {}).get(name, {}).get("Averaged", {}).get(metric)
    if not isinstance(cell, dict) or not cell.get("estimable", True) or isinstance(cell.get("value"), list):
        return NOT_ESTIMABLE
    shown = part_slopes(name, run.parts.get(name))
    value, low, high = (format_number(shown(metric, cell[key])) for key in ("value", "low", "high"))
    return f"{value} [{low}, {high}] (estimate)"


def lite_figures_note(runs: Sequence[Any]) -> List[str]:
    """The note under a lite run's estimates in the HTML page: what follows them (the calibration and agreement
    tables, the figures) draws the items the run asked, not estimates of the full run."""
    lite = [(run.label, lite_section(run)) for run in runs if lite_section(run) is not None]
    return [f"{label} is a lite run: the tables and figures below its estimates draw the items it asked "
            f"({share_text(section)}), with the subset's own values, not estimates of the full run."
            for label, section in lite]


def lite_comparison_note(runs: Sequence[Any]) -> List[str]:
    """Under a comparison of lite runs (on the same items: the only pairing allowed): its values are the subset's
    own, which differ from the estimates in each run's table."""
    labels = [run.label for run in runs if lite_section(run) is not None]
    if not labels:
        return []
    return [f"{', '.join(labels)}: lite runs on the same test items; each value here is the subset's own (the "
            "items asked, unweighted), not the estimate of the full run in each run's table, and each difference is "
            "paired over those items."]


def proxy_notes(section: Dict[str, Any], found: Dict[str, Dict[str, Any]], name: str = "") -> List[str]:
    """With a proxy: which it was, the median weight of each proxy over the cells it could narrow (the datasets'
    rows: the averaged row is their mean) and how well its resampled values correlated with the target's; where
    every cell's interval is exact by design (a consistency), that the proxy takes no part."""
    from ..stats.lite_exact import ALWAYS_EXACT
    estimates = section.get("estimates", {})
    if not estimates.get("proxy"):
        return []
    cells = [(metric, e["proxy"]) for row in found.values() for metric, e in row.items()
             if isinstance(e, dict) and isinstance(e.get("proxy"), dict) and "weight" in e["proxy"]
             and e.get("estimable", True)]
    if not cells:  # nothing printed in this table, nothing the proxy could narrow
        return []
    models = _models_text(estimates)
    if all((name, metric) in ALWAYS_EXACT for metric, _ in cells):
        label = "Proxies" if estimates.get("proxies", 1) > 1 else "Proxy"
        return [f"{label}: {estimates['proxy']}: not used in this table; the {cells[0][0]}'s interval is exact, "
                f"from the design alone, and takes no proxy (weight 0; docs/lite.md).{models}"]
    count = estimates.get("proxies", 1)
    names = str(estimates["proxy"]).split(" + ")
    names = names if len(names) == count else [f"proxy {j + 1}" for j in range(count)]
    weights: List[List[float]] = [[] for _ in range(count)]
    for _, cell in cells:
        for j, weight in enumerate(cell["weight"] if count > 1 else [cell["weight"]]):
            weights[min(j, count - 1)].extend(_numbers(weight))
    rs = sorted(c["correlation"] for _, c in cells if isinstance(c.get("correlation"), (int, float)))
    whose = "the weighted sum's" if count > 1 else "its"
    median = f"; the median correlation of {whose} resampled values with the target's {rs[len(rs) // 2]:.2f}" \
        if rs else ""
    said = [f"{_median(w)}" if count == 1 else f"{n} {_median(w)}" for n, w in zip(names, weights)]
    weight = (f"median weight {said[0]}" if count == 1 else f"median weights {', '.join(said)}") + \
        f" over the {len(cells)} dataset cells, the averaged row their mean"
    if count > 1:
        return [f"Proxies: {estimates['proxy']}, each scored on every test item. Each cell is the power-tuned "
                f"difference estimate: the subset's value plus, for each proxy, a weight in [0, 1] (the weights "
                f"estimated together on the subset) times its full-run value minus its subset value ({weight}{median})."
                f"{models}"]
    return [f"Proxy: {estimates['proxy']}, scored on every test item. Each cell is the power-tuned difference "
            f"estimate: the subset's value plus a weight in [0, 1], estimated on the subset, times the proxy's "
            f"full-run value minus its subset value ({weight}{median}).{models}"]


def _models_text(estimates: Dict[str, Any]) -> str:
    """The model each proxy run asked, as its provenance names it (redacted: ``proxy_models``): " runs/small is a
    run of hf: small (pretrained=..., dtype=float16)."; "" where none is recorded (the built-in reference model
    is named by its name)."""
    models = estimates.get("proxy_models")
    if not isinstance(models, dict) or not models:
        return ""
    return " " + "; ".join(f"{run} is a run of {model}" for run, model in models.items()) + "."


def _numbers(weight: Any) -> List[float]:
    """A cell's weight as numbers: one, or one per element of a vector metric."""
    items = weight if isinstance(weight, list) else [weight]
    return [float(w) for w in items if isinstance(w, (int, float)) and not isinstance(w, bool)]


def _median(weights: List[float]) -> str:
    return f"{sorted(weights)[len(weights) // 2]:.2f}" if weights else "none"


def _cell(entry: Any, shown: Callable[[Any], Any]) -> Any:
    """An estimate with its interval; a vector's elements each with theirs; "not estimable"; "" when absent.
    ``shown``: a number as the table shows it (:func:`~.cells.slope_display`)."""
    if entry is None:
        return ""
    if not entry.get("estimable", True):
        return NOT_ESTIMABLE
    value, low, high = (shown(entry.get(key)) for key in ("value", "low", "high"))
    if isinstance(value, list):
        return ", ".join(f"{format_number(v)} [{format_number(a)}, {format_number(b)}]"
                         for v, a, b in zip(value, low or [], high or []))
    return Cell(value, low, high)


def _notes(section: Dict[str, Any], name: str, columns: List[str], missing: Dict[str, List[str]],
           unstudied: List[str], datasets: int) -> List[str]:
    from ..stats.lite import REQUIRED_COVERAGE, REQUIRED_MODEL_COVERAGE
    estimates = section.get("estimates", {})
    notes = [f"Estimates of the full run: each metric on the stratified subset, items weighted by their label's "
             f"share of the full test set; {estimates.get('level', 0.95):.0%} intervals from a stratified bootstrap "
             f"with the finite-population correction ({estimates.get('resamples')} resamples, seed "
             f"{estimates.get('seed')}); some metrics' intervals are exact, span both branches of a rule of the "
             f"standard (the exact-sum rule, Post_bias's softmax) or are widened for answers the subset did not see "
             f"(docs/lite.md)."]
    if every_item_asked(section):
        notes = ["Every test item was asked: each number is the full run's own, computed by the standard's code, with "
                 "an interval of width zero (docs/lite.md)."]
    if columns and sum(len(rows) for rows in missing.values()) >= len(columns) * (datasets + 1):
        notes = []  # no cell has an estimate: the note below says why, and no interval is there to describe
    if missing:
        said = []
        for metric in columns:
            rows = missing.get(metric)
            if rows:
                said.append(f"{metric_label(name, metric)} ({_rows_text(rows, datasets)})")
        notes.append(f"not estimable at this share: {'; '.join(said)}: the coverage study ({COVERAGE_STUDY}) found "
                     f"less than {REQUIRED_COVERAGE:.0%} coverage of the full run's value over its models, or less than "
                     f"{REQUIRED_MODEL_COVERAGE:.0%} for one of them, at this share or a larger one; run these in full.")
    if unstudied:
        notes.append(f"not estimated: {', '.join(metric_label(name, m) for m in unstudied)} (outside the coverage "
                     "study); the subset's own values are in results.json.")
    return notes


def _rows_text(rows: List[str], datasets: int) -> str:
    """Where a metric is not estimable, in words: every row, every dataset, the averaged row, or the datasets."""
    named = [r for r in rows if r != "Averaged"]
    if len(named) == datasets and datasets > 1:
        return "every row" if "Averaged" in rows else "every dataset"
    words = named + (["the averaged row"] if "Averaged" in rows else [])
    return ", ".join(words)
