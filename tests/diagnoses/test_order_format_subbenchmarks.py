"""Order_sens and Format_spread through the Python API: rows, prompts, numbers against independent computations."""
import random

import numpy as np
import pytest

from StaICC.datasets import resolve_datasets
from StaICC.backends.reference_model import last_token, lexical_icl
from StaICC.metrics.agreement import cohen_kappa
from StaICC.retrieval import BM25Retriever
from StaICC.sampling.rows import default_rows
from StaICC.subbenchmarks.extensions import Format_spread, Order_sens, format_intervals, permutations_of
from StaICC.subbenchmarks.formats import FORMAT_GRAMMAR_SIZE, format_template, sample_formats

LIMIT = 12


def last_demonstration_label(prompt, label_space):
    """An order-sensitive model: it answers the label of the demonstration just before the query."""
    prefix = last_token(prompt)
    segments = prompt.split(prefix)
    if len(segments) < 3:
        return [1.0] + [0.0] * (len(label_space) - 1)
    shown = segments[-2]
    for word in sorted(label_space, key=len, reverse=True):
        if shown.startswith(word):
            index = label_space.index(word)
            return [1.0 if j == index else 0.0 for j in range(len(label_space))]
    return [1.0] + [0.0] * (len(label_space) - 1)


def order_run(seed=0, **options):
    bench = Order_sens(datasets=["rotten_tomatoes"], seed=seed, **options)
    bench.limit_test_items(LIMIT)
    result, _, outputs = bench[0].auto_run(last_demonstration_label, return_outputs=True)
    return bench, result, outputs


def test_order_rows_are_permutations_of_the_standard_first_draw():
    bench, _, _ = order_run()
    demonstrations = bench[0].demonstrations
    T = len(bench[0].triplet_dataset.test)
    D = len(bench[0].triplet_dataset.demonstration)
    base = default_rows(4, D, T, False)
    orders = demonstrations.orders()
    assert len(orders) == LIMIT and all(len(o) == 6 for o in orders)
    for j, item_orders in enumerate(orders):
        assert item_orders[0] == list(base[j])  # the first order is the standard's draw
        assert all(sorted(o) == sorted(base[j]) for o in item_orders)
        assert len({tuple(o) for o in item_orders}) == 6  # distinct orders (4! = 24 >= 6)


def test_order_numbers_equal_an_independent_computation():
    bench, result, outputs = order_run()
    sensitivity = result["sensitivity"]
    labels = np.asarray([int(np.argmax(row)) for row in outputs["prob."]]).reshape(6, LIMIT)
    truth = np.asarray(outputs["groundtruth"][:LIMIT])
    accuracies = (labels == truth[None, :]).mean(axis=1)
    assert result["per_order"]["accuracy"] == pytest.approx(accuracies.tolist(), abs=1e-12)
    assert sensitivity["accuracy_spread"] == pytest.approx(float(np.ptp(accuracies)), abs=1e-12)
    metrics = pytest.importorskip("sklearn.metrics")
    pairs = []
    for a in range(6):
        for b in range(a + 1, 6):
            value = metrics.cohen_kappa_score(labels[a], labels[b])
            pairs.append(1.0 if np.isnan(value) else value)
    assert sensitivity["cohen_kappa"] == pytest.approx(float(np.mean(pairs)), abs=1e-9)
    majority = [np.bincount(labels[:, i]).max() / 6 for i in range(LIMIT)]
    assert sensitivity["consistency"] == pytest.approx(float(np.mean(majority)), abs=1e-12)
    # the model follows the last demonstration, so the order changes its answers
    assert sensitivity["consistency"] < 1 and sensitivity["fleiss_kappa"] < 1


def test_order_sens_is_seeded_and_outside_the_standard():
    one, two, other = Order_sens(datasets=["rotten_tomatoes"], seed=3), Order_sens(datasets=["rotten_tomatoes"], seed=3), \
        Order_sens(datasets=["rotten_tomatoes"], seed=4)
    for bench in (one, two, other):
        bench.limit_test_items(LIMIT)
    assert one[0].prompt_set() == two[0].prompt_set() != other[0].prompt_set()
    result = one.auto_run(lexical_icl)
    assert result.metadata["standard"] is False
    assert "Order_sens: a diagnosis outside the standard" in result.metadata["non_standard_settings"]["rotten_tomatoes"]
    assert result.metadata["procedure"] == {"procedure": "demonstration_order", "permutations": 6, "seed": 3}
    # the lexical reference model reads the demonstrations as a set: order never matters to it
    assert result["Averaged results"]["consistency"] == 1.0


def test_order_sens_permutes_a_retrievers_rows():
    bench = Order_sens(datasets=["rotten_tomatoes"], permutations=3, retriever=BM25Retriever())
    bench.limit_test_items(5)
    experimentor = bench[0]
    rows = BM25Retriever().build_sampler(experimentor.demonstration_set(), experimentor.test_set(), 4)
    for j, item_orders in enumerate(experimentor.demonstrations.orders()):
        assert item_orders[0] == rows[j] and all(sorted(o) == sorted(rows[j]) for o in item_orders)


