"""Caps on everything a user sizes, and the error paths that said too little: task folders holding a
FIFO, a link to /dev/zero, deeply nested or huge files (and a Hypothesis fuzz of such folders); a
cache merge on a full disk; HuggingFace sources that read the current folder or a saved dataset; a
Ray cluster that refuses the connection; Vote-k and DPP on NumPy with progress."""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import time

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from StaICC.cli import main  # noqa: E402

TASK = 'name = "{name}"\n[data]\nsource = "standard"\ndataset = "TREC"\n'


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _env():
    return dict(os.environ, PYTHONPATH=os.getcwd())


@pytest.fixture()
def hostile_folder(tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    os.mkfifo(folder / "fifo.toml")
    os.symlink("/dev/zero", folder / "zero.json")
    (folder / "deep.toml").write_text('name = "deep"\nx = ' + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "deep.yaml").write_text("x: " + "[" * 3000 + "]" * 3000 + "\n")
    (folder / "deep.json").write_text('{"x": ' + "[" * 200 + "]" * 200 + "}")
    with open(folder / "huge.json", "w") as fh:  # 3 GiB, sparse: a size to refuse, nothing to read
        fh.write('{"data": [')
        fh.truncate(3 << 30)
    (folder / "good.toml").write_text(TASK.format(name="good_task"))
    return folder


HAS_YAML = importlib.util.find_spec("yaml") is not None


def test_tasks_list_names_every_hostile_file_in_one_line_each(hostile_folder):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "StaICC", "tasks", "list", "--include-path", str(hostile_folder)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert "is a FIFO, not a regular file" in rows["fifo"] and "is a device" in rows["zero"]
    assert "nested more than 64 levels deep" in rows["deep"] or "(name 'deep')" in rows["deep"] or (
        not HAS_YAML and "(no readable name)" in rows["deep"])  # a YAML name is read with pyyaml
    assert "no name in its first 1048576 bytes" in rows["huge"]
    assert "(name 'good_task')" in rows["good"]
    assert elapsed < 30, elapsed


@pytest.mark.parametrize("name, message", [
    ("fifo.toml", "is a FIFO, not a regular file"), ("zero.json", "is a device, not a regular file"),
    ("deep.toml", "nested more than 64 levels deep"),
    pytest.param("deep.yaml", "nested more than 64 levels deep",
                 marks=pytest.mark.skipif(not HAS_YAML, reason="a YAML task file needs pyyaml (StaICC[tasks])")),
    ("deep.json", "nested more than 64 levels deep"), ("huge.json", "is larger than 67108864 bytes"),
])
def test_tasks_validate_refuses_each_hostile_file_in_one_line(hostile_folder, name, message):
    done = subprocess.run([sys.executable, "-m", "StaICC", "tasks", "validate", str(hostile_folder / name)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr and name in done.stderr, done.stderr


def test_a_task_is_found_by_its_name_key_without_reading_its_data(tmp_path):
    records = ",".join(['{"text": "x", "label": 0}'] * 60000)
    (tmp_path / "file_stem.json").write_text('{"name": "by_key", "data": {"records": [' + records + "]}}")
    from StaICC.tasks.registry import _declared_name, find_name
    assert _declared_name(str(tmp_path / "file_stem.json")) == "by_key"
    assert find_name('title = "t"\nname = "n" # c\n[data]\nname = "inner"\n', "toml") == "n"
    if HAS_YAML:
        assert find_name('x: 1\n  name: inner\nname: outer\n', "yaml") == "outer"
    assert find_name('{"data": {"name": "inner"}, "name": "outer"}', "json") == "outer"


# ---------------------------------------------------------------------------- fuzz of task folders
CONTENT = st.one_of(
    st.sampled_from([TASK.format(name="t"), '{"name": "j", "data": {"source": "standard", "dataset": "TREC"}}',
                     "name: y\ndata:\n  source: standard\n  dataset: TREC\n", "[" * 400, "{" * 400, "",
                     'name = "' + "n" * 5000 + '"', '{"name": ' + "9" * 5000 + "}", "name: [[[[[", "\x00\xff",
                     "def config(:\n", 'name = """\nx\n"""\n']),
    st.text(max_size=300),
    st.builds(lambda depth, kind: ("a = " if kind else '{"a": ') + "[" * depth + "]" * depth + ("" if kind else "}"),
              st.integers(0, 400), st.booleans()))
ENTRY = st.tuples(st.sampled_from(["a", "b", "t_1", "name", "n.m"]),
                  st.sampled_from([".toml", ".json", ".yaml", ".yml", ".py", ".txt"]),
                  st.sampled_from(["file", "file", "file", "folder", "dangling", "binary"]), CONTENT)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(entries=st.lists(ENTRY, max_size=6))
def test_fuzzed_task_folders_list_in_one_line_per_file(tmp_path_factory, entries):
    folder = tmp_path_factory.mktemp("tasks")
    made = set()
    for stem, ending, kind, content in entries:
        path = folder / (stem + ending)
        if path.name in made:
            continue
        made.add(path.name)
        if kind == "folder":
            path.mkdir()
        elif kind == "dangling":
            os.symlink(folder / "missing", path)
        elif kind == "binary":
            path.write_bytes(content.encode("utf-8", "surrogatepass")[:200] + b"\xff\xfe\x00")
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
    code, out, err = _cli(["tasks", "list", "--include-path", str(folder)])
    assert code == 0 and err == "", err
    listed = [n for n in made if os.path.splitext(n)[1] in (".toml", ".json", ".yaml", ".yml", ".py")]
    for name in listed:
        assert sum(1 for line in out.splitlines() if str(folder / name) in line) == 1, (name, out)


# ---------------------------------------------------------------------------- full disk, HF sources, Ray
# A real file-size limit (RLIMIT_FSIZE) set once the inputs are read, just before the merged cache is
# written: the kernel refuses the write (EFBIG) as a full disk would (ENOSPC)
_LIMITED = ("import resource, signal, sys\n"
            "from StaICC.cache import merge\n"
            "original = merge._merge_into\n"
            "def limited(*args):\n"
            "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, resource.RLIM_INFINITY))\n"
            "    return original(*args)\n"
            "merge._merge_into = limited\n"
            "from StaICC.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_cache_merge_on_a_full_disk_is_one_line(tmp_path):
    from StaICC.backends.base import FunctionBackend
    from StaICC.cache import PredictionCache
    from StaICC.requests import Answer, Request
    backend = FunctionBackend(lambda prompt, label_space: 0, model_id="m")  # noqa: ARG005
    shard = tmp_path / "shard.sqlite"
    requests = [Request(f"prompt {i} " + "x" * 200, ("a", "b"), "Normal", "toy", i) for i in range(400)]
    with PredictionCache(str(shard)) as cache:
        cache.register_model(backend.fingerprint(), backend.identity())
        cache.store(backend.fingerprint(), requests, [Answer([0.25, 0.75], "y" * 100) for _ in requests])
    done = subprocess.run([sys.executable, "-c", _LIMITED, "cache", "merge", str(tmp_path / "merged.sqlite"),
                           str(shard)], capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot write the merged cache" in done.stderr and "nothing was merged" in done.stderr


def test_a_generic_hf_reader_without_data_files_is_refused_before_reading_the_folder():
    from StaICC.custom_datasets import from_hf
    for name in ("csv", "json", "parquet"):
        with pytest.raises(ValueError, match=rf"'{name}' is the datasets package's generic {name} reader, which "
                                             "needs data_files"):
            from_hf(name, split="train", name="x", input_columns="text", label_column="label")


def test_a_single_split_saved_dataset_is_loaded(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    from StaICC.custom_datasets import from_hf
    rows = {"text": [f"row {i}" for i in range(40)], "label": [i % 2 for i in range(40)]}
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / "one"))
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "two"))
    one = from_hf(str(tmp_path / "one"), split="train", name="one", input_columns="text", label_column="label")
    two = from_hf(str(tmp_path / "two"), split="train", name="two", input_columns="text", label_column="label")
    assert list(one) == list(two) and len(one) == 40 and one.get_label_space() == two.get_label_space()
    with pytest.raises(ValueError, match=r"has the splits \['train'\]; choose one with split="):
        from_hf(str(tmp_path / "two"), split="test", name="two", input_columns="text", label_column="label")


def test_a_ray_cluster_that_refuses_the_connection_says_no_shard_ran(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="ray is not installed")

    def refused(*_args, **_kwargs):  # what ray.init raises against a token-authenticated cluster without the token
        raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379")
    monkeypatch.setattr(ray, "init", refused)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    code, out, err = _cli(["run", "--datasets", "0", "--limit", "5", "--cache", str(tmp_path / "c.sqlite"),
                           "--launcher", "ray:address=10.0.0.5:6379,shards=2", "--no-progress"])
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "cannot connect to the Ray cluster at 10.0.0.5:6379" in err and "no shard ran" in err
    assert "RAY_AUTH_TOKEN" in err and "a Ray shard failed" not in err


# ---------------------------------------------------------------------------- retrievers
def test_votek_and_dpp_use_numpy_when_installed_and_the_python_path_shows_progress(capsys):
    pytest.importorskip("numpy")
    from StaICC.retrieval import DPPRetriever, VoteKRetriever
    demos = [(f"text {i} {'good' if i % 3 else 'bad'} {i % 7}", "x") for i in range(60)]
    queries = [(f"query {i} good", None) for i in range(5)]
    for cls in (VoteKRetriever, DPPRetriever):
        assert cls().describe()["parameters"]["backend"] == "numpy"
        rows = cls(backend="python", progress=True).build_sampler(demos, queries, 4)
        assert len(rows) == 5 and all(len(r) == 4 for r in rows)
    err = capsys.readouterr().err
    assert "Vote-k: similarities of demonstration 60/60" in err and "DPP: query 5/5" in err
    assert json.dumps(VoteKRetriever(backend="python").describe()).count('"python"') == 1
