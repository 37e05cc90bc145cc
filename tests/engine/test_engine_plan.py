"""Run plans and their requests: which queries a run asks, in which order, with which prompts.

Expected prompts are written here from the dataset rows and the dataset's template, not by
the writer under test.
"""
import warnings

import pytest

from StaICC import GLER, Normal, Template_sens
from StaICC.engine.plan import pass_sources, plan_requests
from StaICC.engine.procedures import PassSpec
from StaICC.errors import TamperingWarning

DATASET = "rotten_tomatoes"


def first(bench_class, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        return bench_class(datasets=[DATASET], **kwargs)[0]


@pytest.fixture(scope="module")
def normal():
    return first(Normal, k=2)


def hand_prompt(exp, demos, test_index):
    """rotten_tomatoes' template: "review: <text> sentiment: <label>\\n" per demonstration, then the query."""
    demonstration, test = exp.demonstration_set(), exp.test_set()
    prompt = ""
    for index in demos:
        (text,), label = demonstration[index]
        prompt += f"review: {text} sentiment: {label}\n"
    return prompt + f"review: {test[test_index][0][0]} sentiment: "


def test_a_plan_is_one_pass_over_repeat_major_queries(normal):
    plan = normal.plan()
    T = len(normal.test_set())
    assert (plan.benchmark, plan.dataset, plan.test_count) == ("Normal", DATASET, T)
    assert plan.passes == (PassSpec(),)
    assert plan.queries_per_pass == plan.total == len(normal) == T * normal.get_repeat_times()
    queries = list(plan.queries())
    for q in (0, 1, T - 1, T, plan.total - 1):
        assert queries[q] == (q % T, q // T, tuple(normal.demonstration_sampler[q]))
        assert len(queries[q][2]) == normal.get_k()


def test_requests_carry_the_prompt_labels_and_position_of_each_query(normal):
    plan = normal.plan()
    requests = plan_requests(plan, pass_sources(plan, normal.prompt_former))
    assert len(requests) == plan.total
    label_space = tuple(normal.get_label_space())
    for q in (0, 7, plan.total - 1):
        test_index, _repeat, demos = list(plan.queries())[q]
        request = requests[q]
        assert request.prompt == hand_prompt(normal, demos, test_index)
        assert (request.label_space, request.benchmark, request.dataset) == (label_space, "Normal", DATASET)
        assert (request.query_index, request.pass_index) == (q, 0)
    assert [r.prompt for r in requests] == normal.prompt_set()


def test_writing_requests_leaves_the_writer_as_it_was_and_repeats_exactly():
    exp = first(GLER)
    writer = exp.prompt_former
    before = writer.snapshot()
    once = plan_requests(exp.plan(), pass_sources(exp.plan(), writer))
    assert writer.snapshot() == before
    assert plan_requests(exp.plan(), pass_sources(exp.plan(), writer)) == once  # fresh label-noise streams on every call


def test_gler_plans_one_pass_per_noise_rate_and_numbers_queries_across_passes():
    exp = first(GLER)
    plan = exp.plan()
    assert [spec.label_noise_rate for spec in plan.passes] == [0, 0.25, 0.5, 0.75, 1.0]
    assert plan.total == 5 * plan.queries_per_pass
    requests = plan_requests(plan, pass_sources(plan, exp.prompt_former))
    per_pass = plan.queries_per_pass
    assert [r.query_index for r in requests] == list(range(plan.total))
    assert [r.pass_index for r in requests] == [n for n in range(5) for _ in range(per_pass)]
    # pass 0 has no label noise: its prompts are the ones written from the rows
    for q in (0, per_pass - 1):
        test_index, _repeat, demos = list(plan.queries())[q]
        assert requests[q].prompt == hand_prompt(exp, demos, test_index)
    # at rate 1 every demonstration's label is wrong: the prompt differs, the query part does not
    last = requests[4 * per_pass]
    assert last.prompt != requests[0].prompt
    assert last.prompt.endswith(hand_prompt(exp, (), list(plan.queries())[0][0]))


def test_label_noise_at_rate_one_changes_every_demonstration_label():
    exp = first(GLER)
    plan = exp.plan()
    requests = plan_requests(plan, pass_sources(plan, exp.prompt_former))
    test_index, _repeat, demos = list(plan.queries())[0]
    demonstration = exp.demonstration_set()
    lines = requests[4 * plan.queries_per_pass].prompt.split("\n")[:len(demos)]
    for line, index in zip(lines, demos):
        (text,), label = demonstration[index]
        shown = line.rsplit(" sentiment: ", 1)[1]
        assert line.startswith(f"review: {text}") and shown != label and shown in exp.get_label_space()


def test_template_sens_plans_nine_template_passes_over_its_test_items():
    exp = first(Template_sens)
    plan = exp.plan()
    assert len(plan.passes) == 9 and [spec.template_row for spec in plan.passes] == list(range(9))
    assert all(spec.carry for spec in plan.passes)
    assert plan.test_count == 100 and plan.queries_per_pass == 100
    requests = plan_requests(plan, pass_sources(plan, exp.prompt_former))
    firsts = [requests[n * 100].prompt for n in range(9)]
    assert len(set(firsts)) == 9  # every template writes the query differently
