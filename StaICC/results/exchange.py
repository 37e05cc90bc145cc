"""What every export format reads from a run: each reported number with its place, the model's name, the datasets.

The exports (:mod:`.eee_export`, :mod:`.hf_export`, :mod:`.lm_eval_export`) take a loaded run
(the object :func:`StaICC.report.runs.load_run` returns: ``provenance``, ``parts`` with
``results`` and ``metadata``, ``samples_path``) and the bootstrap intervals the caller
computed, as plain values; they import nothing above the results layer.

:func:`reported_values` walks a sub-benchmark's result dict and gives every number in it
with its *path* (the keys and list positions that reach it), so that a format can write
each number where it belongs and :func:`place` can put it back exactly where it was.
"""
import hashlib
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..errors import InvalidValueError
from ..registry import Registry
from ..spec import SPECS

AVERAGED, DIVIDED = "Averaged results", "Divided results"


@dataclass(frozen=True)
class ExportFormat:
    """An export format's row: its title (``staicc export``'s help names the formats by it), its help text,
    the one file an export writes in its folder (``/``-separated; refused there without ``--overwrite``;
    None: the names are derived from the run, so another run never writes the same one), and whether a run
    read back from an Every Eval Ever export may be written in it."""

    title: str
    help: str
    file: Optional[str] = None
    from_exports: bool = True


#: the formats of ``staicc export --format NAME``: each one's writer, a lazy ``"module:function"`` called as
#: ``writer(run, output, intervals, options) -> [paths written]`` (``run``: a loaded
#: :class:`~StaICC.results.run.Run`; ``intervals``: the bootstrap table or None; ``options``: the command's
#: options by name: ``model_id``, ``organization`` ...), with its :class:`ExportFormat` row; a new format is
#: one ``EXPORT_FORMATS.register`` (a name registered twice is refused)
EXPORT_FORMATS: Registry[Callable[..., List[str]]] = Registry("export format", ordered=True)
EXPORT_FORMATS.register("eee", "StaICC.results.eee_export:write_eee", info=ExportFormat(
    "Every Eval Ever", "Every Eval Ever aggregate and instance-level files, which staicc compare and report read "
                       "back as the run", from_exports=False))
EXPORT_FORMATS.register("hf", "StaICC.results.hf_export:write_hf", info=ExportFormat(
    "Hugging Face .eval_results", "the .eval_results/staicc.yaml a Hugging Face model repository shows",
    file=".eval_results/staicc.yaml"))
EXPORT_FORMATS.register("lm-eval", "StaICC.results.lm_eval_export:write_lm_eval", info=ExportFormat(
    "lm-eval", "an lm-evaluation-harness results JSON", file="results.json"))
#: metrics whose every reported value lies in [0, 1]
UNIT_INTERVAL = frozenset({"accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1",
                           "consistency", "ece_equal_mass_1", "ece_equal_mass_10", "classwise_ece", "ece_platt",
                           "selective_accuracy", "coverage_accuracy_area"})
#: the field's shared metric ids, where a StaICC metric is one of them
CANONICAL_IDS = {"accuracy": "accuracy", "macro_F1": "f1_macro", "expected_calibration_error_1": "ece"}

Path = Tuple[Any, ...]


@dataclass(frozen=True)
class Value:
    """One number a sub-benchmark reports, and where: ``path`` in its result dict, the dataset (None: the
    average over datasets), the metric's result key, and what the number is (``role``)."""

    part: str
    path: Path
    value: Any
    dataset: Optional[str]
    metric: str
    role: str  # "value", "pass <p>", "slope", "intercept", "component <i>"

    @property
    def result_id(self) -> str:
        """A stable id of the number within a run, e.g. ``Normal/TREC/accuracy`` or ``GLER/average/accuracy``."""
        where = self.dataset if self.dataset is not None else "average"
        tail = "" if self.role == "value" else "/" + self.role.replace(" ", "-")
        return f"{self.part}/{where}/{self.metric}{tail}"

    @property
    def scalar(self) -> bool:
        """A finite number a format can carry as a score: not a non-finite one (null in results.json), nor the
        0.0 the standard writes as the average of a vector-valued metric (label spaces differ by dataset)."""
        if type(self.value) not in (int, float) or not math.isfinite(self.value):
            return False
        return self.dataset is not None or not _vector_valued(self.part, self.metric)


def _vector_valued(part: str, metric: str) -> bool:
    from ..metrics.registry import get_metric
    try:
        return get_metric(metric, benchmark=part if part in SPECS and not SPECS[part].compound else None).vector_valued
    except (KeyError, ValueError):
        return False


