"""What a reader must see before any number: non-standard settings and unparsed generated answers.

Every place that shows results (the terminal table of ``staicc run``, ``report`` in any
format, the HTML page, ``compare``) prints these lines from the same functions, so a
run whose generated answers named no label, or that departed from the standard (a
``--limit``, a retriever, a custom template), can never be shown without saying so.

A generated answer that names no label is scored by the backend's ``unparsed`` policy
(a uniform vector by default): the metrics are then partly those of the policy, not of
the model.  Past :data:`UNPARSED_LIMIT` of the answers the numbers are declared not
meaningful.
"""
import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..results.run import model_label, short_model_name  # noqa: F401  (defined with the run; importable here)

#: share of unparsed generated answers past which a run's numbers are declared not meaningful
UNPARSED_LIMIT = 0.10


def non_standard_settings(metadata: Dict[str, Any]) -> List[str]:
    """The distinct non-standard settings of a sub-benchmark's metadata, sorted (empty: standard)."""
    settings = metadata.get("non_standard_settings") or {}
    found = {s for values in settings.values() for s in (values if isinstance(values, list) else [values])} \
        if isinstance(settings, dict) else set()
    if not found and metadata.get("standard") is False:
        found.add("non-standard settings (not itemised)")
    return sorted(str(s) for s in found)


def unparsed_counts(metadata: Dict[str, Any]) -> Tuple[int, Optional[int]]:
    """(unparsed answers, all answers or None when the run did not record the count)."""
    unparsed = metadata.get("unparsed_answers") or {}
    count = sum(v for v in unparsed.values() if isinstance(v, int)) if isinstance(unparsed, dict) else 0
    answers = metadata.get("answer_counts")
    total = sum(v for v in answers.values() if isinstance(v, int)) if isinstance(answers, dict) else None
    return count, total


def _unparsed_line(count: int, total: Optional[int]) -> Optional[str]:
    if not count:
        return None
    if total:
        share = count / total
        line = f"UNPARSED: {count} of {total} generated answers ({share:.1%}) named no label and were scored by " \
               "the unparsed policy"
        if share > UNPARSED_LIMIT:
            line += f"; past {UNPARSED_LIMIT:.0%} THESE NUMBERS ARE NOT MEANINGFUL"
        return line
    return f"UNPARSED: {count} generated answers named no label and were scored by the unparsed policy"


def notices(metadatas: Iterable[Dict[str, Any]]) -> List[str]:
    """The notice lines of one or more sub-benchmarks' metadata (a run, or one table)."""
    settings: List[str] = []
    count, total, known = 0, 0, True
    thinking = [0, 0, 0]  # answers with a thinking section, unfinished ones, ones over the thinking budget
    for metadata in metadatas:
        settings.extend(s for s in non_standard_settings(metadata) if s not in settings)
        thinking = [a + b for a, b in zip(thinking, thinking_counts(metadata))]
        c, t = unparsed_counts(metadata)
        count += c
        if t is None:
            known = False
        else:
            total += t
    lines = []
    if settings:
        lines.append("NOT STANDARD: " + "; ".join(settings))
    unparsed = _unparsed_line(count, total if known else None)
    if unparsed:
        lines.append(unparsed)
    if thinking[1] or thinking[2]:
        lines.append(_thinking_line(*thinking))
    return lines


def thinking_counts(metadata: Dict[str, Any]) -> Tuple[int, int, int]:
    """(answers with a thinking section, unfinished sections, sections over the thinking budget) of a
    sub-benchmark's metadata, summed over its datasets (zeros when it recorded none)."""
    recorded = metadata.get("thinking") if isinstance(metadata, dict) else None
    sums = [0, 0, 0]
    for summary in (recorded.values() if isinstance(recorded, dict) else ()):
        if isinstance(summary, dict):
            for i, key in enumerate(("answers", "unfinished", "over_budget")):
                value = summary.get(key)
                sums[i] += value if isinstance(value, int) and not isinstance(value, bool) else 0
    return sums[0], sums[1], sums[2]


def _thinking_line(answers: int, unfinished: int, over_budget: int) -> str:
    """Why answers that thought were unparsed: sections never closed, sections past the budget."""
    parts = [f"{unfinished} never closed their thinking section"] if unfinished else []
    parts += [f"{over_budget} thought past thinking_budget"] if over_budget else []
    return (f"THINKING: of {answers} answers with a thinking section, {' and '.join(parts)}; such an answer is "
            "unparsed whatever label it names (counted in UNPARSED)")


def run_notices(run: Any) -> List[str]:
    """The notice lines of a loaded run (:class:`StaICC.results.run.Run`), over all its sub-benchmarks."""
    return notices(part.metadata for part in run.parts.values())



#: why a metric can be infinite, by registry name: said under every table that shows it infinite
INFINITE_BECAUSE = {
    "post_bias_dl_div": "the KL divergence of the mean prediction from the test items' label frequencies is "
                        "infinite when the model gives probability to a label that no test item has (a --limit "
                        "smoke run can leave a label out)",
}


def infinity_notes(benchmark: str, rows: Iterable[Tuple[str, Dict[str, Any]]]) -> List[str]:
    """A line per metric shown as inf in ``rows`` ((dataset, {metric: value})): where, and why when known."""
    found: Dict[str, List[str]] = {}
    for dataset, values in rows:
        for metric, value in values.items():
            if isinstance(value, float) and math.isinf(value):
                found.setdefault(metric, []).append(dataset)
    lines = []
    for metric, datasets in found.items():
        where = ", ".join(d for d in datasets if d != "Averaged")
        if "Averaged" in datasets:
            where = f"{where}, and so the average" if where else "the average"
        info = _registry_entry(benchmark, metric)
        shown = f"{info.display_name} ({metric})" if info is not None and info.display_name != metric else metric
        line = f"inf: {shown} is infinite for {where}"
        because = INFINITE_BECAUSE.get(info.name) if info is not None else None
        lines.append(f"{line}: {because}." if because else f"{line}.")
    return lines


def _registry_entry(benchmark: str, metric: str) -> Any:
    """The metric registry's entry of a result key (None when it has none)."""
    from ..metrics.registry import get_metric
    for scope in (benchmark or None, None):
        try:
            return get_metric(metric, scope)
        except (KeyError, ValueError):
            continue
    return None
