"""Optional dependencies, imported where used: one helper, one message naming the extra.

The core is stdlib-only.  Code that needs torch, transformers, NumPy, an HTTP client,
vLLM, matplotlib or rich calls :func:`require` at the point of use; a missing package
raises an ImportError that says which feature needed it and which extra installs it.
"""
import importlib
from types import ModuleType

from .errors import MissingExtraError

#: package -> the extra of setup.py that installs it
EXTRA_OF = {
    "torch": "hf", "transformers": "hf", "tokenizers": "hf", "numpy": "hf", "vllm": "vllm", "matplotlib": "plot",
    "rich": "rich", "tabulate": "rich", "tqdm": "progress", "sentence_transformers": "embeddings",
    "datasets": "source", "tomli": "tasks", "yaml": "tasks", "ray": "ray",
}


#: the extras whose packages include torch: ``pip install`` of them on a machine without a GPU would pull
#: PyTorch's CUDA wheels (gigabytes) unless the CPU build is installed first
TORCH_EXTRAS = ("hf", "embeddings")
#: installs PyTorch's CPU build, which pip then keeps when it installs an extra that needs torch
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def install_hint(extra: str) -> str:
    """The command that installs ``extra``; for an extra that needs torch, the CPU route too."""
    hint = f"pip install \"StaICC[{extra}]\""
    if extra in TORCH_EXTRAS:
        hint += f" (on a machine without an NVIDIA GPU, first: {CPU_TORCH}; otherwise pip pulls CUDA builds)"
    return hint


def missing_extra_error(package: str, feature: str, error: Exception) -> MissingExtraError:
    """The refusal of a feature whose optional package is missing: an ImportError that names the ``pip install``."""
    extra = EXTRA_OF.get(package.split(".")[0], package)
    return MissingExtraError(f"{feature} needs the optional dependency '{package}', which is not installed "
                             f"({error}). Install it with: {install_hint(extra)}")


def require(package: str, feature: str) -> ModuleType:
    """The module ``package``, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError as error:
        raise missing_extra_error(package, feature, error) from None
