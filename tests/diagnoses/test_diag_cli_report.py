"""``staicc run --benchmarks all,Order_sens,Format_spread`` with the reference model and a tiny HF model,
then ``staicc compare`` (paired) and ``staicc report --html`` on the runs."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
ARGS = ["--datasets", "rotten_tomatoes", "--limit", "6", "--log-samples"]


def staicc(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "StaICC", *args], capture_output=True, text=True, env=ENV, cwd=ROOT,
                          timeout=timeout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("diagnoses")
    out = {}
    for model, benchmarks in (("reference", "all,Order_sens,Format_spread"), ("uniform", "all,Order_sens,Format_spread"),
                              ("reference", "all")):
        directory = base / f"{model}-{benchmarks.count(',')}"
        done = staicc("run", "--model", model, "--benchmarks", benchmarks, "--output-dir", str(directory), *ARGS)
        assert done.returncode == 0, done.stderr
        out[(model, benchmarks)] = directory
    return out


def results(directory):
    return json.loads((directory / "results.json").read_text())["benchmarks"]


def test_run_adds_the_diagnoses_without_changing_the_standard_numbers(runs):
    with_diagnoses = results(runs[("reference", "all,Order_sens,Format_spread")])
    standard_only = results(runs[("reference", "all")])
    assert list(with_diagnoses) == ["Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens", "Order_sens",
                                    "Format_spread"]
    for name in standard_only:
        assert with_diagnoses[name]["results"] == standard_only[name]["results"]
    for name in ("Order_sens", "Format_spread"):
        metadata = with_diagnoses[name]["metadata"]
        assert metadata["standard"] is False
        assert f"{name}: a diagnosis outside the standard" in metadata["non_standard_settings"]["rotten_tomatoes"]
    order = with_diagnoses["Order_sens"]["results"]["Divided results"]["rotten_tomatoes"]
    assert len(order["per_order"]["accuracy"]) == 6 and 0 <= order["sensitivity"]["fleiss_kappa"] <= 1
    spread = with_diagnoses["Format_spread"]["results"]["Divided results"]["rotten_tomatoes"]
    assert len(spread["per_format"]["accuracy"]) == 8 and set(spread["intervals"]) >= {"accuracy_spread"}


def test_an_unknown_name_beside_all_is_one_line_and_exit_2(tmp_path):
    done = staicc("run", "--model", "reference", "--benchmarks", "all,Order_sens,Nope", "--output-dir",
                  str(tmp_path / "x"), *ARGS)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Nope" in done.stderr
    assert not (tmp_path / "x" / "results.json").exists()


def test_compare_is_paired_on_the_new_diagnoses(runs):
    done = staicc("compare", str(runs[("reference", "all,Order_sens,Format_spread")]),
                  str(runs[("uniform", "all,Order_sens,Format_spread")]), "--format", "json", "--resamples", "50")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    text = json.dumps(document)
    assert '"paired": true' in text
    for name, metric in (("Order_sens", "fleiss_kappa"), ("Format_spread", "accuracy_spread")):
        assert name in text and metric in text


def test_report_page_has_the_diagnoses(runs, tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "report.html"
    done = staicc("report", str(runs[("reference", "all,Order_sens,Format_spread")]),
                  str(runs[("uniform", "all,Order_sens,Format_spread")]), "--html", str(page), "--resamples", "50")
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    for heading in ("Per-factor agreement (kappa)", "calibration beyond the standard", "the accuracy of each order",
                    "the accuracy of each format", "Selective prediction: one panel per dataset"):
        assert heading in html
    figures = tmp_path / "report_figures"
    for name in ("agreement", "order_sens", "format_spread", "normal_coverage"):
        assert any(f.name.endswith(f"{name}.png") for f in figures.iterdir()), name


def test_run_with_a_tiny_hf_model(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from backend_helpers import save_tiny
    model_dir = save_tiny(str(tmp_path / "tiny-llama"))
    out = tmp_path / "run"
    done = staicc("run", "--model", "hf", "--model-args", f"pretrained={model_dir}", "--benchmarks",
                  "all,Order_sens,Format_spread", "--output-dir", str(out), "--datasets", "rotten_tomatoes",
                  "--limit", "5")
    assert done.returncode == 0, done.stderr
    document = results(out)
    assert document["Order_sens"]["metadata"]["standard"] is False
    order = document["Order_sens"]["results"]["Divided results"]["rotten_tomatoes"]["sensitivity"]
    assert set(order) == {"consistency", "accuracy_mean", "accuracy_min", "accuracy_max", "accuracy_spread",
                          "cohen_kappa", "fleiss_kappa"}
    assert document["Format_spread"]["results"]["Averaged results"]["accuracy_spread"] >= 0


def test_compare_adds_the_calibration_metrics_only_when_asked(runs):
    a, b = str(runs[("reference", "all,Order_sens,Format_spread")]), str(runs[("uniform", "all,Order_sens,Format_spread")])
    plain = staicc("compare", a, b, "--format", "json", "--resamples", "30")
    asked = staicc("compare", a, b, "--format", "json", "--resamples", "30", "--calibration")
    assert plain.returncode == asked.returncode == 0, plain.stderr + asked.stderr
    assert "brier_score" not in plain.stdout
    normal = json.loads(asked.stdout)
    text = json.dumps(normal)
    for name in ("brier_score", "ece_equal_mass_10", "classwise_ece", "selective_accuracy", "coverage_accuracy_area",
                 "ece_platt"):
        assert name in text
    # the recorded metrics are compared exactly as without the option
    assert json.loads(plain.stdout)["comparisons"][0]["benchmarks"]["Normal"]["datasets"]["rotten_tomatoes"]["accuracy"] \
        == normal["comparisons"][0]["benchmarks"]["Normal"]["datasets"]["rotten_tomatoes"]["accuracy"]


def test_per_factor_kappa_and_calibration_tables_against_the_samples(runs):
    """The report's numbers recomputed from samples.jsonl with NumPy / scikit-learn."""
    np = pytest.importorskip("numpy")
    metrics = pytest.importorskip("sklearn.metrics")
    from StaICC.metrics import CALIBRATION_METRICS, METRICS
    from StaICC.report.diagnoses import agreement_data, calibration_data
    from StaICC.report.runs import load_run
    directory = runs[("reference", "all,Order_sens,Format_spread")]
    run = load_run(str(directory))
    data = agreement_data(run)
    assert set(data) == {"Template_sens", "Demo_sens", "Order_sens"}
    records = [json.loads(line) for line in (directory / "samples.jsonl").read_text().splitlines()]
    for name, raters in (("Template_sens", 9), ("Demo_sens", 8), ("Order_sens", 6)):
        rows = sorted((r for r in records if r["benchmark"] == name), key=lambda r: (r["pass"], r["repeat"], r["test_index"]))
        labels = np.asarray([r["predicted"] for r in rows]).reshape(raters, -1)
        pairs = []
        for a in range(raters):
            for b in range(a + 1, raters):
                value = metrics.cohen_kappa_score(labels[a], labels[b])
                pairs.append(1.0 if np.isnan(value) else value)
        assert data[name]["rotten_tomatoes"]["cohen"] == pytest.approx(float(np.mean(pairs)), abs=1e-9)
        assert data[name]["rotten_tomatoes"]["raters"] == raters
    normal = [r for r in records if r["benchmark"] == "Normal"]
    normal.sort(key=lambda r: (r["repeat"], r["test_index"]))
    truth, rows = [r["label"] for r in normal], [r["prediction"] for r in normal]
    found = calibration_data(run.parts["Normal"])["rotten_tomatoes"]["metrics"]
    for name in CALIBRATION_METRICS:
        assert found[name] == pytest.approx(METRICS[name].function(truth, rows), abs=1e-12)


def test_compare_adds_kappa_on_template_and_demo_sens_only_when_asked(runs):
    a, b = str(runs[("reference", "all,Order_sens,Format_spread")]), str(runs[("uniform", "all,Order_sens,Format_spread")])
    done = staicc("compare", a, b, "--format", "json", "--resamples", "30", "--agreement")
    assert done.returncode == 0, done.stderr
    parts = json.loads(done.stdout)["comparisons"][0]["benchmarks"]
    for name in ("Template_sens", "Demo_sens"):
        row = parts[name]["datasets"]["rotten_tomatoes"]
        assert {"consistency", "cohen_kappa", "fleiss_kappa"} <= set(row)
    assert "fleiss_kappa" not in json.dumps(parts["Normal"])
    # the point values are the report's per-factor table
    from StaICC.report.diagnoses import agreement_data
    from StaICC.report.runs import load_run
    data = agreement_data(load_run(a))
    assert parts["Template_sens"]["datasets"]["rotten_tomatoes"]["fleiss_kappa"]["a"] == pytest.approx(
        data["Template_sens"]["rotten_tomatoes"]["fleiss"], abs=1e-12)
