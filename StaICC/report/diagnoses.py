"""The report's pages for the diagnoses outside the standard: per-factor kappa, order, formats, calibration.

As in :mod:`.plots`, every ``*_data`` function returns plain numbers computed from a
loaded run with the package's own metric functions, and the ``draw_*`` functions only
turn them into matplotlib figures; the HTML page (:mod:`.html`, :mod:`.figures`) calls them.
"""
from typing import Any, Dict, List, Optional, Tuple

from ..metrics import CALIBRATION_METRICS, METRICS
from ..metrics.agreement import cohen_kappa, fleiss_kappa
from ..metrics.calibration_metrics import confidence_and_correctness, expected_correct_prefix
from .tables import Cell, Table
from ..numeric import sequential_sum
from ..spec import AGREEMENT_FACTORS, SCORE_PARTS  # noqa: F401  (SCORE_PARTS: read by .html)

#: the factors of the per-factor agreement table: (sub-benchmark, what its raters are), from the spec table
FACTORS: Tuple[Tuple[str, str], ...] = AGREEMENT_FACTORS


def _table(part, dataset):
    from ..stats import ItemTable
    return ItemTable.of_part(part, dataset)


# ----------------------------------------------------------------------------
# per-factor agreement
# ----------------------------------------------------------------------------
def rater_labels(part, dataset: str) -> List[List[int]]:
    """The predicted labels of every (pass, repeat) of a dataset: one rater per pass x repeat, items in order."""
    table = _table(part, dataset)
    return [[summary[0] for summary in rep] for rep_list in table.summaries for rep in rep_list]


def agreement_data(run) -> Dict[str, Dict[str, Dict[str, float]]]:
    """factor -> dataset -> {"fleiss": ..., "cohen": mean pairwise, "raters": B, "items": L}."""
    out: Dict[str, Dict[str, Dict[str, float]]] = {}
    for name, _raters in FACTORS:
        part = run.parts.get(name)
        if part is None or not part.records:
            continue
        out[name] = {}
        for dataset in part.datasets():
            if dataset not in part.records:
                continue
            raters = rater_labels(part, dataset)
            pairs = [cohen_kappa(raters[a], raters[b]) for a in range(len(raters)) for b in range(a + 1, len(raters))]
            out[name][dataset] = {"fleiss": fleiss_kappa(raters) if len(raters) > 1 else 1.0,
                                  "cohen": sequential_sum(pairs) / len(pairs) if pairs else 1.0,
                                  "raters": len(raters), "items": len(raters[0])}
    return out


def agreement_table(run, data: Optional[Dict[str, Any]] = None) -> Optional[Table]:
    """One row per dataset, Fleiss' kappa and mean Cohen's kappa per factor; None without the factors' records."""
    data = agreement_data(run) if data is None else data
    if not data:
        return None
    factors = [name for name, _ in FACTORS if name in data]
    datasets: List[str] = []
    for name in factors:
        datasets.extend(d for d in data[name] if d not in datasets)
    columns = ["dataset"] + [f"{name} {kind}" for name in factors for kind in ("Fleiss κ", "Cohen κ")]
    rows = []
    for dataset in datasets + ["Averaged"]:
        row: List[Any] = [dataset]
        for name in factors:
            for kind in ("fleiss", "cohen"):
                if dataset == "Averaged":
                    values = [v[kind] for v in data[name].values()]
                    row.append(Cell(sequential_sum(values) / len(values)) if values else "")
                else:
                    row.append(Cell(data[name][dataset][kind]) if dataset in data[name] else "")
        rows.append(row)
    raters = "; ".join(f"{name}: {dict(FACTORS)[name]} as raters"
                       f" ({next(iter(data[name].values()))['raters']} per item)" for name in factors)
    notes = ["Agreement of the predicted labels across each factor, corrected for chance (1 = the factor never "
             "changes a prediction, 0 = agreement at chance level). " + raters + ". Outside the standard."]
    return Table(f"Per-factor agreement (kappa): {run.label}", columns, rows, notes)


