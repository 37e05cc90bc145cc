"""Every Eval Ever instance-level records from a run's ``samples.jsonl``: one per query and pass.

Each record says what was asked (the prompt when the run logged it with
``--log-samples=full``, its SHA-256 always), the reference label, what the model answered
(its generated text, or the label it gave the highest probability) and whether that was
the reference.  Everything StaICC's records hold is kept in ``metadata`` (as JSON text,
the schema's only form for values there), so that the export reads back into the records
it came from (:mod:`.eee_import`).
"""
import hashlib
import json
import math
from typing import Any, Dict, List, Optional, Tuple

from .exchange import label_words, model_identity, results_datasets
from .jsonl import jsonl_line
from .safe_files import atomic_writer

#: record fields kept in ``metadata`` as JSON text (``text`` and ``prompt`` go to the schema's own fields)
KEPT_FIELDS = ("benchmark", "dataset", "query_index", "pass", "test_index", "row_id", "repeat", "demonstrations", "label",
               "prediction", "predicted", "parsed", "thinking")
#: of those, the ones written as they are (text); the others are JSON text
TEXT_FIELDS = ("benchmark", "dataset")


def write_instances(run: Any, path: str, evaluation_id: str, model_id: str) -> Tuple[int, str]:
    """Write the instance records of ``run`` to ``path``; returns (count, SHA-256 of the file)."""
    from ..backends.thinking import ThinkingRule
    thinking = model_identity(run.provenance).get("thinking")
    rule = ThinkingRule(**{k: thinking[k] for k in ("mode", "start", "end")}) if isinstance(thinking, dict) else None
    words: Dict[Tuple[str, str], Optional[List[str]]] = {}
    widths: Dict[Tuple[str, str], int] = {}
    digest, count = hashlib.sha256(), 0
    with atomic_writer(path) as fh, open(run.samples_path, encoding="utf-8") as samples:
        for number, line in enumerate(samples, 1):
            if not line.strip():
                continue
            record = _record(line, run.samples_path, number)
            key = (record["benchmark"], record["dataset"])
            if key not in words:
                part = run.parts.get(key[0])
                if part is None or key[1] not in results_datasets(part.results):
                    raise _not_the_runs(run.samples_path, number, f"its sub-benchmark and dataset {key!r}")
                words[key] = label_words(part, key[1])
            widths.setdefault(key, len(words[key]) if words[key] is not None else _width(record))
            _check_answer(record, widths[key], run.samples_path, number)
            text = jsonl_line(instance(record, words[key], evaluation_id, model_id, rule), ensure_ascii=False,
                              allow_nan=False) + "\n"
            fh.write(text)
            digest.update(text.encode("utf-8"))
            count += 1
    return count, digest.hexdigest()


def _record(line: str, path: str, number: int) -> Dict[str, Any]:
    from ..errors import RunFormatError
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise RunFormatError(f"{path}, line {number}: not valid JSON ({exc})") from None
    missing = [f for f in ("benchmark", "dataset", "query_index", "label", "prediction") if f not in record]
    if not isinstance(record, dict) or missing:
        raise RunFormatError(f"{path}, line {number}: not a StaICC record (missing {', '.join(missing) or 'fields'})")
    return record


def _not_the_runs(path: str, number: int, what: str) -> Exception:
    from ..errors import RunFormatError
    return RunFormatError(f"{path}, line {number}: {what} are not the run's; the records file belongs to "
                          "another run (or was edited), so it is not exported")


def _width(record: Dict[str, Any]) -> int:
    prediction = record["prediction"]
    return len(prediction) if isinstance(prediction, list) else 0


def _check_answer(record: Dict[str, Any], width: int, path: str, number: int) -> None:
    """A record's label, prediction and predicted label as the run's label space allows: scores, one per
    label (finite numbers), or a label index; label indexes within the label space."""
    prediction = record["prediction"]
    if isinstance(prediction, list):
        if len(prediction) != width or not all(type(p) in (int, float) and math.isfinite(p) for p in prediction):
            raise _not_the_runs(path, number, f"the prediction {str(prediction)[:60]} (expected {width} label "
                                              "scores) and its label space")
    elif not _label_index(prediction, width):
        raise _not_the_runs(path, number, f"the prediction {str(prediction)[:60]!r} and its label space")
    for field in ("label", "predicted"):
        if record.get(field) is not None and not _label_index(record[field], width):
            raise _not_the_runs(path, number, f"the {field} {str(record[field])[:60]!r} and its label space")


