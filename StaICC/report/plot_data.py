"""The numbers every figure of the report draws, as pure functions of a loaded run (tested on their own).

Each ``*_data`` function returns plain numbers (bins, curves, grids) computed from a
loaded run with the package's own rules; :mod:`.plots` and :mod:`.diagnoses` only draw them.
"""
from typing import Any, Dict, List, Optional, Sequence

from ..errors import InvalidValueError
from ..metrics import column_means
from ..numeric import sequential_sum
from ..standard import ECE_BINS


def _table(part, dataset):
    from ..stats import ItemTable
    if dataset not in part.records:
        raise InvalidValueError(f"{part.name} / {dataset}: no per-query records (samples.jsonl) to plot")
    return ItemTable.of_part(part, dataset)


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
    from ..spec import abscissae_of, label_noise_rates, label_noise_x_values
    result = part.divided[dataset]
    passes = sorted((k for k in result if k.isdigit()), key=int)
    abscissae = abscissae_of(part.name, part.metadata.get("procedure"))
    curves = {}
    for metric, (slope, intercept) in result["sensitivity"].items():
        curves[metric] = {"y": [result[p][metric] for p in passes], "slope": slope, "intercept": intercept}
    return {"dataset": dataset, "rates": label_noise_rates(len(passes)),
            "x": label_noise_x_values(len(passes), abscissae), "metrics": curves}


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


def label_names(dataset: str, width: int, part: Any = None, provenance: Optional[Dict[str, Any]] = None) -> List[str]:
    """A dataset's label words as the run recorded them: the sub-benchmark's ``label_words``, else the task
    file's (in the provenance), else, for a standard dataset run as the standard, the bundled words;
    ``label0``..``labelN`` when none of these has ``width`` words."""
    metadata = getattr(part, "metadata", None) or {}
    recorded = metadata.get("label_words")
    candidates = [recorded.get(dataset) if isinstance(recorded, dict) else None]
    candidates += [task_dataset.get("label_words") for task_dataset in _task_datasets(provenance)
                   if task_dataset.get("name") == dataset]
    settings = metadata.get("non_standard_settings")
    if not (isinstance(settings, dict) and settings.get(dataset)):  # a custom table may reuse a standard name
        candidates.append(_bundled_words(dataset))
    for words in candidates:
        if isinstance(words, list) and len(words) == width and all(isinstance(w, str) for w in words):
            return list(words)
    return [f"label{i}" for i in range(width)]


def _task_datasets(provenance: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The datasets of the task files a run used, as its provenance resolved them."""
    tasks = provenance.get("tasks") if isinstance(provenance, dict) else None
    found = []
    for task in tasks if isinstance(tasks, list) else []:
        resolved = task.get("resolved") if isinstance(task, dict) else None
        dataset = resolved.get("dataset") if isinstance(resolved, dict) else None
        if isinstance(dataset, dict):
            found.append(dataset)
    return found


def _bundled_words(dataset: str) -> Optional[List[str]]:
    try:
        from ..datasets import dataset_constants
        return list(dataset_constants(dataset)["label_space"])
    except (KeyError, ValueError, ImportError, TypeError):
        return None


def bias_data(run) -> Dict[str, Any]:
    """Per dataset: the true label frequencies and the mean predicted distribution of each bias diagnosis.

    The mean of raw rows (as the bias metrics take it); the frequencies are those of the
    test items' labels in the records.
    """
    from ..spec import BIAS_FIGURE_PARTS, SPECS
    out: Dict[str, Any] = {}
    for name in BIAS_FIGURE_PARTS:
        part = run.parts.get(name)
        role = SPECS[name].bias_role
        if part is None or not part.records or (role == "post_fallback" and out):
            continue  # the fallback's rows are the post part's rows: shown only when no bias diagnosis ran
        for dataset in part.datasets():
            records = [r for r in part.records.get(dataset, []) if r["pass"] == 0]
            if not records:
                continue
            width = len(records[0]["prediction"])
            entry = out.setdefault(dataset, {"labels": label_names(dataset, width, part, run.provenance),
                                             "frequencies": None, "means": {}})
            entry["means"][name] = column_means([r["prediction"] for r in records])
            if entry["frequencies"] is None or role in ("post", "post_fallback"):
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
                                 "low": d.low, "high": d.high, "significant": d.significant, "a": d.a, "b": d.b})
    return rows
