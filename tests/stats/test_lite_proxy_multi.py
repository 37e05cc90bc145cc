"""Several proxies in one power-tuned estimate, against computations that share no code with StaICC.stats: the
weights against numpy.linalg.lstsq (inside the box) and scipy's bounded least squares (at its edges), the
estimate of accuracy with two proxies by hand (NumPy), one proxy exactly the one-proxy formula, the fast path's
groups against the estimator on each subset's own table, and bad proxy lists refused in one line before
inference through the real command line."""
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
from StaICC.sampling.subsets import stratified_order, subset_size
from StaICC.stats.lite import Population, _grouped, finished
from StaICC.stats.lite_batch import subset_estimates
from StaICC.stats.lite_exact import SMALL_STRATUM
from StaICC.stats.lite_proxy import (Proxy, TunedEstimator, check_proxy, power_tuned, proxy_lite_estimates,
                                     proxy_of_run, tuned_weight)
from StaICC.stats.lite_proxy_weights import box_weights
from StaICC.stats.lite_run import populations
from StaICC.stats.items import ItemTable
from StaICC.stats.statistic import Statistic, _metric_table
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite
from test_lite_proxy import correct_by_item

np = pytest.importorskip("numpy")

DATASETS = ["financial_phrasebank", "TREC"]
FRACTION = 0.25


def _text(prompt):
    return prompt if isinstance(prompt, str) else "".join(prompt)


def target(prompt, label_space):
    """The lexical model with a prompt-seeded perturbation."""
    row = lexical_icl(prompt, label_space)
    return [v + 0.05 * ((len(_text(prompt)) * (j + 7)) % 11) for j, v in enumerate(row)]


def second(prompt, label_space):
    """Another perturbation of the lexical model: a second proxy, related to both."""
    row = lexical_icl(prompt, label_space)
    return [v + 0.04 * ((len(_text(prompt)) * (j + 3)) % 7) for j, v in enumerate(row)]


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return call(*args, **kwargs)


# ----------------------------------------------------------------------------
# the weights
# ----------------------------------------------------------------------------
def _centred(t, ps):
    return (np.stack(ps) - np.stack(ps).mean(axis=1, keepdims=True)).T, t - t.mean()


def test_the_weights_inside_the_box_are_the_least_squares_coefficients():
    rng = np.random.default_rng(5)
    ps = rng.standard_normal((3, 300))
    t = 0.3 * ps[0] + 0.55 * ps[1] + 0.1 * ps[2] + 0.2 * rng.standard_normal(300)
    expected = np.linalg.lstsq(*_centred(t, list(ps)), rcond=None)[0]
    assert np.all((expected > 0) & (expected < 1))
    assert np.allclose(box_weights(t, list(ps)), expected, rtol=0, atol=1e-10)
    # a vector metric: one regression per element
    pv = rng.standard_normal((2, 300, 3))
    tv = 0.4 * pv[0] + 0.2 * pv[1] + 0.1 * rng.standard_normal((300, 3))
    found = box_weights(tv, list(pv))
    for e in range(3):
        assert np.allclose(found[:, e], np.linalg.lstsq(*_centred(tv[:, e], list(pv[:, :, e])), rcond=None)[0],
                           rtol=0, atol=1e-10)


def test_at_the_edges_they_are_the_bounded_least_squares_solution():
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(11)
    for case in range(20):
        ps = rng.standard_normal((4, 200)) * rng.uniform(0.2, 3, (4, 1))
        t = rng.uniform(-1.5, 2, 4) @ ps + rng.standard_normal(200)
        a, b = _centred(t, list(ps))
        expected = optimize.lsq_linear(a, b, bounds=(0, 1), tol=1e-14, method="bvls").x
        found = box_weights(t, list(ps))
        assert np.all((found >= 0) & (found <= 1))
        # the same minimum of the residual sum of squares (the minimiser is unique: the columns are independent)
        assert np.allclose(found, expected, rtol=0, atol=1e-7), case


