"""Side files of a cache planted as hard links, on every route that opens a cache; an echo that places no
token; a query secret inside a ``name=URL`` argument on the command line's error line."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import ScriptedServer  # noqa: E402

from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402

RUN = [sys.executable, "-m", "StaICC", "run", "--datasets", "0", "--no-progress"]
ROUTES = {"plain": ["--limit", "8"], "lite": ["--lite-items", "8"],
          "methods": ["--limit", "8", "--methods", "vanilla,contextual", "--method-args", "calibration_number=4"]}


def env():
    return dict(os.environ, PYTHONPATH=os.getcwd())


@pytest.mark.parametrize("side", ["-wal", "-journal", "-shm"])
def test_a_hard_linked_side_file_is_refused(tmp_path, side):
    from StaICC.cache import CacheError, PredictionCache
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    cache = tmp_path / "shared.sqlite"
    PredictionCache(str(cache)).close()
    os.link(victim, str(cache) + side)
    with pytest.raises(CacheError, match=rf"'shared.sqlite{side}' is a hard link \(2 names for one file\)"):
        PredictionCache(str(cache))
    assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_refuses_a_hard_linked_wal(tmp_path, route):
    from StaICC.cache import PredictionCache
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    cache = tmp_path / "shared.sqlite"
    PredictionCache(str(cache)).close()
    os.link(victim, str(cache) + "-wal")
    done = subprocess.run(RUN + ROUTES[route] + ["--cache", str(cache), "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode != 0 and "is a hard link" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert victim.read_bytes() == b"precious"


def _echo_at_zero(body):
    text = body["prompt"]
    return {"model": "m", "choices": [{"text": text + "!", "logprobs": {
        "tokens": ["", text, "!"], "token_logprobs": [None, -1.0, -0.1], "text_offset": [0, 0, 0]}}]}


def test_an_echo_with_every_offset_zero_is_refused_not_scored_uniform():
    with ScriptedServer([(200, _echo_at_zero, 0)]) as server:
        backend = make_backend("openai", base_url=server.base_url, model="m", concurrency="1", timeout="10",
                               retries="0")
        with pytest.raises(Exception, match="every echoed token at text offset 0") as caught:
            backend.score([Request("Review: good. Sentiment:", ("negative", "positive"))])
    assert "\n" not in str(caught.value)


def test_a_query_secret_in_a_name_url_argument_stays_out_of_the_error_line():
    canary = "sk-canary-1f2e3d4c5b6a"
    done = subprocess.run(RUN[:4] + ["--datasets", f"mine=http://h/x.csv?api_key={canary}", "--limit", "8"],
                          capture_output=True, text=True, env=env(), timeout=120)
    assert done.returncode == 2 and canary not in done.stderr + done.stdout, done.stderr
