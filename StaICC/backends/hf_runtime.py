"""How the ``hf`` backend loads and runs on this machine: the model-folder check and the CPU thread count.

* :func:`check_model_folder`: a folder that is not a saved causal LM (no ``model_type`` in its
  ``config.json``, no weights, no tokenizer) is one line naming what is missing, before
  transformers reads it (its own messages span many lines and the first says little);
  :func:`loading_error` makes what transformers raises one line that names the model.
* :func:`choose_threads`: the CPU thread count.  A small model's matrix products are too
  small to split: on the 2-core development machine, torch's default (one thread per core)
  made the tiny preset (0.3 M parameters) 1.6x to 8x slower than one thread and the small
  preset (27 M) no faster, the more so the busier the machine was
  (``benchmarks/bench_cpu_first_run.py``).  So a model under
  :data:`ONE_THREAD_BELOW_PARAMETERS` runs on one thread on the CPU unless ``threads=N`` or
  ``OMP_NUM_THREADS`` says otherwise; larger models keep torch's default.  The choice and its
  reason go into provenance (``runtime``); the numbers do not depend on it beyond float
  rounding.
"""
import json
import os
from typing import Any, Dict, Optional, Tuple

from ..errors import InvalidValueError, error_name
from .kernels import model_device

#: on the CPU, a model with fewer parameters than this runs on one thread by default (see the module docstring)
ONE_THREAD_BELOW_PARAMETERS = 100_000_000
#: file endings of weights that ``from_pretrained`` reads
WEIGHT_ENDINGS = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5", ".gguf")
#: files of which a tokenizer folder has at least one
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model", "sentencepiece.bpe.model")


def check_pretrained(pretrained: str, revision: Optional[str], trust_remote_code: bool) -> str:
    """``pretrained`` as the backend loads it: a checked model folder (its absolute path), or a Hub name that
    can be loaded now (:func:`check_hub_name`); one ValueError line otherwise, before anything is loaded."""
    if not (os.path.isabs(pretrained) or pretrained.startswith(".") or os.path.exists(pretrained)):
        check_hub_name(pretrained, revision)
        return pretrained
    if not os.path.isdir(pretrained):
        raise InvalidValueError(f"model argument pretrained: {pretrained!r} is not a model directory")
    if not os.path.isfile(os.path.join(pretrained, "config.json")):
        raise InvalidValueError(f"model argument pretrained: {pretrained!r} is not a model directory (it has no "
                                "config.json; give the folder written by save_pretrained)")
    check_model_folder(pretrained, trust_remote_code)
    return os.path.abspath(pretrained)


#: seconds to wait for the Hub's address to answer before a name not in the cache is refused
HUB_PROBE_SECONDS = 3.0


def check_hub_name(name: str, revision: Optional[str]) -> None:
    """A Hub name (``gpt2``) is loaded from the Hugging Face cache or downloaded: when it is not in the cache
    and the Hub cannot be reached (``HF_HUB_OFFLINE`` set, or no connection within
    :data:`HUB_PROBE_SECONDS`), one error line now, instead of transformers' retries (a minute offline)."""
    offline = any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
                  for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if _in_hub_cache(name, revision):
        return
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    reason = "HF_HUB_OFFLINE is set" if offline else _unreachable(endpoint)
    if reason:
        raise InvalidValueError(f"model argument pretrained: {name!r} is not a local folder nor in the Hugging Face cache, "
                                f"and it cannot be downloaded ({reason}); give the folder of a saved model, or download "
                                "it first (with HF_HUB_OFFLINE=1 only the cache is read)")


def _in_hub_cache(name: str, revision: Optional[str]) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # an old transformers without huggingface_hub's cache lookup: let it try
        return True
    try:
        found = try_to_load_from_cache(name, "config.json", revision=revision)
    except ValueError:  # not a valid repository name: transformers' own error says so
        return True
    return isinstance(found, str)


def _unreachable(endpoint: str) -> Optional[str]:
    """Why ``endpoint`` cannot be reached now (one TCP connection), or None when it answers."""
    import socket
    import urllib.parse
    parsed = urllib.parse.urlsplit(endpoint)
    host, port = parsed.hostname or "", parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS).close()
    except OSError as exc:
        return f"{host}:{port} cannot be reached: {exc.strerror or error_name(exc)}"
    return None


def check_model_folder(path: str, trust_remote_code: bool = False) -> None:
    """Raise one ValueError line when ``path`` (a folder with a ``config.json``) is not a saved model, or is
    one of an architecture this transformers does not know (unless its code is trusted)."""
    where = f"model argument pretrained: {path!r} is not a model folder"
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
        raise InvalidValueError(f"{where}: its config.json cannot be read as JSON ({reason})") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise InvalidValueError(f"{where}: its config.json names no model_type (the config.json that save_pretrained "
                                "writes does, e.g. \"model_type\": \"llama\")")
    model_type = config["model_type"]
    if not trust_remote_code and "auto_map" not in config and not is_known_model_type(model_type):
        from ..extras import require
        version = require("transformers", "the hf backend").__version__
        raise InvalidValueError(f"model argument pretrained: {path!r} is a model of type {model_type!r}, which transformers "
                                f"{version} does not know (a newer transformers may; trust_remote_code=true runs the "
                                "model's own code)")
    names = os.listdir(path)
    if not any(name.endswith(WEIGHT_ENDINGS) for name in names):
        raise InvalidValueError(f"{where}: it has a config.json but no weights (*.safetensors or *.bin)")
    if not any(name in TOKENIZER_FILES for name in names):
        raise InvalidValueError(f"{where}: it has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...); save the "
                                "tokenizer into the same folder (tokenizer.save_pretrained)")


