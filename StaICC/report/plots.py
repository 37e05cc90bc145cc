"""The report's figures: plot DATA as pure functions (tested), drawing with matplotlib (the ``plot`` extra).

Every ``*_data`` function returns plain numbers (bins, curves, grids) computed from a
loaded run with the package's own rules; the ``draw_*`` functions only turn those
numbers into a matplotlib figure (Agg backend, no display, no network).
"""
from typing import Any, Dict, List, Sequence

from ..metrics import column_means
from ..standard import ECE_BINS
from ..metrics.numeric import sequential_sum


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------
def _table(part, dataset):
    from ..stats import ItemTable
    if dataset not in part.records:
        raise ValueError(f"{part.name} / {dataset}: no per-query records (samples.jsonl) to plot")
    return ItemTable(part.name, dataset, part.records[dataset])


def reliability_data(part, dataset: str) -> Dict[str, Any]:
    """Reliability diagram of one dataset with the standard's ECE bins [j/10, (j+1)/10).

    Rows are normalized as the metric normalizes them (softmax unless every row passes
    the exact probability check); a confidence of exactly 1.0 is in no bin, as in the
    metric, and is counted in ``outside``.  ``ece`` is the metric's value from these bins.
    """
    table = _table(part, dataset)
    bounds = [j / ECE_BINS for j in range(ECE_BINS + 1)]
    counts, hits, sums = [0] * ECE_BINS, [0] * ECE_BINS, [0] * ECE_BINS
    outside = 0
    total = 0
    for rep in table.summaries[0]:
        for i, (predicted, confidence, _true_probability, j) in enumerate(rep):
            total += 1
            if j < 0:
                outside += 1
                continue
            counts[j] += 1
            hits[j] += predicted == table.labels[i]
            sums[j] += confidence
    accuracy = [hits[j] / counts[j] if counts[j] else None for j in range(ECE_BINS)]
    confidence = [sums[j] / counts[j] if counts[j] else None for j in range(ECE_BINS)]
    ece = 0
    for j in range(ECE_BINS):
        if counts[j]:
            ece += (counts[j] / total) * abs(accuracy[j] - confidence[j])
    return {"dataset": dataset, "bounds": bounds, "counts": counts, "accuracy": accuracy, "confidence": confidence,
            "outside": outside, "total": total, "ece": ece}


def gler_data(part, dataset: str) -> Dict[str, Any]:
    """Each metric against the label-noise rate, with the standard's regression (slope, intercept).

    The points are the recorded per-pass results; the regression is on the standard's
    abscissae (``x``), which are not the noise rates; both are returned.
    """
    from ..engine.procedures import LabelNoiseProcedure
    result = part.divided[dataset]
    passes = sorted((k for k in result if k.isdigit()), key=int)
    procedure = part.metadata.get("procedure") or {}
    from ..subbenchmarks.spec import SPECS
    spec = SPECS.get(part.name)
    abscissae = procedure.get("abscissae") or (spec.abscissae if spec is not None else None) or "standard"
    noise = LabelNoiseProcedure(len(passes), abscissae)
    curves = {}
    for metric, (slope, intercept) in result["sensitivity"].items():
        curves[metric] = {"y": [result[p][metric] for p in passes], "slope": slope, "intercept": intercept}
    return {"dataset": dataset, "rates": noise.rates(), "x": noise.x_values(), "metrics": curves}