def test_permutations_cycle_when_there_are_fewer_orders_than_asked():
    rng = random.Random(0)
    orders = permutations_of([7, 8], 5, rng)
    assert orders[0] == [7, 8] and {tuple(o) for o in orders} == {(7, 8), (8, 7)}
    assert permutations_of([5], 3, rng) == [[5], [5], [5]]
    with pytest.raises(ValueError, match="permutations must be"):
        Order_sens(datasets=["rotten_tomatoes"], permutations=1)


# -- Format_spread ----------------------------------------------------------------------------------------
def test_format_grammar_is_seeded_and_each_format_is_written():
    assert sample_formats(5, 1) == sample_formats(5, 1) != sample_formats(5, 2)
    assert len(set(sample_formats(FORMAT_GRAMMAR_SIZE, 0))) == FORMAT_GRAMMAR_SIZE
    bench = Format_spread(datasets=["rotten_tomatoes"], formats=4, seed=1)
    bench.limit_test_items(3)
    experimentor = bench[0]
    prompts = experimentor.prompt_set()
    assert len(prompts) == 4 * 3
    # pass 0 is the dataset's own template: the prompt the standard writes for the same demonstrations
    writer = experimentor.prompt_former
    rows = experimentor.plan().demonstrations
    assert prompts[:3] == [writer.write_prompt(list(rows[j]), j) for j in range(3)]
    assert len({p[:200] for p in prompts[::3]}) == 4  # every format writes a different prompt
    fmt = sample_formats(3, 1)[0]
    dataset = resolve_datasets(["rotten_tomatoes"])[0]
    template = format_template(dataset, fmt)
    assert all(template["label_prefix"] in p for p in prompts[3:6])
    labels = {r.label_space for r in experimentor.requests()}
    assert tuple(template["label_space"]) in labels


def test_format_spread_numbers_budget_and_intervals():
    bench = Format_spread(datasets=["rotten_tomatoes"], formats=5, seed=0)
    bench.limit_test_items(LIMIT)
    result, _, outputs = bench[0].auto_run(lexical_icl, return_outputs=True)
    labels = np.asarray([int(np.argmax(row)) for row in outputs["prob."]]).reshape(5, LIMIT)
    truth = np.asarray(outputs["groundtruth"][:LIMIT])
    accuracies = (labels == truth[None, :]).mean(axis=1)
    assert result["per_format"]["accuracy"] == pytest.approx(accuracies.tolist(), abs=1e-12)
    assert result["per_format"]["format"][0] == "dataset template"
    s = result["sensitivity"]
    assert (s["accuracy_min"], s["accuracy_max"]) == (accuracies.min(), accuracies.max())
    intervals = result["intervals"]
    assert set(intervals) == {"accuracy_mean", "accuracy_min", "accuracy_max", "accuracy_spread"}
    assert all(0 <= low <= high <= 1 for low, high in intervals.values())
    assert intervals == {k: list(v) for k, v in
                         format_intervals(outputs["groundtruth"], outputs["prob."], LIMIT, seed=0).items()}
    # the budget lowers the number of formats: 300 prompts over 128 test items leave 2 formats
    small = Format_spread(datasets=["rotten_tomatoes"], formats=8, budget=300)
    assert len(small[0].procedure.templates) == 2


def test_format_intervals_against_a_numpy_bootstrap():
    rng = random.Random(9)
    truth = [rng.randrange(3) for _ in range(20)]
    rows = [[rng.random() for _ in range(3)] for _ in range(4 * 20)]
    got = format_intervals(truth, rows, 20, resamples=300, seed=5)
    right = (np.asarray(rows).argmax(axis=1).reshape(4, 20) == np.asarray(truth)[None, :])
    draw = random.Random(5)
    spreads = []
    for _ in range(300):
        sample = [int(draw.random() * 20) for _ in range(20)]
        acc = right[:, sample].mean(axis=1)
        spreads.append(acc.max() - acc.min())
    spreads.sort()
    assert got["accuracy_spread"] == pytest.approx((spreads[int(np.floor(0.025 * 299))],
                                                    spreads[int(np.ceil(0.975 * 299))]), abs=1e-12)


def test_cohen_kappa_helper_is_the_one_the_benchmarks_use():
    assert cohen_kappa([0, 1, 0, 1], [0, 1, 1, 1]) == pytest.approx(0.5)


def test_the_first_order_and_the_first_format_are_normals_prompts():
    from StaICC import Normal
    normal = Normal(datasets=["TREC"])[0].prompt_set()[:5]
    order = Order_sens(datasets=["TREC"])[0].prompt_set()
    spread = Format_spread(datasets=["TREC"])[0].prompt_set()
    assert order[:5] == normal == spread[:5]
