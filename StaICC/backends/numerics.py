"""The numerics record: what can move a last bit of a run's numbers, and when two records can disagree.

A float32 forward pass gives last bits that depend on the shape of the work (how many
prompts share a call, how prompts are packed, how many threads reduce a sum), on the
kernels (device, library versions, dtype) and on the exact-sum rule the rows meet.  Every
run records these (:func:`numerics_record`, in provenance as ``"numerics"``); every cache
keeps, per model, the settings its answers were computed under (:func:`answer_numerics`,
stored beside the answers); ``cache merge`` and ``compare`` ask :func:`numerics_conflicts`
whether two records can disagree.

Two kinds of difference:

* **refuse** (:data:`REFUSED`): the kernels or the precision differ (backend, device, dtype,
  torch / transformers / vLLM versions): answers can differ beyond the last bits.  ``cache
  merge`` refuses to mix them;
* **warn** (:data:`WARNED`): only the shape of the work differs (packing, requests per call,
  rows per forward, token budget, threads, an optimisation switched off, the numerics): under
  ``numerics=fast`` that changes the rounding, and in bfloat16 rounding can flip predictions
  (docs/differences.md).  Under batch-invariant numerics (``numerics=invariant`` on both
  sides) the shape of the work moves no bit, so those fields are not compared at all; what is
  compared then is the canary certificate (:mod:`.hf_numerics`): two digests that differ mean
  that the same prompts got other numbers, and ``cache merge`` refuses them.

Answers of a backend whose rows are reproducible and that computes on no device (the built-in
reference models: pure Python) provably do not depend on any of it: their records never conflict.
"""
import platform
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple


#: fields whose difference can move more than a last bit, or change the exact-sum rule
REFUSED = ("backend", "device", "dtype", "packages")
#: fields whose difference moves last bits only (the shape of the work)
WARNED = ("numerics", "packing", "requests_per_call", "rows_per_forward", "token_budget", "threads", "attention",
          "switched_off", "label_logprobs")
#: fields that describe the shape of the work only: batch-invariant numerics on both sides make them move no bit
SHAPE_OF_WORK = ("packing", "requests_per_call", "rows_per_forward", "token_budget", "threads", "attention")
#: the packages whose versions decide kernels (the others recorded in provenance do not compute answers)
KERNEL_PACKAGES = ("torch", "transformers", "vllm")


class NumericsConflict(NamedTuple):
    """One field two numerics records disagree on; ``refuse``: the numbers can differ beyond last bits."""

    field: str
    first: Any
    second: Any
    refuse: bool

    def __str__(self) -> str:
        if self.field == "certificate":
            effect = "the canary prompts got other numbers" + (": other kernels" if self.refuse else "")
        else:
            effect = "answers can differ beyond the last bits" if self.refuse else "the rounding of the work differs"
        return f"{self.field}: {_shown(self.first)} vs {_shown(self.second)} ({effect})"


def package_versions(names: Sequence[str] = KERNEL_PACKAGES) -> Dict[str, str]:
    """Versions of the packages among ``names`` that this process loaded (read from their metadata)."""
    from importlib import metadata
    versions = {}
    for name in names:
        if name in sys.modules:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = getattr(sys.modules[name], "__version__", "unknown")
    return versions


def answer_numerics(backend: Any, requests_per_call: Optional[int] = None) -> Dict[str, Any]:
    """What the answers of ``backend`` were computed under: kernels, precision, the shape of the work.

    Read from the backend (its ``numerics()`` when it has one: the hf backend's device, packing
    and budgets) and from the process (library versions, torch's thread count).  Where a
    backend does not say (a plain function), the device is not guessed.
    """
    torch = sys.modules.get("torch")
    identity = backend.identity() if hasattr(backend, "identity") else {}
    record: Dict[str, Any] = {
        "backend": getattr(backend, "name", "function"),
        "prediction_kind": getattr(backend, "prediction_kind", None),
        "reproducible": bool(getattr(backend, "reproducible_rows", False)),
        "packages": package_versions(),
    }
    size = requests_per_call or known_call_size(backend)
    if size is not None:  # left out when only loading the model would tell (a field one record lacks is not compared)
        record["requests_per_call"] = int(size or 1)
    if "dtype" in identity:
        record["dtype"] = identity["dtype"]
    if torch is not None:
        record["threads"] = int(torch.get_num_threads())
    own = getattr(backend, "numerics", None)
    if callable(own):
        record.update(own())
    return record


def known_call_size(backend: Any) -> Optional[int]:
    """The backend's requests per call, read without building it: a backend built on demand that was never
    built (every answer came from the cache) says its planned size, None when it depends on the device the
    load would pick; reading its ``requests_per_call`` would load the model to say so."""
    if getattr(backend, "built", True):
        return int(getattr(backend, "requests_per_call", 1) or 1)
    return getattr(backend, "planned_requests_per_call", None)