def test_one_proxy_is_the_clipped_ratio_and_degenerate_proxies_get_no_weight():
    rng = np.random.default_rng(2)
    p, noise = rng.standard_normal(200), rng.standard_normal(200)
    for slope in (-0.5, 0.4, 3.0):
        t = slope * p + noise
        ratio = np.cov(t, p, ddof=0)[0, 1] / np.var(p)
        assert math.isclose(float(box_weights(t, [p])[0]), min(max(ratio, 0), 1), abs_tol=1e-14)
        assert math.isclose(float(box_weights(t, [p])[0]), float(tuned_weight(t, p)), abs_tol=1e-15)
    # a constant proxy and a proxy with NaN resamples: weight 0 where it cannot be estimated; copies of one run
    # together carry the weight one copy would
    t = 0.5 * p + 0.1 * noise
    found = box_weights(t, [np.full(200, 0.3), p, p])
    assert found[0] == 0 and math.isclose(found[1] + found[2], float(tuned_weight(t, p)), abs_tol=1e-12)
    assert np.all(box_weights(t, [np.full(200, math.nan), p]) == 0)


def test_one_proxy_is_exactly_the_one_proxy_formula():
    """The code path of one proxy gives the bits of t + lambda (P - p), its resamples t* - lambda p* + lambda P
    spread about their mean by sqrt(d / (d - 2)) for the weight's own variability (lite_proxy_weights), with the
    interval at one degree of freedom less."""
    rng = np.random.default_rng(7)
    ts, ps = rng.random(100), rng.random(100) * 0.5
    ts = ts + ps
    target = ({"accuracy": 0.61, "distribution": [0.2, 0.8]},
              {"accuracy": ts.tolist(), "distribution": np.stack([ts, 1 - ts], axis=1).tolist()})
    proxy = ({"accuracy": 0.4, "distribution": [0.3, 0.7]},
             {"accuracy": ps.tolist(), "distribution": np.stack([ps, 1 - ps], axis=1).tolist()})
    truth = {"accuracy": 0.45, "distribution": [0.35, 0.65]}
    found, details = power_tuned("Normal", target, [proxy], [truth], 40, 0.95)
    points, spreads = {}, {}
    for name in ("accuracy", "distribution"):
        t, rs = np.asarray(target[1][name]), np.asarray(proxy[1][name])
        weight = tuned_weight(t, rs)
        points[name] = (np.asarray(target[0][name]) + weight * (np.asarray(truth[name]) -
                                                                np.asarray(proxy[0][name]))).tolist()
        combined = t - weight * rs + weight * np.asarray(truth[name])
        spreads[name] = (combined.mean(axis=0) + math.sqrt(40 / 38) * (combined - combined.mean(axis=0))).tolist()
        assert details[name]["weight"] == weight.tolist() and details[name]["proxy_full_value"] == truth[name]
    assert found == finished("Normal", points, spreads, 39, 0.95)


# ----------------------------------------------------------------------------
# the estimator with two proxies
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def made():
    suite = quiet(build_suite, "Normal", DATASETS, 4)
    runs = {name: run_suite(model, suite=quiet(build_suite, "Normal", DATASETS, 4), progress=False)
            for name, model in (("lexical", lexical_icl), ("second", second), ("target", target))}
    lite_suite = quiet(build_suite, "Normal", DATASETS, 4, test_items=QuerySubset.lite(FRACTION))
    lite = run_suite(target, suite=lite_suite, progress=False)
    proxies = [proxy_of_run(runs[name], name) for name in ("lexical", "second")]
    found = proxy_lite_estimates(lite.records, FRACTION, populations(suite), proxies, resamples=2000)
    return {"suite": suite, "runs": runs, "lite": lite, "proxies": proxies, "found": found, "lite_suite": lite_suite}


