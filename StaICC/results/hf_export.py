"""A run as the ``.eval_results/*.yaml`` file a Hugging Face model repository shows on its model page.

The format is the Hub's "Evaluation Results" one (huggingface.co/docs/hub/eval-results;
``huggingface_hub.EvalResultEntry`` writes and reads it): a YAML list of entries, each
``dataset: {id, task_id, revision?}`` (the benchmark dataset on the Hub and a task of it),
``value``, and optionally ``date``, ``source: {url, name?, user?}`` and ``notes``.  The Hub
lists a result on a leaderboard only when ``dataset.id`` is a dataset registered there as a
Benchmark; StaICC has none of its own, so the caller names it (``--hf-dataset``).

One entry per reported number that is a score (a dataset's or the average's, GLER's slopes;
not vector components or GLER's per-pass values): ``task_id`` is the number's id within the
run (``Normal/TREC/accuracy``, ``Normal/average/accuracy``) and ``notes`` say the settings
(k, standard or the departures) and the bootstrap interval where StaICC computed one.
The YAML is written here with the standard library: strings double-quoted with YAML's
escapes, floats always with a decimal point (YAML 1.1 readers take ``1e-05`` for text).
"""
import os
from typing import Any, Dict, List, Mapping, Optional

from .eee_export import interval_of
from .exchange import check_export_names, reported_values, settings_text
from .safe_files import make_folders, write_text

#: the file written under ``OUT/.eval_results/``
FILE_NAME = "staicc.yaml"


def hf_entries(run: Any, dataset_id: str, *, intervals: Optional[Dict[str, Any]] = None,
               source_url: Optional[str] = None, revision: Optional[str] = None) -> List[Dict[str, Any]]:
    """The ``.eval_results`` entries of ``run`` (dicts in the Hub's layout)."""
    version = run.provenance.get("staicc_version", "unknown")
    entries = []
    for part in run.parts.values():
        for value in reported_values(part.name, part.results):
            if not value.scalar or value.role not in ("value", "slope"):
                continue
            dataset: Dict[str, Any] = {"id": dataset_id, "task_id": value.result_id}
            if revision:
                dataset["revision"] = revision
            notes = f"StaICC {version}; {settings_text(part.metadata, value.dataset)}"
            interval = interval_of(value, (intervals or {}).get(part.name, {})).get("confidence_interval")
            if interval:
                notes += (f"; {interval['confidence_level']:.0%} interval [{interval['lower']:.4f}, "
                          f"{interval['upper']:.4f}] ({interval['method']})")
            entry: Dict[str, Any] = {"dataset": dataset, "value": value.value}
            if run.provenance.get("finished"):
                entry["date"] = str(run.provenance["finished"])
            if source_url:
                entry["source"] = {"url": source_url, "name": "StaICC run"}
            entry["notes"] = notes
            entries.append(entry)
    return entries


def export_hf(run: Any, out_dir: str, dataset_id: str, **options: Any) -> str:
    """Write ``OUT/.eval_results/staicc.yaml``; returns its path."""
    check_export_names(run)
    folder = make_folders(out_dir, ".eval_results")
    path = os.path.join(folder, FILE_NAME)
    write_text(path, yaml_list(hf_entries(run, dataset_id, **options)))
    return path


def yaml_list(entries: List[Dict[str, Any]]) -> str:
    """A list of mappings as block YAML (the only shapes the entries have: mappings, strings, numbers)."""
    lines: List[str] = []
    for entry in entries:
        lines.extend(_mapping(entry, "- ", "  "))
    return "\n".join(lines) + "\n" if lines else "[]\n"


def _mapping(mapping: Dict[str, Any], first: str, rest: str) -> List[str]:
    lines: List[str] = []
    for n, (key, value) in enumerate(mapping.items()):
        lead = first if n == 0 else rest
        if isinstance(value, dict):
            lines.append(f"{lead}{key}:")
            lines.extend(_mapping(value, rest + "  ", rest + "  "))
        else:
            lines.append(f"{lead}{key}: {_scalar(value)}")
    return lines


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        return (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent if e else "")
    return yaml_string(str(value))


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: every character a YAML reader refuses raw is escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


def write_hf(run: Any, out_dir: str, intervals: Optional[Dict[str, Any]], options: Mapping[str, Any]) -> List[str]:
    """``staicc export --format hf`` (:data:`~StaICC.results.exchange.EXPORT_FORMATS`): :func:`export_hf` for the
    command's ``hf_dataset``, with its ``hf_source_url`` and ``hf_revision``."""
    return [export_hf(run, out_dir, options["hf_dataset"], intervals=intervals, source_url=options.get("hf_source_url"),
                      revision=options.get("hf_revision"))]