def draw_agreement(series: List[Tuple[str, Dict[str, Dict[str, Dict[str, float]]]]]):
    """One panel per factor: Fleiss' kappa of each dataset's predictions, one bar per run.

    ``series``: (run label, :func:`agreement_data`)."""
    from .plots import panels, legend_above, run_colour, run_handles, short
    factors = [name for name, _ in FACTORS if any(name in data for _, data in series)]
    datasets: List[str] = []
    for _, data in series:
        for name in factors:
            datasets.extend(d for d in data.get(name, {}) if d not in datasets)
    fig, axes = panels(len(factors), len(factors), 3.4)
    width = 0.8 / max(len(series), 1)
    for number, (ax, name) in enumerate(zip(axes, factors)):
        for index, (_, data) in enumerate(series):
            xs = [d + index * width - 0.4 + width / 2 for d in range(len(datasets))]
            ys = [data.get(name, {}).get(dataset, {}).get("fleiss", float("nan")) for dataset in datasets]
            ax.bar(xs, ys, width=width, color=run_colour(index), edgecolor="black", linewidth=0.3)
        ax.set_xticks(list(range(len(datasets))))
        ax.set_xticklabels([short(d, 16) for d in datasets], rotation=35, ha="right")
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.05)
        ax.set_title(f"{name}: across {dict(FACTORS)[name]}")
        if number == 0:
            ax.set_ylabel("Fleiss' κ of predicted labels")
    legend_above(fig, run_handles([label for label, _ in series], "bar"), [label for label, _ in series])
    return fig


# ----------------------------------------------------------------------------
# Order_sens and Format_spread
# ----------------------------------------------------------------------------
def blocks_data(part, key: str) -> Dict[str, Dict[str, Any]]:
    """dataset -> {"accuracy": per block, "names": per block, "intervals": ..., "kappa": ...} from the results."""
    out = {}
    for dataset, result in part.divided.items():
        blocks = result.get(key) or {}
        accuracy = blocks.get("accuracy") or []
        out[dataset] = {"accuracy": list(accuracy), "names": list(blocks.get("format") or
                                                                  [f"order {r + 1}" for r in range(len(accuracy))]),
                        "intervals": result.get("intervals") or {},
                        "fleiss": (result.get("sensitivity") or {}).get("fleiss_kappa")}
    return out


