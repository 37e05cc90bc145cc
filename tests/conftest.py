"""Shared fixtures for the unit tests of the StaICC 0.1.1 standard (STANDARD.md).

Benchmarks are built once per session; tests that change an experimentor build
their own (a one-dataset ``Normal`` costs a few hundredths of a second once the
bundled file is cached).  The reference constants are read from the copy of the
specification's ``datasets.json`` in ``tests/reference``.
"""
import importlib.util
import json
import pathlib
import sys
import warnings

import pytest

from StaICC.errors import TamperingWarning

# The test tree mirrors StaICC/; helper modules (backend_helpers, run_fixtures, ...) and the
# reference files live at its root, so tests name paths from these two constants.
TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
REFERENCE_PATH = TESTS_DIR / "reference" / "datasets.json"


def _hide_test_folders_from_imports():
    """Keep ``import datasets`` meaning the optional HuggingFace package, not ``tests/datasets/``.

    pytest puts this folder on ``sys.path`` (so helper modules import by name), which makes each
    sub-folder an importable namespace package.  A folder named like an optional dependency that
    is not installed would then be imported in its place, and code that expects ImportError
    (``pytest.importorskip``, ``from_hf``'s install hint) would get an empty package instead.
    Only folders that resolve to nothing but this tree are hidden; an installed package wins.
    """
    for folder in TESTS_DIR.iterdir():
        if not folder.is_dir() or not folder.name.isidentifier() or folder.name in sys.modules:
            continue
        spec = importlib.util.find_spec(folder.name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if spec and spec.origin in (None, "namespace") and locations and all(
                pathlib.Path(place).resolve().is_relative_to(TESTS_DIR) for place in locations):
            sys.modules[folder.name] = None  # "import <folder>" raises ImportError, as uninstalled


_hide_test_folders_from_imports()

# The ten datasets, in benchmark order (spec §2.2).
DATASET_NAMES = ["GLUE-SST2", "rotten_tomatoes", "financial_phrasebank", "SST5", "TREC", "AGNews",
                 "Subjective", "tweet_eval_emotion", "tweet_eval_hate", "hate_speech_18"]

# Spec §11.0, exact.
TAMPERING_TEXT = ("You are editing the standard settings of StaICC. You should not use the result after "
                  "editing as any baselines. Be careful.")


def load_script(relative: str):
    """A script of the repository (``tools/...``, ``benchmarks/...``) as a module: they are files, not packages."""
    path = REPO_ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_reference():
    with open(REFERENCE_PATH, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="session")
def reference():
    """The whole reference datasets.json (DS)."""
    return _load_reference()


@pytest.fixture(scope="session")
def ds(reference):
    """Per-dataset DS entries keyed by dataset name."""
    return {entry["name"]: entry for entry in reference["datasets"]}


def build(name=None, **kwargs):
    """A fresh one-dataset ``Normal`` (tampering warnings filtered)."""
    from StaICC import Normal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        if name is None:
            return Normal(**kwargs)
        return Normal(datasets=[name], **kwargs)


def fresh(name, **kwargs):
    """A freshly built experimentor for one dataset."""
    return build(name, **kwargs)[0]


@pytest.fixture(scope="session")
def normal():
    """A session-wide default ``Normal()`` over the ten datasets.  Do not mutate it."""
    return build()


@pytest.fixture(scope="session")
def rt(normal):
    """The rotten_tomatoes experimentor of the shared ``Normal()`` (read-only use)."""
    return normal[1]


@pytest.fixture
def quiet():
    """Silence tampering warnings inside a test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        yield
