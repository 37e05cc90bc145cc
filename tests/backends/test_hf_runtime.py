"""The hf backend on this machine: folders that are not models (one line each), the CPU thread rule and its
record in provenance, and transformers' loading bar under --progress / --no-progress."""
import fcntl
import importlib.metadata
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

from backend_helpers import save_tiny, tiny_pair  # noqa: E402
from StaICC import cli  # noqa: E402
from StaICC.backends.hf_runtime import ONE_THREAD_BELOW_PARAMETERS, choose_threads  # noqa: E402
from StaICC.extras import CPU_TORCH, missing_extra_error  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = ["run", "--model", "hf", "--benchmarks", "Normal", "--datasets", "TREC", "--limit", "10"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture
def torch_threads():
    """torch's thread count is process-wide: put it back after the test."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def broken_copy(model_dir, tmp_path, drop=(), config=None):
    folder = tmp_path / "broken"
    shutil.copytree(model_dir, folder)
    for name in drop:
        os.remove(folder / name)
    if config is not None:
        (folder / "config.json").write_text(config, encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize("drop, config, message", [
    ((), '{"foo": 1}', "its config.json names no model_type"),
    ((), "not json", "its config.json cannot be read as JSON"),
    ((), '{"model_type": "frobnicator"}', "is a model of type 'frobnicator', which transformers"),
    (("model.safetensors",), None, "it has a config.json but no weights"),
    (("tokenizer.json", "tokenizer_config.json"), None, "it has no tokenizer files"),
])
def test_a_folder_that_is_not_a_model_is_one_line_before_loading(model_dir, tmp_path, capsys, drop, config,
                                                                  message):
    folder = broken_copy(model_dir, tmp_path, drop, config)
    assert cli.main(RUN + ["--model-args", f"pretrained={folder}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert err.startswith(f"staicc: error: model argument pretrained: {folder!r}")


def test_chat_on_a_tokenizer_without_a_template_is_refused_before_scoring(model_dir, capsys):
    assert cli.main(RUN + ["--model-args", f"pretrained={model_dir},chat=true"]) == 2
    assert capsys.readouterr().err == ("staicc: error: model argument chat=true (apply_chat_template): the tokenizer "
                                       "has no chat template; use chat=false for a base model\n")


@pytest.mark.usefixtures("torch_threads")
def test_a_small_model_runs_on_one_thread_and_provenance_says_why(model_dir, tmp_path, capsys):
    torch.set_num_threads(2)
    out = tmp_path / "run"
    assert cli.main(RUN + ["--model-args", f"pretrained={model_dir}", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    with open(out / "results.json", encoding="utf-8") as handle:
        model = json.load(handle)["provenance"]["model"]
    assert model["runtime"]["threads"] == 1 == torch.get_num_threads()
    assert model["runtime"]["threads_rule"].startswith("1 thread: 0.1 M parameters on the CPU, under 100 M")
    assert "threads" not in model["identity"]  # the thread count changes no answer: not in the cache key


@pytest.mark.usefixtures("torch_threads")
def test_the_thread_rule(monkeypatch):
    model, _ = tiny_pair()
    torch.set_num_threads(2)
    assert choose_threads(model, 3) == (3, "threads=N model argument") and torch.get_num_threads() == 3
    torch.set_num_threads(2)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert choose_threads(model, None) == (2, "OMP_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert choose_threads(model, None)[0] == 1 == torch.get_num_threads()
    monkeypatch.setattr("StaICC.backends.hf_runtime.ONE_THREAD_BELOW_PARAMETERS", 1000)
    torch.set_num_threads(2)
    threads, why = choose_threads(model, None)
    assert threads == 2 and why.startswith("torch's default:")
    assert ONE_THREAD_BELOW_PARAMETERS == 100_000_000


def run_staicc(arguments, stderr=subprocess.PIPE):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "StaICC", *arguments], stdout=subprocess.PIPE, stderr=stderr,
                          env=env, cwd=ROOT, timeout=300)


def stderr_on_a_terminal(arguments):
    """What ``staicc ARGUMENTS`` writes to stderr when stderr is a terminal (a pseudo-terminal here)."""
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # bars need a width
    env = dict(os.environ, PYTHONPATH=ROOT)
    process = subprocess.Popen([sys.executable, "-m", "StaICC", *arguments], stdout=subprocess.DEVNULL,
                               stderr=secondary, env=env, cwd=ROOT)
    os.close(secondary)
    seen = b""
    try:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(main)
    assert process.wait(timeout=300) == 0, seen
    return seen


TRANSFORMERS_DRAWS_A_LOADING_BAR = int(importlib.metadata.version("transformers").split(".")[0]) >= 5


def test_transformers_loading_bar_follows_the_progress_flags(model_dir):
    arguments = RUN + ["--model-args", f"pretrained={model_dir}"]
    logged = run_staicc(arguments)  # stderr is a file: no bar, as for StaICC's own
    assert logged.returncode == 0 and b"Loading weights" not in logged.stderr
    if TRANSFORMERS_DRAWS_A_LOADING_BAR:  # transformers 4.x draws one only for sharded checkpoints
        assert b"Loading weights" in stderr_on_a_terminal(arguments)
    quiet = stderr_on_a_terminal(arguments + ["--no-progress"])
    assert b"Loading weights" not in quiet and b"Normal TREC" not in quiet


def test_the_missing_extra_hint_gives_the_cpu_route():
    message = str(missing_extra_error("torch", "the hf backend", ImportError("No module named 'torch'")))
    assert 'pip install "StaICC[hf]"' in message and CPU_TORCH in message
    assert CPU_TORCH == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert CPU_TORCH not in str(missing_extra_error("matplotlib", "plots", ImportError("x")))