def _label_index(value: Any, width: int) -> bool:
    return type(value) is int and (0 <= value < width or width == 0 and value >= 0)


def instance(record: Dict[str, Any], words: Optional[List[str]], evaluation_id: str, model_id: str,
             rule: Any) -> Dict[str, Any]:
    """One EEE instance-level record of a StaICC record."""
    benchmark, dataset = record["benchmark"], record["dataset"]
    width = len(record["prediction"]) if isinstance(record["prediction"], list) else 0
    named = words if words is not None and len(words) == width else None

    def word(index: Any) -> str:
        return named[index] if named is not None and type(index) is int and 0 <= index < width else str(index)
    predicted, text = record.get("predicted"), record.get("text")
    correct = predicted == record["label"]
    metadata = {name: record[name] if name in TEXT_FIELDS else json.dumps(record[name], ensure_ascii=False)
                for name in KEPT_FIELDS if name in record}
    metadata["generated"] = json.dumps(text is not None)  # "text kept": the read-back restores it (a top-k list too)
    metadata["prompt_logged"] = json.dumps("prompt" in record)
    prompt = record.get("prompt")
    if isinstance(prompt, list):  # noisy channel: one prompt per label
        metadata["prompt"] = json.dumps(prompt, ensure_ascii=False)
    output: Dict[str, Any] = {"raw": [text if text is not None else word(predicted)]}
    if text is not None and rule is not None:
        thought = rule.split(text).thinking
        if thought is not None:
            output["reasoning_trace"] = [thought]
    out = {"schema_version": "0.3.0", "evaluation_id": evaluation_id, "model_id": model_id,
           "evaluation_name": f"{benchmark}/{dataset}", "sample_id": f"{benchmark}/{dataset}/{record['query_index']}",
           "sample_hash": str(record.get("prompt_sha256") or ""), "interaction_type": "single_turn",
           "input": {"raw": "\x01".join(prompt) if isinstance(prompt, list) else (prompt or ""),
                     "reference": [word(record["label"])], "choices": list(named) if named is not None else None},
           "output": output,
           "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": word(predicted),
                                   "extraction_method": _method(record), "is_terminal": True}],
           "evaluation": {"score": 1.0 if correct else 0.0, "is_correct": correct}, "metadata": metadata}
    accuracy = _accuracy_result(record)
    if accuracy:
        out["evaluation_result_id"] = accuracy
    return out


def _method(record: Dict[str, Any]) -> str:
    if record.get("text") is None:
        return "argmax of the label probabilities"
    if _top_list(record.get("text")):
        return "argmax of the label probabilities' point values, from the answer token's top-k list (kept as output)"
    if record.get("parsed", True):
        return "StaICC label parser (first label named after any thinking section)"
    return "unparsed: the backend's unparsed policy chose the prediction"


def _top_list(text: Any) -> bool:
    """Whether a record's text is a server's top-k list (``scoring=top_logprobs``), not generated text."""
    from ..backends.top_logprobs import box_of_text
    return box_of_text(text) is not None


def _accuracy_result(record: Dict[str, Any]) -> Optional[str]:
    """The aggregate accuracy this record counts in (a dataset's, or its pass's for a slope sub-benchmark
    such as GLER), if its sub-benchmark reports accuracy per dataset."""
    from ..spec import SPECS
    benchmark, dataset = record["benchmark"], record["dataset"]
    spec = SPECS.get(benchmark)
    if spec is None or "accuracy" not in spec.metrics or spec.result == "sensitivity":
        return None
    if spec.has_slopes:
        return f"{benchmark}/{dataset}/accuracy/pass-{record.get('pass', 0)}"
    return f"{benchmark}/{dataset}/accuracy"
