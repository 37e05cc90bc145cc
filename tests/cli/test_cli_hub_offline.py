"""A model name that is not a local folder fails in seconds when it cannot be downloaded, before loading.

Run in a subprocess: huggingface_hub reads HF_HOME when it is imported. The Hub's address is a closed port
on this machine (a real connection refused), so nothing is downloaded.
"""
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT

pytest.importorskip("huggingface_hub", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path, offline: bool, code: str):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=env,
                          timeout=120)
    return done, time.perf_counter() - started


@pytest.mark.parametrize("offline, reason", [(False, "cannot be reached"), (True, "HF_HUB_OFFLINE is set")])
def test_a_hub_name_not_in_the_cache_fails_in_one_line_before_loading(tmp_path, offline, reason):
    code = ("import sys; from StaICC import cli; sys.exit(cli.main(['run', '--model', 'hf', '--model-args', "
            "'pretrained=gpt2', '--datasets', 'TREC', '--limit', '2', '--no-progress']))")
    done, seconds = _run(tmp_path, offline, code)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("staicc: error: model argument pretrained: 'gpt2' is not a local "
                                                   "folder nor in the Hugging Face cache"), done.stderr
    assert reason in lines[0] and "HF_HUB_OFFLINE=1" in lines[0]
    assert seconds < 30  # transformers' own retries took over a minute offline


def test_a_hub_name_in_the_cache_passes_the_check(tmp_path):
    snapshot = tmp_path / "hf" / "hub" / "models--gpt2" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "hf" / "hub" / "models--gpt2" / "refs").mkdir()
    (tmp_path / "hf" / "hub" / "models--gpt2" / "refs" / "main").write_text("a" * 40)
    code = "from StaICC.backends.hf_runtime import check_hub_name as c; c('gpt2', None); c('gpt2', None); print('ok')"
    done, _ = _run(tmp_path, True, code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
