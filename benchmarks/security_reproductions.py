"""Replays each reproduction of the last outside audit (hostile server, batch attacks, hostile task
folders, caps, error paths, the original's accepted calls) and prints its outcome and time: one row
each, what it must end in, what it ended in, seconds.

    python benchmarks/security_reproductions.py            # about two minutes on 2 shared cores
    python benchmarks/security_reproductions.py --ray      # also a real Ray cluster with token authentication
    python benchmarks/security_reproductions.py --only export    # the rows whose name holds "export"

The rows of the latest audit (method files, exports and their read-back, redaction, YAML, links) are in
security_reproductions_newest.py.

Every row must end in one clear line (or the original's result) within its bound; "UNCAUGHT"
in a row is a failure.  The full-suite export's peak memory is measured in a child process.
"""
import argparse
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_server import Hostile, caught, openai  # noqa: E402
from security_reproductions_newest import register  # noqa: E402

ROWS = []


def scenario(name, bound):
    def register(function):
        ROWS.append((name, bound, function))
        return function
    return register


def cli(*argv, timeout=600, env=None):
    """(exit status, stdout, stderr) of ``python -m StaICC argv`` run from the repository."""
    done = subprocess.run([sys.executable, "-m", "StaICC", *argv], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
    return done.returncode, done.stdout, done.stderr


def one_line(code, err):
    lines = [line for line in err.strip().splitlines() if line.startswith("staicc: error:")] or err.strip().splitlines()
    trace = " TRACEBACK" if "Traceback" in err else ""
    return f"exit {code}, {len(err.strip().splitlines())} stderr line(s){trace}: {(lines or [''])[-1][:150]}"


# ---------------------------------------------------------------------------- hangs
@scenario("redact_text('a' * 65536)", "< 0.1 s (was 15 s)")
def _redact_64k():
    from StaICC.backends.secrets import redact_text
    return f"{len(redact_text('a' * 65536))} characters back"


@scenario("redact_text on 1 MB (letters; 'a.' runs; 'x://' + letters)", "< 0.1 s each (was ~1 h)")
def _redact_1m():
    from StaICC.backends.secrets import redact_text
    times = []
    for text in ("a" * (1 << 20), "a." * (1 << 19), "x://" + "a" * (1 << 20)):
        started = time.perf_counter()
        redact_text(text, ["sk-canary-3c9d1f7a5e2b"])
        times.append(time.perf_counter() - started)
    return "seconds: " + ", ".join(f"{t:.3f}" for t in times)


@scenario("200 KB chat answer, deadline=5", "< 5 s (was > 300 s)")
def _big_answer():
    with Hostile("big_answer") as server:
        backend = openai(server.base_url, scoring="generate", chat="true", deadline="5")
        return caught(lambda r: [a.prediction for a in backend.score([r])])


@scenario("error body 400 dripped, deadline=5", "about 5 s, one line (was > 300 s)")
def _drip400():
    with Hostile("drip400") as server:
        return caught(lambda r: openai(server.base_url, deadline="5").score([r]))


@scenario("error body 503 dripped, deadline=5", "about 5 s, one line (was > 300 s)")
def _drip503():
    with Hostile("drip503") as server:
        return caught(lambda r: openai(server.base_url, deadline="5").score([r]))


@scenario("unreachable server (connection refused), retries=5", "< 1 s, one line (was 62 s)")
def _refused():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
        return caught(lambda r: openai(url, retries="5").score([r]))


@scenario("/tokenize answers 404 (label_logprobs=on)", "one line pointing at the server, not base_url")
def _tokenize():
    with Hostile("tokenize404") as server:
        return caught(lambda r: openai(server.base_url, label_logprobs="on", scoring="first_token").score([r]))


@scenario("echo of half the prompt + one 'generated' token", "refused (was scored [0.5, 0.5])")
def _half_echo():
    with Hostile("half_echo") as server:
        return caught(lambda r: openai(server.base_url).score([r])[0].prediction)


# ---------------------------------------------------------------------------- batch
def _batch_setup(directory, model="m", answer_model="m", answer_size=0):
    from StaICC.backends.registry import make_backend
    from StaICC.requests import Request
    from StaICC.scaleout.batch_api import export_entries
    backend = make_backend("openai", base_url="http://127.0.0.1:9/v1", model=model, scoring="generate", chat="true")
    requests = [Request(f"Review: film {i}. Sentiment:", ("negative", "positive"), "Normal", "toy", i)
                for i in range(10)]
    lines = []
    for custom_id, _, _ in export_entries(backend, requests):
        content = "positive " + "p" * answer_size
        lines.append(json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": {
            "model": answer_model, "choices": [{"message": {"content": content}}]}}}))
    return backend, requests, lines