def draw_blocks(data: Dict[str, Dict[str, Any]], what: str, title: str = ""):
    """Per dataset, the accuracy of every block (order or format) as dots, the min-max range as a bar.

    With bootstrap intervals (Format_spread) the interval of the lowest and of the
    highest accuracy are drawn as error bars on the range's ends.
    """
    from .plots import FIGURE_WIDTH, MIN_FONT_PT, pyplot, short
    plt = pyplot()
    datasets = [d for d in data if data[d]["accuracy"]]
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.0))
    for x, dataset in enumerate(datasets):
        d = data[dataset]
        ys = d["accuracy"]
        low, high = min(ys), max(ys)
        ax.plot([x, x], [low, high], color="#999999", linewidth=6, alpha=0.5, solid_capstyle="butt")
        offsets = [(i - (len(ys) - 1) / 2) * 0.25 / max(len(ys), 1) for i in range(len(ys))]
        ax.scatter([x + o for o in offsets], ys, s=16, color="#4C72B0", zorder=3)
        if what == "format" and ys:
            ax.scatter([x + offsets[0]], [ys[0]], s=40, marker="*", color="#C44E52", zorder=4,
                       label="dataset template" if x == 0 else None)
        for name, y, shift, colour in (("accuracy_min", low, 0.17, "#C44E52"), ("accuracy_max", high, 0.25, "#4C72B0")):
            bounds = d["intervals"].get(name)
            if bounds:
                ax.errorbar([x + shift], [y], yerr=[[max(0.0, y - bounds[0])], [max(0.0, bounds[1] - y)]], fmt="_",
                            color=colour, capsize=3, linewidth=0.9,
                            label=f"95% interval of the {name[9:]}imum" if x == 0 else None)
        label = f"spread {high - low:.3f}"
        if d.get("fleiss") is not None:
            label += f"\nκ {d['fleiss']:.2f}"
        ax.annotate(label, (x, high), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=MIN_FONT_PT)
    ax.set_xticks(list(range(len(datasets))))
    ax.set_xticklabels([short(d, 22) for d in datasets], rotation=30, ha="right")
    ax.set_ylabel(f"accuracy per {what}")
    ax.set_xlim(-0.6, len(datasets) - 0.4)
    top = ax.get_ylim()[1]
    ax.set_ylim(ax.get_ylim()[0], top + 0.1 * (top - ax.get_ylim()[0]) + 0.02)
    if what == "format" and datasets:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(short(title, 60))
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------
# calibration metrics outside the standard
# ----------------------------------------------------------------------------
def calibration_data(part) -> Dict[str, Dict[str, Any]]:
    """dataset -> every calibration metric on the rows the standard's ECE read, and the coverage curve."""
    out = {}
    for dataset in part.datasets():
        if dataset not in part.records:
            continue
        table = _table(part, dataset)
        truth, rows = table.layout(table.identity(), [0])
        values = {name: METRICS[name].function(truth, rows) for name in CALIBRATION_METRICS}
        confidence, correct = confidence_and_correctness(truth, rows)
        prefix = expected_correct_prefix(confidence, correct)
        n = len(prefix)
        out[dataset] = {"metrics": values, "coverage": [m / n for m in range(1, n + 1)],
                        "accuracy": [right / m for m, right in enumerate(prefix, start=1)]}
    return out


def calibration_table(run, part_name: str, data: Dict[str, Dict[str, Any]]) -> Table:
    columns = ["dataset"] + [METRICS[n].display_name + (" ↑" if METRICS[n].higher_is_better else " ↓")
                             for n in CALIBRATION_METRICS]
    rows = [[dataset] + [Cell(d["metrics"][n]) for n in CALIBRATION_METRICS] for dataset, d in data.items()]
    if len(data) > 1:
        rows.append(["Averaged"] + [Cell(sequential_sum(d["metrics"][n] for d in data.values()) / len(data))
                                    for n in CALIBRATION_METRICS])
    notes = ["Calibration metrics outside the standard (HELM's equal-mass ECE with 1 and 10 bins, selective "
             "accuracy on the 10% most confident predictions and the coverage-accuracy area, ECE after Platt "
             "scaling; the multiclass Brier score; classwise ECE), on the same rows as the standard's ECE."]
    return Table(f"{part_name}: calibration beyond the standard's ECE: {run.label}", columns, rows, notes)


def draw_coverage(series: List[Tuple[str, Dict[str, Dict[str, Any]]]]):
    """Per dataset, one line per run: accuracy on the most confident share of predictions kept (selective
    prediction); the area under each line in the panel's title.  ``series``: (run label, :func:`calibration_data`)."""
    from .plots import datasets_of, legend_above, panels, run_colour, run_handles, short, values_title
    datasets = datasets_of(series)
    fig, axes = panels(len(datasets), 5, 2.75)
    for number, (ax, dataset) in enumerate(zip(axes, datasets)):
        areas = []
        for index, (_, data) in enumerate(series):
            d = data.get(dataset)
            if d is None:
                areas.append("n/a")
                continue
            ax.plot(d["coverage"], d["accuracy"], linewidth=1.3, color=run_colour(index))
            areas.append(f"{d['metrics']['coverage_accuracy_area']:.3f}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        values_title(ax, short(dataset, 22), "area", areas)
        if number % 5 == 0:
            ax.set_ylabel("accuracy of those kept")
        if number >= len(datasets) - 5:
            ax.set_xlabel("share kept (most confident)")
    legend_above(fig, run_handles([label for label, _ in series]), [label for label, _ in series])
    return fig