def _majority(labels: Sequence[int]) -> int:
    """The most frequent label; ties go to the label seen first."""
    counts: Dict[int, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    best = labels[0]
    for label in counts:
        if counts[label] > counts[best]:
            best = label
    return best


def template_grid_data(part) -> Dict[str, Any]:
    """Template_sens: dataset x template accuracy, and agreement with the item's majority over templates."""
    datasets, accuracy, agreement, consistency = [], [], [], []
    for dataset in part.datasets():
        table = _table(part, dataset)
        T = len(table)
        predicted = [[table.summaries[p][0][i][0] for i in range(T)] for p in range(table.passes)]
        majority = [_majority([predicted[p][i] for p in range(table.passes)]) for i in range(T)]
        datasets.append(dataset)
        accuracy.append([sum(1 for i in range(T) if predicted[p][i] == table.labels[i]) / T
                         for p in range(table.passes)])
        agreement.append([sum(1 for i in range(T) if predicted[p][i] == majority[i]) / T
                          for p in range(table.passes)])
        consistency.append(sequential_sum(agreement[-1]) / table.passes)
    return {"datasets": datasets, "templates": list(range(len(accuracy[0]) if accuracy else 0)),
            "accuracy": accuracy, "agreement": agreement, "consistency": consistency}


def demo_consistency_data(part) -> Dict[str, Any]:
    """Demo_sens: per test item, the majority share of its R predictions; their histogram per dataset."""
    out: Dict[str, Any] = {}
    for dataset in part.datasets():
        table = _table(part, dataset)
        R = table.repeats
        shares = []
        for i in range(len(table)):
            labels = [table.summaries[0][r][i][0] for r in range(R)]
            shares.append(max(labels.count(v) for v in set(labels)) / R)
        levels = [c / R for c in range(1, R + 1)]
        out[dataset] = {"per_item": shares, "levels": levels,
                        "histogram": [sum(1 for s in shares if s == level) for level in levels],
                        "mean": sequential_sum(shares) / len(shares)}
    return out


def label_names(dataset: str, width: int) -> List[str]:
    """The standard dataset's label words, or label0..n for other data."""
    try:
        from ..datasets import dataset_constants
        names = list(dataset_constants(dataset)["label_space"])
        if len(names) == width:
            return names
    except (KeyError, ValueError, ImportError, TypeError):
        pass
    return [f"label{i}" for i in range(width)]


def bias_data(run) -> Dict[str, Any]:
    """Per dataset: the true label frequencies and the mean predicted distribution of each bias diagnosis.

    The mean of raw rows (as the bias metrics take it); the frequencies are those of the
    test items' labels in the records.
    """
    out: Dict[str, Any] = {}
    for name in ("Contextual_bias", "Domain_bias", "Post_bias", "Normal"):
        part = run.parts.get(name)
        if part is None or not part.records or (name == "Normal" and out):
            continue  # Normal's rows are Post_bias's rows: shown only when no bias diagnosis ran
        for dataset in part.datasets():
            records = [r for r in part.records.get(dataset, []) if r["pass"] == 0]
            if not records:
                continue
            width = len(records[0]["prediction"])
            entry = out.setdefault(dataset, {"labels": label_names(dataset, width), "frequencies": None, "means": {}})
            entry["means"][name] = column_means([r["prediction"] for r in records])
            if entry["frequencies"] is None or name in ("Post_bias", "Normal"):
                counts = [0] * width
                for r in records:
                    counts[r["label"]] += 1
                entry["frequencies"] = [c / len(records) for c in counts]
    return out


def difference_data(comparison) -> List[Dict[str, Any]]:
    """Paired (or unpaired) differences B - A as rows for a forest plot."""
    rows = []
    for name, part in comparison.parts.items():
        for metric in part.metrics:
            for dataset, diffs in list(part.datasets.items()) + [("Averaged", part.averaged)]:
                d = diffs.get(metric)
                if d is not None:
                    rows.append({"benchmark": name, "metric": metric, "dataset": dataset, "delta": d.delta,
                                 "low": d.low, "high": d.high, "significant": d.significant})
    return rows


# ----------------------------------------------------------------------------
# drawing (matplotlib, Agg)
# ----------------------------------------------------------------------------
def pyplot():
    """matplotlib.pyplot on the Agg backend, or an ImportError naming the ``plot`` extra."""
    from ..extras import require
    matplotlib = require("matplotlib", "the HTML report's plots")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.family": "DejaVu Sans", "svg.fonttype": "path", "figure.dpi": 100})
    return plt


def _grid(plt, count: int, width: float = 3.2, height: float = 3.0, columns: int = 4):
    columns = max(1, min(columns, count))
    rows = (count + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.axis("off")
    return fig, flat


def draw_reliability(data: List[Dict[str, Any]], title: str = ""):
    plt = pyplot()
    fig, axes = _grid(plt, len(data))
    for ax, d in zip(axes, data):
        centers = [(a + b) / 2 for a, b in zip(d["bounds"], d["bounds"][1:])]
        heights = [a if a is not None else 0 for a in d["accuracy"]]
        ax.bar(centers, heights, width=0.1, edgecolor="black", color="#4C72B0", alpha=0.8, label="accuracy")
        gaps = [(c, conf) for c, conf in zip(centers, d["confidence"]) if conf is not None]
        ax.plot([g[0] for g in gaps], [g[1] for g in gaps], "o", color="#DD8452", label="mean confidence")
        ax.plot([0, 1], [0, 1], "--", color="gray", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{d['dataset']} (ECE {d['ece']:.3f})", fontsize=9)
        ax.set_xlabel("confidence bin")
        ax.set_ylabel("accuracy")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def draw_gler(data: List[Dict[str, Any]], title: str = ""):
    """One panel per metric: each dataset's per-pass values on the standard's x-values, with the
    straight line the standard fitted there, so that the printed slope is the slope drawn.

    The x-values fall as the label noise rises (1 = no noise), so a positive slope is a metric
    that falls as noise rises; the noise rate of each x is written under it.
    """
    plt = pyplot()
    metrics = list(data[0]["metrics"]) if data else []
    fig, axes = plt.subplots(len(metrics), 1, figsize=(10, 3.4 * max(1, len(metrics))), squeeze=False)
    for ax, metric in zip([row[0] for row in axes], metrics):
        for d in data:
            curve = d["metrics"][metric]
            line, = ax.plot(d["x"], curve["y"], "o", label=f"{d['dataset']}: slope {curve['slope']:+.3f}")
            ends = [min(d["x"]), max(d["x"])]
            ax.plot(ends, [curve["slope"] * x + curve["intercept"] for x in ends], "-", color=line.get_color(),
                    linewidth=1)
        if data:
            ax.set_xticks(data[0]["x"])
            ax.set_xticklabels([f"{x:g}\n{r:.0%}" for x, r in zip(data[0]["x"], data[0]["rates"])], fontsize=8)
        ax.set_title(f"{metric}: points per pass, line = the standard's fit (its slope in the legend)", fontsize=10)
        ax.set_xlabel("the standard's x-value, label-noise rate under it (x falls as the noise rises)", fontsize=9)
        ax.set_ylabel(metric, fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def draw_template_grid(data: Dict[str, Any], title: str = ""):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.2 + 0.45 * max(1, len(data["datasets"]))), squeeze=False)
    for ax, key in zip(axes[0], ("accuracy", "agreement")):
        image = ax.imshow(data[key], vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(data["templates"])))
        ax.set_xticklabels([str(t) for t in data["templates"]])
        ax.set_yticks(range(len(data["datasets"])))
        ax.set_yticklabels(data["datasets"])
        ax.set_xlabel("template (row of the L9 table)")
        ax.set_title("accuracy" if key == "accuracy" else "agreement with the majority over templates", fontsize=9)
        for i, row in enumerate(data[key]):
            for j, v in enumerate(row):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 else "black")
        fig.colorbar(image, ax=ax)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def draw_demo_consistency(data: Dict[str, Any], title: str = ""):
    plt = pyplot()
    fig, axes = _grid(plt, len(data))
    for ax, (dataset, d) in zip(axes, data.items()):
        ax.bar([f"{v:.2f}" for v in d["levels"]], d["histogram"], color="#55A868", edgecolor="black")
        ax.set_title(f"{dataset} (consistency {d['mean']:.3f})", fontsize=9)
        ax.set_xlabel("majority share of the query's predictions")
        ax.set_ylabel("test items")
        ax.tick_params(axis="x", labelsize=7, rotation=45)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def draw_bias(data: Dict[str, Any], title: str = ""):
    plt = pyplot()
    fig, axes = _grid(plt, len(data), width=3.6)
    for ax, (dataset, d) in zip(axes, data.items()):
        series = [("true label frequency", d["frequencies"])] + list(d["means"].items())
        width = 0.8 / len(series)
        positions = range(len(d["labels"]))
        for s, (name, values) in enumerate(series):
            ax.bar([p + s * width - 0.4 + width / 2 for p in positions], values, width=width,
                   label=name, edgecolor="black", linewidth=0.3)
        ax.set_xticks(list(positions))
        ax.set_xticklabels(d["labels"], rotation=30, fontsize=7)
        ax.set_title(dataset, fontsize=9)
        ax.set_ylabel("mean probability")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    return fig