def is_known_model_type(model_type: str) -> bool:
    """Whether this transformers can build a model of ``model_type`` (its auto-configuration table).

    The common case is answered from the installed package's folders (``transformers/models/llama``)
    without importing it, which would import torch: a run whose answers are all in the cache loads
    neither.  A type without a folder of that name is looked up in the table itself.
    """
    import importlib.util
    spec = importlib.util.find_spec("transformers")
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        if os.path.isfile(os.path.join(base, "models", model_type.replace("-", "_"), "__init__.py")):
            return True
    from ..extras import require
    require("transformers", "the hf backend")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    return model_type in CONFIG_MAPPING_NAMES


def loading_error(path: str, exc: Exception) -> InvalidValueError:
    """What transformers raised while loading ``path``, as one line that names the model."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = lines[0] if lines else type(exc).__name__
    if reason.endswith(":") and len(lines) > 1:  # "... from one of:" and the list on the next lines
        reason = f"{reason} {lines[1]}" + (" ..." if len(lines) > 2 else "")
    return InvalidValueError(f"model argument pretrained: cannot load {path!r} as a causal language model: {reason}")


def choose_threads(model: Any, asked: Optional[int]) -> Tuple[int, str]:
    """(CPU threads torch uses, why), after setting them: ``threads=N``, else ``OMP_NUM_THREADS``, else
    one thread for a model on the CPU under :data:`ONE_THREAD_BELOW_PARAMETERS`, else torch's default."""
    from ..extras import require
    torch = require("torch", "the hf backend")
    if asked is not None:
        torch.set_num_threads(asked)
        return asked, "threads=N model argument"
    device = next(model.parameters()).device
    if device.type != "cpu":
        return torch.get_num_threads(), f"torch's default (the model runs on {device})"
    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads(), "OMP_NUM_THREADS"
    parameters = sum(p.numel() for p in model.parameters())
    size = f"{parameters / 1e6:.1f} M parameters"
    if parameters < ONE_THREAD_BELOW_PARAMETERS:
        torch.set_num_threads(1)
        return 1, (f"1 thread: {size} on the CPU, under {ONE_THREAD_BELOW_PARAMETERS // 1_000_000} M, where one "
                   "thread measured fastest")
    return torch.get_num_threads(), f"torch's default: {size} on the CPU"


def runtime(threads: int, why: str) -> Dict[str, Any]:
    """What provenance records of how the model ran (not part of the identity: it changes no answer)."""
    return {"threads": threads, "threads_rule": why}


# what CausalLMScorer needs of a model and its tokenizer, once they are loaded
def _pad_token_id(tokenizer: Any) -> int:
    """Any valid id works: padded positions are masked out and never read."""
    for name in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tokenizer, name, None)
        if isinstance(value, int):
            return value
    return 0


def _vocab_size_of_model(model: Any) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and hasattr(head, "weight"):
        return int(head.weight.shape[0])
    return int(getattr(getattr(model, "config", None), "vocab_size", 0) or 32000)


def _prepared_model(torch: Any, model: Any, device: Any, dtype: Any) -> Any:
    """Move/cast the model as asked, put it in eval mode and return it."""
    if device is not None:
        model = model.to(device)
    current = next(model.parameters()).dtype if any(True for _ in model.parameters()) else torch.float32
    on_cuda = model_device(model).type == "cuda"
    if dtype is None and on_cuda and current == torch.float32:
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype is not None:
        model = model.to(dtype)
    model.eval()
    return model


def load_pretrained(pretrained: str, *, revision: Optional[str], trust_remote_code: bool, dtype: str,
                    device: Optional[str]) -> Tuple[Any, Any]:
    """(model, tokenizer) from a folder or hub name, on ``device`` (CUDA when there is one): a folder that does
    not hold a model is one error line naming it, not transformers' traceback."""
    from ..extras import require
    torch = require("torch", "the hf backend")
    transformers = require("transformers", "the hf backend")
    kwargs: Dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
    if dtype != "auto":
        major_minor = tuple(int(p) for p in transformers.__version__.split(".")[:2] if p.isdigit())
        kwargs["dtype" if major_minor >= (4, 56) else "torch_dtype"] = getattr(torch, dtype)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(pretrained, revision=revision,
                                                               trust_remote_code=trust_remote_code)
        model = transformers.AutoModelForCausalLM.from_pretrained(pretrained, **kwargs)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise loading_error(pretrained, exc) from None
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return model.to(device), tokenizer
