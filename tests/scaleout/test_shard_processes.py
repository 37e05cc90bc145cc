"""Sharded runs of a tiny random HF Llama on CPU, for real: separate processes, torchrun with 2 ranks, Ray.

Every sharded run is merged and summarised, and its ``results.json`` results and
``samples.jsonl`` must equal, bit for bit, those of one process running the same command.
The hf backend is given ``requests_per_call=1``: each prompt is then computed alone, so
its numbers cannot depend on which other prompts a shard put in the same call (see
docs/scaling.md for larger calls).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

from backend_helpers import save_tiny  # noqa: E402

from StaICC.cache import PredictionCache  # noqa: E402
from StaICC.cli import main  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = ["--benchmarks", "Normal,GLER", "--datasets", "0", "4", "--limit", "10", "--no-progress"]


#: ``staicc run`` in this process, then which heavy modules it imported
FINAL_RUN = ("import sys\nfrom StaICC.cli import main\nstatus = main(sys.argv[1:])\n"
             "print(f\"imported: torch {'torch' in sys.modules}, transformers {'transformers' in sys.modules}\")\n"
             "sys.exit(status)")


def env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")


def run_args(model_dir, *extra):
    return ["run", "--model", "hf", "--model-args", f"pretrained={model_dir},requests_per_call=1", *WORKLOAD, *extra]


def staicc(args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "StaICC", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(), cwd=ROOT, **kwargs)


def finished(process, timeout=600):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-2000:]
    return out


def run_dir(path):
    document = json.loads((path / "results.json").read_text())
    results = {name: b["results"] for name, b in document["benchmarks"].items()}
    return results, (path / "samples.jsonl").read_text(), document["provenance"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny") / "tiny-llama"))


@pytest.fixture(scope="module")
def one_process(model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "run"
    assert main(run_args(model_dir, "--output-dir", str(out), "--log-samples")) == 0
    return run_dir(out)


def summary_counts(text):
    line = [s for s in text.splitlines() if " asked, " in s][-1]
    return {word: int(line.split(f" {word}")[0].split()[-1]) for word in ("asked", "from the cache")}


@pytest.mark.parametrize("count", [2, 3])
def test_shards_in_separate_processes_merge_to_one_process(model_dir, one_process, tmp_path, capsys, count):
    caches = [str(tmp_path / f"shard{i}.sqlite") for i in range(count)]
    processes = [staicc(run_args(model_dir, "--shard", f"{i}/{count}", "--cache", caches[i])) for i in range(count)]
    outputs = [finished(p) for p in processes]
    plans = {line.split("(plan ")[1][:12] for line in outputs}
    assert len(plans) == 1  # every process computed the same plan
    assert main(["cache", "merge", str(tmp_path / "all.sqlite"), *caches]) == 0
    # the final run, in a process of its own: every answer is in the cache, so it loads no model
    final = subprocess.run([sys.executable, "-c", FINAL_RUN, *run_args(model_dir, "--cache", str(tmp_path / "all.sqlite"),
                                                                        "--output-dir", str(tmp_path / "run"),
                                                                        "--log-samples")],
                           capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300)
    assert final.returncode == 0, final.stderr[-2000:]
    assert "imported: torch False, transformers False" in final.stdout
    assert summary_counts(final.stdout)["asked"] == 0
    results, samples, _ = run_dir(tmp_path / "run")
    assert results == one_process[0]
    assert samples == one_process[1]


def test_a_killed_shard_resumes_from_its_cache(model_dir, one_process, tmp_path, capsys):
    cache = str(tmp_path / "shard0.sqlite")
    process = staicc(run_args(model_dir, "--shard", "0/2", "--cache", cache))
    entries = 0
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        if os.path.exists(cache):
            with PredictionCache(cache) as opened:
                entries = opened.stats()["entries"]
            if entries:
                break
        time.sleep(0.05)
    assert process.poll() is None, "the shard finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert entries > 0
    again = finished(staicc(run_args(model_dir, "--shard", "0/2", "--cache", cache)))
    counts = summary_counts(again)
    assert counts["from the cache"] >= entries and counts["asked"] > 0  # only the rest was asked
    other = finished(staicc(run_args(model_dir, "--shard", "1/2", "--cache", str(tmp_path / "shard1.sqlite"))))
    assert "asked" in other
    assert main(["cache", "merge", str(tmp_path / "all.sqlite"), cache, str(tmp_path / "shard1.sqlite")]) == 0
    capsys.readouterr()
    assert main(run_args(model_dir, "--cache", str(tmp_path / "all.sqlite"), "--output-dir", str(tmp_path / "run"),
                         "--log-samples")) == 0
    assert summary_counts(capsys.readouterr().out)["asked"] == 0
    assert run_dir(tmp_path / "run")[:2] == one_process[:2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_two_ranks(model_dir, one_process, tmp_path):
    cache = str(tmp_path / "run.sqlite")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), "--module", "StaICC",
               *run_args(model_dir, "--cache", cache, "--output-dir", str(tmp_path / "run"), "--log-samples")]
    done = subprocess.run(command, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("shard ") >= 2 and "merged 2 shard caches" in done.stdout
    assert summary_counts(done.stdout)["asked"] == 0
    results, samples, provenance = run_dir(tmp_path / "run")
    assert (results, samples) == one_process[:2]
    assert provenance["shards"]["launcher"] == "torchrun" and provenance["shards"]["count"] == 2
    assert len(provenance["shards"]["plan_sha256"]) == 64


def test_ray_local_cluster(model_dir, one_process, tmp_path, capsys):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([ROOT, TESTS]), "OMP_NUM_THREADS": "1",
                                       "HF_HUB_OFFLINE": "1"}})
    try:
        status = main(run_args(model_dir, "--launcher", "ray:shards=2,num_cpus=1,retries=1", "--cache",
                               str(tmp_path / "run.sqlite"), "--output-dir", str(tmp_path / "run"), "--log-samples"))
    finally:
        ray.shutdown()
    out = capsys.readouterr().out
    assert status == 0
    assert "merged 2 shard caches" in out and summary_counts(out)["asked"] == 0
    results, samples, provenance = run_dir(tmp_path / "run")
    assert (results, samples) == one_process[:2]
    assert provenance["shards"]["launcher"] == "ray"


def test_sharded_arguments_are_checked_before_inference(model_dir, capsys):
    for extra, message in ((["--shard", "0/2"], "--shard needs --cache"),
                           (["--shard", "2/2", "--cache", "c"], "shard index must be <= 1"),
                           (["--shard", "0/2", "--cache", "c", "--output-dir", "o"], "writes answers to --cache only"),
                           (["--launcher", "ray:shards=x", "--cache", "c"], "shards must be an integer")):
        assert main(run_args(model_dir, *extra)) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def test_call_unit_is_bit_identical_with_batched_calls(model_dir, tmp_path, capsys):
    """requests_per_call=64: the hf engine shares prefixes inside a call, so a shard must make the same calls."""
    batched = ["run", "--model", "hf", "--model-args", f"pretrained={model_dir},requests_per_call=64", *WORKLOAD]
    assert main(batched + ["--output-dir", str(tmp_path / "one"), "--log-samples"]) == 0
    caches = [str(tmp_path / f"shard{i}.sqlite") for i in range(2)]
    for index in range(2):
        assert main(batched + ["--shard", f"{index}/2", "--shard-unit", "call", "--cache", caches[index]]) == 0
    assert main(["cache", "merge", str(tmp_path / "all.sqlite"), *caches]) == 0
    capsys.readouterr()
    assert main(batched + ["--cache", str(tmp_path / "all.sqlite"), "--output-dir", str(tmp_path / "run"),
                           "--log-samples"]) == 0
    assert summary_counts(capsys.readouterr().out)["asked"] == 0
    assert run_dir(tmp_path / "run")[:2] == run_dir(tmp_path / "one")[:2]