@pytest.mark.parametrize("dataset", DATASETS)
def test_two_proxies_give_the_regression_estimate_of_accuracy_by_hand(made, dataset):
    """t + w1 (P1 - p1) + w2 (P2 - p2) with the recorded weights; the width near 2 z of the finite-population
    standard error of the residuals y - w1 x1 - w2 x2."""
    everything = [correct_by_item(made["runs"][name].records, dataset) for name in ("lexical", "second")]
    mine = correct_by_item(made["lite"].records, dataset)
    labels = np.array([everything[0][t][0] for t in sorted(everything[0])])
    full = [float(np.mean([v for _, v in e.values()])) for e in everything]
    cell = made["found"].estimates["Normal"][dataset]["accuracy"]
    weights = cell.proxy["weight"]
    assert cell.proxy["proxy_full_value"] == [made["runs"][n]["Normal"]["Divided results"][dataset]["accuracy"]
                                              for n in ("lexical", "second")]
    t, subset, residual, small = 0.0, [0.0, 0.0], 0.0, False
    for s in np.unique(labels):
        n_s = int(np.sum(labels == s))
        ids = [i for i, (label, _) in mine.items() if label == s]
        y = np.array([mine[i][1] for i in ids])
        xs = [np.array([e[i][1] for i in ids]) for e in everything]
        share, f = n_s / len(labels), len(y) / n_s
        t += share * y.mean()
        subset = [a + share * x.mean() for a, x in zip(subset, xs)]
        residual += share ** 2 * (1 - f) * (y - weights[0] * xs[0] - weights[1] * xs[1]).var(ddof=1) / len(y)
        small |= len(y) < SMALL_STRATUM
    if small:  # the design gives the exact interval: no proxy
        assert weights == [0.0, 0.0] and math.isclose(cell.value, t, abs_tol=1e-12)
        return
    assert all(0 <= w <= 1 for w in weights) and sum(weights) > 0
    expected = t + weights[0] * (full[0] - subset[0]) + weights[1] * (full[1] - subset[1])
    assert math.isclose(cell.value, expected, rel_tol=0, abs_tol=1e-12)
    assert 0.8 < (cell.high - cell.low) / (2 * NormalDist().inv_cdf(0.975) * math.sqrt(residual)) < 1.3


def test_one_proxy_in_a_list_is_the_one_proxy_run_and_a_copy_of_the_target_is_exact(made):
    lone = proxy_lite_estimates(made["lite"].records, FRACTION, populations(made["suite"]), made["proxies"][0],
                                resamples=300)
    listed = proxy_lite_estimates(made["lite"].records, FRACTION, populations(made["suite"]), made["proxies"][:1],
                                  resamples=300)
    assert lone.to_dict() == listed.to_dict()
    copy = proxy_of_run(made["runs"]["target"], "copy")
    exact = proxy_lite_estimates(made["lite"].records, FRACTION, populations(made["suite"]),
                                 [made["proxies"][0], copy], resamples=300)
    assert "2 proxies lexical + copy" in exact.to_dict()["method"]
    for dataset in DATASETS:
        cell = exact.estimates["Normal"][dataset]["averaged_truelabel_likelihood"]
        truth = made["runs"]["target"]["Normal"]["Divided results"][dataset]["averaged_truelabel_likelihood"]
        # the descent stops within rounding of the exact fit (weight 1 on the copy)
        assert math.isclose(cell.proxy["weight"][1], 1.0, abs_tol=1e-9) and math.isclose(cell.value, truth,
                                                                                           abs_tol=1e-9)
        assert cell.high - cell.low < 1e-9


def test_run_lite_takes_a_list_of_proxies(made):
    from StaICC.runs.lite import run_lite
    copy = proxy_of_run(made["runs"]["target"], "copy")
    lite = quiet(run_lite, target, FRACTION, "Normal", datasets=DATASETS, progress=False,
                 proxy=[made["proxies"][1], copy])
    assert lite.metadata["lite"]["estimates"]["proxy"] == "second + copy"
    for dataset in DATASETS:
        cell = lite.lite.estimates["Normal"][dataset]["averaged_truelabel_likelihood"]
        truth = made["runs"]["target"]["Normal"]["Divided results"][dataset]["averaged_truelabel_likelihood"]
        assert math.isclose(cell.value, truth, abs_tol=1e-9) and cell.high - cell.low < 1e-9