#: colour of a difference: significant and better, significant and worse, significant without a direction, not
DIFFERENCE_COLOURS = {"better": "#1a7f37", "worse": "#C44E52", "significant": "#222222", None: "#4C72B0"}


def draw_differences(rows: List[Dict[str, Any]], title: str = ""):
    """A forest plot per metric (each in its own unit), datasets down the side: one sub-benchmark's rows."""
    from .tables import _direction
    plt = pyplot()
    metrics: List[str] = []
    for r in rows:
        if r["metric"] not in metrics:
            metrics.append(r["metric"])
    datasets: List[str] = []
    for r in rows:
        if r["dataset"] not in datasets:
            datasets.append(r["dataset"])
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics) + 1.6, 0.9 + 0.32 * len(datasets)),
                             squeeze=False, sharey=True)
    for ax, metric in zip(axes[0], metrics):
        for r in (r for r in rows if r["metric"] == metric):
            y = datasets.index(r["dataset"])
            kind = (_direction(r["benchmark"], metric, r["delta"]) or "significant") if r["significant"] else None
            color = DIFFERENCE_COLOURS[kind]
            if r["low"] is not None:
                ax.plot([r["low"], r["high"]], [y, y], "-", color=color)
            ax.plot([r["delta"]], [y], "o", color=color)
        ax.axvline(0, color="gray", linewidth=1)
        ax.set_title(metric, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    axes[0][0].set_yticks(range(len(datasets)))
    axes[0][0].set_yticklabels(datasets, fontsize=8)
    axes[0][0].invert_yaxis()
    fig.supxlabel("second run - first run; green: significantly better, red: significantly worse", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def figure_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (metadata without dates, so output is reproducible)."""
    import io
    buffer = io.BytesIO()
    metadata = {"Software": None} if fmt == "png" else {"Date": None}
    fig.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()


def close(fig) -> None:
    pyplot().close(fig)