def reported_values(part: str, results: Dict[str, Any]) -> List[Value]:
    """Every leaf of a result dict (numbers, None for a non-finite number, anything else kept as it is)."""
    out: List[Value] = []
    for dataset, body in (results.get(DIVIDED) or {}).items():
        out.extend(_leaves(part, (DIVIDED, dataset), body, dataset, None, None))
    averaged = list(_leaves(part, (AVERAGED,), results.get(AVERAGED) or {}, None, None, None))
    if SPECS.get(part) is not None and SPECS[part].has_slopes:  # the average of the datasets' slopes
        averaged = [Value(v.part, v.path, v.value, None, v.metric, "slope") for v in averaged]
    return out + averaged


def _leaves(part: str, path: Path, body: Any, dataset: Optional[str], metric: Optional[str],
            pass_key: Optional[str]) -> Iterator[Value]:
    if isinstance(body, dict):
        for key, inner in body.items():
            if key == "sensitivity":
                yield from _leaves(part, path + (key,), inner, dataset, None, "sensitivity")
            elif isinstance(inner, dict) and metric is None and pass_key is None:
                yield from _leaves(part, path + (key,), inner, dataset, None, f"pass {key}")
            else:
                yield from _leaves(part, path + (key,), inner, dataset, str(key), pass_key)
        return
    if isinstance(body, (list, tuple)) and metric is not None:
        slopes = pass_key == "sensitivity" and SPECS.get(part) is not None and SPECS[part].has_slopes
        for index, inner in enumerate(body):
            role = ("slope", "intercept")[index] if slopes and index < 2 else f"component {index}"
            yield Value(part, path + (index,), inner, dataset, metric, role)
        return
    role = pass_key if pass_key and pass_key.startswith("pass ") else "value"
    yield Value(part, path, body, dataset, metric or "", role)


