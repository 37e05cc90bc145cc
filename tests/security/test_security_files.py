"""Files written by name in shared directories: links are replaced, never followed; temporary
names are unique; a write that fails (a real file-size limit, as on a full disk) leaves the
previous files as they were, no temporary file behind, and the answers in the cache."""
import os
import subprocess
import sys

import pytest

from StaICC.results.rundir import check_output_dir
from StaICC.results.safe_files import atomic_writer, staged_directory, write_text

RUN = [sys.executable, "-m", "StaICC", "run", "--datasets", "0", "--limit", "8", "--no-progress"]


def env():
    return dict(os.environ, PYTHONPATH=os.getcwd())


def test_links_planted_at_every_name_are_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "shared"
    out.mkdir()
    for name in ("results.json", "samples.jsonl", "results.json.tmp", "samples.jsonl.tmp", ".staicc-write-test"):
        os.symlink(victim, out / name)
    done = subprocess.run(RUN + ["--output-dir", str(out), "--log-samples", "--overwrite"], capture_output=True, text=True,
                          env=env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious"
    assert not os.path.islink(out / "results.json") and (out / "results.json").read_text().startswith("{")
    assert not os.path.islink(out / "samples.jsonl")
    assert [n for n in os.listdir(out) if n.startswith(".staicc-")] == [".staicc-write-test"]  # the planted link only
    assert os.path.islink(out / ".staicc-write-test")


def test_check_output_dir_does_not_follow_a_planted_probe_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("x")
    os.symlink(victim, tmp_path / ".staicc-write-test")
    check_output_dir(str(tmp_path))
    assert victim.read_text() == "x"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(str(path)) as fh:
        fh.write("half")
        raise RuntimeError("killed mid-write")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.json"]
    with pytest.raises(IsADirectoryError, match="is a directory"):
        write_text(str(tmp_path), "x")


def test_a_staged_folder_replaces_the_old_one_whole(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "old.png").write_bytes(b"old")
    with pytest.raises(RuntimeError), staged_directory(str(figures)) as staging:
        open(os.path.join(staging, "new.png"), "wb").close()
        raise RuntimeError("killed mid-report")
    assert os.listdir(figures) == ["old.png"]  # untouched, nothing mixed in
    with staged_directory(str(figures)) as staging:
        open(os.path.join(staging, "new.png"), "wb").close()
    assert os.listdir(figures) == ["new.png"]
    assert sorted(os.listdir(tmp_path)) == ["figures"]
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(OSError, match="symbolic link"), staged_directory(str(tmp_path / "link")):
        pass


# A real limit on file size (RLIMIT_FSIZE) set just before the run directory is written: the
# kernel refuses the write (EFBIG) as a full disk would (ENOSPC), after inference succeeded.
_LIMITED = (
    "import resource, signal, sys\n"
    "from StaICC.results import rundir\n"
    "original = rundir.write_run_dir\n"
    "def limited(*args, **kwargs):\n"
    "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))\n"
    "    return original(*args, **kwargs)\n"
    "rundir.write_run_dir = limited\n"
    "from StaICC.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_under_the_output_dir_keeps_the_answers_and_says_where(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite"
    first = subprocess.run(RUN + ["--output-dir", str(out)], capture_output=True, text=True, env=env(), timeout=300)
    assert first.returncode == 0, first.stderr
    before = (out / "results.json").read_bytes()
    done = subprocess.run([sys.executable, "-c", _LIMITED] + RUN[3:] + ["--output-dir", str(out), "--log-samples",
                                                                        "--cache", str(cache), "--overwrite"],
                          capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("staicc: warning:")]
    assert lines[0].startswith(f"staicc: error: cannot write the run directory {out}: File too large")
    assert f"every answer is in the cache {cache}" in lines[1]
    assert (out / "results.json").read_bytes() == before  # the previous run's file, whole
    assert sorted(os.listdir(out)) == ["results.json"]  # no samples.jsonl.tmp or other temporary left
    again = subprocess.run(RUN + ["--output-dir", str(out), "--log-samples", "--cache", str(cache),
                                  "--overwrite"],
                           capture_output=True, text=True, env=env(), timeout=300)
    assert again.returncode == 0, again.stderr
    assert " 0 asked," in again.stdout  # every answer came back from the cache


def test_report_output_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    run = tmp_path / "run"
    first = subprocess.run(RUN + ["--output-dir", str(run)], capture_output=True, text=True, env=env(), timeout=300)
    assert first.returncode == 0, first.stderr
    target = tmp_path / "tables.txt"
    target.write_text("previous tables")
    limited = ("import resource, signal, sys\n"
               "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.RLIM_INFINITY))\n"
               "from StaICC.cli import main\n"
               "sys.exit(main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", limited, "report", str(run), "-o", str(target)],
                          capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "File too large" in done.stderr, done.stderr
    assert target.read_text() == "previous tables"
    assert sorted(os.listdir(tmp_path)) == ["run", "tables.txt"]


@pytest.mark.parametrize("side", ["", "-journal", "-wal"])
def test_a_cache_is_never_opened_through_a_planted_link(tmp_path, side):
    from StaICC.cache import CacheError, PredictionCache
    victim = tmp_path / "victim.sqlite"
    victim.write_bytes(b"precious")
    cache = tmp_path / "shared.sqlite"
    if side:
        PredictionCache(str(cache)).close()
    os.symlink(victim, str(cache) + side)
    with pytest.raises(CacheError, match=r"is a symbolic link .*never opened through a link"):
        PredictionCache(str(cache))
    assert victim.read_bytes() == b"precious"
