"""``staicc run``: a run directory with provenance and samples; argument errors are one line, exit 2."""
import json
import os
import subprocess
import sys

import pytest

from StaICC import GLER, Normal
from StaICC.backends.reference_model import lexical_icl
from StaICC.metrics import normal_metrics, with_own_distribution_metrics
from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)


def staicc(*args, check=True):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "StaICC", *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=check, timeout=300)


def strict_json(path):
    def refuse(token):
        raise AssertionError(f"{path} holds the non-JSON token {token}")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh, parse_constant=refuse)


def test_run_writes_results_provenance_and_samples(tmp_path):
    out = tmp_path / "run"
    done = staicc("run", "--model", "reference", "--benchmarks", "Normal", "--datasets", "0", "1",
                  "--output-dir", str(out), "--log-samples", "--no-progress")
    assert "Normal (k=4, model=reference)" in done.stdout
    document = strict_json(out / "results.json")
    assert document["format"] == "staicc-results/1" and document["samples"] == "samples.jsonl"
    provenance = document["provenance"]
    assert provenance["model"]["identity"] == {"backend": "reference", "model": "lexical", "version": 1}
    assert len(provenance["model"]["fingerprint"]) == 64 and len(provenance["data_manifest_sha256"]) == 64
    assert provenance["command"][1:] == ["run", "--model", "reference", "--benchmarks", "Normal", "--datasets", "0",
                                        "1", "--output-dir", str(out), "--log-samples", "--no-progress"]
    assert provenance["seconds"] > 0 and provenance["started"] <= provenance["finished"]
    normal = document["benchmarks"]["Normal"]
    # the run reports, beside the standard's likelihood and ECE, the same on the model's own distribution
    expected = Normal(datasets=[0, 1], metrics=with_own_distribution_metrics(normal_metrics()))(lexical_icl)
    assert normal["results"] == json.loads(json.dumps(dict(expected)))
    assert list(normal["results"]["Averaged results"]) == ["accuracy", "averaged_truelabel_likelihood", "macro_F1",
                                                           "expected_calibration_error_1", "own_likelihood_nonstandard",
                                                           "own_ece_nonstandard"]
    assert normal["metadata"]["standard"] is True
    assert set(normal["metadata"]["prompt_sha256"]) == {"GLUE-SST2", "rotten_tomatoes"}
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 * 1024
    records = [json.loads(line) for line in lines]
    assert records[0]["dataset"] == "GLUE-SST2" and records[1024]["dataset"] == "rotten_tomatoes"
    bench = Normal(datasets=[0])
    assert [r["demonstrations"] for r in records[:1024]] == [bench[0].demonstration_sampler[q] for q in range(1024)]
    assert [r["test_index"] for r in records[510:514]] == [510, 511, 0, 1]
    assert [r["repeat"] for r in records[510:514]] == [0, 0, 1, 1]
    assert [r["label"] for r in records[:1024]] == bench[0].ground_truth()


def test_limit_marks_a_smoke_run_non_standard(tmp_path):
    out = tmp_path / "smoke"
    done = staicc("run", "--benchmarks", "GLER", "--datasets", "TREC", "--limit", "8", "--output-dir", str(out),
                  "--no-progress")
    assert "NOT STANDARD" in done.stdout
    gler = strict_json(out / "results.json")["benchmarks"]["GLER"]
    assert gler["metadata"]["standard"] is False
    assert "limited to the first 8 test items" in gler["metadata"]["non_standard_settings"]["TREC"]
    assert done.stdout.count("GLER") >= 1 and GLER  # the table is printed


def test_run_uses_and_reports_the_cache(tmp_path):
    cache = str(tmp_path / "answers.cache")
    first = staicc("run", "--benchmarks", "Normal,Post_bias", "--datasets", "TREC", "--cache", cache, "--no-progress")
    assert "2048 prompts, 1024 distinct, 1024 asked, 0 from the cache" in first.stdout
    second = staicc("run", "--benchmarks", "Normal", "--datasets", "TREC", "--cache", cache, "--no-progress")
    assert "1024 prompts, 1024 distinct, 0 asked, 1024 from the cache" in second.stdout


