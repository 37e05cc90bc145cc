"""An ``hf`` backend described from its model directory, so that it loads the model only when it must answer.

The ``hf`` backend's identity (and so its cache fingerprint) is made of its arguments and
of digests of the model's files: the weights, the tokenizer files, the config.  All but
one of these can be read without importing torch or transformers; the weights' dtype is
the ``dtype`` argument, or with ``dtype=auto`` the config's dtype under transformers 5
(which loads a checkpoint in its own dtype) and float32 before it.  :func:`planned_hf_backend`
describes the backend with :class:`HFBackend`'s own identity code over those values and
returns a :class:`~StaICC.backends.lazy.LazyBackend`, which checks, once the model is
loaded, that the description was right.

Where a part of the identity can only be read from a loaded model or tokenizer (a model
named on the Hub rather than a local directory, remote code, a chat template, a directory
without tokenizer files, a dtype that is not a plain float), the model is loaded at once,
as before.
"""
import importlib.util
import json
import os
from typing import Any, Dict, Optional

from ..errors import InvalidValueError, OperationError
from ..extras import missing_extra_error
from .base import Backend
from .hf import DEFAULT_REQUESTS_PER_CALL, HFBackend, checked_arguments, hf_backend
from .hf_identity import _TOKENIZER_FILES, tokenizer_digest
from .lazy import LazyBackend

_PLAIN_DTYPES = ("float32", "float16", "bfloat16")


class _Described(HFBackend):
    """What an hf backend over a model directory is, read from the files; it holds no model and answers nothing."""

    def __init__(self, checked: Dict[str, Any], dtype_name: str) -> None:  # not HFBackend's: that loads a model
        options = checked["options"]
        self._describe(options, checked["pretrained"], checked["revision"], checked["dtype"])
        self._dtype_name = dtype_name
        self._numerics_asked = options["numerics"]
        device = checked["device"]
        self.requests_per_call = options["requests_per_call"] or (
            DEFAULT_REQUESTS_PER_CALL if device is not None and device.startswith("cpu") else None)
        self._identity = self._build_identity()

    def _model_dtype(self) -> str:
        return self._dtype_name

    def _tokenizer_sha256(self) -> str:
        return tokenizer_digest(None, self.pretrained)

    def _commit_hash(self) -> Optional[str]:
        return None  # a local directory has no Hub commit

    def _numerics(self) -> str:
        """The numerics the loaded scorer will run: fast where the config rules the invariant forward out."""
        if self._numerics_asked == "fast":
            return "fast"
        from .invariant import config_reason
        with open(os.path.join(self.pretrained, "config.json"), encoding="utf-8") as handle:
            return "invariant" if config_reason(json.load(handle)) is None else "fast"

    def score(self, requests: Any) -> Any:  # pragma: no cover - a description is never asked
        raise OperationError(f"a described hf backend holds no model to answer {len(requests)} requests")

    def close(self) -> None:
        """Nothing is held."""


def planned_hf_backend(**arguments: Any) -> Backend:
    """The registry's planned ``hf`` factory: every argument checked now, the model loaded when first needed."""
    checked = checked_arguments(arguments)
    for package in ("torch", "transformers"):  # a missing extra is refused now, as a load would refuse it
        if importlib.util.find_spec(package) is None:
            raise missing_extra_error(package, "the hf backend", ImportError(f"No module named {package!r}"))
    dtype_name = _files_dtype(checked)
    if dtype_name is None:
        return hf_backend(**arguments)
    return LazyBackend("hf", lambda: hf_backend(**arguments), _Described(checked, dtype_name))


def _files_dtype(checked: Dict[str, Any]) -> Optional[str]:
    """The loaded weights' dtype as the files and arguments say it, or None when only a loaded model can tell
    (then the identity cannot be described from the files)."""
    options, directory = checked["options"], checked["pretrained"]
    if not os.path.isdir(directory) or checked["trust_remote_code"] or checked["revision"] is not None:
        return None
    if options["chat"] or options["fewshot_as_multiturn"] or options["message_builder"] is not None:
        return None  # the chat template is read from the loaded tokenizer
    if not any(os.path.isfile(os.path.join(directory, name)) for name in _TOKENIZER_FILES):
        return None
    if checked["dtype"] != "auto":
        return checked["dtype"]
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InvalidValueError(f"model argument pretrained: {directory!r} has a config.json that is not JSON ({exc})") \
            from None
    stated = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    if _transformers_major() >= 5:
        return stated if stated in _PLAIN_DTYPES else ("float32" if stated is None else None)
    return "float32"


def _transformers_major() -> int:
    from importlib import metadata
    try:
        return int(metadata.version("transformers").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return 0