def place(results: Dict[str, Any], path: Path, value: Any) -> None:
    """Put ``value`` at ``path`` in ``results``, making the dicts and lists on the way (the inverse of the walk)."""
    node: Any = results
    for key, following in zip(path, path[1:]):
        child = [] if isinstance(following, int) else {}
        if isinstance(key, int):
            while len(node) <= key:
                node.append(None)
            if node[key] is None:
                node[key] = child
            node = node[key]
        else:
            node = node.setdefault(key, child)
    last = path[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


# ----------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class MetricFacts:
    name: str            # the registry name, or the result key when the registry does not know it
    display: str
    lower_is_better: Optional[bool]  # None: no direction
    bounds: Tuple[Any, Any]          # numbers, or "-Infinity" / "Infinity"


def metric_facts(value: Value) -> MetricFacts:
    """The metric of a reported number: its name, direction and range, from the metric registry."""
    from ..metrics.registry import get_metric
    try:
        info = get_metric(value.metric, benchmark=value.part) if value.part in SPECS and not SPECS[value.part].compound \
            else get_metric(value.metric)
        name, display, higher = info.name, info.display_name, info.higher_is_better
    except (KeyError, ValueError):
        name, display, higher = value.metric, value.metric, None
    lower = None if higher is None else not higher
    if value.role in ("slope", "intercept"):
        return MetricFacts(name, f"{display} {value.role} over label noise", None, ("-Infinity", "Infinity"))
    if value.role.startswith("component"):
        return MetricFacts(name, f"{display}, label {value.role.split()[1]}", None, ("-Infinity", "Infinity"))
    if name in UNIT_INTERVAL:
        return MetricFacts(name, display, lower, (0, 1))
    if name in ("bias_entropy", "post_bias_dl_div"):
        return MetricFacts(name, display, lower, (0, "Infinity"))
    return MetricFacts(name, display, lower, ("-Infinity", "Infinity"))


# ----------------------------------------------------------------------------- the model
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: the longest folder name made from a model name
MAX_COMPONENT = 100


def model_identity(provenance: Dict[str, Any]) -> Dict[str, Any]:
    """The backend's identity as the run recorded it (arguments without secrets)."""
    model = provenance.get("model") if isinstance(provenance.get("model"), dict) else {}
    identity = model.get("identity") if isinstance(model.get("identity"), dict) else {}
    return {"backend": str(model.get("backend") or identity.get("backend") or "function"), **identity}


def model_names(provenance: Dict[str, Any], given_id: Optional[str] = None) -> Tuple[str, str]:
    """(display name, id in the ``developer/model`` form the Hub and EEE use) of the run's model.

    ``given_id`` wins.  Otherwise an identity named ``org/name`` keeps it; a local folder
    becomes ``local/<folder name>``; any other name ``<backend>/<name>``.
    """
    identity = model_identity(provenance)
    backend = identity["backend"]
    name = identity.get("model_id") or identity.get("model") or identity.get("function") or backend
    name = str(name)
    if given_id:
        return name, given_id
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", name) and not os.path.isabs(name):
        return name, name
    if os.path.isabs(name) or name.startswith("."):
        return name, f"local/{_component(os.path.basename(name.rstrip('/')) or 'model')}"
    return name, f"{_component(backend)}/{_component(name)}"


def public_provenance(provenance: Dict[str, Any]) -> Dict[str, Any]:
    """The provenance as an export writes it: every text, the command line and model arguments cleaned of
    secrets again (the run already wrote them without; an export must not depend on it)."""
    from ..backends.secrets import redact_json
    from .provenance import redact, redact_command
    out = redact_json(dict(provenance), by_name=False)  # every text, whatever field holds it
    if isinstance(out.get("command"), list):
        out["command"] = redact_command(out["command"])
    if isinstance(out.get("model"), dict) and isinstance(out["model"].get("arguments"), dict):
        out["model"] = {**out["model"], "arguments": redact(out["model"]["arguments"])}
    if isinstance(out.get("run_config"), dict) and isinstance(out["run_config"].get("arguments"), dict):
        out["run_config"] = {**out["run_config"], "arguments": redact(out["run_config"]["arguments"])}
    return out


def _component(text: str) -> str:
    """A folder name from a model name: safe characters, and a long name (a file system takes 255 bytes)
    cut with a digest of the whole, so that two long names stay apart."""
    name = _UNSAFE.sub("-", text).strip("-.") or "model"
    if len(name) > MAX_COMPONENT:
        name = name[:MAX_COMPONENT - 17] + "-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return name


def path_components(model_id: str) -> Tuple[str, str]:
    """(developer, model) folder names of a model id (``org/name``; deeper ids are flattened)."""
    developer, _, rest = model_id.partition("/")
    return _component(developer), _component(rest.replace("/", "_") or developer)


# ----------------------------------------------------------------------------- the datasets
#: dataset names an export cannot carry: each is the name the average over datasets has in some format
#: (``Normal/average/accuracy``, the intervals' "" and "Averaged") or in the results themselves
RESERVED_DATASET_NAMES = ("", "average", "Averaged", AVERAGED, DIVIDED)


def check_export_names(run: Any, key: Optional[Any] = None, what: str = "") -> None:
    """Refuse, in one line, a run whose dataset names an export would confuse: a reserved name, or two
    datasets of one sub-benchmark that the format's ``key(part, dataset)`` (its task name) makes one."""
    for part in run.parts.values():
        seen: Dict[str, str] = {}
        for dataset in (results_datasets(part.results)):
            if not isinstance(dataset, str) or dataset in RESERVED_DATASET_NAMES:
                raise InvalidValueError(f"{part.name}: a dataset named {dataset!r} cannot be exported: that name is "
                                        f"reserved for the average over datasets ({', '.join(map(repr, RESERVED_DATASET_NAMES))}"
                                        "); rename the dataset and run again")
            keyed = key(part.name, dataset) if key is not None else dataset
            if keyed in seen:
                raise InvalidValueError(f"{part.name}: datasets {seen[keyed]!r} and {dataset!r} both become {what} "
                                        f"{keyed!r}; rename one and run again (the export would merge their numbers)")
            seen[keyed] = dataset


def results_datasets(results: Any) -> List[Any]:
    """The dataset names of a sub-benchmark's result dict, as written (none for a malformed one)."""
    divided = results.get(DIVIDED) if isinstance(results, dict) else None
    return list(divided) if isinstance(divided, dict) else []


def standard_source(dataset: str) -> Optional[Dict[str, Any]]:
    """The HuggingFace source and label words of a standard dataset (None: a custom dataset)."""
    from ..datasets.loaders import dataset_constants, standard_dataset_names
    if dataset not in standard_dataset_names():
        return None
    constants = dataset_constants(dataset)
    return {"hf_source": constants["hf_source"], "label_space": list(constants["label_space"]),
            "split_sizes": constants["split_sizes"]}


def label_words(part: Any, dataset: str) -> Optional[List[str]]:
    """The label words of a dataset's queries, when known: a standard dataset whose label space the run kept
    (changing it is a recorded departure, "label space changed")."""
    departures = (part.metadata.get("non_standard_settings") or {}) if isinstance(part.metadata, dict) else {}
    source = standard_source(dataset)
    if source is None or any("label space" in str(d) for d in departures.get(dataset, [])):
        return None
    return source["label_space"]


def settings_text(metadata: Dict[str, Any], dataset: Optional[str]) -> str:
    """A sub-benchmark's settings in one line: k, standard or its departures (for descriptions and notes)."""
    departures = metadata.get("non_standard_settings") or {}
    listed = departures.get(dataset, []) if dataset is not None else sorted({d for v in departures.values() for d in v})
    k = metadata.get("k")
    k_text = f"k={k}" if not isinstance(k, dict) else "k by dataset " + ", ".join(f"{d}={v}" for d, v in k.items())
    return f"{k_text}; " + ("standard settings" if not listed else "NOT STANDARD: " + "; ".join(listed))
