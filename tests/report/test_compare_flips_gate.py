"""``staicc compare --flips`` against an independent reading of samples.jsonl, and the ``--fail-if`` gate."""
import json
import math
import os
from collections import defaultdict

import pytest

from StaICC import cli
from StaICC.stats.gate import GATE_EXIT_STATUS, parse_condition

DATASETS = ["rotten_tomatoes", "hate_speech_18"]
SECOND = DATASETS[1]


def _run(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The reference model and chance on the same prompts, with every prompt's text logged."""
    root = tmp_path_factory.mktemp("flips")
    paths = {}
    for model in ("reference", "uniform"):
        path = str(root / model)
        code = cli.main(["run", "--model", model, "--benchmarks", "Normal,Triplet_bias,GLER,Template_sens",
                         "--datasets", *DATASETS, "--limit", "24", "--output-dir", path, "--log-samples=full",
                         "--no-progress"])
        assert code == 0
        paths[model] = path
    return paths


def _softmax(row):
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    return [e / math.fsum(exps) for e in exps]


def _independent_predictions(path):
    """(benchmark, dataset, query_index) -> (label, argmax, prompt), reading samples.jsonl with the standard's
    rule: a metric call's rows are softmaxed unless every one sums to exactly 1.0 with entries in [0, 1]; a
    call is one pass, or every pass of the consistency sub-benchmarks."""
    groups = defaultdict(list)
    with open(os.path.join(path, "samples.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            together = r["benchmark"] in ("Template_sens", "Demo_sens")
            groups[(r["benchmark"], r["dataset"], None if together else r["pass"])].append(r)
    out = {}
    for records in groups.values():
        exact = all(all(0 <= v <= 1 for v in r["prediction"]) and sum_left_to_right(r["prediction"]) == 1
                    for r in records)
        for r in records:
            row = r["prediction"] if exact else _softmax(r["prediction"])
            out[(r["benchmark"], r["dataset"], r["query_index"])] = (r["label"], row.index(max(row)), r["prompt"])
    return out


def sum_left_to_right(values):
    total = 0.0
    for v in values:
        total += v
    return total


def test_flips_are_exactly_the_changed_predictions(runs, capsys):
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--flips", "--format", "json",
                         "--resamples", "50", "--no-progress"], capsys)
    assert code == 0
    listed = json.loads(out)["flips"][0]["datasets"]
    a = _independent_predictions(runs["reference"])
    b = _independent_predictions(runs["uniform"])
    expected = {k for k in a if a[k][1] != b[k][1]}
    got = {(d["benchmark"], d["dataset"], f["query_index"]) for d in listed for f in d["flips"]}
    assert got == expected and len(expected) > 50
    pseudo = ("Contextual_bias", "Domain_bias")
    for d in listed:
        kinds = defaultdict(int)
        for f in d["flips"]:
            key = (d["benchmark"], d["dataset"], f["query_index"])
            label, pa, prompt = a[key]
            assert (f["predicted_a"], f["predicted_b"], f["prompt"]) == (pa, b[key][1], prompt)
            assert f["label"] == (None if d["benchmark"] in pseudo else label)
            kind = "changed" if d["benchmark"] in pseudo or label not in (pa, b[key][1]) else \
                "fixed" if b[key][1] == label else "broken"
            assert f["kind"] == kind
            kinds[kind] += 1
        assert (d["fixed"], d["broken"], d["changed"]) == (kinds["fixed"], kinds["broken"], kinds["changed"])
        assert d["flipped"] == len(d["flips"])


def test_flips_agree_with_mcnemar_counts(runs, capsys):
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--flips", "--format", "json",
                         "--resamples", "50", "--no-progress"], capsys)
    document = json.loads(out)
    for d in document["flips"][0]["datasets"]:
        if d["benchmark"] == "Normal":
            counts = document["comparisons"][0]["benchmarks"]["Normal"]["datasets"][d["dataset"]]["accuracy"]["counts"]
            assert (counts["only_a"], counts["only_b"]) == (d["broken"], d["fixed"])


