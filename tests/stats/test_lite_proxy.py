"""Proxy-assisted lite runs against computations that share no code with StaICC.stats: the stratified regression
(power-tuned difference) estimator of accuracy by hand (NumPy), its weight and its textbook finite-population
standard error for the interval's width, each cell the plain one where its weight is 0 (a proxy that does not pay is not used), and the refusals of a proxy of
other prompts or labels."""
import contextlib
import io
import math
import warnings
from statistics import NormalDist

import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.cli import main
from StaICC.engine.selection import QuerySubset
from StaICC.errors import TamperingWarning
from StaICC.stats.lite import lite_estimates
from StaICC.stats.lite_exact import SMALL_STRATUM
from StaICC.stats.lite_proxy import Proxy, check_proxy, proxy_lite_estimates, proxy_of_run
from StaICC.runs.lite import run_lite
from StaICC.stats.lite_run import populations
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite

np = pytest.importorskip("numpy")

DATASETS = ["financial_phrasebank", "TREC"]
FRACTION = 0.25


def target(prompt, label_space):
    """The lexical model with a prompt-seeded perturbation: correlated with it, not equal to it."""
    row = lexical_icl(prompt, label_space)
    text = prompt if isinstance(prompt, str) else "".join(prompt)
    return [v + 0.05 * ((len(text) * (j + 7)) % 11) for j, v in enumerate(row)]


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def made():
    suite = quiet(build_suite, "Normal", DATASETS, 4)
    proxy_run = run_suite(lexical_icl, suite=suite, progress=False)
    full_target = run_suite(target, suite=quiet(build_suite, "Normal", DATASETS, 4), progress=False)
    lite_suite = quiet(build_suite, "Normal", DATASETS, 4, test_items=QuerySubset.lite(FRACTION))
    lite = run_suite(target, suite=lite_suite, progress=False)
    proxy = proxy_of_run(proxy_run, "lexical")
    found = proxy_lite_estimates(lite.records, FRACTION, populations(suite), proxy, resamples=2000)
    return {"suite": suite, "proxy_run": proxy_run, "full": full_target, "lite": lite, "proxy": proxy,
            "found": found, "lite_suite": lite_suite}


def correct_by_item(records, dataset):
    """{test_index: (label, share of its repeats answered right)}: argmax needs no softmax."""
    hits, labels = {}, {}
    for r in records:
        if r["dataset"] == dataset:
            hits.setdefault(r["test_index"], []).append(int(np.argmax(r["prediction"]) == r["label"]))
            labels[r["test_index"]] = r["label"]
    return {t: (labels[t], float(np.mean(v))) for t, v in hits.items()}


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_tuned_estimate_of_accuracy_its_weight_and_width_are_the_textbook_ones(made, dataset):
    """The stratified regression estimator by hand: t + lambda (P - p) with the recorded lambda; lambda itself
    near the design-based Cov(t, p) / Var(p) of the stratified means; the width near 2 z of the finite-population
    standard error of the residuals y - lambda x."""
    proxy_all = correct_by_item(made["proxy_run"].records, dataset)
    mine = correct_by_item(made["lite"].records, dataset)
    labels = np.array([proxy_all[t][0] for t in sorted(proxy_all)])
    P = float(np.mean([v for _, v in proxy_all.values()]))
    t = p = cov = var = 0.0
    strata = []
    for s in np.unique(labels):
        N_s = int(np.sum(labels == s))
        y = np.array([v for _, (label, v) in mine.items() if label == s])
        x = np.array([proxy_all[i][1] for i, (label, _) in mine.items() if label == s])
        W, f = N_s / len(labels), len(y) / N_s
        t, p = t + W * y.mean(), p + W * x.mean()
        cov += W ** 2 * (1 - f) * np.cov(y, x, ddof=1)[0, 1] / len(y)
        var += W ** 2 * (1 - f) * x.var(ddof=1) / len(y)
        strata.append((W, f, y, x))
    cell = made["found"].estimates["Normal"][dataset]["accuracy"]
    weight = cell.proxy["weight"]
    if min(len(y) for _, _, y, _ in strata) < SMALL_STRATUM:  # the design gives the exact interval: no proxy
        assert weight == 0 and math.isclose(cell.value, t, rel_tol=0, abs_tol=1e-12)
        return
    assert 0 <= weight <= 1 and abs(weight - min(max(cov / var, 0), 1)) < 0.15
    assert math.isclose(cell.value, t + weight * (P - p), rel_tol=0, abs_tol=1e-12)
    residual = sum(W ** 2 * (1 - f) * (y - weight * x).var(ddof=1) / len(y) for W, f, y, x in strata)
    assert 0.8 < (cell.high - cell.low) / (2 * NormalDist().inv_cdf(0.975) * math.sqrt(residual)) < 1.3
    assert cell.proxy["proxy_full_value"] == made["proxy_run"]["Normal"]["Divided results"][dataset]["accuracy"]


