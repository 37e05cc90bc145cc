"""The user's own code and files at the newest surfaces: a YAML alias bomb refused before it expands, keys
given twice refused, an exit raised by a task asset or a method file reported as that file's failure, a
method NAME that would name another's results refused, PARAMETERS checked and redacted, a calibration size
that would fill the memory refused before any prompt is written."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from StaICC.backends import make_backend
from StaICC.engine.selection import QuerySubset
from StaICC.methods.files import resolve_methods
from StaICC.methods.run import run_methods
from StaICC.tasks.errors import TaskError
from StaICC.tasks.files import read_task_file

pytest.importorskip("yaml")
BODY = "def train(d, a):\n    pass\ndef apply(s, a):\n    return a['labels']\n"
CANARY, PASSWORD = "sk-canary-0b7e4d2a9f6c", "pw-canary-5e1d"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def alias_bomb(levels):
    """The audit's bomb: a list of nine strings, then ``levels`` lists of nine references to the one before."""
    text, previous = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n', "a"
    for name in "bcdefghijk"[:levels]:
        text += f"{name}: &{name} [" + ",".join(["*" + previous] * 9) + "]\n"
        previous = name
    return text + "name: bomb\n"


@pytest.mark.parametrize("levels", [7, 8, 10])
def test_a_yaml_alias_bomb_is_refused_at_its_key_before_it_expands(tmp_path, levels):
    path = _write(tmp_path, "bomb.yaml", alias_bomb(levels))
    assert os.path.getsize(path) < 600
    code = f"from StaICC.tasks.files import read_task_file\nread_task_file({path!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PYTHONPATH=os.getcwd()))  # a hang bound: it took minutes
    assert "aliases (*name) expand to more than" in done.stderr and "key 'f'" in done.stderr, done.stderr[-300:]


def test_a_self_containing_alias_is_refused(tmp_path):
    with pytest.raises(TaskError, match="refers to a value that contains it"):
        read_task_file(_write(tmp_path, "loop.yaml", "a: &a [*a]\nname: t\n"))


@pytest.mark.parametrize("name, text, key", [
    ("twice.json", '{"name": "t", "labels": {"words": ["a"], "words": ["b"]}}', "words"),
    ("twice.yaml", "name: t\nlabels:\n  words: [a, b]\n  words: [c, d]\n", "labels.words"),
    ("twice.yml", "name: t\nname: u\n", "name"),
])
def test_a_key_given_twice_is_refused_with_file_and_key(tmp_path, name, text, key):
    path = _write(tmp_path, name, text)
    with pytest.raises(TaskError, match="given twice") as caught:
        read_task_file(path)
    assert caught.value.key == key and caught.value.path == path


def test_toml_refuses_a_key_given_twice_itself(tmp_path):
    with pytest.raises(TaskError, match="malformed TOML"):
        read_task_file(_write(tmp_path, "twice.toml", 'name = "t"\nname = "u"\n'))


@pytest.mark.parametrize("text", ["import sys\nsys.exit(3)\n", "def config():\n    raise SystemExit(0)\n",
                                  "def config():\n    raise KeyboardInterrupt\n"])
def test_an_exit_in_a_task_asset_is_that_tasks_failure(tmp_path, text):
    path = _write(tmp_path, "asset.py", text)
    done = subprocess.run([sys.executable, "-m", "StaICC", "tasks", "validate", path], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert done.returncode == 2 and done.stderr.startswith(f"staicc: error: task file {path!r}")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "Vanilla", "CONTEXTUAL", "x" * 65, "1abc", "a.b"])
def test_a_method_name_that_is_not_a_safe_new_identifier_is_refused(tmp_path, name):
    path = _write(tmp_path, "mine.py", f"NAME = {name!r}\n" + BODY)
    with pytest.raises(ValueError, match="NAME") as caught:
        resolve_methods(["vanilla", path])
    assert "\n" not in str(caught.value)


def test_two_method_files_named_alike_are_refused(tmp_path):
    first = _write(tmp_path, "one.py", "NAME = 'mine'\n" + BODY)
    second = _write(tmp_path, "two.py", "NAME = 'Mine'\n" + BODY)
    with pytest.raises(ValueError, match="methods named twice: Mine, mine"):
        resolve_methods([first, second])


@pytest.mark.parametrize("where", ["import", "train", "requests", "apply"])
@pytest.mark.parametrize("raised", ["SystemExit(0)", "KeyboardInterrupt()"])
def test_an_exit_in_a_method_file_is_that_methods_failure(tmp_path, where, raised):
    body = {"import": f"raise {raised}\n" + BODY,
            "train": f"def train(d, a):\n    raise {raised}\ndef apply(s, a):\n    return a['labels']\n",
            "requests": f"def requests(d):\n    raise {raised}\n" + BODY,
            "apply": f"def train(d, a):\n    pass\ndef apply(s, a):\n    raise {raised}\n"}[where]
    path = _write(tmp_path, "mine.py", body)
    with pytest.raises(ValueError, match=f"raised {raised.split('(')[0]}"):
        run_methods(make_backend("reference"), ["vanilla", path], "Normal", ["TREC"], test_items=QuerySubset.first(8))


def test_an_exit_in_train_ends_the_run_non_zero_with_one_line(tmp_path):
    path = _write(tmp_path, "mine.py", "def train(d, a):\n    raise SystemExit(0)\n"
                                       "def apply(s, a):\n    return a['labels']\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--methods", f"vanilla,{path}", "--datasets", "0",
                           "--limit", "8", "--no-progress", "--output-dir", str(out)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert done.returncode != 0 and "train() raised SystemExit" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("parameters, message", [
    ("{'f': object()}", "not JSON serializable"), ("{'x': float('nan')}", "Out of range float"),
    ("{1: {2: 3}, 'a': {1}}", "JSON"), ("{'deep': " + "[" * 80 + "]" * 80 + "}", "nested more than"),
])
def test_parameters_that_are_not_json_are_one_line(tmp_path, parameters, message):
    path = _write(tmp_path, "mine.py", f"PARAMETERS = {parameters}\n" + BODY)
    with pytest.raises(ValueError, match=message) as caught:
        resolve_methods([path])
    assert str(caught.value).startswith(f"method file {path!r}: PARAMETERS must be JSON values")
    assert "\n" not in str(caught.value)


def test_secrets_in_parameters_never_reach_results_json(tmp_path):
    parameters = {"api_key": CANARY, "nested": {"url": f"http://u:{PASSWORD}@h/v1?token={CANARY}"},
                  "list": [f"base_url=http://h/v1?api_key={CANARY}"], "n": 3}
    path = _write(tmp_path, "mine.py", f"PARAMETERS = {parameters!r}\n" + BODY)
    method = resolve_methods([path])[1]
    assert method.describe()["parameters"]["n"] == 3
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--methods", f"vanilla,{path}", "--datasets", "0",
                           "--limit", "8", "--no-progress", "--output-dir", str(out)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert done.returncode == 0, done.stderr
    written = (out / "methods" / "mine" / "results.json").read_text()
    assert json.loads(written)  # the method's results are there
    for secret in (CANARY, PASSWORD):
        assert secret not in written and secret not in done.stdout + done.stderr


@pytest.mark.parametrize("arguments", [{"calibration_number": 10 ** 10}, {"calibration_number": 100_001}])
def test_a_calibration_size_that_would_fill_the_memory_is_refused_up_front(arguments):
    with pytest.raises(ValueError, match="calibration_number must be <= 100000"):
        resolve_methods(["contextual", "knn"], arguments)