def test_flips_table_lists_prompts_and_limits_rows(runs, capsys):
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--flips", "--flips-limit", "3",
                         "--resamples", "20", "--no-progress"], capsys)
    assert code == 0
    assert "Flips: uniform against reference" in out and f"Flips: Normal / {SECOND}: uniform against reference" in out
    assert "more (--flips-limit 0 lists all)" in out and "prompt" in out


def _averaged_and_trec_accuracy(runs, capsys):
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--format", "json", "--resamples", "50",
                         "--no-progress"], capsys)
    normal = json.loads(out)["comparisons"][0]["benchmarks"]["Normal"]
    return normal["averaged"]["accuracy"], normal["datasets"][SECOND]["accuracy"]


def _threshold(delta, margin):
    """A signed threshold just past (margin > 0: not met) or just short of (margin < 0) the difference."""
    value = abs(delta) + margin
    return f"-{value!r}" if delta < 0 else f"+{value!r}"


def test_fail_if_exits_with_its_status_exactly_when_the_condition_holds(runs, capsys):
    averaged, second = _averaged_and_trec_accuracy(runs, capsys)
    assert averaged["delta"] != 0 and second["delta"] != 0
    base = ["compare", runs["reference"], runs["uniform"], "--resamples", "50", "--no-progress"]
    for where, d in (("averaged", averaged), (SECOND, second), ("any", second)):
        met = f"accuracy:{_threshold(d['delta'], -1e-9)}:{where}"
        missed = f"accuracy:{_threshold(d['delta'], 1e-9)}:{where}"
        code, _, err = _run(base + ["--fail-if", met], capsys)
        assert code == GATE_EXIT_STATUS and f"--fail-if {met} holds" in err, (where, err)
        if where != "any":  # "any" also looks at the other dataset and the average
            code, _, err = _run(base + ["--fail-if", missed], capsys)
            assert code == 0 and err == "", (where, err)
    opposite = "+0" if averaged["delta"] < 0 else "-0"
    assert _run(base + ["--fail-if", f"accuracy:{opposite}"], capsys)[0] == 0


def test_fail_if_significant_only_counts_starred_differences(runs, capsys):
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--format", "json", "--resamples", "50",
                         "--no-progress"], capsys)
    rows = json.loads(out)["comparisons"][0]["benchmarks"]["Normal"]["datasets"]
    quiet = [(name, r["accuracy"]) for name, r in rows.items() if not r["accuracy"]["significant"]]
    assert quiet, "a dataset whose accuracy difference is not significant"
    name, d = quiet[0]
    condition = f"accuracy:{_threshold(d['delta'], -1e-9) if d['delta'] else '-0'}:{name}"
    if d["delta"]:
        assert _run(["compare", runs["reference"], runs["uniform"], "--resamples", "50", "--no-progress",
                     "--fail-if", condition], capsys)[0] == GATE_EXIT_STATUS
    assert _run(["compare", runs["reference"], runs["uniform"], "--resamples", "50", "--no-progress",
                 "--fail-if", condition + ":significant"], capsys)[0] == 0


def test_fail_if_json_reports_the_gate(runs, capsys):
    averaged, _ = _averaged_and_trec_accuracy(runs, capsys)
    met = f"accuracy:{_threshold(averaged['delta'], -1e-9)}"
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--resamples", "50", "--no-progress",
                         "--format", "json", "--fail-if", met, "--fail-if", "expected_calibration_error_1:+5"],
                        capsys)
    gate = json.loads(out)["gate"]
    assert code == GATE_EXIT_STATUS and gate["exit_status"] == GATE_EXIT_STATUS
    assert [f["condition"] for f in gate["failures"]] == [met]
    assert gate["failures"][0]["row"] == "Averaged" and gate["failures"][0]["benchmark"] == "Normal"


