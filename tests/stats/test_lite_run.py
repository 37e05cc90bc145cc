"""Lite runs end to end: the picker's items, the full run's records restricted to them, the estimates printed and
recorded, the prompt ratio, paired comparisons, the shared cache, and the argument checks before any inference."""
import contextlib
import io
import json
import os
import subprocess
import sys
import warnings

import pytest

from conftest import REPO_ROOT
from StaICC.cli import main
from StaICC.engine.selection import QuerySubset
from StaICC.errors import TamperingWarning
from StaICC.backends.reference_model import lexical_icl, uniform
from StaICC.report.runs import load_run
from StaICC.sampling.lite import LiteSample
from StaICC.sampling.subsets import pick_test_items
from StaICC.stats.lite import lite_estimates
from StaICC.runs.lite import run_lite
from StaICC.stats.lite_run import items_sha256, populations
from StaICC.spec import SPECS
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite, suite_parts

pytest.importorskip("numpy")

DATASETS = ["financial_phrasebank", "TREC"]
FRACTION = 0.125


def quiet_suite(benchmarks="all", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return build_suite(benchmarks, DATASETS, 4, **options)


def test_a_lite_suite_evaluates_the_pickers_items_the_same_for_every_model_and_build():
    suite = quiet_suite(test_items=QuerySubset.lite(FRACTION))
    planned = plan_suite(None, suite)
    for name, bench in suite.items():
        for _key, part_name, part in suite_parts(name, bench):
            for work, experimentor in zip(planned[part_name], part.get_experimentors()):
                labels = experimentor.triplet_dataset.test.label_indexes()
                unlabelled = SPECS[part_name].pseudo_query is not None
                expected = pick_test_items(len(labels) if unlabelled else labels,
                                           (part_name, work.dataset) if unlabelled else (work.dataset,),
                                           fraction=FRACTION)
                assert work.plan.test_items == tuple(expected)
                assert len(expected) == max(1, int(FRACTION * len(labels) + 0.5))  # halves up
    again = plan_suite(None, quiet_suite(test_items=QuerySubset.lite(FRACTION)))
    assert items_sha256(planned) == items_sha256(again)
    # two models: the same items (the digest run_lite records)
    runs = [run_lite(f, FRACTION, "Normal,GLER", datasets=DATASETS, progress=False) for f in (lexical_icl, uniform)]
    assert runs[0].metadata["lite"]["items_sha256"] == runs[1].metadata["lite"]["items_sha256"]
    # Normal, Post_bias and GLER evaluate the same items of a dataset: their shared prompts are asked once
    by_part = {(w.part, w.dataset): w.plan.test_items for works in planned.values() for w in works}
    assert by_part[("Normal", "TREC")] == by_part[("Post_bias", "TREC")] == by_part[("GLER", "TREC")]


def _records_by_item(result):
    found = {}
    for record in result.records:
        key = (record["benchmark"], record["dataset"], record["pass"], record["repeat"], record["test_index"])
        found[key] = {k: record[k] for k in ("label", "prediction", "prompt_sha256", "demonstrations")}
    return found


def test_the_lite_records_are_the_full_runs_restricted_and_the_estimates_are_lite_estimates_of_them():
    full = _records_by_item(run_suite(lexical_icl, suite=quiet_suite(), progress=False))
    lite = run_lite(lexical_icl, FRACTION, "all", datasets=DATASETS, progress=False)
    mine = _records_by_item(lite)
    items = {(r["benchmark"], r["dataset"]): set() for r in lite.records}
    for benchmark, dataset, _p, _r, test_index in mine:
        items[(benchmark, dataset)].add(test_index)
    assert mine == {key: value for key, value in full.items() if key[4] in items.get(key[:2], ())}
    expected = lite_estimates(list(lite.records), FRACTION, populations(quiet_suite()))
    assert lite.lite.to_dict() == expected.to_dict()
    assert lite.metadata["lite"]["estimates"] == expected.to_dict()
    assert lite.metadata["standard"] is False and lite.metadata["lite"]["standard"] is False
    assert lite.metadata["lite"]["departure"] == "lite run: 12.5 % of the test items"


def test_lite_items_takes_that_many_stratified_items_of_each_part():
    suite = quiet_suite("Normal,Template_sens", test_items=QuerySubset.lite(items=12))
    for works in plan_suite(None, suite).values():
        for work in works:
            assert len(work.plan.test_items) == 12
    labels = suite["Normal"].get_experimentors()[1].triplet_dataset.test.label_indexes()  # TREC: 6 labels
    picked = plan_suite(None, suite)["Normal"][1].plan.test_items
    assert sorted({labels[i] for i in picked}) == sorted(set(labels))  # two of each label first
    with pytest.raises(ValueError, match="exactly one"):
        LiteSample()
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        LiteSample(fraction=1.5)


@pytest.fixture(scope="module")
def lite_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lite")
    common = ["--benchmarks", "Normal,Triplet_bias,GLER", "--datasets", *DATASETS, "--log-samples", "--no-progress"]
    made = {}
    for name, model, extra in (("lexical", "reference", ["--lite", "0.125"]),
                               ("uniform", "uniform", ["--lite", "0.125"]),
                               ("quarter", "reference", ["--lite", "0.25"]),
                               ("full", "reference", [])):
        made[name] = str(root / name)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["run", "--model", model, *extra, *common, "--output-dir", made[name]]) == 0
        made[name + " stdout"] = printed.getvalue()
    return made


