"""Optional dependencies, imported where used: one helper, one message naming the extra.

The core is stdlib-only.  Code that needs torch, transformers, NumPy, an HTTP client,
vLLM, matplotlib or rich calls :func:`require` at the point of use; a missing package
raises an ImportError that says which feature needed it and which extra installs it.
"""
import importlib
from types import ModuleType

#: package -> the extra of setup.py that installs it
EXTRA_OF = {
    "torch": "hf", "transformers": "hf", "numpy": "hf", "vllm": "vllm", "matplotlib": "plot",
    "rich": "rich", "tabulate": "rich", "tqdm": "progress", "sentence_transformers": "embeddings",
    "datasets": "source", "tomli": "tasks", "yaml": "tasks", "ray": "ray",
}


def missing_extra_error(package: str, feature: str, error: Exception) -> ImportError:
    extra = EXTRA_OF.get(package.split(".")[0], package)
    return ImportError(f"{feature} needs the optional dependency '{package}', which is not installed "
                       f"({error}). Install it with: pip install \"StaICC[{extra}]\"")


def require(package: str, feature: str) -> ModuleType:
    """The module ``package``, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError as error:
        raise missing_extra_error(package, feature, error) from None
