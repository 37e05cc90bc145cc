"""Secrets never written: a canary key (and URL credentials) given to a real `staicc run`
against a server on 127.0.0.1 that echoes the key in its answers and error bodies must
appear in no output file, no cache row, no stdout or stderr line, in any letter case."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import ScriptedServer  # noqa: E402

from StaICC.backends.secrets import (MASK, REDACTED, is_secret_name, redact_arguments, redact_command,  # noqa: E402
                                     redact_text, redact_url)

CANARY = "sk-canary-0b7e4d2a9f6c"
PASSWORD = "pw-canary-5e1d"


def forms(secret):
    return {secret, secret.upper(), secret.lower(), secret.swapcase()}


def assert_clean(text, where):
    for secret in (CANARY, PASSWORD):
        for form in forms(secret):
            assert form not in text, f"{form!r} leaked into {where}"


def test_redaction_rules():
    assert redact_url(f"http://u:{PASSWORD}@h:1/v1?api_key={CANARY}&model=m") == \
        f"http://{MASK}@h:1/v1?api_key={MASK}&model=m"
    assert redact_text(f"echo {CANARY.upper()} and {CANARY}", [CANARY]) == f"echo {MASK} and {MASK}"
    assert redact_arguments({"api_key": CANARY, "api_key_env": "K", "max_tokens": 8,
                             "base_url": f"http://h/v1?token={CANARY}"}) == \
        {"api_key": REDACTED, "api_key_env": "K", "max_tokens": 8, "base_url": f"http://h/v1?token={MASK}"}
    assert redact_command(["run", f"--model-args=base_url=http://a:{PASSWORD}@h/v1"]) == \
        ["run", f"--model-args=base_url=http://{MASK}@h/v1"]
    assert redact_url("http://h/v1?key=ab&model=m") == f"http://h/v1?key={MASK}&model=m"  # short, still a query secret
    assert redact_text("expected key=value") == "expected key=value"  # prose stays readable
    assert [is_secret_name(n) for n in ("apiKey", "access_token", "x-api-key", "tokenizer", "max_tokens",
                                        "api_key_env", "password")] == [True, True, True, False, False, False, True]


def _generated(_body):
    """A chat answer that names a label and echoes the key, upper-cased too."""
    return {"choices": [{"index": 0, "message": {"role": "assistant",
                                                 "content": f"positive (key {CANARY} / {CANARY.upper()})"}}]}


@pytest.mark.parametrize("failing", [False, True])
def test_a_canary_key_lands_in_no_file_and_no_stream(tmp_path, failing):
    script = [(500, {"error": {"message": f"bad key {CANARY.upper()} for {PASSWORD}"}}, 0)] if failing \
        else [(200, _generated, 0)]
    out, cache = tmp_path / "run", tmp_path / "cache.sqlite"
    with ScriptedServer(script) as server:
        base_url = server.base_url.replace("http://", f"http://user:{PASSWORD}@") + f"?api_key={CANARY}"
        model_args = (f"base_url={base_url},model=m,scoring=generate,chat=true,retries=0,timeout=5,"
                      "api_key_env=I21_SECRET_KEY,concurrency=1")
        env = dict(os.environ, I21_SECRET_KEY=CANARY, PYTHONPATH=os.getcwd())
        done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "openai", "--model-args", model_args,
                               "--datasets", "0", "--limit", "8", "--output-dir", str(out), "--log-samples",
                               "--cache", str(cache), "--no-progress"],
                              capture_output=True, text=True, env=env, timeout=300)
        sent = server.requests
    assert sent and all(r["headers"]["Authorization"] == "Bearer " + CANARY for r in sent)
    assert "Traceback" not in done.stderr
    assert done.returncode == (1 if failing else 0), done.stderr
    assert_clean(done.stdout, "stdout")
    assert_clean(done.stderr, "stderr")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written  # the cache at least
    for path in written:
        assert_clean(path.read_bytes().decode("utf-8", "replace"), str(path))
    if not failing:
        document = json.loads((out / "results.json").read_text())
        assert any(MASK in part for part in document["provenance"]["command"])
        samples = (out / "samples.jsonl").read_text().splitlines()
        assert samples and all(f"key {MASK} / {MASK}" in json.loads(line)["text"] for line in samples)


@pytest.mark.parametrize("model_args", [
    f"base_url=ftp://user:{PASSWORD}@h/v1?api_key={CANARY},model=m",
    f"base_url=http://user:{PASSWORD}@127.0.0.1:9/v1?token={CANARY},model=m,retries=x",
    f"base_url=http://user:{PASSWORD}@127.0.0.1:9/v1?token={CANARY},model=m,bogus=1",
])
def test_argument_errors_hold_no_secret(model_args, capsys):
    from StaICC.cli import main
    code = main(["run", "--model", "openai", "--model-args", model_args, "--datasets", "0", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert_clean(err, "the argument error")


def test_an_error_line_shows_control_characters_escaped(tmp_path, capsys):
    from StaICC.cli import main
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["run", "--output-dir", str(blocker) + "/\x1b[2J\x1b]0;owned\x07", "--datasets", "0", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "\x1b" not in err and "\x07" not in err and "\\x1b[2J" in err, err
