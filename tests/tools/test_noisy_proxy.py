"""benchmarks/lite_noisy_proxy.py writes a run whose results are the ones its noisy records give: staicc verify's
recomputation finds no mismatch, a lite run accepts it as a proxy, and Normal's accuracy and GLER's per-pass
accuracy, slope and intercept are checked against a computation here from the records (NumPy's polyfit)."""
import hashlib
import json
import os
import sys

import pytest

np = pytest.importorskip("numpy")

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.append(BENCHMARKS)  # after the tests' own folders: benchmarks/ has a route_matrix.py of its own

import lite_noisy_proxy as noisy  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def lean(prompt, label_space):
    """A probability row that depends on the prompt (so the noise moves answers)."""
    digest = hashlib.sha256(prompt.encode()).digest()
    weights = [1.0 + digest[j] / 64 for j in range(len(label_space))]
    return [w / sum(weights) for w in weights]


@pytest.fixture(scope="module")
def target_run(tmp_path_factory):
    from StaICC import run_suite
    from StaICC.runs import Run, write
    result = run_suite(lean, "all", datasets=["rotten_tomatoes"], prediction_kind="probabilities", progress=False)
    path = str(tmp_path_factory.mktemp("runs") / "target")
    write(Run.from_result(result, None), path, log_samples="compact")
    return path


def test_the_noisy_run_has_the_results_its_records_give(target_run, tmp_path, monkeypatch):
    from StaICC.report.runs import load_run
    from StaICC.stats.verify import Findings, recompute_aggregates
    out = str(tmp_path / "noisy")
    monkeypatch.setattr(sys, "argv", ["lite_noisy_proxy.py", "--target", target_run, "--out", out, "--sigma", "0.5",
                                      "--shared", "0.9"])
    noisy.main()
    findings = Findings()
    recompute_aggregates(load_run(out), findings)
    assert findings.checked > 20 and findings.mismatches == []
    with open(os.path.join(target_run, "results.json"), encoding="utf-8") as fh:
        before = json.load(fh)["benchmarks"]
    with open(os.path.join(out, "results.json"), encoding="utf-8") as fh:
        after = json.load(fh)["benchmarks"]
    records = [json.loads(line) for line in open(os.path.join(out, "samples.jsonl"), encoding="utf-8")]
    normal = [r for r in records if r["benchmark"] == "Normal"]
    accuracy = np.mean([int(np.argmax(r["prediction"])) == r["label"] for r in normal])
    found = after["Normal"]["results"]["Divided results"]["rotten_tomatoes"]["accuracy"]
    assert found == pytest.approx(accuracy, abs=1e-12)
    assert found != before["Normal"]["results"]["Divided results"]["rotten_tomatoes"]["accuracy"]  # the noise moved it
    gler = after["GLER"]["results"]["Divided results"]["rotten_tomatoes"]
    from StaICC.stats.bootstrap import dataset_statistic  # the passes' abscissae, as the statistics read them
    abscissae = dataset_statistic(load_run(out).parts["GLER"], "rotten_tomatoes").x_values
    per_pass = []
    for p in range(len(abscissae)):
        mine = [r for r in records if r["benchmark"] == "GLER" and r["pass"] == p]
        per_pass.append(np.mean([int(np.argmax(r["prediction"])) == r["label"] for r in mine]))
        assert gler[str(p)]["accuracy"] == pytest.approx(per_pass[-1], abs=1e-12)
    slope, intercept = np.polyfit(abscissae, per_pass, 1)
    assert gler["sensitivity"]["accuracy"] == pytest.approx([slope, intercept], abs=1e-12)


def test_a_lite_run_accepts_the_noisy_run_as_its_proxy(target_run, tmp_path, monkeypatch):
    """The check a lite run makes of a proxy directory (every dataset's statistic against its results.json)."""
    from StaICC.cli.lite import _one_proxy
    out = str(tmp_path / "noisy")
    monkeypatch.setattr(sys, "argv", ["lite_noisy_proxy.py", "--target", target_run, "--out", out, "--sigma", "0.1"])
    noisy.main()
    proxy = _one_proxy(out)
    assert proxy.name == out and ("Domain_bias", "rotten_tomatoes") in proxy.records