def test_the_fast_paths_groups_equal_the_estimator_on_each_subsets_own_table(made):
    runs = [_grouped(made["runs"][n].records) for n in ("target", "lexical", "second")]
    for key in runs[0]:
        names = [n for n in _metric_table(key[0]) if not n.endswith("_nonstandard")]
        full, one, two = (Statistic(key[0], ItemTable(*key, run[key]), names, {}) for run in runs)
        population = Population.from_labels(full.table.labels)
        subsets = [stratified_order(full.table.labels, key, salt=f"t {s}")[:subset_size(len(full.table), 0.125)]
                   for s in range(3)]
        found = subset_estimates(full, population, subsets, resamples=60, seed=[0, 1, 2], level=0.95,
                                 proxies=[one, two], groups=[(0, 1), (1,)])
        for j, (subset, (_, (both, alone))) in enumerate(zip(subsets, found)):
            own = Statistic(key[0], full.table.restricted(subset), full.names(), {})
            for cells, group in ((both, [one, two]), (alone, [two])):
                slow = TunedEstimator([Proxy(f"p{i}", {}, _tables={key: p}) for i, p in enumerate(group)])(
                    own, population, resamples=60, seed=j, level=0.95)
                assert set(cells) == set(slow)
                for metric in cells:
                    assert np.allclose(np.array(cells[metric][:3], dtype=float),
                                       np.array(slow[metric][:3], dtype=float), rtol=1e-12, atol=1e-12), metric


def test_each_proxy_of_a_list_is_checked(made):
    planned = plan_suite(None, made["lite_suite"])
    check_proxy(made["proxies"], planned)
    relabelled = Proxy("words", made["proxies"][1].records, {("Normal", "TREC"): ["a", "b", "c", "d", "e", "f"]})
    with pytest.raises(ValueError, match="the proxy words answers another label space on Normal / TREC"):
        check_proxy([made["proxies"][0], relabelled], planned)


# ----------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxies")
    made = {}
    for name, extra in (("ref", []), ("uni", ["--model", "uniform"]), ("k5", ["--k", "5"])):
        made[name] = str(root / name)
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["run", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress", "--log-samples",
                         *extra, "--output-dir", made[name]]) == 0
    return made


@pytest.mark.parametrize("proxies, words", [
    ("{ref},{k5}", "the proxy {k5} was asked other prompts than the lite run on Normal / TREC"),
    ("{ref},{missing}", "--lite-proxy {missing}"),
    ("{ref},{ref}", "is named twice"),
    ("reference,{uni},reference", "reference is named twice"),
    ("{ref},", "an empty name in the comma-separated list"),
])
def test_bad_proxy_lists_are_one_line_before_inference(run_dirs, tmp_path, capsys, proxies, words):
    fill = dict(run_dirs, missing=str(tmp_path / "none"))
    out = tmp_path / "run"
    code = main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress",
                 "--lite", "0.125", "--lite-proxy", proxies.format(**fill), "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and words.format(**fill) in err and err.count("\n") == 1 and not out.exists()


def test_a_list_of_run_directories_and_the_reference_model_is_used_end_to_end(run_dirs, tmp_path, capsys):
    import json
    out = tmp_path / "run"
    given = f"{run_dirs['ref']},{run_dirs['uni']},reference"
    assert main(["run", "--model", "uniform", "--benchmarks", "Normal", "--datasets", "TREC", "--no-progress",
                 "--lite", "0.125", "--lite-proxy", given, "--output-dir", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Proxies: {run_dirs['ref']} + {run_dirs['uni']} + the reference model, each scored on every test item" \
        in printed and "median weight" in printed
    section = json.loads((out / "results.json").read_text())["provenance"]["lite"]["estimates"]
    assert section["method"].startswith("the power-tuned difference estimator with 3 proxies") and \
        section["proxies"] == 3
    cell = section["benchmarks"]["Normal"]["TREC"]["averaged_truelabel_likelihood"]
    assert len(cell["proxy"]["weight"]) == 3 and all(0 <= w <= 1 for w in cell["proxy"]["weight"])