def _import(directory, backend, requests, lines):
    from StaICC.cache import PredictionCache
    from StaICC.scaleout.batch_results import import_batch
    path = Path(directory) / "results.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with PredictionCache(str(Path(directory) / "c.sqlite")) as cache:
        report = import_batch(backend, requests, [str(path)], cache)
    first = report.errors[0].split(": ", 1)[1][:110] if report.errors else ""
    return f"stored {report.stored}, {len(report.errors)} error line(s), conflicts {report.conflicts}; {first}"


@scenario("batch import of 10 answers of 100 KB", "seconds (was killed after 300 s)")
def _batch_big(directory):
    return _import(directory, *_batch_setup(directory, answer_size=100_000))


@scenario("batch import of another model's results", "stored 0 (was 'stored 10', exit 0)")
def _batch_other_model(directory):
    return _import(directory, *_batch_setup(directory, answer_model="other-model"))


@scenario("batch import: a custom_id repeated with another answer", "stored 0 (was: first answer stored)")
def _batch_conflict(directory):
    backend, requests, lines = _batch_setup(directory)
    return _import(directory, backend, requests, lines + [lines[0].replace("positive", "negative")])


@scenario("batch import: a 200 MB result line", "one error, bounded memory (was 831 MB)")
def _batch_huge_line(directory):
    from StaICC.cache import PredictionCache
    from StaICC.scaleout.batch_results import import_batch
    import tracemalloc
    backend, requests, lines = _batch_setup(directory)
    path = Path(directory) / "huge.jsonl"
    with open(path, "w") as fh:  # written a megabyte at a time: the measure is the import's alone
        fh.write('{"custom_id": "')
        for _ in range(200):
            fh.write("x" * (1 << 20))
        fh.write('"}\n' + "\n".join(lines) + "\n")
    with PredictionCache(str(Path(directory) / "h.sqlite")) as cache:
        tracemalloc.start()
        report = import_batch(backend, requests, [str(path)], cache)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return f"stored {report.stored}, {len(report.errors)} error: {report.errors[0].split(': ', 1)[1][:60]}; " \
           f"peak Python memory of the import {peak / 2**20:.0f} MiB"


@scenario("batch import: a line nested 100,000 deep", "one error line")
def _batch_deep(directory):
    backend, requests, lines = _batch_setup(directory)
    return _import(directory, backend, requests, ['{"custom_id": ' + "[" * 100000 + "]" * 100000 + "}"] + lines)


@scenario("batch export -o F with a link planted at F and F.tmp", "link replaced, victim intact (was overwritten)")
def _batch_link(directory):
    from StaICC.scaleout.batch_api import export_batch
    backend, requests, _ = _batch_setup(directory)
    victim = Path(directory) / "victim"
    victim.write_text("precious")
    output = Path(directory) / "requests.jsonl"
    os.symlink(victim, output)
    os.symlink(victim, str(output) + ".tmp")
    export_batch(backend, requests, str(output))
    return f"victim {'intact' if victim.read_text() == 'precious' else 'OVERWRITTEN'}, F is a link: {output.is_symlink()}"


