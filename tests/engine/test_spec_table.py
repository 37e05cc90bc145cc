"""The table of sub-benchmarks: every reader takes its facts from it; nothing else branches on a name."""
import pathlib
import re

import pytest

from StaICC.metrics.registry import BENCHMARK_METRICS, CONSISTENCY_LOOP_LENGTHS, get_metric
from StaICC.report.tables import metric_label
from StaICC.stats import CONSISTENCY_BENCHMARKS, SLOPE_BENCHMARKS
from StaICC import spec as spec_module
from StaICC.subbenchmarks.builtin import SUB_BENCHMARKS
from StaICC.subbenchmarks.generic import AVERAGING, SubBenchmark
from StaICC.spec import SPECS, STANDARD_SUITE, SubBenchmarkSpec, compound_of, parts_of
from StaICC.subbenchmarks.suite import run_suite

PACKAGE = pathlib.Path(spec_module.__file__).resolve().parent  # the StaICC package


def test_every_sub_benchmark_class_is_a_row_of_the_table():
    assert set(SUB_BENCHMARKS) == set(SPECS)
    for name, cls in SUB_BENCHMARKS.items():
        spec = SPECS[name]
        assert cls.benchmark_name == name
        if spec.compound:
            continue
        assert (cls.pseudo_query, cls.repeat_times, cls.test_size, cls.supports_noisy_channel) == \
            (spec.pseudo_query, spec.repeat_times, spec.test_size, spec.noisy_channel)
        assert cls.averaging is AVERAGING[spec.averaging]


def test_the_readers_take_their_facts_from_the_table():
    assert STANDARD_SUITE == ("Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens")
    assert BENCHMARK_METRICS["Post_bias"] == ("post_bias_dl_div", "post_bias_distribution")
    # the diagnoses outside the standard are rows of the table too (never in STANDARD_SUITE)
    assert CONSISTENCY_LOOP_LENGTHS == {"Template_sens": 100, "Demo_sens": 128, "Order_sens": 128, "Format_spread": 128}
    assert set(CONSISTENCY_BENCHMARKS) == {"Template_sens", "Demo_sens", "Order_sens", "Format_spread"}
    assert set(SLOPE_BENCHMARKS) == {"GLER", "GLER_corrected"}
    assert parts_of("Triplet_bias") == (("contextual", "Contextual_bias"), ("domain", "Domain_bias"),
                                        ("post", "Post_bias"))
    assert parts_of("Normal") == (("Normal", "Normal"),)
    assert compound_of("Domain_bias") == ("Triplet_bias", "domain") and compound_of("GLER") is None
    assert get_metric("consistency", "Demo_sens").function([0] * 128 * 8, [[1, 0]] * 128 * 8) == 1.0


def test_a_new_row_and_a_one_line_class_make_a_new_sub_benchmark(monkeypatch):
    row = SubBenchmarkSpec("Noise_slope", result="slopes", averaging="slope", procedure="label_noise",
                           abscissae="correctness", noisy_channel=False)
    monkeypatch.setitem(SPECS, row.name, row)

    class Noise_slope(SubBenchmark):
        spec = SPECS["Noise_slope"]

    monkeypatch.setitem(SUB_BENCHMARKS, row.name, Noise_slope)
    assert metric_label("Noise_slope", "accuracy") == "accuracy slope"
    assert get_metric("accuracy", "Noise_slope").name == "accuracy"
    result = run_suite(lambda prompt, label_space: 0, "Noise_slope", datasets=["financial_phrasebank"], progress=False)
    divided = result["Noise_slope"]["Divided results"]["financial_phrasebank"]
    assert set(divided["sensitivity"]) == set(BENCHMARK_METRICS["Normal"])
    assert result["Noise_slope"].metadata["procedure"]["abscissae"] == "correctness"


@pytest.mark.parametrize("name", list(SPECS))
def test_no_module_outside_the_table_branches_on_a_sub_benchmark_name(name):
    branching = re.compile(rf'(==|!=|\bin\b|startswith\()\s*\(?[^\n]*"{name}"|"{name}"\s*(==|!=|\bin\b)')
    allowed = {"spec.py"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in allowed or relative.startswith("legacy/"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if branching.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
