"""A run: the one value that ``staicc compare``, ``report`` and ``export``, the statistics, the methods'
tables and a lite run's tables read, whether it was loaded from a run directory or made in memory.

:meth:`Run.load` reads a run directory (or its ``results.json``, or an Every Eval Ever export
of a run); :meth:`Run.from_result` takes a suite result held in memory (``run_suite``'s, a
method's, :func:`StaICC.runs.execute`'s).  Either way the run's sub-benchmarks are
:class:`Part` values, a compound one unfolded into its parts by :func:`StaICC.spec.unfold`,
each with its records by dataset.  ``StaICC.runs.Run`` is this class.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

from ..registry import Registry
from .parts import Part, result_parts

#: where a run's provenance is assembled from a backend (``Run.from_result(result, model)``): the runs
#: floor's function, found by name, so that this floor imports nothing above it
RECORDERS: Registry[Any] = Registry("run recorder")
RECORDERS.register("provenance", "StaICC.runs.notebook:notebook_provenance")
IN_MEMORY = "(in memory)"


@dataclass(frozen=True, eq=False)
class Run:
    """One run: its name and where it is, its provenance and its parts (each sub-benchmark, compounds
    unfolded); a run made in memory also holds its result (a suite result; a methods run's: a result
    per method), its configuration, a lite run's estimates and a methods run's tests against vanilla."""

    label: str = "run"  # the run's name in comparisons and tables
    path: str = IN_MEMORY  # where it was read from
    provenance: Optional[Dict[str, Any]] = None  # None: a dry run or a shard (nothing summarised)
    parts: Mapping[str, Part] = field(default_factory=dict)
    samples_path: Optional[str] = None  # the records file it was read with
    result: Any = None
    config: Any = None  # the runs floor's RunConfig
    lite: Any = None  # the LiteResult of a lite run
    comparisons: Mapping[str, Any] = field(default_factory=dict)  # method -> its test against vanilla
    comparison_error: Optional[str] = None  # why the methods were not tested against vanilla

    @classmethod
    def load(cls, path: Any, label: Optional[str] = None, *, records: bool = True,
             max_samples_bytes: Optional[int] = None) -> "Run":
        """A run directory (or its ``results.json``, or an EEE export of a run) and, unless ``records=False``,
        its records; ``label`` names it in tables (default: the directory's name). Every malformed input is
        refused with the file, the line and the field (see :func:`StaICC.results.run_files.load`)."""
        from .run_files import load
        return load(cls, path, label, records=records, max_samples_bytes=max_samples_bytes)

    @classmethod
    def from_result(cls, result: Any, model: Any = None, *, label: str = "run", summarised: bool = True,
                    provenance: Optional[Dict[str, Any]] = None, **recorded: Any) -> "Run":
        """The run of a result held in memory.  ``model`` (the backend or function that answered): the
        provenance ``staicc run`` records is assembled (``recorded`` passes ``config``, ``arguments``,
        ``started``, ``command`` and a methods result's ``resamples`` to it; a lite result's estimates come
        along, a methods result is tested against vanilla), so that the run writes the directory the CLI writes.  Without ``model``: ``provenance`` as given; ``recorded`` may give the
        ``config``, ``lite``, ``comparisons`` and ``comparison_error``.  ``summarised=False``: a dry run or
        a shard, which has no parts."""
        if model is not None:
            return RECORDERS.get("provenance")(cls, result, model, label=label, **recorded)
        if summarised and provenance is None:
            provenance = {}
        methods = hasattr(result, "methods")
        parts = result_parts(result) if summarised and not methods else {}
        return cls(label, IN_MEMORY, provenance, parts, result=result, **recorded)

    def has_records(self) -> bool:
        return any(part.records for part in self.parts.values())

    @property
    def summarised(self) -> bool:
        """False for a dry run or a shard: they count or store answers and have no results to write."""
        return self.provenance is not None

    @property
    def metadata(self) -> Dict[str, Any]:
        return self.result.metadata

    @property
    def is_methods_run(self) -> bool:
        return hasattr(self.result, "methods")

    def model_name(self) -> str:
        """The model's identity (backend and name or path) from the provenance; the run's label otherwise."""
        return model_label(self.provenance or {}, self.label)


def model_label(provenance: Dict[str, Any], fallback: str) -> str:
    """The model's identity for headers: backend and model name, a model folder by its own name (an absolute
    path says where a machine kept it, not which model it is, and runs off a caption; never the run's folder)."""
    model = provenance.get("model") if isinstance(provenance, dict) else None
    if not isinstance(model, dict):
        return fallback
    identity = model.get("identity") if isinstance(model.get("identity"), dict) else {}
    arguments = model.get("arguments") if isinstance(model.get("arguments"), dict) else {}
    backend = model.get("backend") or identity.get("backend")
    for source in (identity, arguments, model):
        for key in ("model_id", "model", "pretrained", "name"):
            value = source.get(key)
            if isinstance(value, str) and value:
                value = short_model_name(value)
                return f"{backend}: {value}" if backend and backend != value else value
    return str(backend) if backend else fallback


def model_description(run: Any) -> str:
    """The model a run (a loaded one: its ``provenance``) asked, for a line that names the run by its folder:
    :func:`model_label` and the model arguments it recorded, through the provenance's redaction once more (a
    results file may have been written elsewhere, or by hand); "" where no provenance names a model."""
    from .provenance import redact
    provenance = getattr(run, "provenance", None)
    label = model_label(provenance, "") if isinstance(provenance, dict) else ""
    if not label:
        return ""
    model = provenance.get("model")
    arguments = model.get("arguments") if isinstance(model, dict) else None
    shown = redact({str(k): v for k, v in arguments.items()}) if isinstance(arguments, dict) else {}
    said = ", ".join(f"{k}={v}" for k, v in shown.items())
    return f"{label} ({said})" if said else label


def short_model_name(name: str) -> str:
    """A model folder's name (``/models/Llama-3.1-8B/`` -> ``Llama-3.1-8B``); a Hub name (``org/name``) or
    any other name unchanged."""
    import ntpath
    import posixpath
    if posixpath.isabs(name) or ntpath.isabs(name) or name.startswith(("~", "./", "../")):
        stripped = name.rstrip("/\\")
        return ntpath.basename(posixpath.basename(stripped)) or name
    return name