@pytest.mark.parametrize("condition, message", [
    ("accuracy:0.01", "the threshold must be a number with its sign"),
    ("accuracy", "expected METRIC:THRESHOLD"),
    ("acuracy:-0.01", "unknown metric 'acuracy'"),
    ("Nromal/accuracy:-0.01", "unknown sub-benchmark 'Nromal'"),
    ("accuracy:-0.01:any:significant:x", "expected METRIC:THRESHOLD"),
    ("accuracy:-0.01:any:x", "expected METRIC:THRESHOLD"),
    ("accuracy:-inf", "the threshold must be a number with its sign"),
])
def test_malformed_conditions_are_one_line_exit_2_before_reading(condition, message, capsys, tmp_path):
    missing = str(tmp_path / "no-such-run")
    code, out, err = _run(["compare", missing, missing, "--fail-if", condition], capsys)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1 and "no-such-run" not in err


def test_a_condition_matching_nothing_is_an_error_not_a_pass(runs, capsys):
    code, _, err = _run(["compare", runs["reference"], runs["uniform"], "--resamples", "20", "--no-progress",
                         "--fail-if", "accuracy:-0.01:SST5"], capsys)
    assert code == 2 and "no difference of 'accuracy' on SST5" in err


def test_flips_options_are_checked(runs, capsys):
    assert _run(["compare", runs["reference"], runs["uniform"], "--flips", "--unpaired"], capsys)[0] == 2
    assert _run(["compare", runs["reference"], runs["uniform"], "--flips-limit", "3"], capsys)[0] == 2


def test_condition_grammar():
    c = parse_condition("Normal/expected_calibration_error_1:+0.02:Any:significant")
    assert (c.benchmark, c.metric, c.threshold, c.rising, c.where, c.significant_only) == \
        ("Normal", "expected_calibration_error_1", 0.02, True, "any", True)
    assert parse_condition("accuracy:-0").holds_for(-1e-3, False)
    assert not parse_condition("accuracy:-0").holds_for(0.0, True)  # zero (below the noise floor) never holds
    assert parse_condition("DL div.:+0.1").holds_for(math.nan, False)  # fails closed


def test_progress_lines_only_when_asked_or_on_a_terminal(runs, capsys):
    code, _, err = _run(["compare", runs["reference"], runs["uniform"], "--resamples", "20", "--progress"], capsys)
    assert code == 0 and "staicc compare: reading run 1 of 2: reference" in err and "resampling Normal" in err
    code, _, err = _run(["compare", runs["reference"], runs["uniform"], "--resamples", "20"], capsys)
    # stderr is not a terminal here: only a step still running after SLOW_STEP_S is announced, one line each
    assert code == 0 and all(line.startswith("staicc compare: ") for line in err.splitlines()) and "\r" not in err


def test_flips_table_shows_the_flipped_query_and_label_words(runs, capsys):
    """The prompt column ends with the flipped query (a prompt starts with its demonstrations), and the
    label columns name labels by the run's label words, read back from results.json and samples.jsonl."""
    code, out, _ = _run(["compare", runs["reference"], runs["uniform"], "--flips", "--flips-limit", "0",
                         "--resamples", "20", "--no-progress"], capsys)
    assert code == 0
    words = json.load(open(os.path.join(runs["reference"], "results.json")))["benchmarks"]["Normal"]["metadata"][
        "label_words"][SECOND]
    prompts = {}
    with open(os.path.join(runs["uniform"], "samples.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record["benchmark"] == "Normal" and record["dataset"] == SECOND:
                prompts[record["query_index"]] = record
    table = out.split(f"Flips: Normal / {SECOND}: uniform against reference\n", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line[:1].isdigit()]
    assert rows
    for line in rows:
        query = int(line.split()[0])
        record = prompts[query]
        tail = " ".join(record["prompt"].split())[-40:]
        assert line.rstrip().endswith(tail), (line, tail)
        assert f"  {words[record['label']]}  " in line