def test_the_printed_and_recorded_estimates_are_lite_estimates_of_the_recorded_records(lite_dirs):
    run = load_run(lite_dirs["lexical"])
    section = run.provenance["lite"]
    assert section["fraction"] == FRACTION and section["standard"] is False and len(section["items_sha256"]) == 64
    expected = lite_estimates(run, FRACTION, populations(quiet_suite("Normal,Triplet_bias,GLER"))).to_dict()
    assert section["estimates"] == json.loads(json.dumps(expected))  # as results.json writes it
    out = lite_dirs["lexical stdout"]
    assert "Normal: lite run (12.5 % of the test items): estimates of the full run" in out
    assert "LITE RUN (12.5 % of the test items): every number is an estimate of the FULL run's value" in out
    accuracy = expected["benchmarks"]["Normal"]["TREC"]["accuracy"]
    assert f"{accuracy['value']:.4f} [{accuracy['low']:.4f}, {accuracy['high']:.4f}]" in out
    # the metrics the coverage study does not vouch for are named, with the reason
    assert expected["benchmarks"]["Normal"]["TREC"]["expected_calibration_error_1"]["estimable"] is True
    assert expected["benchmarks"]["Normal"]["Averaged"]["expected_calibration_error_1"]["estimable"] is True
    assert "not estimable at this share: expected_calibration_error_1" not in " ".join(out.split())
    assert "DL div. (the averaged row)" not in out and "distribution (every dataset)" not in out  # Post_bias: all
    assert "not estimated: own_likelihood_nonstandard, own_ece_nonstandard" in out
    # the subset's own numbers are kept, marked non-standard with the departure named
    with open(os.path.join(lite_dirs["lexical"], "results.json"), encoding="utf-8") as fh:
        metadata = json.load(fh)["benchmarks"]["Normal"]["metadata"]
    assert metadata["standard"] is False
    assert set(metadata["non_standard_settings"]["TREC"]) == {"lite run: 12.5 % of the test items"}