@scenario("batch export of the full suite (--benchmarks all)", "peak RSS < 150 MB (was 512 MB)")
def _batch_full_suite(directory):
    # the child reports its own peak (a parent's memory counted at fork would not be the export's)
    script = ("import resource, sys\nfrom StaICC.cli import main\ncode = main(sys.argv[1:])\n"
              "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script, "batch", "export", "--model", "openai", "--model-args",
                           "base_url=http://127.0.0.1:9/v1,model=m", "--benchmarks", "all", "-o",
                           str(Path(directory) / "suite.jsonl")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    lines = done.stdout.strip().splitlines()
    peak = int(lines[-1].split()[1]) / 1024
    size = sum(p.stat().st_size for p in Path(directory).glob("suite*.jsonl")) / 1e6
    return f"exit {done.returncode}; {lines[-2][:40]}...; {size:.0f} MB written; peak RSS {peak:.0f} MB"


# ---------------------------------------------------------------------------- task folders, caps
def _hostile_folder(directory):
    folder = Path(directory) / "tasks"
    folder.mkdir()
    os.mkfifo(folder / "fifo.toml")
    os.symlink("/dev/zero", folder / "zero.json")
    (folder / "deep.toml").write_text("x = " + "[" * 100000 + "]" * 100000 + "\n")
    (folder / "deep.json").write_text('{"x": ' + "[" * 100000 + "]" * 100000 + "}")
    return folder


@scenario("tasks list --include-path (FIFO, /dev/zero link, 100,000-deep files)", "one row each, seconds "
          "(was: hang / 7.6 GB / RecursionError)")
def _tasks_list(directory):
    folder = _hostile_folder(directory)
    code, out, err = cli("tasks", "list", "--include-path", str(folder), timeout=120)
    rows = [line.split(" (", 1)[-1][:38] for line in out.splitlines() if str(folder) in line]
    return f"exit {code}, stderr {len(err)} chars; " + "; ".join(rows)


@scenario("tasks validate of a 100,000-deep TOML task file", "one line (was RecursionError)")
def _tasks_validate(directory):
    folder = _hostile_folder(directory)
    return one_line(*cli("tasks", "validate", str(folder / "deep.toml"))[::2])


@scenario("VoteK and DPP from the CLI on two datasets (--limit 10, reference model)", "NumPy used, seconds (was 446 s, no output)")
def _retrievers(directory):
    times = []
    for name in ("votek", "dpp"):
        started = time.perf_counter()
        code, out, err = cli("run", "--retriever", name, "--datasets", "0", "1", "--limit", "10", "--no-progress")
        backend = "numpy" if "'backend': 'numpy'" in err else "python"
        times.append(f"{name}: exit {code} in {time.perf_counter() - started:.1f} s ({backend})")
    return "; ".join(times)


@scenario("staicc run --shard 0/100000000 (in a child limited to 4 GB)", "refused before allocating (was 11.8 GB); "
          "the runner's own check")
def _shard_count(directory):
    script = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
              "from StaICC.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    try:
        done = subprocess.run([sys.executable, "-c", script, "run", "--datasets", "0", "--limit", "10", "--shard",
                               "0/100000000", "--cache", str(Path(directory) / "c.sqlite"), "--no-progress"],
                              capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    except subprocess.TimeoutExpired:
        return "still running after 120 s"
    return one_line(done.returncode, done.stderr)


# ---------------------------------------------------------------------------- tracebacks, secrets, HF, Ray
@scenario("cache merge on a full disk (RLIMIT_FSIZE)", "one line (was sqlite3.OperationalError)")
def _merge_full(directory):
    from StaICC.backends.base import FunctionBackend
    from StaICC.cache import PredictionCache
    from StaICC.requests import Answer, Request
    backend = FunctionBackend(lambda prompt, label_space: 0, model_id="m")  # noqa: ARG005
    shard = Path(directory) / "shard.sqlite"
    requests = [Request(f"prompt {i} " + "x" * 200, ("a", "b"), "Normal", "toy", i) for i in range(400)]
    with PredictionCache(str(shard)) as cache:
        cache.register_model(backend.fingerprint(), backend.identity())
        cache.store(backend.fingerprint(), requests, [Answer([0.25, 0.75], "y" * 100) for _ in requests])
    script = ("import resource, signal, sys\nfrom StaICC.cache import merge\noriginal = merge._write\n"
              "def limited(*a):\n    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, resource.RLIM_INFINITY))\n"
              "    return original(*a)\nmerge._write = limited\nfrom StaICC.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", script, "cache", "merge", str(Path(directory) / "out.sqlite"),
                           str(shard)], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return one_line(done.returncode, done.stderr)


@scenario("post_bias_dl_div(x, []), bias_entropy(x, []), linear_regression([], [])", "ValueError naming the function")
def _metrics():
    from StaICC.metrics import bias_entropy, linear_regression, post_bias_dl_div
    outcomes = []
    for call in (lambda: post_bias_dl_div([0, 1], []), lambda: bias_entropy([0, 1], []),
                 lambda: linear_regression([], [])):
        try:
            call()
        except ValueError as exc:
            outcomes.append(str(exc)[:45])
    return "; ".join(outcomes)


@scenario("base_url=.../v1;access_token=X (staicc run --cache)", "X in no file, no output (was in results.json + cache)")
def _path_parameter(directory):
    with Hostile("generate") as server:
        url = server.base_url + ";access_token=PATHSECRET42"
        code, out, err = cli("run", "--model", "openai", "--model-args", f"base_url={url},model=m,scoring=generate,"
                             "chat=true,concurrency=1", "--datasets", "0", "--limit", "5", "--output-dir",
                             str(Path(directory) / "run"), "--cache", str(Path(directory) / "c.sqlite"), "--no-progress")
    leaks = [p.name for p in Path(directory).rglob("*") if p.is_file() and b"PATHSECRET42" in p.read_bytes()]
    leaks += [s for s, text in (("stdout", out), ("stderr", err)) if "PATHSECRET42" in text]
    return f"exit {code}; files or streams holding it: {leaks or 'none'}"


@scenario('an HF source dataset = "csv" without data_files', "one line before reading (was 87-line traceback)")
def _hf_csv(directory):
    task = Path(directory) / "csvtask.toml"
    task.write_text('name = "csvtask"\n[data]\ndataset = "csv"\nsplit = "train"\ninput_columns = ["text"]\n'
                    'label_column = "label"\n')
    return one_line(*cli("tasks", "validate", str(task))[::2])


@scenario("a single-split Dataset.save_to_disk folder", "loaded (was: cannot be loaded)")
def _hf_saved(directory):
    try:
        import datasets
    except ImportError:
        return "not run: the datasets package is not installed in this Python"
    from StaICC.custom_datasets import from_hf
    rows = {"text": [f"row {i}" for i in range(40)], "label": [i % 2 for i in range(40)]}
    with contextlib.redirect_stderr(io.StringIO()):
        datasets.Dataset.from_dict(rows).save_to_disk(str(Path(directory) / "saved"))
    dataset = from_hf(str(Path(directory) / "saved"), split="train", name="saved", input_columns="text",
                      label_column="label")
    return f"loaded {len(dataset)} rows, labels {dataset.get_label_space()}"


def _ray_token(directory):
    token = "0123456789abcdef0123456789abcdef"
    port = 6391
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    ray = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    subprocess.run([ray, "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                    "--disable-usage-stats"], env=env, capture_output=True, timeout=180, check=True)
    try:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
        done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--datasets", "0", "--limit", "5", "--cache",
                               str(Path(directory) / "c.sqlite"), "--launcher", f"ray:address=127.0.0.1:{port},shards=2",
                               "--no-progress"], capture_output=True, text=True, timeout=300,
                              env=dict(clean, PYTHONPATH=str(ROOT)))
        return one_line(done.returncode, "\n".join(line for line in done.stderr.splitlines()
                                                   if line.startswith("staicc:")))
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


# ---------------------------------------------------------------------------- the original's calls
@scenario("the original's accepted calls (GLER noisy channel, distractor label word, Demo_sens return_outputs, "
          "[1,0,1,-1,0,0], x=/list=/label_space_probs=)", "each runs as in 0.1.1")
def _original():
    from StaICC import GLER, Demo_sens, Normal
    from StaICC.prefabricate_inference.standard_calibration import batch_calibration
    from StaICC.util import functional as F
    outcomes = []
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        gler = GLER(datasets=["GLUE-SST2"])
        gler.re_initialize(4, noisy_channel=True)
        outcomes.append(f"GLER noisy {len(gler[0].auto_run(lambda prompt, label_space: [0.4, 0.6])[0])} passes")
        normal = Normal(datasets=["GLUE-SST2"])
        normal[0].prompt_former.change_label_space(["bad", "good", "meh"])
        outcomes.append(f"distractor acc {normal[0].auto_run(lambda prompt, label_space: [0.2, 0.5, 0.3])[0]['accuracy']}")
        outcomes.append(f"Demo_sens {len(Demo_sens(datasets=['GLUE-SST2'])[0].auto_run(lambda prompt, label_space: 0, return_outputs=True))} items")
        trec = Normal(datasets=["TREC"])
        outcomes.append(f"row acc {trec[0].auto_run(lambda prompt, label_space: [1.0, 0.0, 1.0, -1.0, 0.0, 0.0])[0]['accuracy']}")
    outcomes.append(f"argmax(x=) {F.argmax(x=[1, 3, 2])}, batch_calibration ok "
                    f"{len(batch_calibration(label_space_probs=[[0.2, 0.8]]))}")
    return "; ".join(outcomes)


register(scenario, cli, one_line)  # the audit of method files, exports, read-back, redaction, YAML and links


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ray", action="store_true", help="also start a Ray cluster with token authentication")
    parser.add_argument("--only", metavar="TEXT", help="only the rows whose name contains TEXT")
    args = parser.parse_args()
    if args.ray:
        scenario("--launcher ray:address=... against a token-authenticated cluster",
                 "one line: no shard ran, how to connect (was 'a Ray shard failed')")(_ray_token)
    print(f"{'reproduction':<70} {'seconds':>8}  outcome   [bound]")
    for name, bound, function in ROWS:
        if args.only and args.only not in name:
            continue
        directory = tempfile.mkdtemp(prefix="staicc-repro-")
        started = time.perf_counter()
        try:
            outcome = function(directory) if function.__code__.co_argcount else function()
        except Exception as exc:  # a reproduction that still escapes is printed, not hidden
            outcome = f"UNCAUGHT {type(exc).__name__}: {str(exc)[:120]}"
        elapsed = time.perf_counter() - started
        shutil.rmtree(directory, ignore_errors=True)
        print(f"{name[:70]:<70} {elapsed:8.2f}  {outcome}   [{bound}]", flush=True)


if __name__ == "__main__":
    main()
