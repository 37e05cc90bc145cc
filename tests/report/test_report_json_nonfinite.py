"""`compare --format json` and `report --format json` are strict JSON even when a metric is infinite.

A model that always answers label 0 with an int has predicted label frequencies with zeros, so
Post_bias's KL divergence to the true frequencies is +inf: the JSON writes null there and lists
the place under "non_finite", as results.json does.
"""
import json
import math
import os

from run_fixtures import write_run
from StaICC.cli import main


def _always_first(prompt, label_space):
    return 0


def _runs(tmp_path):
    from StaICC import Normal, Triplet_bias
    from StaICC.backends.reference_model import lexical_icl

    def benchmarks():  # hate_speech_18 has a rare label: resamples without it make Post_bias's KL infinite
        return {"Normal": Normal(datasets=["hate_speech_18"]), "Triplet_bias": Triplet_bias(datasets=["hate_speech_18"])}

    a = write_run(os.path.join(tmp_path, "first"), "always-first", _always_first, benchmarks())
    b = write_run(os.path.join(tmp_path, "lexical"), "lexical", lexical_icl, benchmarks())
    return a, b


def _refuse_constant(name):
    raise AssertionError(f"non-standard JSON token {name}")


def test_non_finite_numbers_become_null_and_are_listed():
    from StaICC.report.commands import _strict_json
    document = json.loads(_strict_json({"a": [1.0, math.inf], "b": {"c": -math.inf, "d": math.nan}}),
                          parse_constant=_refuse_constant)
    assert document == {"a": [1.0, None], "b": {"c": None, "d": None}, "non_finite": ["a[1]", "b.c", "b.d"]}


def test_compare_and_report_json_are_strict(tmp_path, capsys):
    a, b = _runs(tmp_path)
    for command in (["compare", a, b], ["report", a, b]):
        assert main(command + ["--format", "json", "--resamples", "50", "--seed", "1"]) == 0
        document = json.loads(capsys.readouterr().out, parse_constant=_refuse_constant)
        assert isinstance(document["non_finite"], list)
        for place in document["non_finite"]:
            node = document
            for part in place.replace("]", "").replace("[", ".").split("."):
                node = node[int(part)] if isinstance(node, list) else node[part]
            assert node is None


def test_a_refused_run_leaves_no_output_directory(tmp_path, capsys):
    target = tmp_path / "new" / "run"
    assert main(["run", "--output-dir", str(target), "--model", "no-such-backend"]) == 2
    assert "no-such-backend" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
