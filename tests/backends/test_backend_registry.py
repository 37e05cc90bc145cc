"""A new backend is one module and one registry entry with its capabilities; a name is registered once.

The throwaway backend below is written as a module of its own (in a temporary folder on
``sys.path``) and registered lazily as ``"module:factory"``: ``make_backend``, ``staicc run
--model`` and its help find it, its capability row (none) is what the CLI reads instead of its
name, and registering the name again is refused.
"""
import json
import sys
import textwrap

import pytest

from StaICC.backends.registry import (BACKENDS, NO_CAPABILITIES, BackendCapabilities, backends_with,
                                      capabilities, make_backend, register_backend)
from StaICC.cli import main
from StaICC.registry import Registry, RegistryError

MODULE = textwrap.dedent('''
    from StaICC.backends.base import FunctionBackend

    class FirstLabel(FunctionBackend):
        name = "throwaway"

        def __init__(self, label="0"):
            super().__init__(lambda prompt, label_space: int(label) % len(label_space))
            self.label = label

        def identity(self):
            return {"backend": "throwaway", "label": self.label}

    def make(label="0"):
        return FirstLabel(label)
''')


@pytest.fixture
def throwaway(tmp_path, monkeypatch):
    (tmp_path / "throwaway_backend_module.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_backend("throwaway", "throwaway_backend_module:make")
    yield "throwaway"
    BACKENDS.unregister("throwaway")
    sys.modules.pop("throwaway_backend_module", None)


def test_a_throwaway_backend_runs_from_its_module_and_entry(throwaway, tmp_path, capsys):
    backend = make_backend(throwaway, label="1")
    assert backend.identity() == {"backend": "throwaway", "label": "1"}
    assert capabilities(throwaway) == NO_CAPABILITIES
    out = tmp_path / "run"
    assert main(["run", "--model", throwaway, "--model-args", "label=1", "--datasets", "TREC", "--limit", "6",
                 "--output-dir", str(out), "--no-progress"]) == 0
    provenance = json.loads((out / "results.json").read_text(encoding="utf-8"))["provenance"]
    assert provenance["model"]["backend"] == "throwaway" and provenance["model"]["arguments"] == {"label": "1"}
    assert "Normal (k=4, model=throwaway (label=1))" in capsys.readouterr().out


def test_a_backends_capabilities_are_read_instead_of_its_name(throwaway, capsys):
    # the FLOP bound needs a backend that counts tokens: refused for the throwaway one, naming those that do
    assert main(["run", "--model", throwaway, "--dry-run", "--device-flops", "1e15", "--datasets", "TREC"]) == 2
    assert "which the throwaway backend does not give; use it with --model hf" in capsys.readouterr().err
    assert main(["batch", "export", "--model", throwaway, "--datasets", "TREC", "--output", "x"]) == 2
    assert "give --model openai" in capsys.readouterr().err
    assert backends_with("batch_api") == ["openai"] and backends_with("token_counting") == ["hf"]
    assert capabilities("hf").engine == "transformers" and capabilities(None) == NO_CAPABILITIES


def test_a_name_is_registered_once(throwaway):
    with pytest.raises(RegistryError, match="a model backend named 'throwaway' is already registered"):
        register_backend(throwaway, "throwaway_backend_module:make")
    with pytest.raises(ValueError, match="already registered"):  # a RegistryError is a ValueError
        register_backend("reference", lambda: None)
    register_backend(throwaway, "throwaway_backend_module:make", BackendCapabilities(engine="x"), replace=True)
    assert capabilities(throwaway).engine == "x"


def test_a_frozen_registry_takes_no_name_and_an_unknown_name_is_one_line():
    colours = Registry("colour")
    colours.register("red", "colorsys:rgb_to_hls")
    import colorsys
    assert colours.entry("red") == "colorsys:rgb_to_hls" and colours.get("red") is colorsys.rgb_to_hls
    colours.freeze()
    with pytest.raises(RegistryError, match="frozen"):
        colours.register("blue", len)
    with pytest.raises(RegistryError, match=r"unknown colour 'redd'; did you mean 'red'\?; choose one of red"):
        colours.get("redd")
    with pytest.raises(RegistryError, match="'module:object'"):
        Registry("colour").register("green", "colorsys")
