"""What produced a result: model, code, data, environment, command and time, in strict JSON.

Secrets never enter provenance: model arguments whose name says key, token, secret or
password are replaced by ``"<redacted>"``, URLs lose their user info and secret query
values, and the recorded command line is cleaned the same way (the rules live in
:mod:`StaICC.backends.secrets`; the openai backend reads its key from an environment
variable and records only the variable's name).
"""
import datetime
import hashlib
import math
import os
import re
import platform
import subprocess
import sys
from typing import Any, Dict, List, Optional

from ..backends.secrets import REDACTED, SECRET_WORDS, redact_arguments, redact_command, redact_text  # noqa: F401
#: packages whose versions are recorded when the run loaded them
RECORDED_PACKAGES = ("torch", "transformers", "tokenizers", "vllm", "numpy", "accelerate")


def redact(arguments: Dict[str, Any]) -> Dict[str, Any]:
    """Model arguments with every secret-looking value replaced (``api_key_env`` names a variable: kept)."""
    return redact_arguments(arguments)


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def git_commit() -> Optional[str]:
    """The checkout's commit when StaICC runs from a git checkout; when installed, the commit the
    package was built from (``StaICC/BUILD_COMMIT``, written by setup.py); None when neither is known."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(package)
    if not os.path.exists(os.path.join(root, ".git")):
        return _built_commit(package)
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    if out.returncode != 0 or not commit:
        return None
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return commit + ("-dirty" if dirty else "")


def _built_commit(package: str) -> Optional[str]:
    try:
        with open(os.path.join(package, "BUILD_COMMIT"), encoding="ascii") as handle:
            commit = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return commit if re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit) else None


def package_versions() -> Dict[str, str]:
    """Versions of the heavy packages this process loaded (read from their metadata)."""
    from ..backends.numerics import package_versions as versions
    return versions(RECORDED_PACKAGES)


def device_description(backend: Any) -> str:
    """The backend's own device when it says, else the GPU torch sees, else the CPU."""
    device = getattr(backend, "device", None)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and (device is None or "cuda" in str(device)):
        return f"{device or 'cuda'} ({torch.cuda.get_device_name(0)})"
    if device is not None:
        return str(device)
    return f"cpu ({platform.machine()}, {os.cpu_count()} cores)"


def data_manifest_sha256() -> str:
    from importlib import resources
    data = resources.files("StaICC.data").joinpath("manifest.json").read_bytes()
    return hashlib.sha256(data).hexdigest()


def collect(backend: Any, arguments: Dict[str, Any], started: str, seconds: float,
            command: Optional[List[str]] = None) -> Dict[str, Any]:
    from ..version import __version__
    identity = {name: redact_text(value) for name, value in backend.identity().items()}
    model = {"backend": getattr(backend, "name", "function"), "arguments": redact(arguments),
             "identity": identity, "fingerprint": backend.fingerprint()}
    if getattr(backend, "runtime", None):  # how it ran here (threads ...): changes no answer, so not the identity
        model["runtime"] = dict(backend.runtime)
    return {"model": model,
            "staicc_version": __version__, "git_commit": git_commit(),
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "platform": platform.platform(), "packages": package_versions(), "device": device_description(backend),
            "data_manifest_sha256": data_manifest_sha256(),
            "command": redact_command(command if command is not None else sys.argv),
            "started": started, "finished": utc_now(), "seconds": round(seconds, 3)}


def run_numerics(backend: Any, requests_per_call: Optional[int], result: Any, *, shards: Optional[Dict[str, Any]] = None,
                 cache: Any = None) -> Dict[str, Any]:
    """The run's numerics record (:func:`StaICC.backends.numerics.numerics_record`): its answers' settings, its
    route, the exact-sum branch of every pass of ``result`` (a suite result), and, when it read ``cache``,
    every setting the cache's answers for this model were computed under (each shard's)."""
    from ..backends.numerics import numerics_record
    cached = None
    if cache is not None:
        from ..cache import PredictionCache
        if isinstance(cache, PredictionCache):  # a notebook's open cache: read as it is, left open
            cached = cache.numerics_notes().get(backend.fingerprint())
        elif os.path.exists(cache):
            with PredictionCache(cache) as store:
                cached = store.numerics_notes().get(backend.fingerprint())
    return numerics_record(backend, requests_per_call, shards=shards, parts=suite_parts_metadata(result),
                           cached=cached)


def suite_parts_metadata(result: Any) -> Dict[str, Any]:
    """Each sub-benchmark's metadata in a suite result, by name (a compound's parts as ``Name/part``)."""
    from ..spec import unfold
    return {unfolded.label: getattr(unfolded.value, "metadata", None) or {} for unfolded in unfold(result)}


def strict_json_value(value: Any, non_finite: List[str], path: str) -> Any:
    """``value`` with NaN / Infinity replaced by None; each replaced place is appended to ``non_finite``."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        non_finite.append(path or "$")
        return None
    if isinstance(value, dict):
        return {str(k): strict_json_value(v, non_finite, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json_value(v, non_finite, f"{path}[{i}]") for i, v in enumerate(value)]
    return value