@pytest.mark.parametrize("args, message", [
    (["--model", "nope"], "unknown model backend 'nope'"),
    (["--model-args", "x"], "model argument 'x' is not key=value"),
    (["--model", "uniform", "--model-args", "a=1"], "takes no model arguments"),
    (["--benchmarks", "Foo"], "unknown sub-benchmark 'Foo'"),
    (["--datasets", "\u00b2"], "unknown dataset '\u00b2'"),
    (["--datasets", "12"], "dataset index 12 out of range"),
    (["--retriever", "fixk"], "retriever 'fixk'"),
    (["--retriever", "bogus"], "unknown retriever 'bogus'"),
    (["--k", "2147483648", "--datasets", "0"], "k = 2147483648 is larger than the demonstration set"),
    (["--k", "-1"], "--k must be >= 0"),
    (["--k", "abc"], "argument --k: invalid int value"),
    (["--limit", "0"], "--limit must be a positive integer"),
    (["--log-samples"], "--log-samples needs --output-dir"),
    (["--output-dir", "/proc/staicc-cannot-write"], "cannot write to the output directory"),
    (["--benchmarks", "Template_sens", "--noisy-channel"], "Template_sens does not support noisy-channel prompts"),
    (["--shard", "0/100000000", "--cache", "never-written.sqlite", "--datasets", "0"],
     "the run has 1024 queries, so it can be split into at most 1024 shards"),
])
def test_argument_errors_are_one_line_and_exit_2(args, message):
    done = staicc("run", *args, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("staicc: error: ") and message in lines[0], done.stderr


def test_a_plain_run_imports_only_what_it_uses():
    """``staicc run`` without tasks reads no task file and computes no lite estimate, flip or gate: none of those
    modules is imported (the table's ± reads the bootstrap's modules, ``StaICC.stats.run_errors``)."""
    code = ("import sys\nfrom StaICC.cli import main\nassert main(['run', '--datasets', '0', '--limit', '10', "
            "'--no-progress']) == 0\nprint(sorted(m for m in sys.modules if m.startswith(('StaICC.stats.lite', "
            "'StaICC.stats.flips', 'StaICC.stats.gate', 'StaICC.stats.verify', "
            "'StaICC.tasks', 'StaICC.report.commands', 'StaICC.cache', 'StaICC.methods.calibration'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_shards_dry_run_counts_that_shard_and_needs_no_cache(tmp_path, capsys):
    """``--dry-run --shard I/N`` counts what that shard will ask (the shards add up to the whole run), names the
    same plan as the shard run, and sees what the shard's cache already holds."""
    import re

    from StaICC.cli import main
    base = ["run", "--benchmarks", "Normal,GLER", "--datasets", "0", "--limit", "16", "--no-progress"]
    shape = re.compile(r"^shard (\d)/2 \(plan (\w{12})\): (\d+) distinct prompts of (\d+), (\d+) already in the "
                       r"cache, (\d+) to ask \(model reference, fingerprint \w{12}\)$")
    shards = []
    for index in range(2):
        assert main([*base, "--dry-run", "--shard", f"{index}/2"]) == 0
        found = shape.match(capsys.readouterr().out.strip())
        assert found, "a shard's dry run prints one line naming the shard"
        shards.append(found.groups())
    assert main([*base, "--dry-run"]) == 0
    whole = re.match(r"^(\d+) prompts, (\d+) distinct, 0 already in the cache, (\d+) to ask", capsys.readouterr().out)
    distinct = int(whole.group(2))
    assert [int(s[3]) for s in shards] == [distinct, distinct] and sum(int(s[2]) for s in shards) == distinct
    assert shards[0][1] == shards[1][1] and all(s[4] == "0" and s[5] == s[2] for s in shards)

    cache = str(tmp_path / "shard0.sqlite")
    assert main([*base, "--shard", "0/2", "--cache", cache]) == 0
    ran = capsys.readouterr().out
    assert ran.startswith(f"shard 0/2 (plan {shards[0][1]}): {shards[0][2]} distinct prompts of {distinct}, "
                          f"{shards[0][2]} asked")
    assert main([*base, "--dry-run", "--shard", "0/2", "--cache", cache]) == 0
    again = shape.match(capsys.readouterr().out.strip()).groups()
    assert again[4:] == (shards[0][2], "0")
