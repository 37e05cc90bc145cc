"""An hf backend over a model directory loads its model only when a request must be asked.

Its identity (and so the cache fingerprint) is described from the files and arguments; the
description must equal the identity of the loaded model, and a run whose answers are all in
the cache, or a dry run, never loads it.
"""
import importlib.util

import pytest

torch = pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

from backend_helpers import save_tiny  # noqa: E402

from StaICC.backends.hf import HFBackend  # noqa: E402
from StaICC.backends.lazy import LazyBackend  # noqa: E402
from StaICC.backends.registry import make_backend, planned_backend  # noqa: E402
from StaICC.engine.selection import Nothing, QuerySubset  # noqa: E402
from StaICC.errors import InferenceError  # noqa: E402
from StaICC.subbenchmarks.suite import run_suite  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny") / "tiny-llama"))


@pytest.mark.parametrize("arguments", [{}, {"dtype": "float32"}, {"dtype": "bfloat16", "device": "cpu"},
                                       {"scoring": "generate", "max_new_tokens": "3"}, {"scoring": "sequence"},
                                       {"weights_hash": "full", "model_id": "tiny"}])
def test_the_described_identity_is_the_loaded_models(model_dir, arguments):
    planned = planned_backend("hf", pretrained=model_dir, **arguments)
    assert isinstance(planned, LazyBackend) and not planned.built
    loaded = make_backend("hf", pretrained=model_dir, **arguments)
    assert planned.identity() == loaded.identity() and planned.fingerprint() == loaded.fingerprint()
    assert planned.non_standard == loaded.non_standard
    assert (planned.shares_prefixes, planned.needs_segments) == (loaded.shares_prefixes, loaded.needs_segments)
    assert not planned.built
    assert planned.requests_per_call == loaded.requests_per_call  # known now with device=cpu, else built to say
    assert planned.backend().identity() == loaded.identity()


def test_a_chat_template_is_read_from_the_loaded_tokenizer(tmp_path):
    from transformers import AutoTokenizer
    from StaICC.backends.tiny_models import TINY_CHAT_TEMPLATE
    chat_dir = save_tiny(str(tmp_path / "tiny-chat"))
    tokenizer = AutoTokenizer.from_pretrained(chat_dir)
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    tokenizer.save_pretrained(chat_dir)
    assert isinstance(planned_backend("hf", pretrained=chat_dir, chat="true", scoring="generate"), HFBackend)


def suite():
    from StaICC.subbenchmarks.suite import build_suite
    return build_suite("Normal", [0], 4, test_items=QuerySubset.first(6))


def test_a_dry_run_and_a_run_from_the_cache_load_no_model(model_dir, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    dry = planned_backend("hf", pretrained=model_dir, device="cpu")
    assert run_suite(dry, suite=suite(), cache=cache, selection=Nothing()).metadata["from_cache"] == 0
    assert not dry.built
    first = planned_backend("hf", pretrained=model_dir, device="cpu")
    asked = run_suite(first, suite=suite(), cache=cache)
    assert first.built and asked.metadata["asked"] == 12
    again = planned_backend("hf", pretrained=model_dir, device="cpu")
    replayed = run_suite(again, suite=suite(), cache=cache)
    assert not again.built and replayed.metadata["asked"] == 0
    assert repr(dict(replayed)) == repr(dict(asked))
    eager = run_suite(make_backend("hf", pretrained=model_dir, device="cpu"), suite=suite(), cache=cache)
    assert eager.metadata["asked"] == 0  # the answers were stored under the loaded model's own fingerprint


def test_a_description_that_the_loaded_model_contradicts_is_refused_before_anything_is_stored(model_dir, tmp_path):
    real = planned_backend("hf", pretrained=model_dir, device="cpu")

    class Wrong:  # a description that names another dtype (a mock, for this error path only)
        non_standard, shares_prefixes, needs_segments, requests_per_call = [], True, False, 256

        def identity(self):
            return dict(real.identity(), dtype="float16")
    lazy = LazyBackend("hf", lambda: make_backend("hf", pretrained=model_dir, device="cpu"), Wrong())
    cache = str(tmp_path / "c.sqlite")
    with pytest.raises(InferenceError, match=r"not the one its files described \(dtype differ\)"):
        run_suite(lazy, suite=suite(), cache=cache)
    from StaICC.cache import PredictionCache
    with PredictionCache(cache) as opened:
        assert opened.stats()["entries"] == 0


def test_a_missing_extra_is_refused_before_any_model_loads(model_dir, monkeypatch):
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers"
                        else real_find(name, *a))  # a mock, for this error path only
    with pytest.raises(ImportError, match=r'pip install "StaICC\[hf\]"'):
        planned_backend("hf", pretrained=model_dir)