def device_name(device: Any) -> str:
    """A torch device as the numerics record names it: the GPU's model on CUDA, the CPU's model on the CPU
    (its vector units choose the kernels a float32 sum is reduced by)."""
    torch = sys.modules.get("torch")
    kind = getattr(device, "type", str(device))
    if kind == "cuda" and torch is not None and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name(device)})"
    if kind == "cpu":
        return f"cpu ({cpu_model()})"
    return str(device)


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numerics_record(backend: Any, requests_per_call: Optional[int] = None, *, shards: Optional[Dict[str, Any]] = None,
                    parts: Optional[Dict[str, Any]] = None,
                    cached: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """A run's numerics record: its answers' settings (:func:`answer_numerics`), its route, and how
    each pass met the exact-sum rule (:func:`exact_sum_record`).

    ``shards``: the shard plan provenance records (launcher, count, unit, plan digest) when shards
    answered the run; ``parts``: each sub-benchmark's metadata (its ``exact_sum`` entry);
    ``cached``: the settings the cache holds for this model's answers (every shard's), when the
    run read a cache.
    """
    route: Dict[str, Any] = {"kind": "one process"}
    if shards:
        route = {"kind": "shards", **{k: shards[k] for k in ("launcher", "count", "unit", "plan_sha256") if k in shards}}
    record: Dict[str, Any] = {"answers": answer_numerics(backend, requests_per_call), "route": route,
                              "exact_sum": exact_sum_record(parts or {})}
    if cached:
        record["answers_from_cache"] = cached
    return record


def exact_sum_record(parts: Dict[str, Any]) -> Dict[str, Any]:
    """How a run's rows met the exact-sum rule, from its parts' metadata: ``branches`` per sub-benchmark
    and dataset, the branch each pass's score metrics took ("as given", "softmax", or None where no
    score metric ran), and the ``part/dataset`` labels whose branch rested on ``rounding`` or whose
    rows look like ``loglikelihoods``."""
    branches: Dict[str, Dict[str, List[Optional[str]]]] = {}
    flagged: Dict[str, List[str]] = {"rounding": [], "loglikelihoods": []}
    for name, metadata in parts.items():
        entry = metadata.get("exact_sum") if isinstance(metadata, dict) else None
        if not isinstance(entry, dict):
            continue
        for dataset, value in entry.items():
            passes = value.get("passes", []) if isinstance(value, dict) else []
            branches.setdefault(name, {})[dataset] = [p.get("branch") for p in passes]
            for flag, labels in flagged.items():
                if any(p.get(flag) for p in passes):
                    labels.append(f"{name}/{dataset}")
    return {"branches": branches, **flagged}


def numerics_conflicts(a: Optional[Dict[str, Any]], b: Optional[Dict[str, Any]]) -> List[NumericsConflict]:
    """The fields on which two records (run records or answer settings) can make numbers disagree.

    Empty when either record is missing, or when both answers come from a reproducible backend that
    computes on no device (pure-Python arithmetic: no setting moves a bit; generated answers of a
    model on a device are compared, since another device may generate another text).  Fields one
    record lacks are not compared.
    """
    first, second = _answers(a), _answers(b)
    if first is None or second is None:
        return []
    pure = [r.get("reproducible") and "device" not in r for r in (first, second)]
    if all(pure) and first.get("backend") == second.get("backend"):
        return []
    invariant = first.get("numerics") == second.get("numerics") == "invariant"
    conflicts = []
    for field in REFUSED + WARNED:
        if invariant and field in SHAPE_OF_WORK:
            continue  # batch-invariant numerics: the shape of the work moves no bit
        if field in first and field in second:
            mine, theirs = _compared(first, second, field)
            if mine != theirs:
                conflicts.append(NumericsConflict(field, mine, theirs, field in REFUSED))
    digests = [(r.get("certificate") or {}).get("sha256") if isinstance(r.get("certificate"), dict) else None
               for r in (first, second)]
    if None not in digests and digests[0] != digests[1] and not any(c.refuse for c in conflicts):
        # two invariant runs of one model on one stack and device agree on the canary; else the kernels differ
        conflicts.append(NumericsConflict("certificate", digests[0][:12], digests[1][:12], invariant))
    return conflicts


def _answers(record: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if not isinstance(record, dict):
        return None
    answers = record.get("answers", record)
    return answers if isinstance(answers, dict) else None


def _value(record: Dict[str, Any], field: str) -> Any:
    value = record[field]
    if field == "packages" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k in KERNEL_PACKAGES}
    if field == "switched_off" and isinstance(value, list):
        return sorted(map(str, value))
    return value


def _compared(first: Dict[str, Any], second: Dict[str, Any], field: str) -> Tuple[Any, Any]:
    """Both records' values of ``field`` as they are compared.  The packages are those a process had loaded, which
    depends on what else it did before (a notebook that imported torch for something else): a package one process
    had not loaded computed none of its answers, so only the packages both loaded are compared."""
    mine, theirs = _value(first, field), _value(second, field)
    if field == "packages" and isinstance(mine, dict) and isinstance(theirs, dict):
        shared = sorted(mine.keys() & theirs.keys())
        return {k: mine[k] for k in shared}, {k: theirs[k] for k in shared}
    return mine, theirs


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def merged_settings(by_input: List[Dict[str, List[Dict[str, Any]]]], *, allow_mixed: bool = False
                    ) -> Dict[str, Any]:
    """The answer settings of several caches' models merged: ``{"settings": fingerprint -> list,
    "warnings": [lines], "refused": [lines]}``.

    ``by_input``: per input cache, fingerprint -> the settings stored with its answers.  Pairs
    that conflict on a :data:`REFUSED` field are listed under ``refused`` (the merge refuses
    them unless ``allow_mixed``, and then warns); :data:`WARNED` fields only warn.
    """
    settings: Dict[str, List[Dict[str, Any]]] = {}
    warnings: List[str] = []
    refused: List[str] = []
    for cache in by_input:
        for fingerprint, records in cache.items():
            known = settings.setdefault(fingerprint, [])
            for record in records:
                if record in known:
                    continue
                for earlier in known:
                    for conflict in numerics_conflicts(earlier, record):
                        line = f"model {fingerprint[:12]}: {conflict}"
                        (refused if conflict.refuse and not allow_mixed else warnings).append(line)
                known.append(record)
    return {"settings": settings, "warnings": list(dict.fromkeys(warnings)), "refused": list(dict.fromkeys(refused))}


def same_model(first: Dict[str, Any], second: Dict[str, Any]) -> bool:
    """Whether two runs' provenance names one model: equal identities but for their numerics setting (or,
    without identities, equal fingerprints)."""
    models = [p.get("model") or {} for p in (first, second)]
    identities = [m.get("identity") for m in models]
    if all(isinstance(i, dict) for i in identities):
        return {k: v for k, v in identities[0].items() if k != "numerics"} == \
            {k: v for k, v in identities[1].items() if k != "numerics"}
    return models[0].get("fingerprint") is not None and models[0].get("fingerprint") == models[1].get("fingerprint")


def measured_text(measured: Optional[Dict[str, Any]]) -> str:
    """What was measured between two runs' predictions, in words (``measured``: flipped, compared, largest)."""
    if not measured or not measured.get("compared"):
        return "their per-prompt predictions were not compared (compare --flips lists the flipped predictions)"
    return (f"{measured['flipped']} of {measured['compared']} predictions flipped, largest difference of a "
            f"prediction's score {measured['largest']:.3g}")


def comparison_notes(first: Dict[str, Any], second: Dict[str, Any], label: str,
                     measured: Optional[Dict[str, Any]] = None) -> List[str]:
    """Notice lines for comparing two runs (their provenance), ``label`` naming the pair.

    A pass whose score metrics read one model's rows as given in one run and softmaxed again in
    the other, or rows that look like log-likelihoods in only one of them, make the likelihood,
    ECE and bias metrics differ for a reason that is not the models'.  The same model under other
    settings of the work is reported with what was measured between the two runs' predictions
    (``measured``: predictions flipped, the largest score difference), never as "rounding only".
    """
    a, b = first.get("numerics") or {}, second.get("numerics") or {}
    lines = []
    one_model = same_model(first, second)
    # two models may take different branches under the standard's rule; one model should not
    mixed = _mixed_branches(a.get("exact_sum") or {}, b.get("exact_sum") or {}) if one_model else []
    if mixed:
        lines.append(f"NUMERICS: {label}: the standard's exact-sum check read the rows as given in one run and "
                     f"softmaxed them again in the other in {', '.join(mixed[:3])}"
                     + (f" and {len(mixed) - 3} more" if len(mixed) > 3 else "") + ": their "
                     "averaged_truelabel_likelihood and expected_calibration_error_1 differ for that reason too")
    logs = [set((r.get("exact_sum") or {}).get("loglikelihoods") or []) for r in (a, b)]
    if logs[0] != logs[1]:
        lines.append(f"NUMERICS: {label}: one run's rows look like log-likelihoods ({', '.join(sorted(logs[0] ^ logs[1])[:3])}), "
                     "the other's do not: likelihood, ECE and the bias metrics are not comparable between them "
                     "(accuracy, macro-F1 and consistency are); rerun with prediction_kind='loglikelihoods'")
    conflicts = numerics_conflicts(a, b)
    if conflicts and one_model:
        lines.append(f"NUMERICS: {label}: the same model computed under different settings ("
                     + "; ".join(map(str, conflicts)) + f"): {measured_text(measured)}; differences between "
                     "routes of one model are not marked significant")
    return lines


def _mixed_branches(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    """``part/dataset`` labels where a pass's score branch is "as given" in one record and "softmax" in the other
    (rows that are their own softmax, recorded as "either", go with both)."""
    mixed = []
    first, second = a.get("branches") or {}, b.get("branches") or {}
    for part, datasets in first.items():
        for dataset, passes in datasets.items():
            other = (second.get(part) or {}).get(dataset) or []
            if any(x is not None and y is not None and x != y and "either" not in (x, y)
                   for x, y in zip(passes, other)):
                mixed.append(f"{part}/{dataset}")
    return mixed
