"""Procedures: the passes of each sub-benchmark and how their metric dicts become its result.

Rates, abscissae and regressions are worked out here from their definitions (a least-squares
line by its closed form), not by the functions under test.
"""
import dataclasses
import math

import pytest

from StaICC.engine.procedures import (LabelNoiseProcedure, PassSpec, Procedure, SensitivityProcedure,
                                      TemplateProcedure)
from StaICC.standard import ORTHOGONAL_TABLE, TEMPLATE_KEYS


def least_squares(xs, ys):
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    return slope, mean_y - slope * mean_x


def test_a_plain_procedure_is_one_untouched_pass_whose_result_is_its_metrics():
    procedure = Procedure()
    assert procedure.passes() == [PassSpec()]
    assert procedure.summarize([{"accuracy": 0.5}]) == {"accuracy": 0.5}
    assert procedure.describe() == {"procedure": "normal"}
    assert PassSpec().describe() == ""


def test_demo_sens_reports_its_pass_under_sensitivity():
    procedure = SensitivityProcedure()
    assert procedure.passes() == [PassSpec()]
    assert procedure.summarize([{"consistency": 0.75}]) == {"sensitivity": {"consistency": 0.75}}


def test_label_noise_rates_accumulate_steps_as_the_standard_does():
    assert LabelNoiseProcedure(5).rates() == [0, 0.25, 0.5, 0.75, 1.0]
    rates = LabelNoiseProcedure(10).rates()
    step, accumulated = 1 / 9, [0]
    for _ in range(9):
        accumulated.append(accumulated[-1] + step)
    assert rates == accumulated and rates[-1] == 1.0000000000000002  # not 1: summed, not multiplied
    specs = LabelNoiseProcedure(5).passes()
    assert [s.label_noise_rate for s in specs] == [0, 0.25, 0.5, 0.75, 1.0]
    assert [s.describe() for s in specs][:2] == ["label noise 0.00", "label noise 0.25"]


def test_label_noise_abscissae_standard_and_correctness():
    assert LabelNoiseProcedure(5).x_values() == [1, 0.75, 0.25, -0.5, -1.5]
    assert LabelNoiseProcedure(5, "correctness").x_values() == [1, 0.75, 0.5, 0.25, 0.0]
    assert LabelNoiseProcedure(3).describe() == {"procedure": "label_noise", "interpolations": 3,
                                                 "abscissae": "standard"}


@pytest.mark.parametrize("abscissae", ["standard", "correctness"])
def test_gler_summary_keeps_every_pass_and_regresses_each_metric(abscissae):
    procedure = LabelNoiseProcedure(5, abscissae)
    passes = [{"accuracy": a, "macro_F1": f} for a, f in
              [(0.9, 0.8), (0.7, 0.65), (0.6, 0.5), (0.4, 0.45), (0.3, 0.2)]]
    summary = procedure.summarize(passes)
    assert [summary[str(i)] for i in range(5)] == passes
    xs = procedure.x_values()
    for metric in ("accuracy", "macro_F1"):
        slope, intercept = summary["sensitivity"][metric]
        expected_slope, expected_intercept = least_squares(xs, [p[metric] for p in passes])
        assert math.isclose(slope, expected_slope, rel_tol=1e-12)
        assert math.isclose(intercept, expected_intercept, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("interpolations", [1, 0, True, 2.0, "5"])
def test_label_noise_needs_at_least_two_passes(interpolations):
    with pytest.raises(ValueError, match="sensitivity test should be larger than 1"):
        LabelNoiseProcedure(interpolations)


def test_label_noise_abscissae_are_one_of_two():
    with pytest.raises(ValueError, match="abscissae"):
        LabelNoiseProcedure(5, "slopes")


def alternate_templates():
    """Three choices per template key, each naming its key and choice."""
    return {key: [f"{key}-{choice}" for choice in range(3)] for key in TEMPLATE_KEYS}


def test_template_procedure_has_one_pass_per_row_of_the_orthogonal_table():
    procedure = TemplateProcedure(alternate_templates())
    specs = procedure.passes()
    assert len(specs) == len(ORTHOGONAL_TABLE) == 9
    for row_number, (spec, row) in enumerate(zip(specs, ORTHOGONAL_TABLE)):
        assert spec.template_row == row_number and spec.carry is True and spec.label_noise_rate is None
        assert dict(spec.template) == {key: f"{key}-{row[c]}" for c, key in enumerate(TEMPLATE_KEYS)}
        assert spec.describe() == f"template {row_number + 1}"
    assert procedure.summarize([{"consistency": 0.1}, {"consistency": 0.4}]) == {"sensitivity": {"consistency": 0.4}}


def test_template_procedure_needs_the_datasets_alternate_templates():
    with pytest.raises(ValueError, match="alternate templates"):
        TemplateProcedure({})


def test_a_pass_configures_only_what_it_names():
    """A pass's template is the writer's, with what the pass names: a noise rate, or a template row
    (the dataset's standard template with that row's fields); nothing else changes."""
    from StaICC.datasets import resolve_dataset
    from StaICC.datasets.split import triplet_dataset
    from StaICC.prompt.template import Template
    triplet = triplet_dataset(resolve_dataset(0))
    standard = Template.from_dataset(triplet.demonstration, triplet.test)
    base = dataclasses.replace(standard, instruction="changed by the user")
    assert PassSpec().template_for(base, triplet) is base
    noisy = PassSpec(label_noise_rate=0.5).template_for(base, triplet)
    assert noisy == dataclasses.replace(base, label_wrong_rate=0.5)
    row = PassSpec(template=(("instruction", "x"), ("input_text_prefixes", ("a: ",))), template_row=0)
    assert row.template_for(base, triplet) == dataclasses.replace(standard, instruction="x",
                                                                  input_text_prefixes=("a: ",))
    with pytest.raises(ValueError, match=r"The label wrong rate should be in \[0, 1\]"):
        PassSpec(label_noise_rate=1.0000000000000002).template_for(base, triplet)