def test_report_shows_a_lite_runs_estimates(lite_dirs, capsys):
    assert main(["report", lite_dirs["lexical"], "--format", "md", "--no-progress", "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    estimates = load_run(lite_dirs["lexical"]).provenance["lite"]["estimates"]["benchmarks"]
    likelihood = estimates["GLER"]["Averaged"]["averaged_truelabel_likelihood"]
    assert "**GLER: lite run (12.5 % of the test items): estimates of the full run" in out
    assert f"{likelihood['value']:.4f} [{likelihood['low']:.4f}, {likelihood['high']:.4f}]" in out
    assert "not estimable" not in out  # every standard metric of these sub-benchmarks is printed at 12.5 %


def test_compare_pairs_lite_runs_on_the_same_items_and_refuses_a_full_run(lite_dirs, capsys):
    assert main(["compare", lite_dirs["lexical"], lite_dirs["uniform"], "--format", "json", "--no-progress",
                 "--resamples", "20"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["comparisons"][0]["paired"] is True
    assert "are lite runs on the same test items (12.5 % of the test items): compared paired" in captured.err
    for other, words in (("full", "is a lite run (12.5 % of the test items) and full a full run"),
                         ("quarter", "are lite runs on different test items")):
        for extra in ([], ["--unpaired"]):
            # runs that cannot be paired: exit 1, as runs on other prompts (2 is for argument errors)
            assert main(["compare", lite_dirs["lexical"], lite_dirs[other], "--no-progress", *extra]) == 1
            err = capsys.readouterr().err
            assert words in err and "not paired" in err and err.count("\n") == 1


def test_a_full_run_after_a_lite_run_asks_only_the_rest(tmp_path, capsys):
    cache = str(tmp_path / "c.sqlite")
    common = ["run", "--benchmarks", "Normal,GLER", "--datasets", *DATASETS, "--cache", cache, "--no-progress"]
    assert main(common + ["--lite", "0.125"]) == 0
    lite_line = capsys.readouterr().out.strip().splitlines()[-1]
    lite_distinct = int(lite_line.split(" distinct;")[0].rsplit(" ", 1)[1])
    assert main(common) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    distinct, asked, cached = (int(last.split(word)[0].rsplit(" ", 2)[-1].replace(",", ""))
                               for word in (" distinct,", " asked,", " from the cache"))
    assert cached == lite_distinct and asked == distinct - lite_distinct > 0


def test_the_lite_suite_asks_about_eight_times_fewer_prompts_and_names_every_metric(capsys):
    assert main(["run", "--benchmarks", "all", "--lite", "0.125", "--no-progress"]) == 0
    out = capsys.readouterr().out
    line = out.strip().splitlines()[-1]
    assert line.startswith("lite run: ") and "x fewer prompts to ask" in line
    words = line.replace(",", "").replace(";", "").replace(":", "").split()
    mine, full = int(words[words.index("distinct") - 1]), int(words[words.index("distinct", 6) - 1])
    assert full == 87360 and 7.5 <= full / mine <= 8.5, line
    words = " ".join(out.split())  # a narrow table's title is wrapped
    for title in ("Normal", "Triplet_bias/contextual", "Triplet_bias/domain", "Triplet_bias/post", "GLER",
                  "Template_sens", "Demo_sens"):
        assert f"{title}: lite run (12.5 % of the test items): estimates of the full run" in words


@pytest.mark.parametrize("arguments, words", [
    (["--lite", "0"], "--lite must be a fraction of the test items in (0, 1]"),
    (["--lite", "1.5"], "--lite must be a fraction of the test items in (0, 1]"),
    (["--lite", "64"], "use --lite-items 64"),
    (["--lite", "0.1", "--limit", "5"], "--lite with --limit"),
    (["--lite", "0.1", "--lite-items", "5"], "give one"),
    (["--lite-items", "0"], "--lite-items must be a positive integer"),
    (["--lite", "0.1", "--methods", "vanilla"], "--lite with --methods"),
])
def test_lite_argument_errors_are_one_line_before_inference(tmp_path, capsys, arguments, words):
    out = tmp_path / "run"
    assert main(["run", *arguments, "--output-dir", str(out), "--model", "hf", "--model-args",
                 f"pretrained={tmp_path / 'no-model'}"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not out.exists()


def test_without_numpy_a_lite_run_is_refused_before_inference(tmp_path):
    code = ("import sys; sys.modules['numpy'] = None\n"
            "from StaICC.cli import main\n"
            f"sys.exit(main(['run', '--lite', '0.125', '--output-dir', {str(tmp_path / 'run')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO_ROOT),
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)), timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert "numpy" in done.stderr and 'pip install "StaICC[stats]"' in done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "run").exists()