def test_each_cell_is_the_plain_one_where_its_weight_is_0_and_never_much_wider_otherwise(made):
    plain = lite_estimates(list(made["lite"].records), FRACTION, populations(made["suite"]), resamples=2000)
    narrower = 0
    for row, metrics in made["found"].estimates["Normal"].items():
        for metric, cell in metrics.items():
            if not cell.estimable or isinstance(cell.value, list):
                continue
            alone = plain.estimates["Normal"][row][metric]
            assert cell.proxy["plain"] == [alone.value, alone.low, alone.high]
            if row != "Averaged":
                assert 0 <= cell.proxy["weight"] <= 1
            if row != "Averaged" and cell.proxy["weight"] == 0:  # no proxy used: the plain cell, bit for bit
                assert [cell.value, cell.low, cell.high] == [alone.value, alone.low, alone.high]
            # the weights are kept only where their expected interval is no wider (lite_proxy_weights.paying): a
            # printed interval is wider only by the percentile interval's noise or, for the ECE, an estimate that
            # moved up where the interval starts at 0
            assert cell.high - cell.low <= 1.1 * (alone.high - alone.low)
            narrower += cell.high - cell.low < alone.high - alone.low
    assert narrower >= 3  # a correlated proxy narrows most cells
    assert made["found"].to_dict()["proxy"] == "lexical" and made["found"].to_dict()["level"] == 0.95


def test_a_proxy_equal_to_the_target_gives_the_full_runs_value_with_no_width(made):
    full = run_suite(lexical_icl, suite=quiet(build_suite, "Normal", DATASETS, 4), progress=False)
    lite = quiet(run_lite, lexical_icl, FRACTION, "Normal", datasets=DATASETS, progress=False, proxy=made["proxy"])
    for dataset in DATASETS:
        cell = lite.lite.estimates["Normal"][dataset]["averaged_truelabel_likelihood"]
        truth = full["Normal"]["Divided results"][dataset]["averaged_truelabel_likelihood"]
        assert cell.proxy["weight"] == 1.0 and cell.value == truth and cell.low == cell.high == truth


def test_a_proxy_of_other_prompts_items_or_labels_is_refused_naming_where(made):
    planned = plan_suite(None, made["lite_suite"])
    check_proxy(made["proxy"], planned)  # the same prompts: accepted
    other = run_suite(lexical_icl, suite=quiet(build_suite, "Normal", DATASETS, 5), progress=False)
    with pytest.raises(ValueError, match="asked other prompts than the lite run on Normal / financial_phrasebank"):
        check_proxy(proxy_of_run(other, "k5"), planned)
    relabelled = Proxy("words", made["proxy"].records, {("Normal", "TREC"): ["a", "b", "c", "d", "e", "f"]})
    with pytest.raises(ValueError, match="another label space on Normal / TREC"):
        check_proxy(relabelled, planned)
    with pytest.raises(ValueError, match="has no records of Normal / TREC"):
        check_proxy(Proxy("half", {k: v for k, v in made["proxy"].records.items() if k[1] != "TREC"}), planned)


@pytest.fixture(scope="module")
def proxy_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    made = {}
    for name, extra in (("k4", ["--log-samples"]), ("k5", ["--log-samples", "--k", "5"]), ("bare", [])):
        made[name] = str(root / name)
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["run", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress", *extra,
                         "--output-dir", made[name]]) == 0
    return made


@pytest.mark.parametrize("arguments, words", [
    (["--lite", "0.125", "--lite-proxy", "{k5}"], "was asked other prompts than the lite run on Normal / TREC"),
    (["--lite", "0.125", "--lite-proxy", "{bare}"], "the run has no records"),
    (["--lite", "0.125", "--lite-proxy", "{missing}"], "--lite-proxy"),
    (["--lite-proxy", "{k4}"], "--lite-proxy needs --lite or --lite-items"),
    (["--lite", "nan"], "--lite must be a fraction of the test items in (0, 1]"),
])
def test_bad_proxies_are_one_line_before_inference(proxy_dirs, tmp_path, capsys, arguments, words):
    filled = [a.format(missing=str(tmp_path / "none"), **proxy_dirs) for a in arguments]
    out = tmp_path / "run"
    code = main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress",
                 *filled, "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1 and not out.exists()


def test_a_run_directory_proxy_is_used_end_to_end(proxy_dirs, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress",
                 "--lite", "0.125", "--lite-proxy", proxy_dirs["k4"], "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"Proxy: {proxy_dirs['k4']}, scored on every test item" in " ".join(printed.split())
